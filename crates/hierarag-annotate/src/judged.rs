//! The LLM judge and the automatic metrics against the people who rated the same items: on the
//! benchmark task (QA pairs) and the answer task (system answers), quadratic-weighted Cohen's κ
//! and Spearman's ρ of the judge against each annotator and against their mean, the people's
//! own κ beside it as the ceiling; on the answer task, Spearman's ρ of every automatic metric
//! with the people's mean correctness, overall and per dimension, and a verdict in words.

use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use hierarag_analysis::{
    JudgeAgreement, JudgeScale, JudgeVsPerson, MetricAgreement, TaskAgreement,
};
use hierarag_stats::{quadratic_kappa, spearman};

use crate::agreement::scale_values;
use crate::store::{Item, MAX_ANSWERABILITY, MAX_CORRECTNESS, MAX_HALLUCINATION, Rating};

/// What the judge and the metrics said about the rated items.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgeInputs {
    /// The judge's model, `model (backend)`.
    pub model: Option<String>,
    /// The judge's ratings of benchmark pairs by question id: correctness, hallucination,
    /// answerability.
    pub pairs: HashMap<String, [u8; 3]>,
    /// The judge's grades of system answers by (question id, system): correctness,
    /// hallucination (absent when the judge saw no passage).
    pub answers: HashMap<(String, String), [Option<u8>; 2]>,
    /// Each answer's automatic scores by (question id, system), as (metric, value) in the
    /// order the metrics are to be listed.
    pub scores: HashMap<(String, String), Vec<(String, f64)>>,
    /// The metric the analysis ranks categories by (`cs` by default).
    pub analysed_metric: String,
}

/// One scale's value in a rating.
type ScaleOf = fn(&Rating) -> Option<u8>;

/// A rated answer: its item, the people's mean correctness, its automatic scores.
type RatedAnswer<'a> = (&'a Item, f64, &'a [(String, f64)]);

/// A metric follows the people well at ρ ≥ this (and p < 0.05), moderately at ρ ≥ [`FAIR`].
pub const GOOD: f64 = 0.5;
pub const FAIR: f64 = 0.3;

