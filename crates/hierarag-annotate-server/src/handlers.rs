//! The request handlers: resume, overview, show an item, save a rating; and the error pages.

use std::collections::HashMap;

use axum::Extension;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path, RawQuery, State};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::response::{Html, IntoResponse, Response};
use hierarag_annotate::{Annotator, Rating, Store, StoreError, now_unix_s};
use serde::Deserialize;

use crate::AppState;
use crate::pages::{
    ItemPage, OverviewRow, Progress, Status, annotator_url, item_page, item_url, message_page,
    overview_page,
};
use crate::security::{Nonce, check_same_origin};

/// A failed request, shown as a small page with the reason.
#[derive(Debug)]
pub(crate) enum AppError {
    /// 404: an unknown token or item.
    NotFound(String),
    /// 403: a cross-site or CSRF-less post, or a non-loopback `Host`.
    Forbidden(String),
    /// 422: a rating that does not fit the item; `back` is the item's URL.
    Invalid { message: String, back: String },
    /// 500: the store failed; the details go to the log, not to the browser.
    Internal(String),
}

impl From<StoreError> for AppError {
    fn from(error: StoreError) -> AppError {
        // The log gets the whole chain: the store's message names the file, its source
        // says what went wrong.
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        AppError::Internal(message)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (status, title, message, back) = match self {
            AppError::NotFound(message) => (StatusCode::NOT_FOUND, "Not found", message, None),
            AppError::Forbidden(message) => (StatusCode::FORBIDDEN, "Refused", message, None),
            AppError::Invalid { message, back } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "Not saved",
                message,
                Some(back),
            ),
            AppError::Internal(message) => {
                tracing::error!("annotation app: {message}");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Server error",
                    "the annotation store failed; see the server's log".to_owned(),
                    None,
                )
            }
        };
        (status, Html(message_page(title, &message, back.as_deref()))).into_response()
    }
}

fn unknown_token() -> AppError {
    AppError::NotFound("no annotator has this link; ask for your personal link (/a/…)".to_owned())
}

/// Runs `work` on the store on a blocking thread (SQLite calls block).
async fn with_store<T, F>(state: &AppState, work: F) -> Result<T, AppError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, AppError> + Send + 'static,
{
    let state = state.clone();
    tokio::task::spawn_blocking(move || work(&state.lock_store()))
        .await
        .map_err(|e| AppError::Internal(format!("a store task failed: {e}")))?
}

/// The annotator with this token and their ratings by item id.
async fn annotator_and_ratings(
    state: &AppState,
    token: String,
) -> Result<(Annotator, HashMap<String, Rating>), AppError> {
    with_store(state, move |store| {
        let annotator = store
            .annotator_by_token(&token)?
            .ok_or_else(unknown_token)?;
        let ratings = store
            .ratings_of(&annotator.name)?
            .into_iter()
            .map(|rating| (rating.item_id.clone(), rating))
            .collect();
        Ok((annotator, ratings))
    })
    .await
}

fn statuses(state: &AppState, ratings: &HashMap<String, Rating>) -> Vec<Status> {
    state
        .items()
        .iter()
        .map(|item| Status::of(item, ratings.get(&item.item_id)))
        .collect()
}

fn progress<'a>(annotator: &'a Annotator, statuses: &[Status]) -> Progress<'a> {
    Progress {
        annotator: &annotator.name,
        token: &annotator.token,
        n_rated: statuses.iter().filter(|s| **s == Status::Rated).count(),
        n_items: statuses.len(),
    }
}

fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// `GET /`: where to go.
pub(crate) async fn index() -> Html<String> {
    Html(message_page(
        "HieraRAG annotation",
        "Open the personal link you were given (it looks like /a/…).",
        None,
    ))
}

/// `GET /favicon.ico`: nothing, without the 404 a browser would log.
pub(crate) async fn favicon() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// Anything else: 404.
pub(crate) async fn not_found() -> AppError {
    AppError::NotFound("there is no such page".to_owned())
}

/// `GET /a/<token>`: the first item not yet fully rated, else the "done" overview.
pub(crate) async fn resume(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    let (annotator, ratings) = annotator_and_ratings(&state, token).await?;
    let statuses = statuses(&state, &ratings);
    if let Some(index) = statuses.iter().position(|s| *s != Status::Rated) {
        let position = state.items()[index].position;
        return Ok(see_other(&item_url(&annotator.token, position)));
    }
    Ok(render_overview(&state, &annotator, &statuses, true))
}

/// `GET /a/<token>/items`: every item with its status.
pub(crate) async fn overview(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    let (annotator, ratings) = annotator_and_ratings(&state, token).await?;
    let statuses = statuses(&state, &ratings);
    Ok(render_overview(&state, &annotator, &statuses, false))
}

fn render_overview(
    state: &AppState,
    annotator: &Annotator,
    statuses: &[Status],
    done: bool,
) -> Response {
    let rows: Vec<OverviewRow<'_>> = state
        .items()
        .iter()
        .zip(statuses)
        .enumerate()
        .map(|(index, (item, status))| OverviewRow {
            item,
            index,
            status: *status,
        })
        .collect();
    Html(overview_page(&progress(annotator, statuses), &rows, done)).into_response()
}

fn item_index(state: &AppState, position: &str) -> Result<usize, AppError> {
    position
        .parse::<u32>()
        .ok()
        .and_then(|position| state.index_of(position))
        .ok_or_else(|| AppError::NotFound(format!("there is no item {position}")))
}

