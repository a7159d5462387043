//! No lost write: two annotators post 300 ratings at once over a real listener, each (item,
//! annotator) pair updated several times in order; afterwards the store holds every pair with
//! its last value.

use std::collections::HashMap;

use crate::support::{client, csrf, post, ratings, run_dir, start, with_csrf};
use tokio::task::JoinSet;

const N_ITEMS: u32 = 30;
/// Updates per (item, annotator) pair, sent one after another; the pairs run concurrently.
const N_UPDATES: u32 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_ratings_from_two_annotators_lose_nothing() {
    let (dir, annotators) = run_dir("load", N_ITEMS, &["alice", "bob"]);
    let base = start(dir.path()).await;
    let client = client();
    let mut tasks = JoinSet::new();
    for annotator in &annotators {
        let csrf = csrf(&client, &base, &annotator.token).await;
        for position in 0..N_ITEMS {
            let (client, base, token, csrf) = (
                client.clone(),
                base.clone(),
                annotator.token.clone(),
                csrf.clone(),
            );
            let name = annotator.name.clone();
            tasks.spawn(async move {
                for step in 0..N_UPDATES {
                    let correctness = ((position + step) % 4).to_string();
                    let hallucination = ((position + step) % 3).to_string();
                    let note = format!("{name} item {position} step {step}");
                    let mut fields = vec![
                        ("correctness", correctness.as_str()),
                        ("hallucination", hallucination.as_str()),
                        ("answerability", "1"),
                        ("note", note.as_str()),
                    ];
                    if position % 2 == 0 {
                        fields.push(("category", crate::support::CHOICES[step as usize % 3]));
                    }
                    let response =
                        post(&client, &base, &token, position, &with_csrf(&csrf, &fields)).await;
                    assert_eq!(response.status(), 303, "{note}");
                }
            });
        }
    }
    let mut n_tasks = 0;
    while let Some(result) = tasks.join_next().await {
        result.expect("a posting task failed");
        n_tasks += 1;
    }
    assert_eq!(n_tasks, 2 * N_ITEMS);

    let saved = ratings(dir.path());
    assert_eq!(
        saved.len(),
        2 * N_ITEMS as usize,
        "one rating per (item, annotator)"
    );
    let by_pair: HashMap<(String, String), _> = saved
        .iter()
        .map(|rating| ((rating.item_id.clone(), rating.annotator.clone()), rating))
        .collect();
    let last = N_UPDATES - 1;
    for annotator in ["alice", "bob"] {
        for position in 0..N_ITEMS {
            let rating = by_pair[&(format!("secret-item-id-{position}"), annotator.to_owned())];
            assert_eq!(
                rating.note.as_deref(),
                Some(format!("{annotator} item {position} step {last}").as_str())
            );
            assert_eq!(rating.correctness, Some(((position + last) % 4) as u8));
            assert_eq!(rating.hallucination, Some(((position + last) % 3) as u8));
            assert_eq!(rating.answerability, Some(1));
            let pick =
                (position % 2 == 0).then(|| crate::support::CHOICES[last as usize % 3].to_owned());
            assert_eq!(rating.category_pick, pick);
        }
    }
}