/// The judge and the metrics against the ratings of `items`; `None` when people rated no item
/// the judge or a metric has a value for.
pub fn judge_agreement(
    items: &[Item],
    ratings: &[Rating],
    inputs: &JudgeInputs,
) -> Option<JudgeAgreement> {
    let mut notes = Vec::new();
    let mut tasks = Vec::new();

    let pair_items: Vec<&Item> = items.iter().filter(|i| i.answer.is_none()).collect();
    let pair_scales: [(&str, u8, ScaleOf); 3] = [
        ("correctness", MAX_CORRECTNESS, |r| r.correctness),
        ("hallucination", MAX_HALLUCINATION, |r| r.hallucination),
        ("answerability", MAX_ANSWERABILITY, |r| r.answerability),
    ];
    let scales: Vec<JudgeScale> = pair_scales
        .iter()
        .enumerate()
        .filter_map(|(s, (scale, max, value))| {
            judge_scale(scale, *max, &pair_items, ratings, value, |item| {
                inputs.pairs.get(&item.item_id).map(|r| r[s])
            })
        })
        .collect();
    if !scales.is_empty() {
        tasks.push(TaskAgreement {
            task: "benchmark".into(),
            scales,
        });
    }

    let answer_items: Vec<&Item> = items.iter().filter(|i| i.answer.is_some()).collect();
    let key = |item: &Item| {
        let answer = item.answer.as_ref().expect("an answer item");
        (answer.question_id.clone(), answer.system.clone())
    };
    let scales: Vec<JudgeScale> = pair_scales[..2]
        .iter()
        .enumerate()
        .filter_map(|(s, (scale, max, value))| {
            judge_scale(scale, *max, &answer_items, ratings, value, |item| {
                inputs.answers.get(&key(item)).and_then(|r| r[s])
            })
        })
        .collect();
    if !scales.is_empty() {
        tasks.push(TaskAgreement {
            task: "answers".into(),
            scales,
        });
    }

    // Each rated answer's mean correctness, and its scores.
    // (item, the people's mean correctness, its scores)
    let mut rated: Vec<RatedAnswer<'_>> = Vec::new();
    let people = scale_values(answer_items.iter().copied(), ratings, |r| r.correctness);
    for (item, by_person) in &people {
        if let Some(scores) = inputs.scores.get(&key(item)) {
            rated.push((item, mean_of(by_person), scores));
        }
    }
    let unscored = people.len() - rated.len();
    if unscored > 0 {
        notes.push(format!(
            "{unscored} rated answer(s) have no scores (not evaluated): left out of the metrics"
        ));
    }
    let mut metric_names: Vec<&str> = Vec::new();
    for (_, _, scores) in &rated {
        for (name, _) in *scores {
            if !metric_names.contains(&name.as_str()) {
                metric_names.push(name);
            }
        }
    }
    let dimensions: BTreeSet<&str> = rated.iter().map(|(i, _, _)| i.dimension.as_str()).collect();
    let mut metrics = Vec::new();
    for dimension in std::iter::once("all").chain(dimensions.iter().copied()) {
        for &metric in &metric_names {
            let (values, means): (Vec<f64>, Vec<f64>) = rated
                .iter()
                .filter(|(item, _, _)| dimension == "all" || item.dimension == dimension)
                .filter_map(|(_, mean, scores)| {
                    scores
                        .iter()
                        .find(|(name, _)| name == metric)
                        .map(|(_, value)| (*value, *mean))
                })
                .unzip();
            let correlation = spearman(&values, &means);
            metrics.push(MetricAgreement {
                metric: metric.to_string(),
                dimension: dimension.to_string(),
                n: values.len(),
                rho: correlation.map(|c| c.r),
                p: correlation.map(|c| c.p),
            });
        }
    }
    if tasks.is_empty() && metrics.is_empty() {
        return None;
    }
    if inputs.model.is_none() {
        notes.push("no judge has rated these items (`hierarag judge`)".into());
    }
    let verdict = verdict(&metrics, &inputs.analysed_metric);
    notes.push(format!(
        "κ is quadratic-weighted over the whole scale (scikit-learn's cohen_kappa_score with \
weights=\"quadratic\" and every label of the scale); against the people's mean, the mean is \
rounded half up for κ and used as it is for ρ. The people's κ is the mean over pairs of \
annotators. A metric follows the people well at ρ ≥ {GOOD} and p < 0.05, moderately at ρ ≥ {FAIR}."
    ));
    Some(JudgeAgreement {
        judge: inputs.model.clone(),
        tasks,
        metrics,
        analysed_metric: inputs.analysed_metric.clone(),
        verdict,
        notes,
    })
}

fn mean_of(people: &BTreeMap<&str, u8>) -> f64 {
    people.values().map(|&v| f64::from(v)).sum::<f64>() / people.len() as f64
}

