//! Prediction-powered judge means (issue 46): the LLM judge's grades of every answer and the
//! people's ratings of a random few, combined into each system's mean with a valid interval
//! (PPI++, [`hierarag_stats::ppi_mean`]), beside the judge-only and people-only means, the
//! paired differences between systems, and how many ratings a wanted interval width needs.
//!
//! Both scales of the answer task are put on `[0, 1]` by dividing by their maximum:
//! correctness (higher is better) and hallucination (higher is worse). Every interval here is a
//! normal interval with the quantile `z = Φ⁻¹(1 − α/2)` that `ppi_mean` uses, and every plain
//! mean's standard error is `std(ddof = 0)/√n`, as ppi-python's `classical_mean_ci`: with λ = 0
//! the PPI interval is then exactly the people-only one, so the two widths compare like for
//! like (and the effective number of ratings equals the number of ratings).
//!
//! PPI is unbiased only when the rated answers are a uniform random sample of the judged
//! answers of the stratum they are counted in; the caller answers for that.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use hierarag_records::CategoryRef;
use hierarag_validity::ppi::{
    CategoryPpi, DifferencePpi, JudgePpi, PpiRow, RatingsPlan, ScalePpi, SystemPpi, ppi_row,
    ratings_for_width,
};

use crate::agreement::scale_values;
use crate::judged::JudgeInputs;
use crate::store::{Item, MAX_CORRECTNESS, MAX_HALLUCINATION, Rating};

/// One scale of the answer task: its name, maximum, the judge's grade's index in
/// [`JudgeInputs::answers`], and a rating's value.
struct Scale {
    name: &'static str,
    max: u8,
    judge_index: usize,
    value: fn(&Rating) -> Option<u8>,
}

const SCALES: [Scale; 2] = [
    Scale {
        name: "correctness",
        max: MAX_CORRECTNESS,
        judge_index: 0,
        value: |r| r.correctness,
    },
    Scale {
        name: "hallucination",
        max: MAX_HALLUCINATION,
        judge_index: 1,
        value: |r| r.hallucination,
    },
];

/// Per system, by question id: the judge's grade and, where people rated the answer, their
/// mean rating, both divided by the scale's maximum.
type Graded<'a> = HashMap<&'a str, BTreeMap<&'a str, (f64, Option<f64>)>>;

/// The PPI means of `systems` (in this order) on both scales of the answer task.
///
/// - `items` and `ratings` are the store's; only answer items of `systems` count. An answer's
///   rating is the mean over the people who rated it.
/// - `judge.answers` must hold the judge's grades of *all* the systems' answers, not only of the
///   rated ones: the unrated ones are what PPI adds.
/// - `categories` gives each question's categories; a question counts overall and in the row
///   of each of them (overall only when it has none).
///
/// Per system and stratum (overall, each category): Y is the people's rating of a rated
/// answer, Ŷ the judge's grade of it, Ŷ_unlabeled the judge's grades of the system's answers
/// people did not rate ([`ppi_row`]). Per pair of systems (A, B): the same on the per-question
/// difference A − B, Y and Ŷ on questions both answers of which were rated, Ŷ_unlabeled on
/// questions both answered and the judge graded but people did not rate both. A rated answer
/// the judge did not grade is left out (a note counts them). Nothing here fails: what cannot
/// be computed is `None` with a note.
pub fn judge_ppi(
    items: &[Item],
    ratings: &[Rating],
    judge: &JudgeInputs,
    categories: &HashMap<String, Vec<CategoryRef>>,
    systems: &[String],
    alpha: f64,
) -> JudgePpi {
    let mut notes = Vec::new();
    if !(alpha > 0.0 && alpha < 1.0) {
        notes.push(format!("alpha must be in (0, 1), not {alpha}: no estimate"));
        return JudgePpi {
            alpha,
            scales: Vec::new(),
            plans: Vec::new(),
            notes,
        };
    }
    let mut uncategorised: BTreeSet<&str> = BTreeSet::new();
    let mut scales = Vec::new();
    for scale in &SCALES {
        let (graded, unjudged) = graded(items, ratings, judge, systems, scale);
        if unjudged > 0 {
            notes.push(format!(
                "{unjudged} rated answer(s) have no {} grade from the judge: left out",
                scale.name
            ));
        }
        let categories_of =
            |question: &str| categories.get(question).map_or(&[][..], Vec::as_slice);
        let mut system_rows = Vec::new();
        for system in systems {
            let empty = BTreeMap::new();
            let answers = graded.get(system.as_str()).unwrap_or(&empty);
            uncategorised.extend(
                answers
                    .keys()
                    .filter(|q| categories_of(q).is_empty())
                    .copied(),
            );
            let values: Vec<(&str, (f64, Option<f64>))> =
                answers.iter().map(|(q, v)| (*q, *v)).collect();
            let (overall, categories) = stratified(&values, &categories_of, alpha, false);
            system_rows.push(SystemPpi {
                system: system.clone(),
                overall,
                categories,
            });
        }
        let mut differences = Vec::new();
        for (i, system_a) in systems.iter().enumerate() {
            for system_b in &systems[i + 1..] {
                let empty = BTreeMap::new();
                let a = graded.get(system_a.as_str()).unwrap_or(&empty);
                let b = graded.get(system_b.as_str()).unwrap_or(&empty);
                let values: Vec<(&str, (f64, Option<f64>))> = a
                    .iter()
                    .filter_map(|(question, (judge_a, people_a))| {
                        let (judge_b, people_b) = b.get(question)?;
                        let people = people_a.zip(*people_b).map(|(pa, pb)| pa - pb);
                        Some((*question, (judge_a - judge_b, people)))
                    })
                    .collect();
                let (overall, categories) = stratified(&values, &categories_of, alpha, true);
                differences.push(DifferencePpi {
                    system_a: system_a.clone(),
                    system_b: system_b.clone(),
                    overall,
                    categories,
                });
            }
        }
        scales.push(ScalePpi {
            scale: scale.name.to_string(),
            max: scale.max,
            systems: system_rows,
            differences,
        });
    }
    if !uncategorised.is_empty() {
        notes.push(format!(
            "{} judged question(s) have no categories: counted overall only",
            uncategorised.len()
        ));
    }
    notes.push(
        "Grades are divided by the scale's maximum (correctness: higher is better; \
hallucination: higher is worse). PPI++ as ppi-python's ppi_mean_ci: Y the people's mean rating \
of a rated answer, Ŷ the judge's grade of it, Ŷ_unlabeled its grades of the answers nobody \
rated, λ tuned for the narrowest interval. The judge-only and people-only intervals are normal \
with std(ddof = 0)/√n, as ppi-python's classical_mean_ci, so that λ = 0 gives the people-only \
interval. The PPI interval is valid only if the rated answers are a uniform random sample of \
each row's answers."
            .into(),
    );
    JudgePpi {
        alpha,
        scales,
        plans: Vec::new(),
        notes,
    }
}

