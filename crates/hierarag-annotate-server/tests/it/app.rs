//! The app over a real loopback listener: escaping, the blind category pick, CSRF and origin
//! checks, saving and validation, unknown tokens, resume, and the address rules.

use crate::support::{
    CHOICES, HOSTILE_TEXT, INTENDED, client, csrf, csrf_of, post, ratings, run_dir, start,
    with_csrf,
};
use hierarag_annotate_server::{ServeError, ServeOptions, bind, serve};

fn location(response: &reqwest::Response) -> &str {
    response
        .headers()
        .get("location")
        .expect("no Location header")
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn an_item_page_escapes_the_document_and_sets_a_strict_csp() {
    let (dir, annotators) = run_dir("escape", 3, &["ann"]);
    let base = start(dir.path()).await;
    let token = &annotators[0].token;
    let response = client()
        .get(format!("{base}/a/{token}/item/0"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    assert!(csp.contains("form-action 'self'") && csp.contains("frame-ancestors 'none'"));
    assert!(!csp.contains("script-src 'unsafe-inline'"), "{csp}");
    assert_eq!(response.headers()["referrer-policy"], "same-origin");
    let html = response.text().await.unwrap();
    assert!(
        html.contains(
            "Before. &lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt; After."
        ),
        "{html}"
    );
    assert!(!html.contains(HOSTILE_TEXT));
    assert!(!html.contains("<img"));
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    assert!(html.contains(&format!("<script nonce=\"{nonce}\">")));
    assert!(html.contains("0 / 3 rated"));
    assert!(html.contains("Question 0: what does the document say?"));
    assert!(html.contains("Reference answer 0 &amp; more."));
}

#[tokio::test]
async fn the_category_pick_is_blind() {
    let (dir, annotators) = run_dir("blind", 3, &["ann"]);
    let base = start(dir.path()).await;
    let html = client()
        .get(format!("{base}/a/{}/item/2", annotators[0].token))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // Every choice is offered the same way: its value and its label, nothing more.
    for choice in CHOICES {
        assert_eq!(html.matches(choice).count(), 2, "{choice} in:\n{html}");
        assert!(html.contains(&format!("value=\"{choice}\"> {choice}</label>")));
    }
    assert!(CHOICES.contains(&INTENDED));
    for secret in ["secret-parent", "secret-item-id", "secret-set-name"] {
        assert!(!html.contains(secret), "{secret} is in the page");
    }
    // Items without the category task have no category field.
    let html = client()
        .get(format!("{base}/a/{}/item/1", annotators[0].token))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!html.contains("name=\"category\""));
    assert!(!html.contains(INTENDED));
}

#[tokio::test]
async fn posts_without_the_right_csrf_value_or_from_another_origin_are_refused() {
    let (dir, annotators) = run_dir("csrf", 3, &["ann", "other"]);
    let base = start(dir.path()).await;
    let client = client();
    let token = &annotators[0].token;
    let csrf = csrf(&client, &base, token).await;
    let other_csrf = crate::support::csrf(&client, &base, &annotators[1].token).await;
    assert_ne!(csrf, other_csrf, "CSRF values are per annotator");
    let rating = [
        ("correctness", "3"),
        ("hallucination", "0"),
        ("answerability", "3"),
    ];
    for pairs in [
        rating.to_vec(),
        with_csrf("", &rating),
        with_csrf("0123abcd", &rating),
        with_csrf(&other_csrf, &rating),
    ] {
        let response = post(&client, &base, token, 1, &pairs).await;
        assert_eq!(response.status(), 403, "{pairs:?}");
    }
    for (header, value) in [
        ("origin", "http://evil.example"),
        ("origin", "null"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let response = client
            .post(format!("{base}/a/{token}/item/1"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header(header, value)
            .body(crate::support::form_body(&with_csrf(&csrf, &rating)))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{header}: {value}");
    }
    // A text/plain body (what a cross-site form may send without a preflight) is refused too.
    let response = client
        .post(format!("{base}/a/{token}/item/1"))
        .header("content-type", "text/plain")
        .body(crate::support::form_body(&with_csrf(&csrf, &rating)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert!(ratings(dir.path()).is_empty(), "nothing was saved");

    // The same form from this origin is saved.
    let response = client
        .post(format!("{base}/a/{token}/item/1"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", base.as_str())
        .header("sec-fetch-site", "same-origin")
        .body(crate::support::form_body(&with_csrf(&csrf, &rating)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(ratings(dir.path()).len(), 1);
}

#[tokio::test]
async fn a_valid_post_saves_and_redirects_and_the_page_shows_the_saved_values() {
    let (dir, annotators) = run_dir("save", 3, &["ann"]);
    let base = start(dir.path()).await;
    let client = client();
    let token = &annotators[0].token;
    let csrf = csrf(&client, &base, token).await;
    let response = post(
        &client,
        &base,
        token,
        0,
        &[
            ("csrf", &csrf),
            ("correctness", "2"),
            ("hallucination", "1"),
            ("answerability", "3"),
            ("category", "cat_gamma"),
            ("note", "line one\r\n<b>line two</b>"),
            ("action", "next"),
            // The item comes from the URL; a field naming another is ignored.
            ("item_id", "secret-item-id-2"),
        ],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), format!("/a/{token}/item/1"));
    let saved = ratings(dir.path());
    assert_eq!(saved.len(), 1);
    let rating = &saved[0];
    assert_eq!(rating.item_id, "secret-item-id-0");
    assert_eq!(rating.annotator, "ann");
    assert_eq!(
        (
            rating.correctness,
            rating.hallucination,
            rating.answerability
        ),
        (Some(2), Some(1), Some(3))
    );
    assert_eq!(rating.category_pick.as_deref(), Some("cat_gamma"));
    assert_eq!(rating.note.as_deref(), Some("line one\n<b>line two</b>"));

    // "Save" stays on the item and says so; the page is pre-filled.
    let response = post(
        &client,
        &base,
        token,
        0,
        &[
            ("csrf", &csrf),
            ("correctness", "1"),
            ("category", "cat_alpha"),
            ("action", "save"),
        ],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), format!("/a/{token}/item/0?saved=1"));
    let html = client
        .get(format!("{base}{}", location(&response)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("id=\"saved\""));
    assert!(html.contains("id=\"correctness-1\" value=\"1\" checked>"));
    assert!(
        !html.contains("id=\"hallucination-1\" value=\"1\" checked>"),
        "cleared"
    );
    assert!(html.contains("value=\"cat_alpha\" checked>"));
    assert_eq!(csrf_of(&html), csrf, "stable for the server's lifetime");

    // Save & next on the last item goes back to the resume link.
    let response = post(
        &client,
        &base,
        token,
        2,
        &[("csrf", &csrf), ("action", "next")],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), format!("/a/{token}"));
}

#[tokio::test]
async fn invalid_ratings_are_refused_with_422_and_not_saved() {
    let (dir, annotators) = run_dir("invalid", 3, &["ann"]);
    let base = start(dir.path()).await;
    let client = client();
    let token = &annotators[0].token;
    let csrf = csrf(&client, &base, token).await;
    let cases: [(u32, (&str, &str), &str); 6] = [
        (0, ("correctness", "4"), "correctness"),
        (0, ("hallucination", "3"), "hallucination"),
        (0, ("answerability", "x"), "answerability"),
        (0, ("correctness", "-1"), "correctness"),
        (0, ("category", "not_a_choice"), "not one of the choices"),
        (1, ("category", "cat_alpha"), "no category task"),
    ];
    for (position, field, message) in cases {
        let response = post(&client, &base, token, position, &[("csrf", &csrf), field]).await;
        assert_eq!(response.status(), 422, "{field:?}");
        let html = response.text().await.unwrap();
        assert!(html.contains(message), "{field:?}: {html}");
        assert!(!html.contains("secret-item-id"), "{html}");
        assert!(html.contains(&format!("href=\"/a/{token}/item/{position}\"")));
    }
    assert!(ratings(dir.path()).is_empty());
}

#[tokio::test]
async fn unknown_tokens_and_items_are_404() {
    let (dir, annotators) = run_dir("unknown", 2, &["ann"]);
    let base = start(dir.path()).await;
    let client = client();
    for url in [
        "/a/nope",
        "/a/nope/item/0",
        "/a/nope/items",
        "/nothing/here",
    ] {
        let response = client.get(format!("{base}{url}")).send().await.unwrap();
        assert_eq!(response.status(), 404, "{url}");
        assert!(response.text().await.unwrap().contains("Not found"));
    }
    let response = post(&client, &base, "nope", 0, &[("correctness", "1")]).await;
    assert_eq!(response.status(), 404);
    let token = &annotators[0].token;
    for position in ["2", "-1", "x", "99999999999"] {
        let response = client
            .get(format!("{base}/a/{token}/item/{position}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{position}");
    }
    assert_eq!(
        client
            .get(format!("{base}/"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test]
async fn the_resume_link_goes_to_the_first_item_not_fully_rated() {
    let (dir, annotators) = run_dir("resume", 3, &["ann", "other"]);
    let base = start(dir.path()).await;
    let client = client();
    let token = &annotators[0].token;
    let resume = || async {
        client
            .get(format!("{base}/a/{token}"))
            .send()
            .await
            .unwrap()
    };
    assert_eq!(location(&resume().await), format!("/a/{token}/item/0"));
    let csrf = csrf(&client, &base, token).await;
    let full = [
        ("correctness", "3"),
        ("hallucination", "0"),
        ("answerability", "2"),
    ];
    // Item 0 has the category task: the scales alone leave it partly rated.
    post(&client, &base, token, 0, &with_csrf(&csrf, &full)).await;
    assert_eq!(location(&resume().await), format!("/a/{token}/item/0"));
    let mut with_pick = full.to_vec();
    with_pick.push(("category", "cat_beta"));
    post(&client, &base, token, 0, &with_csrf(&csrf, &with_pick)).await;
    assert_eq!(location(&resume().await), format!("/a/{token}/item/1"));
    // Rating item 2 first does not skip item 1.
    post(&client, &base, token, 2, &with_csrf(&csrf, &with_pick)).await;
    assert_eq!(location(&resume().await), format!("/a/{token}/item/1"));
    post(&client, &base, token, 1, &with_csrf(&csrf, &full[..2])).await;
    assert_eq!(location(&resume().await), format!("/a/{token}/item/1"));
    post(&client, &base, token, 1, &with_csrf(&csrf, &full)).await;
    let done = resume().await;
    assert_eq!(done.status(), 200);
    let html = done.text().await.unwrap();
    assert!(html.contains("All done: 3 of 3 items rated"), "{html}");
    assert!(html.contains("3 / 3 rated"));

    // Another annotator's progress is their own.
    let other = &annotators[1].token;
    let response = client
        .get(format!("{base}/a/{other}"))
        .send()
        .await
        .unwrap();
    assert_eq!(location(&response), format!("/a/{other}/item/0"));
    let html = client
        .get(format!("{base}/a/{other}/items"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("0 / 3 rated"));
}

#[tokio::test]
async fn a_loopback_server_refuses_other_host_names() {
    let (dir, annotators) = run_dir("host", 1, &["ann"]);
    let base = start(dir.path()).await;
    let response = client()
        .get(format!("{base}/a/{}", annotators[0].token))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn remote_addresses_need_allow_remote_and_an_annotator() {
    let unspecified = "0.0.0.0".parse().unwrap();
    let refused = bind(unspecified, 0, &ServeOptions::default()).await;
    assert!(
        matches!(refused, Err(ServeError::NotLoopback { .. })),
        "{refused:?}"
    );
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("--allow-remote"), "{message}");

    let (dir, _) = run_dir("remote", 1, &[]);
    let allow = ServeOptions { allow_remote: true };
    let listener = bind(unspecified, 0, &allow).await.unwrap();
    let result = serve(listener, dir.path(), allow).await;
    assert!(
        matches!(result, Err(ServeError::NoAnnotators { .. })),
        "{result:?}"
    );

    let missing = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let result = serve(listener, missing.path(), ServeOptions::default()).await;
    let message = result.unwrap_err().to_string();
    assert!(message.contains("hierarag annotate sample"), "{message}");
}
