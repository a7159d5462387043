//! A RAG service behind HTTP (docs/design.md, "Systems"): a question put into a JSON body
//! template, the answer and contexts read from the reply by JSON Pointers. The calls themselves
//! are [`hierarag_llm::JsonClient`]'s, with the LLM layer's limit, retries, cache and usage, a
//! bound on a reply's size, redirects kept to the service's origin and header values kept out
//! of every error.

use std::sync::Arc;

use hierarag_llm::{ClientSettings, JsonClient, JsonReply, LlmError, UsageSummary};
use serde_json::Value;

use crate::command::{Context, Reply};

/// The placeholders a body template may hold.
pub const PLACEHOLDERS: [&str; 2] = ["question", "id"];

/// How much of a reply an error shows.
const SHOWN_REPLY_CHARS: usize = 300;

/// Where the answer and its contexts are in a reply, as JSON Pointers (RFC 6901).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyMapping {
    /// The answer text, e.g. `/answer`.
    pub answer: String,
    /// A list of contexts, each a string or an object; `None` when the service gives none.
    pub contexts: Option<String>,
    /// Inside a context object, its text (e.g. `/text`).
    pub context_text: Option<String>,
    /// Inside a context object, its document's id (e.g. `/metadata/doc_id`); a number is
    /// taken as its decimal text.
    pub context_doc_id: Option<String>,
}

/// How to ask the service.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Names the service in errors and the usage (the system's name).
    pub name: String,
    pub url: String,
    /// Header names and values as sent (`${VAR}` already replaced; see [`expand_env`]).
    pub headers: Vec<(String, String)>,
    /// The JSON body, with `{question}` and `{id}` in its strings.
    pub body: Value,
    pub mapping: ReplyMapping,
    pub client: ClientSettings,
    /// The longest reply read, in bytes ([`crate::DEFAULT_MAX_REPLY_BYTES`] unless configured):
    /// a longer one fails its question, read no further and not cached.
    pub max_reply_bytes: usize,
}

/// The service's answer to one question, and how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAnswer {
    pub reply: Reply,
    pub cached: bool,
    pub attempts: u32,
    pub latency_ms: f64,
}

/// A RAG service behind HTTP. Cheap to clone: clones share the client.
#[derive(Debug, Clone)]
pub struct HttpSystem {
    client: JsonClient,
    body: Arc<Value>,
    mapping: Arc<ReplyMapping>,
}

impl HttpSystem {
    /// Checks the template and the pointers and opens the client (and its cache).
    pub fn new(settings: HttpSettings) -> Result<HttpSystem, LlmError> {
        let client = JsonClient::new(
            &settings.name,
            &settings.url,
            &settings.headers,
            &settings.client,
            settings.max_reply_bytes,
        )?;
        Ok(HttpSystem {
            client,
            body: Arc::new(settings.body),
            mapping: Arc::new(settings.mapping),
        })
    }

    /// Asks one question. A reply that does not fit the mapping is [`LlmError::Reply`], naming
    /// the pointer and showing the start of the reply; one over the size limit, or a redirect
    /// to another origin, is [`LlmError::Call`] naming the limit or the origin. No error holds
    /// a header value. The request, the reading of its reply
    /// and its caching run as a task of their own (on a multi-threaded runtime, beside the
    /// caller's other questions: many replies that arrive together are read in parallel); it
    /// is stopped if this future is dropped.
    pub async fn ask(&self, id: &str, question: &str) -> Result<HttpAnswer, LlmError> {
        let body = fill_template(&self.body, &[("question", question), ("id", id)]);
        let system = self.clone();
        let mut task = AbortOnDrop(tokio::spawn(async move {
            system
                .client
                .post(&body, |reply| read_reply(reply, &system.mapping))
                .await
        }));
        let JsonReply {
            value,
            cached,
            attempts,
            latency_ms,
        } = match (&mut task.0).await {
            Ok(outcome) => outcome?,
            Err(error) => match error.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(error) => panic!("a request task ended without finishing: {error}"),
            },
        };
        Ok(HttpAnswer {
            reply: value,
            cached,
            attempts,
            latency_ms,
        })
    }

    pub fn url(&self) -> &str {
        self.client.url()
    }

    pub fn usage(&self) -> UsageSummary {
        self.client.usage()
    }

    /// The refusal (HTTP 401, 403 or 404) that stopped the service's client, if one came.
    pub fn refusal(&self) -> Option<LlmError> {
        self.client.refusal()
    }
}

