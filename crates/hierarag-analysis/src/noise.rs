//! How much of a spread of category means is sampling noise.
//!
//! A category mean m_k of n_k questions carries noise e_k of variance v_k = s_k² / n_k (s_k² the
//! category's sample variance, ddof 1). With K categories, E[Σ (m_k − m̄)²] = Σ (μ_k − μ̄)² +
//! (1 − 1/K) Σ v_k, where μ_k are the true means; so subtracting (1 − 1/K) Σ v_k from the sum of
//! squares of the means (before dividing by K − ddof) estimates the spread of the true means
//! without bias. [`NoiseModel::corrected`] does that and takes the root, clamped at zero.
//!
//! The **noise floor** is the DiscPow expected when there is no category effect at all: the mean
//! standard deviation of K independent N(0, v_k) draws, by seeded simulation (the root of the
//! expected variance would overstate it; for two categories by a quarter).

use hierarag_stats as stats;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Simulated draws behind a noise floor: its standard error is under 1 % of the floor for
/// two categories, less for more.
pub(crate) const FLOOR_DRAWS: usize = 4000;

/// The noise of the means of one set of categories.
#[derive(Debug, Clone)]
pub(crate) struct NoiseModel {
    /// v_k = s_k² / n_k per category.
    variances: Vec<f64>,
}

impl NoiseModel {
    /// From each category's values; `None` when a category has fewer than two (its variance
    /// cannot be estimated) or there are fewer than two categories.
    pub(crate) fn of(samples: &[Vec<f64>]) -> Option<NoiseModel> {
        if samples.len() < 2 {
            return None;
        }
        let variances = samples
            .iter()
            .map(|values| {
                let sd = stats::std_dev(values, 1)?;
                Some(sd * sd / values.len() as f64)
            })
            .collect::<Option<Vec<f64>>>()?;
        Some(NoiseModel { variances })
    }

    /// Σ v_k: the noise variance of the sum of the category means.
    pub(crate) fn total_variance(&self) -> f64 {
        self.variances.iter().sum()
    }

    /// The noise part of the variance (with `ddof`) of the category means: its expectation
    /// when there is no category effect.
    pub(crate) fn expected_variance(&self, ddof: u32) -> Option<f64> {
        let k = self.variances.len();
        if k <= ddof as usize {
            return None;
        }
        Some((1.0 - 1.0 / k as f64) * self.total_variance() / (k - ddof as usize) as f64)
    }

    /// The variance of the true means, unbiased and possibly negative, from the standard
    /// deviation (`ddof`) of the observed means.
    pub(crate) fn corrected_variance(&self, raw_sd: f64, ddof: u32) -> Option<f64> {
        Some(raw_sd * raw_sd - self.expected_variance(ddof)?)
    }

    /// DiscPow without the noise: √max(0, corrected variance).
    pub(crate) fn corrected(&self, raw_sd: f64, ddof: u32) -> Option<f64> {
        self.corrected_variance(raw_sd, ddof)
            .map(|variance| variance.max(0.0).sqrt())
    }

    /// The mean standard deviation (`ddof`) of the means when there is no category effect,
    /// over [`FLOOR_DRAWS`] simulated sets of means from `rng`.
    pub(crate) fn floor(&self, ddof: u32, rng: &mut ChaCha8Rng) -> Option<f64> {
        if self.variances.len() <= ddof as usize {
            return None;
        }
        let sds: Vec<f64> = self.variances.iter().map(|v| v.sqrt()).collect();
        let mut draws = vec![0.0; sds.len()];
        let mut total = 0.0;
        for _ in 0..FLOOR_DRAWS {
            for (draw, sd) in draws.iter_mut().zip(&sds) {
                *draw = sd * standard_normal(rng);
            }
            total += stats::std_dev(&draws, ddof)?;
        }
        Some(total / FLOOR_DRAWS as f64)
    }
}

