//! What model calls cost, below every crate that plans, estimates or makes them.
//!
//! - [`TOKENS_PER_WORD`]: the one words-to-tokens rate of the plan's estimate, the run's
//!   `--dry-run` estimate and the budget's reservations;
//! - [`Prices`]: a role's prices of a million prompt and completion tokens;
//! - [`Budget`]: a run's spending limit (`[budget]`). Every client of the run reserves a call's
//!   largest cost before sending it and settles the real cost after, so that the call that
//!   would pass the limit is never sent. The first refused reservation stops the client as a
//!   refused endpoint does: the stage finishes the calls in flight, keeps every finished record
//!   and stops.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// Subword tokens per whitespace word, for English web text with common BPE vocabularies.
pub const TOKENS_PER_WORD: f64 = 1.35;

/// Prices of a million prompt and completion tokens (a role's `price_*_per_mtok`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Prices {
    pub prompt_per_mtok: f64,
    pub completion_per_mtok: f64,
}

impl Prices {
    fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (self.prompt_per_mtok * prompt_tokens as f64
            + self.completion_per_mtok * completion_tokens as f64)
            / 1e6
    }
}

/// What has been spent and what is reserved by calls in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Spend {
    cost: f64,
    tokens: u64,
    reserved_cost: f64,
    reserved_tokens: u64,
}

/// The limit shared by every client of a run.
#[derive(Debug)]
pub struct Budget {
    max_cost: Option<f64>,
    max_tokens: Option<u64>,
    spend: Mutex<Spend>,
    /// Why the budget stopped the run, once it has.
    stopped: OnceLock<String>,
    /// Where every reservation and what it cost is written as it happens ([`Budget::journaled`]).
    journal: Option<Mutex<Journal>>,
}

/// The run directory's spending journal (`spend.jsonl`): a line when a reservation is made
/// (`r`, its id and largest cost), one when it is settled (`s`, what the call cost: 0 when it
/// was given back), and `spent` lines for costs never reserved for in this process. A process
/// killed with calls in flight leaves their reservations without a settlement: the next
/// process counts them at their largest cost, since the provider may have billed them.
#[derive(Debug)]
struct Journal {
    file: File,
    /// This process's prefix of reservation ids, and the next number.
    prefix: String,
    next: u64,
}

/// A call's reservation, given back when the call ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reservation {
    cost: f64,
    tokens: u64,
    /// Its number in the journal, when there is one.
    id: u64,
}

impl Budget {
    /// A limit of `max_cost` (in the prices' currency) and/or `max_tokens`, with what earlier
    /// runs of the same directory spent already counted.
    pub fn new(
        max_cost: Option<f64>,
        max_tokens: Option<u64>,
        spent_cost: f64,
        spent_tokens: u64,
    ) -> Budget {
        Budget {
            max_cost,
            max_tokens,
            spend: Mutex::new(Spend {
                cost: spent_cost,
                tokens: spent_tokens,
                ..Spend::default()
            }),
            stopped: OnceLock::new(),
            journal: None,
        }
    }

    /// [`Budget::new`] with the spending journal at `path` (`RUN/spend.jsonl`): what its lines
    /// say was spent counts (a reservation a killed process left unsettled at its largest
    /// cost), and every reservation and settlement from now on is written to it as it happens,
    /// so that a run killed mid-stage passes on what it spent. A new journal starts with
    /// `carried` (what the run directory's manifests say earlier runs spent).
    pub fn journaled(
        max_cost: Option<f64>,
        max_tokens: Option<u64>,
        path: &Path,
        carried: (f64, u64),
    ) -> std::io::Result<Budget> {
        let existing = match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let (cost, tokens) = match &existing {
            Some(text) => journal_total(text),
            None => {
                writeln!(
                    file,
                    "{{\"spent\":\"carried\",\"tokens\":{},\"cost\":{:?}}}",
                    carried.1, carried.0
                )?;
                carried
            }
        };
        let prefix = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let mut budget = Budget::new(max_cost, max_tokens, cost, tokens);
        budget.journal = Some(Mutex::new(Journal {
            file,
            prefix,
            next: 0,
        }));
        Ok(budget)
    }

    /// Writes one line to the journal, if there is one (best effort: a failed write leaves
    /// the next process a reservation to count at its largest cost, or one cost unknown).
    fn record(&self, line: impl FnOnce(&str) -> String) {
        if let Some(journal) = &self.journal {
            let journal = journal.lock().unwrap_or_else(|e| e.into_inner());
            let mut file = &journal.file;
            let _ = file.write_all(line(&journal.prefix).as_bytes());
        }
    }

