//! Choosing the next token: greedy at temperature 0, otherwise temperature and nucleus (top-p)
//! sampling from a seeded ChaCha8 stream, optionally restricted to allowed tokens.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::tokenizer::TokenId;

/// Tokens whose probability is below this fraction of the total are left out of nucleus
/// sampling (they hold at most vocabulary × this much mass, 0.05% for SmolLM2), which spares a
/// sort of the whole vocabulary at every step.
const MIN_PROBABILITY: f32 = 1e-8;

/// Temperature and top-p sampling with its own random stream.
#[derive(Debug, Clone)]
pub struct Sampler {
    temperature: f32,
    top_p: f32,
    rng: ChaCha8Rng,
}

impl Sampler {
    /// `temperature <= 0` is greedy; `top_p` outside (0, 1) means no nucleus cut.
    pub fn new(temperature: f32, top_p: Option<f32>, seed: u64) -> Sampler {
        Sampler {
            temperature,
            top_p: top_p.filter(|p| *p > 0.0 && *p < 1.0).unwrap_or(1.0),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The next token among those `allowed` accepts, or `None` when it accepts none.
    pub fn sample(
        &mut self,
        logits: &[f32],
        mut allowed: impl FnMut(TokenId) -> bool,
    ) -> Option<TokenId> {
        if self.temperature <= 0.0 {
            return greedy(logits, &mut allowed);
        }
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let inv_t = 1.0 / self.temperature;
        let weights: Vec<f32> = logits.iter().map(|&l| ((l - max) * inv_t).exp()).collect();
        let total: f32 = weights.iter().sum();
        let floor = total * MIN_PROBABILITY;
        let mut order: Vec<TokenId> = (0..weights.len() as TokenId)
            .filter(|&i| weights[i as usize] >= floor)
            .collect();
        order.sort_unstable_by(|&a, &b| {
            weights[b as usize]
                .total_cmp(&weights[a as usize])
                .then(a.cmp(&b))
        });
        // The nucleus of the allowed distribution: walk down the probabilities, skipping refused
        // tokens (whose mass leaves the total), until the kept mass reaches top-p.
        let mut kept: Vec<(TokenId, f32)> = Vec::new();
        let (mut kept_mass, mut refused_mass) = (0f32, 0f32);
        for &id in &order {
            let w = weights[id as usize];
            if !allowed(id) {
                refused_mass += w;
                continue;
            }
            kept.push((id, w));
            kept_mass += w;
            if kept_mass >= self.top_p * (total - refused_mass) {
                break;
            }
        }
        if kept.is_empty() {
            return greedy(logits, &mut allowed);
        }
        let mut r = self.rng.random::<f32>() * kept_mass;
        for &(id, w) in &kept {
            if r < w {
                return Some(id);
            }
            r -= w;
        }
        kept.last().map(|&(id, _)| id)
    }
}

/// The allowed token with the highest logit (the lowest id on ties).
fn greedy(logits: &[f32], allowed: &mut impl FnMut(TokenId) -> bool) -> Option<TokenId> {
    let best = argmax(logits)?;
    if allowed(best) {
        return Some(best);
    }
    // One pass, asking about a token only when it would beat the best allowed one so far.
    let mut best: Option<(TokenId, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if best.is_none_or(|(_, b)| l > b) && allowed(i as TokenId) {
            best = Some((i as TokenId, l));
        }
    }
    best.map(|(i, _)| i)
}

fn argmax(logits: &[f32]) -> Option<TokenId> {
    let mut best: Option<(TokenId, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if best.is_none_or(|(_, b)| l > b) {
            best = Some((i as TokenId, l));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_zero_is_argmax_and_respects_the_mask() {
        let logits = [0.1, 3.0, 2.0, 3.0];
        let mut s = Sampler::new(0.0, None, 1);
        assert_eq!(s.sample(&logits, |_| true), Some(1));
        assert_eq!(s.sample(&logits, |id| id != 1), Some(3));
        assert_eq!(s.sample(&logits, |id| id == 0), Some(0));
        assert_eq!(s.sample(&logits, |_| false), None);
    }

    #[test]
    fn same_seed_same_draws() {
        let logits: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin()).collect();
        let draw = |seed| {
            let mut s = Sampler::new(1.0, Some(0.9), seed);
            (0..50)
                .map(|_| s.sample(&logits, |_| true).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn small_top_p_keeps_only_the_top_token() {
        let logits = [0.0, 5.0, 1.0];
        let mut s = Sampler::new(1.0, Some(0.01), 3);
        for _ in 0..20 {
            assert_eq!(s.sample(&logits, |_| true), Some(1));
        }
        assert_eq!(s.sample(&logits, |id| id != 1), Some(2));
    }
}
