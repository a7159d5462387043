//! Levels: single-category questions grouped by (set, dimension, level), their category
//! means, DiscPow, range, NMI, the permutation test and the bootstrap replicates.

use std::collections::BTreeMap;

use hierarag_stats as stats;
use hierarag_stats::derive_seed;
use hierarag_taxonomy::{Granularity, Taxonomy};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::input::{Observation, Settings};
use crate::means::{estimate, means};
use crate::model::{CategoryStats, Estimate, LevelStats};
use crate::noise::NoiseModel;

/// The questions of one (set, dimension, level), by category in taxonomy order.
#[derive(Debug)]
pub(crate) struct LevelGroup<'a> {
    pub set: String,
    pub dimension: String,
    pub level: Granularity,
    /// (category, parent, questions); only categories with questions.
    pub categories: Vec<(String, Option<String>, Vec<&'a Observation>)>,
    /// Bootstrap replicates: `replicates[r][k]` is the mean of the metric of category k in
    /// resample r.
    pub replicates: Vec<Vec<f64>>,
}

impl LevelGroup<'_> {
    pub fn index_of(&self, category: &str) -> Option<usize> {
        self.categories
            .iter()
            .position(|(name, _, _)| name == category)
    }

    pub fn category_mean(&self, k: usize, settings: &Settings) -> f64 {
        mean_metric(&self.categories[k].2, settings)
    }

    pub fn category_means(&self, settings: &Settings) -> Vec<f64> {
        (0..self.categories.len())
            .map(|k| self.category_mean(k, settings))
            .collect()
    }

    /// The analysed metric's values of each category.
    pub fn samples(&self, settings: &Settings) -> Vec<Vec<f64>> {
        self.categories
            .iter()
            .map(|(_, _, questions)| {
                questions
                    .iter()
                    .map(|o| settings.metric.of(&o.scores))
                    .collect()
            })
            .collect()
    }

    /// The noise of this level's category means (None when a category has one question).
    pub fn noise(&self, settings: &Settings) -> Option<NoiseModel> {
        NoiseModel::of(&self.samples(settings))
    }
}

pub(crate) fn mean_metric(observations: &[&Observation], settings: &Settings) -> f64 {
    let values: Vec<f64> = observations
        .iter()
        .map(|o| settings.metric.of(&o.scores))
        .collect();
    stats::mean(&values).unwrap_or(f64::NAN)
}

/// (taxonomy position of the dimension, dimension, level, set): the order levels are reported in.
type GroupKey = (usize, String, Granularity, String);

/// Groups single-category observations; orders groups by the taxonomy's dimensions, then
/// level, then set, and categories by the taxonomy.
pub(crate) fn group<'a>(
    observations: &[&'a Observation],
    taxonomy: &Taxonomy,
) -> Vec<LevelGroup<'a>> {
    let mut by_key: BTreeMap<GroupKey, BTreeMap<String, Vec<&'a Observation>>> = BTreeMap::new();
    for observation in observations {
        let category = &observation.categories[0];
        let order = dimension_order(taxonomy, &category.dimension);
        by_key
            .entry((
                order,
                category.dimension.clone(),
                category.level,
                observation.set.clone(),
            ))
            .or_default()
            .entry(category.category.clone())
            .or_default()
            .push(observation);
    }
    by_key
        .into_iter()
        .map(|((_, dimension, level, set), mut categories)| {
            let mut ordered = Vec::new();
            if let Some(level_def) = taxonomy.dimension(&dimension).and_then(|d| d.level(level)) {
                for category in &level_def.categories {
                    if let Some(questions) = categories.remove(&category.name) {
                        ordered.push((category.name.clone(), category.parent.clone(), questions));
                    }
                }
            }
            // Categories the taxonomy does not know come last, by name.
            ordered.extend(
                categories
                    .into_iter()
                    .map(|(name, questions)| (name, None, questions)),
            );
            LevelGroup {
                set,
                dimension,
                level,
                categories: ordered,
                replicates: Vec::new(),
            }
        })
        .collect()
}

