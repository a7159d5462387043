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
}

/// A call's reservation, given back when the call ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reservation {
    cost: f64,
    tokens: u64,
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
        }
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
        Ok(Reservation { cost, tokens })
    }

    /// Gives `reservation` back and counts what the call really used.
    pub fn settle(
        &self,
        reservation: Reservation,
        prompt_tokens: u64,
        completion_tokens: u64,
        prices: &Prices,
    ) {
        let mut spend = self.lock();
        spend.reserved_cost = (spend.reserved_cost - reservation.cost).max(0.0);
        spend.reserved_tokens = spend.reserved_tokens.saturating_sub(reservation.tokens);
        spend.cost += prices.cost(prompt_tokens, completion_tokens);
        spend.tokens += prompt_tokens + completion_tokens;
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
    }

    /// Counts what calls that were never reserved for used (results of a batch re-attached
    /// after a crash, which the killed process had reserved for): spent, whatever the limit
    /// says, since the provider bills them.
    pub fn spend(&self, prompt_tokens: u64, completion_tokens: u64, prices: &Prices) {
        let mut spend = self.lock();
        spend.cost += prices.cost(prompt_tokens, completion_tokens);
        spend.tokens += prompt_tokens + completion_tokens;
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
                tokens: 43
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
}