/// The judge against the people on one scale; `None` when no item has both.
fn judge_scale(
    scale: &str,
    max: u8,
    items: &[&Item],
    ratings: &[Rating],
    value: &dyn Fn(&Rating) -> Option<u8>,
    judge: impl Fn(&Item) -> Option<u8>,
) -> Option<JudgeScale> {
    let people = scale_values(items.iter().copied(), ratings, value);
    let both: Vec<(u8, &BTreeMap<&str, u8>)> = people
        .iter()
        .filter_map(|(item, by_person)| judge(item).map(|j| (j, by_person)))
        .collect();
    let max_label = usize::from(max);
    let against = |name: &str, pairs: &[(u8, f64)], labels: &[usize]| {
        let judge: Vec<usize> = pairs.iter().map(|(j, _)| usize::from(*j)).collect();
        let (x, y): (Vec<f64>, Vec<f64>) = pairs.iter().map(|(j, v)| (f64::from(*j), *v)).unzip();
        let correlation = spearman(&x, &y);
        JudgeVsPerson {
            annotator: name.to_string(),
            n: pairs.len(),
            kappa: quadratic_kappa(&judge, labels, max_label),
            spearman: correlation.map(|c| c.r),
            p: correlation.map(|c| c.p),
        }
    };
    let annotators: BTreeSet<&str> = people
        .iter()
        .flat_map(|(_, by_person)| by_person.keys().copied())
        .collect();
    let mut per_person = Vec::new();
    for &annotator in &annotators {
        let pairs: Vec<(u8, f64)> = both
            .iter()
            .filter_map(|(j, by_person)| by_person.get(annotator).map(|v| (*j, f64::from(*v))))
            .collect();
        if pairs.is_empty() {
            continue;
        }
        let labels: Vec<usize> = pairs.iter().map(|(_, v)| *v as usize).collect();
        per_person.push(against(annotator, &pairs, &labels));
    }
    let mean = (!both.is_empty()).then(|| {
        let pairs: Vec<(u8, f64)> = both.iter().map(|(j, p)| (*j, mean_of(p))).collect();
        // Half up: a mean of 1.5 counts as 2.
        let labels: Vec<usize> = pairs
            .iter()
            .map(|(_, m)| (m + 0.5).floor() as usize)
            .collect();
        against("mean", &pairs, &labels)
    });
    let mut kappas = Vec::new();
    let annotators: Vec<&str> = annotators.into_iter().collect();
    for (n, a) in annotators.iter().enumerate() {
        for b in &annotators[n + 1..] {
            let (x, y): (Vec<usize>, Vec<usize>) = people
                .iter()
                .filter_map(|(_, p)| Some((usize::from(*p.get(a)?), usize::from(*p.get(b)?))))
                .unzip();
            kappas.extend(quadratic_kappa(&x, &y, max_label));
        }
    }
    if both.is_empty() && kappas.is_empty() {
        return None;
    }
    Some(JudgeScale {
        scale: scale.to_string(),
        max,
        n_items: both.len(),
        annotators: per_person,
        mean,
        human_kappa: (!kappas.is_empty()).then(|| kappas.iter().sum::<f64>() / kappas.len() as f64),
    })
}