/// The dimensions of `groups`, in their order (taxonomy order), each once.
pub(crate) fn dimension_keys<'g>(groups: &'g [LevelGroup<'_>]) -> Vec<&'g str> {
    let mut keys: Vec<&str> = Vec::new();
    for group in groups {
        if !keys.contains(&group.dimension.as_str()) {
            keys.push(&group.dimension);
        }
    }
    keys
}

/// The position of a dimension in the taxonomy (unknown dimensions last).
pub(crate) fn dimension_order(taxonomy: &Taxonomy, dimension: &str) -> usize {
    taxonomy
        .dimensions
        .iter()
        .position(|d| d.key == dimension)
        .unwrap_or(usize::MAX)
}

/// Draws `settings.bootstrap` resamples within each category of the group.
pub(crate) fn bootstrap(group: &mut LevelGroup<'_>, settings: &Settings) {
    let label = format!(
        "bootstrap/{}/{}/{}",
        group.set, group.dimension, group.level
    );
    let values = group.samples(settings);
    group.replicates = resample_means(&values, settings, &label);
}

/// `settings.bootstrap` replicates of the means of each sample, resampled with replacement
/// within each sample, from the random stream named `label`.
pub(crate) fn resample_means(
    samples: &[Vec<f64>],
    settings: &Settings,
    label: &str,
) -> Vec<Vec<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(settings.seed, label));
    (0..settings.bootstrap)
        .map(|_| {
            samples
                .iter()
                .map(|values| {
                    if values.is_empty() {
                        return f64::NAN;
                    }
                    let n = values.len();
                    let sum: f64 = (0..n)
                        .map(|_| values[rand::Rng::random_range(&mut rng, 0..n)])
                        .sum();
                    sum / n as f64
                })
                .collect()
        })
        .collect()
}

/// The percentile interval of replicate values of one statistic.
pub(crate) fn interval(
    replicates: impl Iterator<Item = f64>,
    settings: &Settings,
) -> Option<[f64; 2]> {
    let values: Vec<f64> = replicates
        .map(|value| if value.is_finite() { value } else { f64::NAN })
        .collect();
    if values.is_empty() {
        return None;
    }
    stats::percentile_interval(&values, settings.confidence).map(|i| [i.lo, i.hi])
}

/// The statistics of one level, without Δ (which needs the coarser level).
pub(crate) fn level_stats(
    group: &LevelGroup<'_>,
    settings: &Settings,
    notes: &mut Vec<String>,
) -> LevelStats {
    let all: Vec<&Observation> = group
        .categories
        .iter()
        .flat_map(|(_, _, questions)| questions.iter().copied())
        .collect();
    let categories: Vec<CategoryStats> = group
        .categories
        .iter()
        .enumerate()
        .map(|(k, (name, parent, questions))| CategoryStats {
            category: name.clone(),
            parent: parent.clone(),
            n: questions.len(),
            means: means(questions),
            metric: estimate(
                group.category_mean(k, settings),
                interval(group.replicates.iter().map(|r| r[k]), settings),
            ),
        })
        .collect();
    let category_means = group.category_means(settings);
    let name = format!("{} {} (set {})", group.dimension, group.level, group.set);
    let (discpow, discpow_p, range, nmi) = if category_means.len() < 2 {
        notes.push(format!(
            "{name}: only {} categor{} with questions; DiscPow, range and NMI need two",
            category_means.len(),
            if category_means.len() == 1 {
                "y"
            } else {
                "ies"
            }
        ));
        (None, None, None, None)
    } else {
        let discpow = stats::std_dev(&category_means, settings.ddof).map(|value| Estimate {
            value,
            ci: interval(
                group
                    .replicates
                    .iter()
                    .map(|r| stats::std_dev(r, settings.ddof).unwrap_or(f64::NAN)),
                settings,
            ),
        });
        if discpow.is_none() {
            notes.push(format!(
                "{name}: DiscPow with ddof {} needs more than {} categories",
                settings.ddof, settings.ddof
            ));
        }
        let range = stats::range(&category_means).map(|value| Estimate {
            value,
            ci: interval(
                group
                    .replicates
                    .iter()
                    .map(|r| stats::range(r).unwrap_or(f64::NAN)),
                settings,
            ),
        });
        let discpow_p = discpow
            .filter(|_| settings.permutations > 0)
            .map(|d| permutation_p(group, d.value, settings));
        (discpow, discpow_p, range, nmi(group, settings))
    };
    let (discpow_corrected, discpow_noise_floor) = match (discpow, group.noise(settings)) {
        (Some(raw), Some(noise)) => {
            let corrected = |sd: f64| noise.corrected(sd, settings.ddof).unwrap_or(f64::NAN);
            let label = format!(
                "noise-floor/{}/{}/{}",
                group.set, group.dimension, group.level
            );
            let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(settings.seed, &label));
            (
                Some(Estimate {
                    value: corrected(raw.value),
                    // The correction is monotone in DiscPow, so it maps the interval's ends.
                    ci: raw.ci.map(|[lo, hi]| [corrected(lo), corrected(hi)]),
                }),
                noise.floor(settings.ddof, &mut rng),
            )
        }
        (Some(_), None) => {
            notes.push(format!(
                "{name}: a category has a single question, so the noise in its mean cannot be estimated; DiscPow is not corrected for noise"
            ));
            (None, None)
        }
        _ => (None, None),
    };
    LevelStats {
        set: group.set.clone(),
        dimension: group.dimension.clone(),
        level: group.level,
        n: all.len(),
        means: means(&all),
        categories,
        discpow,
        discpow_p,
        discpow_corrected,
        discpow_noise_floor,
        range,
        nmi,
        delta: None,
    }
}

