//! What the benchmarks' mock servers share: a timer thread that releases replies at their
//! deadlines, the parsing of a request's head, the reply to a request of each stage, and the
//! plan items with their documents. Each example uses part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use hierarag_plan::{CategoryRef, DesignKind, PlanItem};
use hierarag_taxonomy::Granularity;
use serde_json::{Value, json};

use tokio::sync::oneshot;

/// Releases replies at their deadlines. With one fixed delay, deadlines come in the order the
/// requests arrived, so a queue serves and the thread never needs waking for a new one unless
/// it was idle.
#[derive(Default)]
pub struct Timer {
    alarms: Mutex<VecDeque<(Instant, oneshot::Sender<()>)>>,
    idle: Condvar,
}

impl Timer {
    pub fn set(&self, deadline: Instant, waker: oneshot::Sender<()>) {
        let mut alarms = self.alarms.lock().unwrap();
        alarms.push_back((deadline, waker));
        if alarms.len() == 1 {
            self.idle.notify_one();
        }
    }

    /// Sleeps until the first deadline (within the kernel's timer slack, tens of
    /// microseconds), then wakes every alarm that is due.
    pub fn run(&self) {
        let mut alarms = self.alarms.lock().unwrap();
        loop {
            let Some(&(deadline, _)) = alarms.front() else {
                alarms = self.idle.wait(alarms).unwrap();
                continue;
            };
            let now = Instant::now();
            if deadline > now {
                drop(alarms);
                std::thread::sleep(deadline - now);
                alarms = self.alarms.lock().unwrap();
                continue;
            }
            while alarms.front().is_some_and(|(deadline, _)| *deadline <= now) {
                let (_, waker) = alarms.pop_front().expect("looked at");
                let _ = waker.send(());
            }
        }
    }
}

/// Where the headers of a request end, and the length of its body.
pub fn parse_head(buffer: &[u8]) -> Option<(usize, usize)> {
    let end = buffer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buffer[..end]).expect("ASCII headers");
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().expect("a length"))
        })
        .unwrap_or(0);
    Some((end, length))
}

/// The reply text to a request body (JSON, as sent), found by looking for markers in it
/// (cheaper than parsing it): verdicts for the filter, three candidates for the generator, a
/// sentence for the answerer.
pub fn reply_text(body: &str) -> String {
    if body.contains("strict reviewer") {
        // The user message numbers the candidates as "Candidate 1", "Candidate 2", …
        let n = body.matches("Candidate ").count();
        let verdicts: Vec<Value> = (1..=n)
            .map(|c| json!({"candidate": c, "faithful": true, "fits_category": true, "standalone": true, "reason": ""}))
            .collect();
        return json!({ "verdicts": verdicts }).to_string();
    }
    if body.contains("question-answer pairs") {
        // In the JSON body the document's first line starts after `<document number=\"1\">\n`.
        let marker = body
            .split(r#"<document number=\"1\">\n"#)
            .nth(1)
            .unwrap_or("x");
        let word = marker.split_whitespace().next().unwrap_or("x");
        let candidates: Vec<Value> = (0..3)
            .map(|i| json!({"question": format!("Question {i} about {word}?"), "answer": format!("Answer {i}")}))
            .collect();
        return json!({ "candidates": candidates }).to_string();
    }
    "An answer from the first passage.".into()
}

/// `items` plan items, one document each, and the documents' texts.
pub fn plan_and_documents(items: usize) -> (Vec<PlanItem>, HashMap<String, String>) {
    let plan = (0..items)
        .map(|n| PlanItem {
            item_id: format!("bench-{n:06}"),
            design: DesignKind::Rq1,
            set: "qc".into(),
            doc_ids: vec![format!("doc{n}")],
            categories: vec![CategoryRef {
                dimension: "qc".into(),
                level: Granularity::Coarse,
                category: "simple".into(),
            }],
            persona: BTreeMap::from([("expertise".to_string(), "novice".to_string())]),
            seed: n as u64,
        })
        .collect();
    let documents = (0..items)
        .map(|n| {
            (
                format!("doc{n}"),
                format!("Document{n} is about a river and a castle and a town. ").repeat(20),
            )
        })
        .collect();
    (plan, documents)
}
