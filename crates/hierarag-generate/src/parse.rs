//! Tolerant reading of model replies: candidates and filter verdicts.
//!
//! Models asked for JSON answer with a JSON object, a fenced code block, JSON lines, a bare
//! array, prose around an object, or `Question:`/`Answer:` pairs. Each reader tries these in
//! turn and says what it found when nothing fits, so the repair message can quote it.

use hierarag_records::Verdict;
use serde_json::Value;

/// One question and its reference answer, as the generator wrote them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Candidate {
    pub question: String,
    pub answer: String,
}

/// Reads candidates from a reply: a `{"candidates": [...]}` object (or any object holding one
/// array of question/answer objects), a bare array, one question/answer object, a fenced block
/// holding any of these, JSON lines, or `Question:`/`Answer:` pairs.
pub fn parse_candidates(reply: &str) -> Result<Vec<Candidate>, String> {
    let mut found = Vec::new();
    for value in json_values(reply) {
        found.extend(candidates_in(&value));
    }
    if found.is_empty() {
        // A reply cut off by the token limit: keep the candidates that were completed.
        found = complete_objects(reply)
            .iter()
            .filter_map(candidate_from)
            .collect();
    }
    if found.is_empty() {
        found = labelled_pairs(reply);
    }
    let found: Vec<Candidate> = found
        .into_iter()
        .map(|c| Candidate {
            question: c.question.trim().to_string(),
            answer: c.answer.trim().to_string(),
        })
        .filter(|c| !c.question.is_empty() && !c.answer.is_empty())
        .collect();
    if found.is_empty() {
        return Err(format!(
            "no question/answer pair found in the reply ({})",
            describe(reply)
        ));
    }
    Ok(found)
}

/// Reads `n` verdicts from a reply: `{"verdicts": [...]}`, a bare array, or JSON lines; each
/// verdict an object with boolean `faithful`, `fits_category`, `standalone` (strings "yes",
/// "true", "no", "false" are read too) and an optional `reason`. Verdicts may carry a
/// 1-based `candidate` number; otherwise they are taken in order.
pub fn parse_verdicts(reply: &str, n: usize) -> Result<Vec<Verdict>, String> {
    let mut objects = Vec::new();
    for value in json_values(reply) {
        collect_verdict_objects(&value, &mut objects);
    }
    let mut verdicts: Vec<Option<Verdict>> = vec![None; n];
    let mut next = 0;
    for object in objects {
        let Some(verdict) = verdict_from(&object) else {
            continue;
        };
        let slot = object
            .get("candidate")
            .and_then(Value::as_u64)
            .and_then(|c| usize::try_from(c).ok())
            .filter(|&c| (1..=n).contains(&c))
            .map(|c| c - 1)
            .filter(|&c| verdicts[c].is_none())
            .or_else(|| (next..n).find(|&i| verdicts[i].is_none()));
        if let Some(slot) = slot {
            verdicts[slot] = Some(verdict);
            next = slot + 1;
        }
    }
    let missing: Vec<String> = verdicts
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_none())
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no verdict for candidate{} {} in the reply ({})",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            describe(reply)
        ));
    }
    Ok(verdicts.into_iter().map(Option::unwrap).collect())
}

/// Every JSON value the reply holds, best guess first: the whole text, fenced blocks, the
/// outermost `{…}` or `[…]` span, then single lines.
fn json_values(reply: &str) -> Vec<Value> {
    let text = reply.trim();
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return vec![value];
    }
    let mut values = Vec::new();
    for block in fenced_blocks(text) {
        if let Ok(value) = serde_json::from_str::<Value>(block.trim()) {
            values.push(value);
        } else {
            values.extend(json_lines(block));
        }
    }
    if !values.is_empty() {
        return values;
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(start), Some(end)) = (text.find(open), text.rfind(close))
            && start < end
            && let Ok(value) = serde_json::from_str::<Value>(&text[start..=end])
        {
            return vec![value];
        }
    }
    json_lines(text)
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| line.trim().trim_end_matches(','))
        .filter(|line| line.starts_with('{'))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .collect()
}

/// The contents of ``` fenced blocks (with or without a language tag).
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(end) => {
                blocks.push(&body[..end]);
                rest = &body[end + 3..];
            }
            None => {
                blocks.push(body);
                break;
            }
        }
    }
    blocks
}