/// NMI between category labels and equal-frequency bins of the metric over the level.
fn nmi(group: &LevelGroup<'_>, settings: &Settings) -> Option<f64> {
    let (labels, values): (Vec<usize>, Vec<f64>) = group
        .categories
        .iter()
        .enumerate()
        .flat_map(|(k, (_, _, questions))| {
            questions
                .iter()
                .map(move |o| (k, settings.metric.of(&o.scores)))
        })
        .unzip();
    let bins = stats::equal_frequency_bins(&values, settings.nmi_bins.max(1));
    stats::nmi(&labels, &bins)
}

/// The share of label permutations (within the level) whose DiscPow reaches the observed one.
fn permutation_p(group: &LevelGroup<'_>, observed: f64, settings: &Settings) -> f64 {
    let label = format!(
        "permutation/{}/{}/{}",
        group.set, group.dimension, group.level
    );
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(settings.seed, &label));
    let values: Vec<f64> = group
        .categories
        .iter()
        .flat_map(|(_, _, questions)| questions.iter().map(|o| settings.metric.of(&o.scores)))
        .collect();
    let mut labels: Vec<usize> = group
        .categories
        .iter()
        .enumerate()
        .flat_map(|(k, (_, _, questions))| std::iter::repeat_n(k, questions.len()))
        .collect();
    let k = group.categories.len();
    let null: Vec<f64> = (0..settings.permutations)
        .map(|_| {
            labels.shuffle(&mut rng);
            // Tolerance for floating-point noise: a permutation that reproduces the
            // observed grouping must count as reaching it.
            stats::std_dev(&label_means(&labels, &values, k), settings.ddof).unwrap_or(f64::NAN)
                + 1e-12
        })
        .collect();
    stats::permutation_p(observed, &null)
}

/// The mean of `values` per label `0..k` (`labels[i]` is the label of `values[i]`).
pub(crate) fn label_means(labels: &[usize], values: &[f64], k: usize) -> Vec<f64> {
    let mut sums = vec![0.0; k];
    let mut counts = vec![0usize; k];
    for (&label, &value) in labels.iter().zip(values) {
        sums[label] += value;
        counts[label] += 1;
    }
    sums.iter()
        .zip(&counts)
        .map(|(s, &c)| s / c as f64)
        .collect()
}
