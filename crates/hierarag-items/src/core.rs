//! The core set (issue 46): the smallest stratified subset of questions that reproduces every
//! system's category means and the systems' order within a stated tolerance, with its error
//! estimated on systems it was not chosen with.
//!
//! How it is chosen, at growing sizes: each candidate first takes
//! [`CoreSettings::min_per_category`] random questions of every category (of every dimension and
//! level), then fills up to the size at random within strata (a question's categories at the
//! coarsest level it has, one per dimension), in proportion to the strata's sizes. A candidate
//! fits when every system's mean of every category, and over all questions, is within
//! [`CoreSettings::tolerance`] of its full-benchmark value, and every two systems whose full
//! means differ by more than the tolerance keep their order. A size is taken when at least
//! [`FITTING_SHARE`] of its [`CoreSettings::draws`] candidates fit (a typical draw of that size
//! fits, not a lucky one), and of those the one with the smallest largest error is kept.
//!
//! The honest error: with three or more systems, each system in turn is held out, the set is
//! chosen on the others and checked on it (its largest category error, and whether it keeps its
//! order against every other system). A set chosen on many candidates fits the systems it was
//! chosen with better than any other, so only the held-out figures say what it is worth on the
//! next configuration.

use std::collections::BTreeMap;

use hierarag_taxonomy::Granularity;
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::{Question, SystemScores, by_category, common_questions};

/// How the core set is chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreSettings {
    /// The largest error allowed of a category mean (and of the overall mean), in the metric's
    /// units.
    pub tolerance: f64,
    /// Questions every category keeps at least (all of a smaller one).
    pub min_per_category: usize,
    /// Random candidates drawn at each size.
    pub draws: usize,
    pub seed: u64,
}

/// A system held out of the choice and checked on the set chosen without it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    pub system: String,
    /// The size of the set chosen without it.
    pub n: usize,
    /// Its largest error of a category mean (or of its overall mean) on that set.
    pub max_error: f64,
    /// It keeps its order against every system its full mean differs from by more than the
    /// tolerance.
    pub order_kept: bool,
}

/// The held-out check of the core set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOutCheck {
    pub systems: Vec<HeldOut>,
    /// Held-out systems within the tolerance with their order kept.
    pub within: usize,
    /// The largest held-out error.
    pub max_error: f64,
}

/// The chosen subset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreSet {
    pub settings: CoreSettings,
    /// The chosen question ids, in the benchmark's order.
    pub ids: Vec<String>,
    /// Of how many questions (those every system has a score for).
    pub of: usize,
    /// The largest error of a category mean on the systems it was chosen with (0 for the full
    /// set); optimistic, see `held_out`.
    pub max_error: f64,
    /// Absent with fewer than three systems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<HeldOutCheck>,
    pub notes: Vec<String>,
}

impl CoreSet {
    /// The share of answering calls the core set saves.
    pub fn saved_share(&self) -> f64 {
        1.0 - self.ids.len() as f64 / self.of.max(1) as f64
    }
}

/// The share of a size's random candidates that must fit for the size to be chosen.
pub const FITTING_SHARE: f64 = 0.9;

/// The scores and categories of the questions every system has a score for, indexed.
struct Table<'a> {
    questions: Vec<&'a Question>,
    /// scores[s][q]
    scores: Vec<Vec<f64>>,
    /// The categories' members; the last entry is every question (the overall mean).
    groups: Vec<Vec<usize>>,
    /// Each question's groups.
    groups_of: Vec<Vec<usize>>,
    /// The strata: questions with the same coarse categories.
    strata: Vec<Vec<usize>>,
    /// full[s][g]: system s's mean of group g on every question.
    full: Vec<Vec<f64>>,
}