    fn next_id(&self) -> u64 {
        self.journal.as_ref().map_or(0, |journal| {
            let mut journal = journal.lock().unwrap_or_else(|e| e.into_inner());
            journal.next += 1;
            journal.next
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spend> {
        self.spend.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves the largest cost of a call of at most `prompt` prompt tokens and `reply`
    /// completion tokens at `prices`; refused (and the budget stopped) when it would pass the
    /// limit with what is spent and reserved.
    pub fn reserve(&self, prompt: u64, reply: u64, prices: &Prices) -> Result<Reservation, String> {
        if let Some(reason) = self.stopped.get() {
            return Err(reason.clone());
        }
        let tokens = prompt + reply;
        let cost = prices.cost(prompt, reply);
        let mut spend = self.lock();
        let over_cost = self
            .max_cost
            .filter(|max| spend.cost + spend.reserved_cost + cost > *max);
        let over_tokens = self
            .max_tokens
            .filter(|max| spend.tokens + spend.reserved_tokens + tokens > *max);
        if over_cost.is_some() || over_tokens.is_some() {
            let reason = match (over_cost, over_tokens) {
                (Some(max), _) => format!(
                    "budget: the next call (up to {cost:.4}) would pass [budget] max_cost = {max} \
(spent {:.4}, in flight {:.4})",
                    spend.cost, spend.reserved_cost
                ),
                (None, Some(max)) => format!(
                    "budget: the next call (up to {tokens} tokens) would pass [budget] max_tokens = \
{max} (spent {}, in flight {})",
                    spend.tokens, spend.reserved_tokens
                ),
                (None, None) => unreachable!(),
            };
            let _ = self.stopped.set(reason.clone());
            return Err(reason);
        }
        spend.reserved_cost += cost;
        spend.reserved_tokens += tokens;
        drop(spend);
        let id = self.next_id();
        self.record(|prefix| {
            format!("{{\"r\":\"{prefix}-{id}\",\"tokens\":{tokens},\"cost\":{cost:?}}}\n")
        });
        Ok(Reservation { cost, tokens, id })
    }

    /// Writes reservation `reservation`'s settlement at `tokens` and `cost`.
    fn record_settled(&self, reservation: &Reservation, tokens: u64, cost: f64) {
        let id = reservation.id;
        self.record(|prefix| {
            format!("{{\"s\":\"{prefix}-{id}\",\"tokens\":{tokens},\"cost\":{cost:?}}}\n")
        });
    }

    /// Gives `reservation` back and counts what the call really used.
    pub fn settle(
        &self,
        reservation: Reservation,
        prompt_tokens: u64,
        completion_tokens: u64,
        prices: &Prices,
    ) {
        let cost = prices.cost(prompt_tokens, completion_tokens);
        let tokens = prompt_tokens + completion_tokens;
        let mut spend = self.lock();
        spend.reserved_cost = (spend.reserved_cost - reservation.cost).max(0.0);
        spend.reserved_tokens = spend.reserved_tokens.saturating_sub(reservation.tokens);
        spend.cost += cost;
        spend.tokens += tokens;
        drop(spend);
        self.record_settled(&reservation, tokens, cost);
    }

    /// Counts `reservation` as spent whole: an attempt that failed after the provider may have
    /// done the work (a timeout, a cut reply, a server error), or results that were never
    /// reserved for in this process (a batch re-attached after a crash).
    pub fn charge(&self, reservation: Reservation) {
        let mut spend = self.lock();
        spend.reserved_cost = (spend.reserved_cost - reservation.cost).max(0.0);
        spend.reserved_tokens = spend.reserved_tokens.saturating_sub(reservation.tokens);
        spend.cost += reservation.cost;
        spend.tokens += reservation.tokens;
        drop(spend);
        self.record_settled(&reservation, reservation.tokens, reservation.cost);
    }

    /// Counts what calls that were never reserved for used (results of a batch re-attached
    /// after a crash, which the killed process had reserved for): spent, whatever the limit
    /// says, since the provider bills them.
    pub fn spend(&self, prompt_tokens: u64, completion_tokens: u64, prices: &Prices) {
        let cost = prices.cost(prompt_tokens, completion_tokens);
        let tokens = prompt_tokens + completion_tokens;
        let mut spend = self.lock();
        spend.cost += cost;
        spend.tokens += tokens;
        drop(spend);
        self.record(|_| {
            format!("{{\"spent\":\"unreserved\",\"tokens\":{tokens},\"cost\":{cost:?}}}\n")
        });
    }

    /// The cost and tokens spent so far, earlier runs included.
    pub fn spent(&self) -> (f64, u64) {
        let spend = self.lock();
        (spend.cost, spend.tokens)
    }

    /// Why the budget stopped the run, once it has.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.get().map(String::as_str)
    }
}

/// What a journal's lines say was spent: settled reservations at what they cost, unsettled
/// ones at their largest cost, and every `spent` line; a torn last line is left out.
fn journal_total(text: &str) -> (f64, u64) {
    let field = |line: &str, key: &str| -> Option<String> {
        let start = line.find(&format!("\"{key}\":"))? + key.len() + 3;
        let rest = &line[start..];
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim_matches('"').to_string())
    };
    let mut reserved: std::collections::HashMap<String, (f64, u64)> = Default::default();
    let mut settled: std::collections::HashMap<String, (f64, u64)> = Default::default();
    let (mut cost, mut tokens) = (0.0, 0u64);
    for line in text.lines().filter(|l| l.ends_with('}')) {
        let amount = (
            field(line, "cost").and_then(|c| c.parse::<f64>().ok()),
            field(line, "tokens").and_then(|t| t.parse::<u64>().ok()),
        );
        let (Some(c), Some(t)) = amount else {
            continue;
        };
        if let Some(id) = field(line, "r") {
            reserved.insert(id, (c, t));
        } else if let Some(id) = field(line, "s") {
            settled.insert(id, (c, t));
        } else if field(line, "spent").is_some() {
            cost += c;
            tokens += t;
        }
    }
    for (id, (c, t)) in &reserved {
        let (c, t) = settled.get(id).copied().unwrap_or((*c, *t));
        cost += c;
        tokens += t;
    }
    for (id, (c, t)) in &settled {
        if !reserved.contains_key(id) {
            cost += c;
            tokens += t;
        }
    }
    (cost, tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_that_would_pass_the_limit_is_refused_and_stops_the_budget() {
        // 33 prompt tokens and 10 for the reply at 1 a token.
        let prices = Prices {
            prompt_per_mtok: 1e6,
            completion_per_mtok: 1e6,
        };
        let budget = Budget::new(Some(90.0), None, 10.0, 0);
        let first = budget.reserve(33, 10, &prices).unwrap();
        assert_eq!(
            first,
            Reservation {
                cost: 43.0,
                tokens: 43,
                id: 0
            }
        );
        // 10 spent + 43 in flight + 43 more would pass 90.
        let refused = budget.reserve(33, 10, &prices).unwrap_err();
        assert!(refused.contains("max_cost = 90"), "{refused}");
        assert_eq!(budget.stopped(), Some(refused.as_str()));
        // The call in flight settles at what it used; the budget stays stopped.
        budget.settle(first, 20, 5, &prices);
        assert_eq!(budget.spent(), (35.0, 25));
        assert!(budget.reserve(33, 10, &prices).is_err());
    }

    #[test]
    fn a_token_limit_counts_prompt_and_reply() {
        let budget = Budget::new(None, Some(150), 0.0, 40);
        let refused = budget.reserve(21, 100, &Prices::default()).unwrap_err();
        assert!(refused.contains("max_tokens = 150"), "{refused}");
        // 40 spent + 10 + 100 is at the limit, not over it.
        let budget = Budget::new(None, Some(150), 0.0, 40);
        assert!(budget.reserve(10, 100, &Prices::default()).is_ok());
    }

    #[test]
    fn a_killed_process_passes_on_what_it_spent_and_what_it_had_in_flight() {
        let dir = std::env::temp_dir().join(format!("hierarag-cost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("spend.jsonl");
        let _ = std::fs::remove_file(&path);
        let prices = Prices::default();
        let first = Budget::journaled(None, Some(1_000), &path, (0.0, 100)).unwrap();
        let settled = first.reserve(30, 20, &prices).unwrap();
        first.settle(settled, 10, 5, &prices);
        let given_back = first.reserve(30, 20, &prices).unwrap();
        first.settle(given_back, 0, 0, &prices);
        let _in_flight = first.reserve(40, 60, &prices).unwrap();
        first.spend(7, 3, &prices);
        // Killed here: the call in flight never settles.
        drop(first);
        let second = Budget::journaled(None, Some(1_000), &path, (0.0, 999)).unwrap();
        // 100 carried + 15 settled + 0 given back + 100 in flight + 10 unreserved.
        assert_eq!(second.spent(), (0.0, 225));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