/// A task stopped when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reads the answer and contexts out of `reply`; an error names the pointer that failed and
/// shows the start of the reply.
pub fn read_reply(reply: &Value, mapping: &ReplyMapping) -> Result<Reply, String> {
    let mismatch = |what: String| {
        let text = reply.to_string();
        let shown: String = text.chars().take(SHOWN_REPLY_CHARS).collect();
        let more = if text.chars().count() > SHOWN_REPLY_CHARS {
            "…"
        } else {
            ""
        };
        format!("the reply does not match the mapping: {what}; the reply begins: {shown}{more}")
    };
    let answer = match reply.pointer(&mapping.answer) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => {
            return Err(mismatch(format!(
                "answer = {:?} is {}, not a string",
                mapping.answer,
                kind(other)
            )));
        }
        None => {
            return Err(mismatch(format!(
                "answer = {:?} is not in the reply",
                mapping.answer
            )));
        }
    };
    let Some(pointer) = &mapping.contexts else {
        return Ok(Reply {
            answer,
            contexts: Vec::new(),
        });
    };
    let items = match reply.pointer(pointer) {
        Some(Value::Array(items)) => items,
        Some(Value::Null) => &Vec::new(),
        Some(other) => {
            return Err(mismatch(format!(
                "contexts = {pointer:?} is {}, not a list",
                kind(other)
            )));
        }
        None => {
            return Err(mismatch(format!(
                "contexts = {pointer:?} is not in the reply"
            )));
        }
    };
    let mut contexts = Vec::with_capacity(items.len());
    for (n, item) in items.iter().enumerate() {
        let context = match item {
            Value::String(text) => Context {
                doc_id: None,
                text: Some(text.clone()),
            },
            Value::Object(_) => {
                let field =
                    |key: &str, pointer: &Option<String>| -> Result<Option<String>, String> {
                        let Some(pointer) = pointer else {
                            return Ok(None);
                        };
                        match item.pointer(pointer) {
                            None | Some(Value::Null) => Ok(None),
                            Some(Value::String(text)) => Ok(Some(text.clone())),
                            Some(Value::Number(number)) => Ok(Some(number.to_string())),
                            Some(other) => Err(mismatch(format!(
                                "{key} = {pointer:?} of context {n} is {}, not a string",
                                kind(other)
                            ))),
                        }
                    };
                let context = Context {
                    text: field("context_text", &mapping.context_text)?,
                    doc_id: field("context_doc_id", &mapping.context_doc_id)?,
                };
                if context.text.is_none() && context.doc_id.is_none() {
                    let named: Vec<String> = [
                        ("context_text", &mapping.context_text),
                        ("context_doc_id", &mapping.context_doc_id),
                    ]
                    .into_iter()
                    .filter_map(|(key, p)| p.as_ref().map(|p| format!("{key} = {p:?}")))
                    .collect();
                    return Err(mismatch(if named.is_empty() {
                        format!(
                            "context {n} is an object; set context_text and/or context_doc_id \
to say where its text and document id are"
                        )
                    } else {
                        format!("context {n} has neither {}", named.join(" nor "))
                    }));
                }
                context
            }
            other => {
                return Err(mismatch(format!(
                    "context {n} of {pointer:?} is {}, not a string or an object",
                    kind(other)
                )));
            }
        };
        contexts.push(context);
    }
    Ok(Reply { answer, contexts })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Checks a JSON Pointer's syntax: empty (the whole value) or `/`-separated tokens, with `~`
/// only as `~0` or `~1`.
pub fn check_pointer(pointer: &str) -> Result<(), String> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(format!(
            "{pointer:?} is not a JSON Pointer: it starts with `/`, e.g. \"/{pointer}\""
        ));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "{pointer:?}: `~` is written `~0` and `/` inside a key `~1` in a JSON Pointer"
            ));
        }
    }
    Ok(())
}

