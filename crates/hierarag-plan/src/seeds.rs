//! Seed derivation: every random choice of a plan has its own stream, derived from the plan
//! seed and a label, so that one choice never shifts another.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use hierarag_stats::derive_seed;

/// The random stream for the choice named `label`.
pub(crate) fn rng(seed: u64, label: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(derive_seed(seed, label))
}

/// The seed handed to the generation of one item: a function of the plan seed and the item id
/// only, so it does not change when other items are added or removed.
pub fn item_seed(seed: u64, item_id: &str) -> u64 {
    derive_seed(seed, &format!("item/{item_id}"))
}