/// One N(0, 1) draw (Box–Muller; the second value of the pair is not kept, so that every draw
/// takes the same two uniforms and a stream's draws never depend on an earlier call's parity).
pub(crate) fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    // 1 − U is in (0, 1], so the logarithm is finite.
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn normal_sample(rng: &mut ChaCha8Rng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n).map(|_| mean + sd * standard_normal(rng)).collect()
    }

    #[test]
    fn standard_normal_has_mean_zero_and_variance_one() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws: Vec<f64> = (0..200_000).map(|_| standard_normal(&mut rng)).collect();
        let mean = stats::mean(&draws).unwrap();
        let sd = stats::std_dev(&draws, 1).unwrap();
        // Standard errors: 1/√n ≈ 0.0022 for the mean, ≈ 0.0016 for the sd.
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((sd - 1.0).abs() < 0.01, "{sd}");
    }

    #[test]
    fn expected_variance_is_the_noise_of_the_means() {
        // Two categories of 4 and 2 values: sample variances 11/12 and 2, so v = 11/48 and 1.
        let model = NoiseModel::of(&[vec![0.0, 1.0, 2.0, 0.0], vec![1.0, 3.0]]).unwrap();
        let v0 = 11.0 / 48.0;
        let expected = (1.0 - 0.5) * (v0 + 1.0) / 2.0;
        assert!((model.expected_variance(0).unwrap() - expected).abs() < 1e-15);
        assert!((model.expected_variance(1).unwrap() - expected * 2.0).abs() < 1e-15);
        assert!(model.expected_variance(2).is_none());
        assert!(NoiseModel::of(&[vec![1.0, 2.0], vec![3.0]]).is_none());
        assert!(NoiseModel::of(&[vec![1.0, 2.0]]).is_none());
    }

    /// Over many simulated levels of known true means, the corrected variance averages to the
    /// variance of the true means (within its standard error), and the raw one does not.
    #[test]
    fn the_corrected_variance_is_unbiased_for_the_true_spread() {
        let true_means = [0.68, 0.70, 0.71, 0.74];
        let sizes = [40, 60, 55, 45];
        let truth = stats::std_dev(&true_means, 0).unwrap().powi(2);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (mut corrected, mut raw) = (Vec::new(), Vec::new());
        for _ in 0..4000 {
            let samples: Vec<Vec<f64>> = true_means
                .iter()
                .zip(sizes)
                .map(|(&mean, n)| normal_sample(&mut rng, n, mean, 0.15))
                .collect();
            let means: Vec<f64> = samples.iter().map(|s| stats::mean(s).unwrap()).collect();
            let sd = stats::std_dev(&means, 0).unwrap();
            corrected.push(
                NoiseModel::of(&samples)
                    .unwrap()
                    .corrected_variance(sd, 0)
                    .unwrap(),
            );
            raw.push(sd * sd);
        }
        let mean = stats::mean(&corrected).unwrap();
        let se = stats::std_dev(&corrected, 1).unwrap() / (corrected.len() as f64).sqrt();
        assert!((mean - truth).abs() < 3.0 * se, "{mean} vs {truth} ± {se}");
        let raw_mean = stats::mean(&raw).unwrap();
        assert!(raw_mean - truth > 10.0 * se, "raw {raw_mean} vs {truth}");
    }

    #[test]
    fn the_floor_is_the_mean_spread_of_pure_noise() {
        // Two categories with v = 0.01 each: the difference of two N(0, 0.01) is N(0, 0.02), and
        // the population sd of two values is |difference| / 2, so the floor is
        // √0.02 · √(2/π) / 2.
        let model = NoiseModel {
            variances: vec![0.01, 0.01],
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let floor = model.floor(0, &mut rng).unwrap();
        let exact = 0.02f64.sqrt() * (2.0 / std::f64::consts::PI).sqrt() / 2.0;
        assert!((floor / exact - 1.0).abs() < 0.03, "{floor} vs {exact}");
        // The root of the expected variance is a quarter higher for two categories.
        let root = model.expected_variance(0).unwrap().sqrt();
        assert!(root / exact > 1.2, "{root} vs {exact}");
        // The same stream gives the same floor.
        let again = model.floor(0, &mut ChaCha8Rng::seed_from_u64(3)).unwrap();
        assert_eq!(floor.to_bits(), again.to_bits());
    }
}