/// `GET /a/<token>/item/<position>`: the item with its form, pre-filled.
pub(crate) async fn show_item(
    State(state): State<AppState>,
    Extension(nonce): Extension<Nonce>,
    Path((token, position)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let (annotator, ratings) = annotator_and_ratings(&state, token).await?;
    let index = item_index(&state, &position)?;
    let items = state.items();
    let item = &items[index];
    let statuses = statuses(&state, &ratings);
    let csrf = state.csrf_for(&annotator.token)?;
    let saved = query
        .as_deref()
        .is_some_and(|query| query.split('&').any(|pair| pair == "saved=1"));
    let html = item_page(&ItemPage {
        progress: progress(&annotator, &statuses),
        item,
        index,
        rating: ratings.get(&item.item_id),
        prev: index.checked_sub(1).map(|i| items[i].position),
        next: items.get(index + 1).map(|next| next.position),
        csrf: &csrf,
        nonce: &nonce.0,
        saved,
    });
    Ok(Html(html).into_response())
}

/// The rating form as posted; every field is optional (an unchecked scale is simply absent).
#[derive(Debug, Deserialize)]
pub(crate) struct RatingForm {
    csrf: Option<String>,
    correctness: Option<String>,
    hallucination: Option<String>,
    answerability: Option<String>,
    category: Option<String>,
    note: Option<String>,
    /// `next` (save & next) or `save` (stay on the item).
    action: Option<String>,
}

/// Reads one scale: absent or empty is "not rated"; anything else must be 0..=max.
fn scale(field: &str, value: Option<&str>, max: u8) -> Result<Option<u8>, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => match text.parse::<u8>() {
            Ok(value) if value <= max => Ok(Some(value)),
            _ => Err(format!("{field}: `{text}` is not on the scale 0–{max}")),
        },
    }
}

/// `POST /a/<token>/item/<position>`: checks origin and CSRF value, saves the rating (the item
/// comes from the URL, never from the form) and redirects to the next item, or back with
/// `?saved=1`.
pub(crate) async fn save_item(
    State(state): State<AppState>,
    Path((token, position)): Path<(String, String)>,
    headers: HeaderMap,
    form: Result<Form<RatingForm>, FormRejection>,
) -> Result<Response, AppError> {
    let lookup_token = token.clone();
    let annotator = with_store(&state, move |store| {
        store
            .annotator_by_token(&lookup_token)?
            .ok_or_else(unknown_token)
    })
    .await?;
    check_same_origin(&headers)?;
    let index = item_index(&state, &position)?;
    let item = &state.items()[index];
    let back = item_url(&annotator.token, item.position);
    let Form(form) = form.map_err(|rejection| {
        // Without a readable form there is no CSRF value either.
        AppError::Forbidden(format!(
            "the form could not be read: {}",
            rejection.body_text()
        ))
    })?;
    let csrf_ok = form
        .csrf
        .as_deref()
        .is_some_and(|given| state.csrf_matches(&annotator.token, given));
    if !csrf_ok {
        return Err(AppError::Forbidden(
            "this form is out of date or did not come from this app; reload the page and save \
             again"
                .to_owned(),
        ));
    }
    let invalid = |message: String| AppError::Invalid {
        message,
        back: back.clone(),
    };
    let correctness = scale("correctness", form.correctness.as_deref(), 3).map_err(invalid)?;
    let hallucination =
        scale("hallucination", form.hallucination.as_deref(), 2).map_err(invalid)?;
    let answerability =
        scale("answerability", form.answerability.as_deref(), 3).map_err(invalid)?;
    let category_pick = form.category.filter(|pick| !pick.is_empty());
    if let Some(pick) = &category_pick {
        // Checked here too so the message names no item id (ids may hint at the category).
        if !item.category_task {
            return Err(invalid(
                "category: this item has no category task".to_owned(),
            ));
        }
        if !item.choices.contains(pick) {
            return Err(invalid(format!(
                "category: `{pick}` is not one of the choices"
            )));
        }
    }
    let rating = Rating {
        item_id: item.item_id.clone(),
        annotator: annotator.name.clone(),
        correctness,
        hallucination,
        answerability,
        category_pick,
        // Browsers send textarea line breaks as CRLF.
        note: form.note.map(|note| note.replace("\r\n", "\n")),
        updated_unix_s: now_unix_s(),
    };
    let saved = with_store(&state, move |store| match store.save_rating(&rating) {
        Ok(()) => Ok(Ok(())),
        Err(StoreError::Invalid { field, message }) => Ok(Err(format!("{field}: {message}"))),
        Err(error) => Err(error.into()),
    })
    .await?;
    saved.map_err(invalid)?;
    let location = if form.action.as_deref() == Some("next") {
        match state.items().get(index + 1) {
            Some(next) => item_url(&annotator.token, next.position),
            None => annotator_url(&annotator.token),
        }
    } else {
        format!("{back}?saved=1")
    };
    Ok(see_other(&location))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_accept_their_range_and_blank() {
        assert_eq!(scale("c", None, 3), Ok(None));
        assert_eq!(scale("c", Some(""), 3), Ok(None));
        assert_eq!(scale("c", Some("3"), 3), Ok(Some(3)));
        assert_eq!(scale("h", Some("0"), 2), Ok(Some(0)));
        for bad in ["4", "-1", "x", "1.5", "256"] {
            assert!(scale("c", Some(bad), 3).is_err(), "{bad}");
        }
    }
}