fn string_field(object: &serde_json::Map<String, Value>, names: &[&str]) -> Option<String> {
    object.iter().find_map(|(key, value)| {
        let key = key.to_ascii_lowercase();
        if names.contains(&key.as_str()) {
            value.as_str().map(str::to_string)
        } else {
            None
        }
    })
}

fn candidate_from(value: &Value) -> Option<Candidate> {
    let object = value.as_object()?;
    Some(Candidate {
        question: string_field(object, &["question", "q"])?,
        answer: string_field(
            object,
            &["answer", "a", "reference_answer", "reference answer"],
        )?,
    })
}

fn candidates_in(value: &Value) -> Vec<Candidate> {
    match value {
        Value::Array(items) => items.iter().filter_map(candidate_from).collect(),
        Value::Object(object) => {
            if let Some(candidate) = candidate_from(value) {
                return vec![candidate];
            }
            // `{"candidates": [...]}` or any other key holding the list.
            object
                .values()
                .filter(|v| v.is_array())
                .map(candidates_in)
                .find(|found| !found.is_empty())
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

fn collect_verdict_objects(value: &Value, out: &mut Vec<serde_json::Map<String, Value>>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| collect_verdict_objects(v, out)),
        Value::Object(object) => {
            if object.contains_key("faithful") || object.contains_key("standalone") {
                out.push(object.clone());
            } else {
                object
                    .values()
                    .filter(|v| v.is_array() || v.is_object())
                    .for_each(|v| collect_verdict_objects(v, out));
            }
        }
        _ => {}
    }
}

fn flag(object: &serde_json::Map<String, Value>, name: &str) -> Option<bool> {
    match object.get(name)? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "pass" => Some(true),
            "false" | "no" | "n" | "fail" => Some(false),
            _ => None,
        },
        Value::Number(n) => n.as_u64().map(|n| n != 0),
        _ => None,
    }
}

fn verdict_from(object: &serde_json::Map<String, Value>) -> Option<Verdict> {
    Some(Verdict {
        faithful: flag(object, "faithful")?,
        fits_category: flag(object, "fits_category")?,
        standalone: flag(object, "standalone")?,
        reason: object
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    })
}

/// Every complete, parseable `{…}` object in `text` that holds no other object, found by
/// a scan that respects JSON strings; used on replies truncated mid-document.
fn complete_objects(text: &str) -> Vec<Value> {
    let bytes = text.as_bytes();
    let mut objects = Vec::new();
    let mut starts: Vec<(usize, bool)> = Vec::new(); // (start, holds an object)
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => {
                if let Some(last) = starts.last_mut() {
                    last.1 = true;
                }
                starts.push((i, false));
            }
            b'}' => {
                if let Some((start, nested)) = starts.pop()
                    && !nested
                    && let Ok(value) = serde_json::from_str::<Value>(&text[start..=i])
                {
                    objects.push(value);
                }
            }
            _ => {}
        }
    }
    objects
}

/// `Question: …` / `Answer: …` pairs (also `Q:`/`A:`, numbered, any case); an answer runs to
/// the next question.
fn labelled_pairs(reply: &str) -> Vec<Candidate> {
    let mut pairs = Vec::new();
    let mut question: Option<String> = None;
    let mut answer: Option<String> = None;
    let flush = |q: &mut Option<String>, a: &mut Option<String>, pairs: &mut Vec<Candidate>| {
        if let (Some(question), Some(answer)) = (q.take(), a.take()) {
            pairs.push(Candidate { question, answer });
        }
    };
    for line in reply.lines() {
        let trimmed = line
            .trim()
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')' || c == '-')
            .trim()
            .trim_start_matches("**")
            .trim();
        if let Some(rest) = strip_label(trimmed, &["question", "q"]) {
            flush(&mut question, &mut answer, &mut pairs);
            question = Some(rest.to_string());
        } else if let Some(rest) = strip_label(trimmed, &["answer", "a"]) {
            if question.is_some() {
                answer = Some(rest.to_string());
            }
        } else if let Some(answer) = answer.as_mut()
            && !trimmed.is_empty()
        {
            answer.push(' ');
            answer.push_str(trimmed);
        }
    }
    flush(&mut question, &mut answer, &mut pairs);
    pairs
}