/// The judge's grades and the people's mean ratings of the answers of `systems` on one scale,
/// and how many rated answers the judge did not grade.
fn graded<'a>(
    items: &'a [Item],
    ratings: &'a [Rating],
    judge: &'a JudgeInputs,
    systems: &[String],
    scale: &Scale,
) -> (Graded<'a>, usize) {
    let max = f64::from(scale.max);
    let mut graded: Graded<'a> = HashMap::new();
    for ((question, system), grades) in &judge.answers {
        if let Some(grade) = grades[scale.judge_index]
            && systems.contains(system)
        {
            graded
                .entry(system.as_str())
                .or_default()
                .insert(question.as_str(), (f64::from(grade) / max, None));
        }
    }
    let answer_items = items.iter().filter(|item| {
        item.answer
            .as_ref()
            .is_some_and(|a| systems.contains(&a.system))
    });
    let mut unjudged = 0;
    for (item, by_person) in scale_values(answer_items, ratings, scale.value) {
        let answer = item.answer.as_ref().expect("an answer item");
        let people =
            by_person.values().map(|&v| f64::from(v)).sum::<f64>() / by_person.len() as f64 / max;
        match graded
            .get_mut(answer.system.as_str())
            .and_then(|answers| answers.get_mut(answer.question_id.as_str()))
        {
            Some((_, slot)) => *slot = Some(people),
            None => unjudged += 1,
        }
    }
    (graded, unjudged)
}

/// The overall row and one row per category of `values` (question, (judge, people if rated)),
/// in question order.
fn stratified<'c>(
    values: &[(&str, (f64, Option<f64>))],
    categories_of: &dyn Fn(&str) -> &'c [CategoryRef],
    alpha: f64,
    difference: bool,
) -> (PpiRow, Vec<CategoryPpi>) {
    let row = |keep: &dyn Fn(&str) -> bool| {
        let mut rated = Vec::new();
        let mut unrated = Vec::new();
        for (question, (judge, people)) in values {
            if !keep(question) {
                continue;
            }
            match people {
                Some(people) => rated.push((*people, *judge)),
                None => unrated.push(*judge),
            }
        }
        let mut row = ppi_row(&rated, &unrated, alpha);
        if difference && let Some(ppi) = &mut row.ppi {
            ppi.excludes_zero = Some(ppi.ci[0] > 0.0 || ppi.ci[1] < 0.0);
        }
        row
    };
    let overall = row(&|_| true);
    let present: BTreeSet<&CategoryRef> = values
        .iter()
        .flat_map(|(question, _)| categories_of(question))
        .collect();
    let categories = present
        .into_iter()
        .map(|category| CategoryPpi {
            category: category.clone(),
            row: row(&|question| categories_of(question).contains(category)),
        })
        .collect();
    (overall, categories)
}

/// [`ratings_for_width`] for each of `systems` on both scales, with the rated answers of the
/// store as the pilot (the people-only bound where a system has fewer than two).
pub fn plan_ratings(
    items: &[Item],
    ratings: &[Rating],
    judge: &JudgeInputs,
    systems: &[String],
    width: f64,
    alpha: f64,
) -> Vec<RatingsPlan> {
    let mut plans = Vec::new();
    for scale in &SCALES {
        let (graded, _) = graded(items, ratings, judge, systems, scale);
        for system in systems {
            let mut pilot = Vec::new();
            let mut unrated = Vec::new();
            for (judge, people) in graded
                .get(system.as_str())
                .into_iter()
                .flat_map(|a| a.values())
            {
                match people {
                    Some(people) => pilot.push((*people, *judge)),
                    None => unrated.push(*judge),
                }
            }
            plans.push(RatingsPlan {
                scale: scale.name.to_string(),
                system: system.clone(),
                needed: ratings_for_width(&pilot, &unrated, width, alpha),
            });
        }
    }
    plans
}