/// The placeholders of a template's strings, each once, in order of appearance; an error for a
/// placeholder that is not one of `known`. `{{` and `}}` stand for literal braces; a brace that
/// does not open a `{name}` is literal too.
pub fn template_placeholders(template: &Value, known: &[&str]) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    let mut problem = None;
    walk_strings(template, &mut |text| {
        for piece in pieces(text) {
            if let Piece::Placeholder(name) = piece {
                if !known.contains(&name) && problem.is_none() {
                    problem = Some(format!(
                        "{{{name}}} is not a placeholder (known: {}; write {{{{ and }}}} for \
literal braces)",
                        known
                            .iter()
                            .map(|k| format!("{{{k}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if !found.iter().any(|f| f == name) {
                    found.push(name.to_string());
                }
            }
        }
    });
    match problem {
        Some(problem) => Err(problem),
        None => Ok(found),
    }
}

/// The template with each `{name}` in its strings replaced by the value of `name` in `values`.
/// A value always stays inside the string it replaces into, so a question can never change the
/// body's structure.
pub fn fill_template(template: &Value, values: &[(&str, &str)]) -> Value {
    match template {
        Value::String(text) => {
            let mut out = String::with_capacity(text.len());
            for piece in pieces(text) {
                match piece {
                    Piece::Text(text) => out.push_str(text),
                    Piece::Placeholder(name) => match values.iter().find(|(k, _)| *k == name) {
                        Some((_, value)) => out.push_str(value),
                        None => {
                            out.push('{');
                            out.push_str(name);
                            out.push('}');
                        }
                    },
                }
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| fill_template(item, values))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), fill_template(value, values)))
                .collect(),
        ),
        scalar => scalar.clone(),
    }
}

fn walk_strings<'a>(value: &'a Value, visit: &mut impl FnMut(&'a str)) {
    match value {
        Value::String(text) => visit(text),
        Value::Array(items) => items.iter().for_each(|item| walk_strings(item, visit)),
        Value::Object(map) => map.values().for_each(|item| walk_strings(item, visit)),
        _ => {}
    }
}

#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

/// A template string cut into literal text and `{name}` placeholders (`name`: a letter or `_`,
/// then letters, digits or `_`).
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let bytes = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let escaped = matches!(
            (bytes[i], bytes.get(i + 1)),
            (b'{', Some(b'{')) | (b'}', Some(b'}'))
        );
        if escaped {
            pieces.push(Piece::Text(&text[start..=i]));
            i += 2;
            start = i;
            continue;
        }
        if bytes[i] == b'{' {
            let name_len = bytes[i + 1..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            let first_ok = bytes
                .get(i + 1)
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_');
            if first_ok && bytes.get(i + 1 + name_len) == Some(&b'}') {
                if start < i {
                    pieces.push(Piece::Text(&text[start..i]));
                }
                pieces.push(Piece::Placeholder(&text[i + 1..i + 1 + name_len]));
                i += name_len + 2;
                start = i;
                continue;
            }
        }
        i += 1;
    }
    if start < text.len() {
        pieces.push(Piece::Text(&text[start..]));
    }
    pieces
}