fn strip_label<'a>(line: &'a str, labels: &[&str]) -> Option<&'a str> {
    let colon = line.find(':')?;
    let label = line[..colon]
        .trim()
        .trim_end_matches("**")
        .trim()
        .to_ascii_lowercase();
    let label = label.trim_end_matches(|c: char| c.is_ascii_digit()).trim();
    labels
        .contains(&label)
        .then(|| line[colon + 1..].trim().trim_start_matches("**").trim())
}

/// A short description of a reply for error messages.
fn describe(reply: &str) -> String {
    let flat: String = reply.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return "the reply is empty".to_string();
    }
    let shown: String = flat.chars().take(120).collect();
    if shown.len() < flat.len() {
        format!("starts {shown:?}…")
    } else {
        format!("{shown:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(q: &str, a: &str) -> Candidate {
        Candidate {
            question: q.into(),
            answer: a.into(),
        }
    }

    #[test]
    fn reads_the_requested_object() {
        let reply = r#"{"candidates":[{"question":"Who?","answer":"Ada"},{"question":"When?","answer":"1843"}]}"#;
        assert_eq!(
            parse_candidates(reply).unwrap(),
            vec![pair("Who?", "Ada"), pair("When?", "1843")]
        );
    }

    #[test]
    fn reads_a_fenced_block_with_prose_around_it() {
        let reply = "Sure! Here they are:\n```json\n{\"candidates\": [{\"Question\": \"Who?\", \"Answer\": \"Ada\"}]}\n```\nHope this helps.";
        assert_eq!(parse_candidates(reply).unwrap(), vec![pair("Who?", "Ada")]);
    }

    #[test]
    fn reads_a_bare_array_an_embedded_object_and_json_lines() {
        assert_eq!(
            parse_candidates(r#"[{"q":"Who?","a":"Ada"}]"#).unwrap(),
            vec![pair("Who?", "Ada")]
        );
        assert_eq!(
            parse_candidates(r#"Output: {"question":"Who?","answer":"Ada"} done"#).unwrap(),
            vec![pair("Who?", "Ada")]
        );
        let lines = "{\"question\":\"Who?\",\"answer\":\"Ada\"},\n{\"question\":\"When?\",\"answer\":\"1843\"}\n";
        assert_eq!(
            parse_candidates(lines).unwrap(),
            vec![pair("Who?", "Ada"), pair("When?", "1843")]
        );
    }

    #[test]
    fn keeps_the_complete_candidates_of_a_truncated_reply() {
        let reply = r#"{"candidates": [{"question": "Who {wrote} it?", "answer": "Ada \"the\" first"}, {"question": "When did she wri"#;
        assert_eq!(
            parse_candidates(reply).unwrap(),
            vec![pair("Who {wrote} it?", "Ada \"the\" first")]
        );
        assert!(parse_candidates(r#"{"candidates": [{"question": "Who"#).is_err());
    }

    #[test]
    fn reads_labelled_pairs() {
        let reply = "1. Question: Who wrote the first program?\nAnswer: Ada Lovelace,\nin 1843.\n\n2. **Question:** When?\n**Answer:** 1843";
        assert_eq!(
            parse_candidates(reply).unwrap(),
            vec![
                pair("Who wrote the first program?", "Ada Lovelace, in 1843."),
                pair("When?", "1843")
            ]
        );
    }

    #[test]
    fn drops_empty_pairs_and_explains_failure() {
        let error =
            parse_candidates(r#"{"candidates":[{"question":" ","answer":"x"}]}"#).unwrap_err();
        assert!(error.contains("no question/answer pair"), "{error}");
        assert!(parse_candidates("").unwrap_err().contains("empty"));
        let error = parse_candidates("I cannot do that.").unwrap_err();
        assert!(error.contains("I cannot do that."), "{error}");
    }

    #[test]
    fn reads_verdicts_in_order_or_by_number() {
        let reply = r#"{"verdicts":[{"candidate":2,"faithful":true,"fits_category":"no","standalone":true,"reason":"too broad"},{"candidate":1,"faithful":true,"fits_category":true,"standalone":true}]}"#;
        let verdicts = parse_verdicts(reply, 2).unwrap();
        assert!(verdicts[0].passed());
        assert!(!verdicts[1].passed());
        assert_eq!(
            verdicts[1].failure(),
            "does not fit the category (filter: too broad)"
        );
        let error = parse_verdicts(reply, 3).unwrap_err();
        assert!(error.contains("candidate 3"), "{error}");
    }
}
