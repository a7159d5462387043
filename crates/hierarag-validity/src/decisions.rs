//! The systems on both sides: their order, every pair's decision, and the human means the
//! synthetic benchmark predicts.

use hierarag_analysis::{Estimate, Metric};
use hierarag_stats::{
    derive_seed, kendall_tau_b, normal_quantile, paired_t, percentile_interval, resample_indices,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::agreement::lower_is_better;
use crate::coverage::categories;
use crate::{
    Benchmark, CategoryOrder, Decision, Decisions, PairDecision, Prediction, Question, Settings,
    Sides, SystemResult, Transfer,
};

/// Per system, the metric on `questions` (those every system has it for), and how many.
fn matrix<'a>(
    systems: &[&SystemResult],
    questions: impl Iterator<Item = &'a Question>,
    metric: Metric,
) -> Vec<Vec<f64>> {
    let mut rows = vec![Vec::new(); systems.len()];
    for question in questions {
        let values: Option<Vec<f64>> = systems
            .iter()
            .map(|s| crate::value(s, question, metric))
            .collect();
        if let Some(values) = values {
            for (row, value) in rows.iter_mut().zip(values) {
                row.push(value);
            }
        }
    }
    rows
}

fn means(rows: &[Vec<f64>]) -> Vec<f64> {
    rows.iter()
        .map(|r| r.iter().sum::<f64>() / r.len() as f64)
        .collect()
}

/// τ-b between the two sides' system means, with the percentile interval of both sides'
/// questions resampled (each side on its own).
fn tau(
    synthetic: &[Vec<f64>],
    human: &[Vec<f64>],
    settings: &Settings,
    label: &str,
) -> Option<Estimate> {
    let (ns, nh) = (synthetic.first()?.len(), human.first()?.len());
    if ns == 0 || nh == 0 {
        return None;
    }
    let value = kendall_tau_b(&means(synthetic), &means(human))?;
    let ci = (settings.bootstrap > 0)
        .then(|| {
            let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(settings.seed, label));
            let (mut is, mut ih) = (Vec::with_capacity(ns), Vec::with_capacity(nh));
            let resampled = |rows: &[Vec<f64>], indices: &[usize]| -> Vec<f64> {
                rows.iter()
                    .map(|r| indices.iter().map(|&i| r[i]).sum::<f64>() / indices.len() as f64)
                    .collect()
            };
            let replicates: Vec<f64> = (0..settings.bootstrap)
                .map(|_| {
                    resample_indices(&mut rng, ns, &mut is);
                    resample_indices(&mut rng, nh, &mut ih);
                    kendall_tau_b(&resampled(synthetic, &is), &resampled(human, &ih))
                        .unwrap_or(f64::NAN)
                })
                .collect();
            percentile_interval(&replicates, settings.confidence).map(|i| [i.lo, i.hi])
        })
        .flatten();
    Some(Estimate { value, ci })
}