/// Replaces each `${NAME}` in `value` with `lookup(NAME)`; `$$` is a literal `$`. An error
/// names the variable that is not set, or the malformed reference (never the value).
pub fn expand_env(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                return Err("`${` without its `}`".to_string());
            };
            let name = &tail[..end];
            let valid = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "${{{name}}}: a variable's name is letters, digits and `_`"
                ));
            }
            match lookup(name) {
                Some(found) => out.push_str(&found),
                None => {
                    return Err(format!(
                        "the environment variable {name} is not set (it fills ${{{name}}})"
                    ));
                }
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mapping() -> ReplyMapping {
        ReplyMapping {
            answer: "/answer".into(),
            contexts: Some("/sources".into()),
            context_text: Some("/text".into()),
            context_doc_id: Some("/metadata/doc_id".into()),
        }
    }

    #[test]
    fn templates_fill_strings_and_keep_their_structure() {
        let template = json!({
            "query": "{question}", "k": 10, "meta": {"qid": "{id}", "tags": ["x", "{id}-{id}"]},
            "note": "literal {{question}} and {not a placeholder} and {", "flag": true
        });
        assert_eq!(
            template_placeholders(&template, &PLACEHOLDERS).unwrap(),
            ["question", "id"]
        );
        let hostile = r#"", "k": 99, "x": "}"#;
        let filled = fill_template(&template, &[("question", hostile), ("id", "q7")]);
        assert_eq!(
            filled,
            json!({
                "query": hostile, "k": 10, "meta": {"qid": "q7", "tags": ["x", "q7-q7"]},
                "note": "literal {question} and {not a placeholder} and {", "flag": true
            })
        );
        let error = template_placeholders(&json!({"q": "{quesiton}"}), &PLACEHOLDERS).unwrap_err();
        assert!(
            error.contains("{quesiton}") && error.contains("{question}, {id}"),
            "{error}"
        );
    }

    #[test]
    fn replies_map_to_answers_and_contexts() {
        let reply = json!({
            "answer": "Paris",
            "sources": [
                {"text": "Paris is the capital.", "metadata": {"doc_id": "d1"}},
                {"metadata": {"doc_id": 42}},
                {"text": "no id", "metadata": {}},
            ]
        });
        let read = read_reply(&reply, &mapping()).unwrap();
        assert_eq!(read.answer, "Paris");
        let pairs: Vec<(Option<&str>, Option<&str>)> = read
            .contexts
            .iter()
            .map(|c| (c.doc_id.as_deref(), c.text.as_deref()))
            .collect();
        assert_eq!(
            pairs,
            [
                (Some("d1"), Some("Paris is the capital.")),
                (Some("42"), None),
                (None, Some("no id")),
            ]
        );
        let strings = json!({"answer": "a", "sources": ["t1", "t2"]});
        let read = read_reply(&strings, &mapping()).unwrap();
        assert_eq!(read.contexts[1].text.as_deref(), Some("t2"));
        let plain = ReplyMapping {
            contexts: None,
            ..mapping()
        };
        assert!(read_reply(&strings, &plain).unwrap().contexts.is_empty());
    }

    #[test]
    fn a_reply_that_does_not_fit_names_the_pointer_and_shows_its_start() {
        let long = "x".repeat(1000);
        let cases = [
            (
                json!({"result": long}),
                "answer = \"/answer\" is not in the reply",
            ),
            (
                json!({"answer": 3}),
                "answer = \"/answer\" is a number, not a string",
            ),
            (
                json!({"answer": "a"}),
                "contexts = \"/sources\" is not in the reply",
            ),
            (
                json!({"answer": "a", "sources": {}}),
                "is an object, not a list",
            ),
            (
                json!({"answer": "a", "sources": [1]}),
                "context 0 of \"/sources\" is a number",
            ),
            (
                json!({"answer": "a", "sources": [{"body": "t"}]}),
                "context 0 has neither context_text = \"/text\" nor context_doc_id",
            ),
            (
                json!({"answer": "a", "sources": [{"text": ["t"]}]}),
                "context_text = \"/text\" of context 0 is a list",
            ),
        ];
        for (reply, expected) in cases {
            let error = read_reply(&reply, &mapping()).unwrap_err();
            assert!(error.contains(expected), "{error}");
            assert!(error.contains("the reply begins: {"), "{error}");
            assert!(error.chars().count() < 600, "{error}");
        }
    }

    #[test]
    fn pointers_are_checked() {
        for good in ["", "/answer", "/a/0/b", "/a~1b", "/m~0n"] {
            check_pointer(good).unwrap();
        }
        for bad in ["answer", "/a~2", "/a~"] {
            assert!(check_pointer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn env_references_expand_and_a_missing_one_is_named() {
        let lookup = |name: &str| (name == "RAG_TOKEN").then(|| "t0k".to_string());
        assert_eq!(
            expand_env("Bearer ${RAG_TOKEN}", lookup).unwrap(),
            "Bearer t0k"
        );
        assert_eq!(expand_env("cost $5 $$ ok", lookup).unwrap(), "cost $5 $ ok");
        let missing = expand_env("${NOPE}", lookup).unwrap_err();
        assert!(missing.contains("NOPE is not set"), "{missing}");
        assert!(expand_env("${RAG_TOKEN", lookup).is_err());
        assert!(expand_env("${1X}", lookup).is_err());
    }
}