impl<'a> Table<'a> {
    fn new(questions: &'a [Question], systems: &[SystemScores]) -> Table<'a> {
        let questions = common_questions(questions, systems);
        let scores: Vec<Vec<f64>> = systems
            .iter()
            .map(|s| questions.iter().map(|q| s.scores[&q.id]).collect())
            .collect();
        let mut groups: Vec<Vec<usize>> = by_category(&questions)
            .into_iter()
            .map(|(_, members)| members)
            .collect();
        groups.push((0..questions.len()).collect());
        let mut groups_of = vec![Vec::new(); questions.len()];
        for (g, members) in groups.iter().enumerate() {
            for &q in members {
                groups_of[q].push(g);
            }
        }
        let mut strata: BTreeMap<Vec<String>, Vec<usize>> = BTreeMap::new();
        for (q, question) in questions.iter().enumerate() {
            // Per dimension, the question's category at the coarsest level it has.
            let mut coarsest: BTreeMap<&str, (Granularity, &str)> = BTreeMap::new();
            for c in &question.categories {
                let entry = coarsest
                    .entry(c.dimension.as_str())
                    .or_insert((c.level, c.category.as_str()));
                if c.level < entry.0 {
                    *entry = (c.level, c.category.as_str());
                }
            }
            let key = coarsest
                .into_iter()
                .map(|(dimension, (level, category))| format!("{dimension}/{level}/{category}"))
                .collect();
            strata.entry(key).or_default().push(q);
        }
        let full = scores
            .iter()
            .map(|row| {
                groups
                    .iter()
                    .map(|members| {
                        members.iter().map(|&q| row[q]).sum::<f64>() / members.len() as f64
                    })
                    .collect()
            })
            .collect();
        Table {
            questions,
            scores,
            groups,
            groups_of,
            strata: strata.into_values().collect(),
            full,
        }
    }

    /// One candidate of `size` questions (more when the categories' minimum needs more).
    fn draw(&self, size: usize, min_per_category: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
        let n = self.questions.len();
        let mut chosen = vec![false; n];
        let mut count = 0;
        for members in &self.groups {
            let have = members.iter().filter(|&&q| chosen[q]).count();
            let want = min_per_category.min(members.len()).saturating_sub(have);
            let free: Vec<usize> = members.iter().copied().filter(|&q| !chosen[q]).collect();
            for &q in free.choose_multiple(rng, want) {
                chosen[q] = true;
                count += 1;
            }
        }
        // The rest within strata, in proportion (largest remainders; ties to the first).
        let rest = size.saturating_sub(count);
        if rest > 0 {
            let free: Vec<Vec<usize>> = self
                .strata
                .iter()
                .map(|stratum| stratum.iter().copied().filter(|&q| !chosen[q]).collect())
                .collect();
            let total: usize = free.iter().map(Vec::len).sum();
            let quotas: Vec<f64> = free
                .iter()
                .map(|f| rest as f64 * f.len() as f64 / total.max(1) as f64)
                .collect();
            let mut take: Vec<usize> = quotas.iter().map(|q| q.floor() as usize).collect();
            let mut order: Vec<usize> = (0..free.len()).collect();
            order.sort_by(|&a, &b| {
                (quotas[b] - quotas[b].floor()).total_cmp(&(quotas[a] - quotas[a].floor()))
            });
            let mut left = rest.min(total) - take.iter().sum::<usize>();
            for &s in &order {
                if left == 0 {
                    break;
                }
                if take[s] < free[s].len() {
                    take[s] += 1;
                    left -= 1;
                }
            }
            for (stratum, k) in free.iter().zip(take) {
                for &q in stratum.choose_multiple(rng, k) {
                    chosen[q] = true;
                }
            }
        }
        (0..n).filter(|&q| chosen[q]).collect()
    }

    /// System `s`'s means of every group on `chosen`.
    fn means(&self, s: usize, chosen: &[usize]) -> Vec<f64> {
        let mut sums = vec![0.0; self.groups.len()];
        let mut counts = vec![0usize; self.groups.len()];
        for &q in chosen {
            for &g in &self.groups_of[q] {
                sums[g] += self.scores[s][q];
                counts[g] += 1;
            }
        }
        sums.iter()
            .zip(&counts)
            .map(|(sum, &k)| if k == 0 { f64::NAN } else { sum / k as f64 })
            .collect()
    }

    /// Every system's means of every group on `chosen` (`[system][group]`).
    fn all_means(&self, chosen: &[usize]) -> Vec<Vec<f64>> {
        (0..self.scores.len())
            .map(|s| self.means(s, chosen))
            .collect()
    }

    /// System `s`'s largest error, given every system's `means` on a set (infinite when a
    /// category has no question in it).
    fn max_error(&self, s: usize, means: &[Vec<f64>]) -> f64 {
        means[s]
            .iter()
            .zip(&self.full[s])
            .map(|(core, full)| {
                if core.is_nan() {
                    f64::INFINITY
                } else {
                    (core - full).abs()
                }
            })
            .fold(0.0, f64::max)
    }

    /// Whether system `s` keeps its order, given every system's `means` on a set, against
    /// each of `others` whose full mean differs from its own by more than `tolerance`.
    fn order_kept(&self, s: usize, others: &[usize], means: &[Vec<f64>], tolerance: f64) -> bool {
        let overall = self.groups.len() - 1;
        others.iter().filter(|&&t| t != s).all(|&t| {
            let full = self.full[s][overall] - self.full[t][overall];
            full.abs() <= tolerance || (means[s][overall] - means[t][overall]) * full > 0.0
        })
    }

    /// The smallest fitting set for `systems` (indices), and its largest error on them.
    fn choose(&self, systems: &[usize], settings: &CoreSettings, seed: u64) -> (Vec<usize>, f64) {
        let n = self.questions.len();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut size = (n / 50).max(1);
        loop {
            if size >= n {
                return ((0..n).collect(), 0.0);
            }
            let mut best: Option<(Vec<usize>, f64)> = None;
            let mut fitting = 0;
            let draws = settings.draws.max(1);
            for _ in 0..draws {
                let chosen = self.draw(size, settings.min_per_category, &mut rng);
                if chosen.len() >= n {
                    return ((0..n).collect(), 0.0);
                }
                let means = self.all_means(&chosen);
                let error = systems
                    .iter()
                    .map(|&s| self.max_error(s, &means))
                    .fold(0.0, f64::max);
                let fits = error <= settings.tolerance
                    && systems
                        .iter()
                        .all(|&s| self.order_kept(s, systems, &means, settings.tolerance));
                if fits {
                    fitting += 1;
                    if best.as_ref().is_none_or(|(_, e)| error < *e) {
                        best = Some((chosen, error));
                    }
                }
            }
            // A size fits when most random candidates of it do, not when a lucky one does: the
            // best of many candidates fits the systems it was chosen on better than it fits
            // the next one.
            if fitting as f64 >= FITTING_SHARE * draws as f64
                && let Some(best) = best
            {
                return best;
            }
            size = (size as f64 * 1.2).ceil() as usize;
        }
    }
}

/// Chooses the core set of the questions every one of `systems` has a score for.
pub fn core_set(
    questions: &[Question],
    systems: &[SystemScores],
    settings: &CoreSettings,
) -> CoreSet {
    let table = Table::new(questions, systems);
    let all: Vec<usize> = (0..systems.len()).collect();
    let mut notes = Vec::new();
    let (chosen, max_error) = table.choose(&all, settings, settings.seed);
    let held_out = (systems.len() >= 3).then(|| {
        let checks: Vec<HeldOut> = all
            .iter()
            .map(|&h| {
                let others: Vec<usize> = all.iter().copied().filter(|&s| s != h).collect();
                let seed = hierarag_stats::derive_seed(settings.seed, &systems[h].name);
                let (set, _) = table.choose(&others, settings, seed);
                let means = table.all_means(&set);
                HeldOut {
                    system: systems[h].name.clone(),
                    n: set.len(),
                    max_error: table.max_error(h, &means),
                    order_kept: table.order_kept(h, &all, &means, settings.tolerance),
                }
            })
            .collect();
        HeldOutCheck {
            within: checks
                .iter()
                .filter(|c| c.order_kept && c.max_error <= settings.tolerance)
                .count(),
            max_error: checks.iter().map(|c| c.max_error).fold(0.0, f64::max),
            systems: checks,
        }
    });
    match systems.len() {
        0..3 => notes.push(format!(
            "with {} system{}, the core set's error cannot be checked on a system it was not \
chosen with: it fits these systems, and may not fit the next one",
            systems.len(),
            if systems.len() == 1 { "" } else { "s" }
        )),
        3..5 => notes.push(format!(
            "with {} systems, each held-out check chooses on {} systems only: the held-out \
error is a rough guide, not an estimate",
            systems.len(),
            systems.len() - 1
        )),
        _ => {}
    }
    if chosen.len() == table.questions.len() {
        notes.push(
            "no subset smaller than the benchmark fits the tolerance: every question is kept"
                .to_owned(),
        );
    }
    CoreSet {
        settings: settings.clone(),
        ids: chosen
            .iter()
            .map(|&q| table.questions[q].id.clone())
            .collect(),
        of: table.questions.len(),
        max_error,
        held_out,
        notes,
    }
}