pub(crate) fn decisions(sides: &Sides, notes: &mut Vec<String>) -> Option<Decisions> {
    let Sides {
        taxonomy,
        levels,
        pairs,
        synthetic,
        human,
        settings,
    } = *sides;
    if pairs.len() < 2 {
        notes.push(
            "system decisions need two or more systems that answered both benchmarks".to_owned(),
        );
        return None;
    }
    let metric = settings.metric;
    let (ss, hs): (Vec<&SystemResult>, Vec<&SystemResult>) = pairs.iter().copied().unzip();
    let sm = matrix(&ss, synthetic.questions.iter(), metric);
    let hm = matrix(&hs, human.questions.iter(), metric);
    if sm[0].is_empty() || hm[0].is_empty() {
        notes.push(format!(
            "system decisions: no question of the {} benchmark has {metric} for every system",
            if sm[0].is_empty() {
                "synthetic"
            } else {
                "human-written"
            }
        ));
        return None;
    }
    // The overall τ and each level's on threads of their own: each interval has its own
    // seeded stream, so the result does not depend on the threads.
    let (tau_all, per_category) = std::thread::scope(|scope| {
        let overall = scope.spawn(|| tau(&sm, &hm, settings, "validity/tau"));
        let (ss, hs) = (&ss, &hs);
        let per_level: Vec<_> = levels
            .iter()
            .map(|(dimension, level)| {
                scope.spawn(move || {
                    let mut orders = Vec::new();
                    for category in categories(taxonomy, dimension, *level) {
                        let keep = |q: &&Question| {
                            q.category(dimension, *level) == Some(category.as_str())
                        };
                        let (sc, hc) = (
                            matrix(ss, synthetic.questions.iter().filter(keep), metric),
                            matrix(hs, human.questions.iter().filter(keep), metric),
                        );
                        if sc[0].is_empty() || hc[0].is_empty() {
                            continue;
                        }
                        orders.push(CategoryOrder {
                            tau: tau(
                                &sc,
                                &hc,
                                settings,
                                &format!("validity/tau/{dimension}/{level}/{category}"),
                            ),
                            synthetic_n: sc[0].len(),
                            human_n: hc[0].len(),
                            dimension: dimension.clone(),
                            level: *level,
                            category,
                        });
                    }
                    orders
                })
            })
            .collect();
        let join = "a τ bootstrap does not panic";
        let per_category: Vec<CategoryOrder> = per_level
            .into_iter()
            .flat_map(|handle| handle.join().expect(join))
            .collect();
        (overall.join().expect(join), per_category)
    });
    let alpha = settings.alpha();
    let decide = |a: &[f64], b: &[f64]| -> (f64, Option<f64>, Decision) {
        let difference = b.iter().zip(a).map(|(x, y)| x - y).sum::<f64>() / a.len() as f64;
        let p = paired_t(b, a).map(|t| t.p).filter(|p| p.is_finite());
        let decision = match p {
            Some(p) if p < alpha && difference != 0.0 => {
                if (difference > 0.0) != lower_is_better(metric) {
                    Decision::Better
                } else {
                    Decision::Worse
                }
            }
            _ => Decision::NoDifference,
        };
        (difference, p, decision)
    };
    let mut pair_decisions = Vec::new();
    for i in 0..pairs.len() {
        for j in i + 1..pairs.len() {
            let (sd, sp, s) = decide(&sm[i], &sm[j]);
            let (hd, hp, h) = decide(&hm[i], &hm[j]);
            let transfer = match (s, h) {
                _ if s == h => Transfer::Holds,
                (_, Decision::NoDifference) => Transfer::Vanishes,
                (Decision::NoDifference, _) => Transfer::Appears,
                _ => Transfer::Flips,
            };
            pair_decisions.push(PairDecision {
                a: ss[i].name.clone(),
                b: ss[j].name.clone(),
                synthetic_difference: sd,
                synthetic_p: sp,
                human_difference: hd,
                human_p: hp,
                synthetic: s,
                human: h,
                transfer,
            });
        }
    }
    let holds = pair_decisions
        .iter()
        .filter(|p| p.transfer == Transfer::Holds)
        .count();
    Some(Decisions {
        metric,
        synthetic_means: means(&sm),
        human_means: means(&hm),
        tau: tau_all,
        per_category,
        transfer: Some(holds as f64 / pair_decisions.len() as f64),
        pairs: pair_decisions,
    })
}

pub(crate) fn predictions(sides: &Sides) -> Vec<Prediction> {
    let Sides {
        taxonomy,
        levels,
        pairs,
        synthetic,
        human,
        settings,
    } = *sides;
    let metric = settings.metric;
    let z = normal_quantile(0.5 + settings.confidence / 2.0);
    let interval = |value: f64, se: f64| Estimate {
        value,
        ci: se.is_finite().then_some([value - z * se, value + z * se]),
    };
    let mut out = Vec::new();
    for &(s, h) in pairs {
        for (dimension, level) in levels {
            let (mut predicted, mut variance, mut covered, mut uncovered) =
                (0.0, 0.0, 0usize, 0usize);
            let mut observed = Vec::new();
            let mut parts = Vec::new();
            for category in categories(taxonomy, dimension, *level) {
                let of = |b: &'_ Benchmark, system: &SystemResult| {
                    crate::values(
                        system,
                        b.questions
                            .iter()
                            .filter(|q| q.category(dimension, *level) == Some(category.as_str())),
                        metric,
                    )
                };
                let (sv, hv) = (of(synthetic, s), of(human, h));
                observed.extend_from_slice(&hv);
                if sv.is_empty() {
                    uncovered += hv.len();
                } else if !hv.is_empty() {
                    covered += hv.len();
                    parts.push((hv.len(), sv));
                }
            }
            if covered == 0 {
                continue;
            }
            for (n_human, sv) in &parts {
                let w = *n_human as f64 / covered as f64;
                let mean = sv.iter().sum::<f64>() / sv.len() as f64;
                predicted += w * mean;
                let var = hierarag_stats::std_dev(sv, 1).map_or(0.0, |sd| sd * sd);
                variance += w * w * var / sv.len() as f64;
            }
            let observed_mean = observed.iter().sum::<f64>() / observed.len() as f64;
            let observed_se = hierarag_stats::std_dev(&observed, 1)
                .map_or(f64::NAN, |sd| sd / (observed.len() as f64).sqrt());
            let within = (observed_mean - predicted).abs()
                <= z * (variance + observed_se * observed_se).sqrt();
            let predicted = interval(predicted, variance.sqrt());
            out.push(Prediction {
                system: s.name.clone(),
                metric,
                dimension: dimension.clone(),
                level: *level,
                predicted,
                observed: interval(observed_mean, observed_se),
                unpredicted_share: uncovered as f64 / observed.len() as f64,
                within,
            });
        }
    }
    out
}
