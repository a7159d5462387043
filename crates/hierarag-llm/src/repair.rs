//! The one call → parse → repair loop of every role that reads a structured reply (the
//! generator, the filter, the judge, the tagger): a reply that does not parse goes back to the
//! model with a message saying what was wrong, a bounded number of times.

use crate::{ChatClient, ChatRequest, LlmError, Message};

/// A reply still unreadable after every repair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// What the last parse said.
    pub problem: String,
    /// Repair messages sent before giving up.
    pub repairs: u32,
}

impl Unreadable {
    /// `"{problem} (after N repair message(s))"`.
    pub fn describe(&self) -> String {
        format!(
            "{} (after {} repair message{})",
            self.problem,
            self.repairs,
            if self.repairs == 1 { "" } else { "s" }
        )
    }
}

/// Sends `request` with `client` and parses the reply's text with `parse`; while it cannot be
/// parsed and repairs remain, the reply (as the assistant's turn) and `repair(problem)` (as
/// the user's) are added to the conversation and it is sent again. `Err` when a call fails
/// (after the client's own retries); `Ok(Err(..))` when the reply stays unreadable.
pub async fn complete_parsed<T>(
    client: &ChatClient,
    mut request: ChatRequest,
    repairs: u32,
    parse: impl Fn(&str) -> Result<T, String>,
    repair: impl Fn(&str) -> Message,
) -> Result<Result<T, Unreadable>, LlmError> {
    let mut left = repairs;
    loop {
        let text = client.complete(&request).await?.completion.text;
        match parse(&text) {
            Ok(value) => return Ok(Ok(value)),
            Err(problem) if left > 0 => {
                left -= 1;
                request.messages.push(Message::assistant(text));
                request.messages.push(repair(&problem));
            }
            Err(problem) => return Ok(Err(Unreadable { problem, repairs })),
        }
    }
}