/// Whether the analysed metric follows the people's correctness over all rated answers, and
/// which metric follows them best.
fn verdict(metrics: &[MetricAgreement], analysed: &str) -> Option<String> {
    let overall: Vec<&MetricAgreement> = metrics
        .iter()
        .filter(|m| m.dimension == "all" && m.rho.is_some())
        .collect();
    let best = overall
        .iter()
        .max_by(|a, b| a.rho.unwrap().total_cmp(&b.rho.unwrap()))?;
    let follows = |m: &MetricAgreement| {
        let (rho, p) = (m.rho.unwrap_or(f64::NAN), m.p.unwrap_or(1.0));
        if rho >= GOOD && p < 0.05 {
            "follows the people well"
        } else if rho >= FAIR && p < 0.05 {
            "follows the people only moderately"
        } else {
            "does not follow the people"
        }
    };
    let describe = |m: &MetricAgreement| {
        format!(
            "{} (Spearman ρ = {:.2}, p = {:.3}, {} answers)",
            m.metric,
            m.rho.unwrap_or(f64::NAN),
            m.p.unwrap_or(f64::NAN),
            m.n
        )
    };
    let Some(mine) = overall.iter().find(|m| m.metric == analysed) else {
        return Some(format!(
            "The analysed metric, {analysed}, has no value on the rated answers; of the others, \
{} follows the people's correctness best.",
            describe(best)
        ));
    };
    let mut text = format!(
        "On the answers people rated, the analysed metric {} {}",
        describe(mine),
        follows(mine)
    );
    if follows(mine) == "follows the people well" && best.metric == mine.metric {
        text.push_str(": its category ranking can be trusted on this benchmark.");
    } else if best.metric != mine.metric && best.rho.unwrap() > mine.rho.unwrap_or(f64::NAN) {
        text.push_str(&format!(
            "; {} {} and follows them better: analyse with --metric {}.",
            describe(best),
            follows(best),
            best.metric
        ));
    } else {
        text.push_str(
            "; no other metric follows them better: read its category ranking with care.",
        );
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use hierarag_taxonomy::Granularity;

    use super::*;
    use crate::store::SystemAnswer;

    fn item(n: usize, answer: bool) -> Item {
        Item {
            item_id: if answer {
                format!("answer-{n}")
            } else {
                format!("q{n}")
            },
            position: n as u32,
            set: "qc/coarse".into(),
            dimension: if n.is_multiple_of(2) { "qc" } else { "lv" }.into(),
            level: Granularity::Coarse,
            category: "simple".into(),
            parent: None,
            category_task: false,
            question: format!("Question {n}?"),
            reference: "Ref.".into(),
            documents: Vec::new(),
            choices: Vec::new(),
            answer: answer.then(|| SystemAnswer {
                question_id: format!("q{n}"),
                system: "s".into(),
                text: "An answer.".into(),
            }),
        }
    }

    fn rating(item: &Item, annotator: &str, correctness: u8, hallucination: u8) -> Rating {
        Rating {
            item_id: item.item_id.clone(),
            annotator: annotator.into(),
            correctness: Some(correctness),
            hallucination: Some(hallucination),
            answerability: None,
            category_pick: None,
            note: None,
            updated_unix_s: 0,
        }
    }

    /// Two people who agree; a judge that says what they say, or one that draws its grades
    /// from a generator unrelated to them.
    fn run(perfect: bool) -> JudgeAgreement {
        let n = 400;
        let items: Vec<Item> = (0..n).map(|i| item(i, true)).collect();
        let truth = |i: usize| ((i * 7 + i / 3) % 4) as u8;
        let mut state = 12345u64;
        let mut draw = |max: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % (max + 1)) as u8
        };
        let mut ratings = Vec::new();
        let mut inputs = JudgeInputs {
            model: Some("m (openai)".into()),
            analysed_metric: "cs".into(),
            ..JudgeInputs::default()
        };
        for (i, it) in items.iter().enumerate() {
            let (c, h) = (truth(i), truth(i) % 3);
            ratings.push(rating(it, "alice", c, h));
            ratings.push(rating(it, "bob", c, h));
            let judged = if perfect { [c, h] } else { [draw(3), draw(2)] }.map(Some);
            let key = (format!("q{i}"), "s".to_string());
            inputs.answers.insert(key.clone(), judged);
            // CS follows the people; BLEU does not.
            inputs.scores.insert(
                key,
                vec![
                    ("cs".into(), f64::from(c) / 3.0),
                    ("bleu".into(), f64::from(draw(100))),
                ],
            );
        }
        judge_agreement(&items, &ratings, &inputs).unwrap()
    }

    #[test]
    fn a_perfect_judge_has_kappa_one_and_a_random_one_about_zero() {
        let perfect = run(true);
        assert_eq!(perfect.tasks.len(), 1);
        assert_eq!(perfect.tasks[0].task, "answers");
        for scale in &perfect.tasks[0].scales {
            assert_eq!(scale.human_kappa, Some(1.0));
            for vs in scale.annotators.iter().chain(scale.mean.iter()) {
                assert!((vs.kappa.unwrap() - 1.0).abs() < 1e-12, "{vs:?}");
                assert!((vs.spearman.unwrap() - 1.0).abs() < 1e-12, "{vs:?}");
            }
        }
        let random = run(false);
        for scale in &random.tasks[0].scales {
            assert_eq!(scale.n_items, 400);
            assert_eq!(scale.human_kappa, Some(1.0));
            for vs in scale.annotators.iter().chain(scale.mean.iter()) {
                assert!(vs.kappa.unwrap().abs() < 0.12, "{vs:?}");
            }
        }
        let overall = |m: &str| {
            random
                .metrics
                .iter()
                .find(|x| x.metric == m && x.dimension == "all")
                .unwrap()
                .clone()
        };
        assert!((overall("cs").rho.unwrap() - 1.0).abs() < 1e-12);
        assert!(overall("bleu").rho.unwrap().abs() < 0.15);
        assert!(random.metrics.iter().any(|m| m.dimension == "qc"));
        let verdict = random.verdict.unwrap();
        assert!(verdict.contains("follows the people well"), "{verdict}");
        assert!(verdict.contains("can be trusted"), "{verdict}");
    }
}
