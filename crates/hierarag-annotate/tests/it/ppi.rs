//! Prediction-powered judge means: every row of `judge_ppi` against ppi-python on the committed
//! input of `tests/data/ppi_judge_cases.json` (written by `scripts/oracles/ppi_judge_oracle.py`;
//! no Python at test time), the coverage of its intervals in a seeded simulation of a biased
//! judge, the rows it cannot compute, and the number of ratings a wanted width needs.

use std::collections::HashMap;
use std::path::PathBuf;

use hierarag_annotate::{
    JudgeInputs, JudgePpi, MeanInterval, PlanMethod, PpiRow, Rating, SystemAnswer, judge_ppi,
    plan_ratings, ppi_row, ratings_for_width,
};
use hierarag_records::CategoryRef;
use hierarag_stats::normal_quantile;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use crate::support::{item, rating};

/// ppi-python and we compute the same sums in the same order up to numpy's pairwise summation:
/// 1e-9 (absolute below 1, relative above), the tolerance of hierarag-stats' PPI oracle.
const TOLERANCE: f64 = 1e-9;

#[derive(Deserialize)]
struct Fixture {
    alpha: f64,
    systems: Vec<String>,
    questions: Vec<FixtureQuestion>,
    judge: Vec<FixtureGrade>,
    items: Vec<FixtureItem>,
    ratings: Vec<FixtureRating>,
    rows: Vec<FixtureRow>,
}

#[derive(Deserialize)]
struct FixtureQuestion {
    id: String,
    categories: Vec<CategoryRef>,
}

#[derive(Deserialize)]
struct FixtureGrade {
    question_id: String,
    system: String,
    correctness: u8,
    hallucination: Option<u8>,
}

#[derive(Deserialize)]
struct FixtureItem {
    item_id: String,
    question_id: String,
    system: String,
}

#[derive(Deserialize)]
struct FixtureRating {
    item_id: String,
    annotator: String,
    correctness: u8,
    hallucination: Option<u8>,
}

#[derive(Deserialize)]
struct FixtureRow {
    scale: String,
    system_a: String,
    system_b: Option<String>,
    category: Option<CategoryRef>,
    n_rated: usize,
    n_judged: usize,
    ppi: Option<FixturePpi>,
    judge_only: Option<FixtureMean>,
    people_only: Option<FixtureMean>,
}

#[derive(Deserialize)]
struct FixturePpi {
    estimate: f64,
    ci: [f64; 2],
    effective_n_rated: f64,
    excludes_zero: Option<bool>,
}

#[derive(Deserialize)]
struct FixtureMean {
    mean: f64,
    ci: [f64; 2],
}

/// The largest difference seen, scaled as the tolerance is.
struct Checker {
    max_difference: f64,
    values: usize,
}

impl Checker {
    fn close(&mut self, ours: f64, theirs: f64, what: &str) {
        let difference = (ours - theirs).abs() / theirs.abs().max(1.0);
        assert!(difference <= TOLERANCE, "{what}: {ours} against {theirs}");
        self.max_difference = self.max_difference.max(difference);
        self.values += 1;
    }

    fn mean(&mut self, ours: &Option<MeanInterval>, theirs: &Option<FixtureMean>, what: &str) {
        match (ours, theirs) {
            (Some(ours), Some(theirs)) => {
                self.close(ours.mean, theirs.mean, &format!("{what} mean"));
                self.close(ours.ci[0], theirs.ci[0], &format!("{what} lower"));
                self.close(ours.ci[1], theirs.ci[1], &format!("{what} upper"));
            }
            (None, None) => {}
            _ => panic!("{what}: {ours:?} against {}", theirs.is_some()),
        }
    }
}

fn fixture() -> Fixture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/ppi_judge_cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the committed fixture"))
        .expect("ppi_judge_cases.json parses")
}

/// The fixture as the store and the judge would give it.
fn inputs(
    fixture: &Fixture,
) -> (
    Vec<hierarag_annotate::Item>,
    Vec<Rating>,
    JudgeInputs,
    HashMap<String, Vec<CategoryRef>>,
) {
    let items = fixture
        .items
        .iter()
        .enumerate()
        .map(|(n, answer)| {
            let mut item = item(&answer.item_id, n as u32, "a1", false);
            item.answer = Some(SystemAnswer {
                question_id: answer.question_id.clone(),
                system: answer.system.clone(),
                text: "An answer.".into(),
            });
            item
        })
        .collect();
    let ratings = fixture
        .ratings
        .iter()
        .map(|r| Rating {
            correctness: Some(r.correctness),
            hallucination: r.hallucination,
            ..rating(&r.item_id, &r.annotator)
        })
        .collect();
    let mut judge = JudgeInputs::default();
    for grade in &fixture.judge {
        judge.answers.insert(
            (grade.question_id.clone(), grade.system.clone()),
            [Some(grade.correctness), grade.hallucination],
        );
    }
    let categories = fixture
        .questions
        .iter()
        .map(|q| (q.id.clone(), q.categories.clone()))
        .collect();
    (items, ratings, judge, categories)
}

/// Every row of the result, keyed as the fixture keys them.
type RowKey = (String, String, Option<String>, Option<CategoryRef>);

fn rows(result: &JudgePpi) -> Vec<(RowKey, &PpiRow)> {
    let mut rows = Vec::new();
    for scale in &result.scales {
        for system in &scale.systems {
            let key = |c: Option<&CategoryRef>| {
                (scale.scale.clone(), system.system.clone(), None, c.cloned())
            };
            rows.push((key(None), &system.overall));
            for category in &system.categories {
                rows.push((key(Some(&category.category)), &category.row));
            }
        }
        for pair in &scale.differences {
            let key = |c: Option<&CategoryRef>| {
                (
                    scale.scale.clone(),
                    pair.system_a.clone(),
                    Some(pair.system_b.clone()),
                    c.cloned(),
                )
            };
            rows.push((key(None), &pair.overall));
            for category in &pair.categories {
                rows.push((key(Some(&category.category)), &category.row));
            }
        }
    }
    rows
}

#[test]
fn judge_ppi_equals_ppi_python_on_every_row() {
    let fixture = fixture();
    let (items, ratings, judge, categories) = inputs(&fixture);
    let result = judge_ppi(
        &items,
        &ratings,
        &judge,
        &categories,
        &fixture.systems,
        fixture.alpha,
    );
    let ours = rows(&result);
    // 2 scales × (3 systems + 3 pairs) × (overall + the categories present).
    assert_eq!(ours.len(), fixture.rows.len(), "rows");
    assert_eq!(fixture.rows.len(), 84, "the fixture's rows");
    let mut checker = Checker {
        max_difference: 0.0,
        values: 0,
    };
    let (mut with_ppi, mut differences) = (0, 0);
    for (expected, (key, row)) in fixture.rows.iter().zip(&ours) {
        let wanted: RowKey = (
            expected.scale.clone(),
            expected.system_a.clone(),
            expected.system_b.clone(),
            expected.category.clone(),
        );
        assert_eq!(key, &wanted, "rows in the oracle's order");
        let what = format!("{wanted:?}");
        assert_eq!(
            (row.n_rated, row.n_judged),
            (expected.n_rated, expected.n_judged),
            "{what}"
        );
        checker.mean(
            &row.judge_only,
            &expected.judge_only,
            &format!("{what} judge"),
        );
        checker.mean(
            &row.people_only,
            &expected.people_only,
            &format!("{what} people"),
        );
        match (&row.ppi, &expected.ppi) {
            (Some(ppi), Some(theirs)) => {
                with_ppi += 1;
                checker.close(ppi.estimate, theirs.estimate, &format!("{what} estimate"));
                checker.close(ppi.ci[0], theirs.ci[0], &format!("{what} lower"));
                checker.close(ppi.ci[1], theirs.ci[1], &format!("{what} upper"));
                checker.close(
                    ppi.effective_n_rated.unwrap(),
                    theirs.effective_n_rated,
                    &format!("{what} effective n"),
                );
                assert_eq!(ppi.excludes_zero, theirs.excludes_zero, "{what}");
                differences += usize::from(theirs.excludes_zero.is_some());
                assert!((0.0..=1.0).contains(&ppi.lambda), "{what}");
                assert!(row.note.is_none(), "{what}");
            }
            (None, None) => assert!(row.note.is_some(), "{what}: no estimate and no note"),
            _ => panic!("{what}: {:?} against {}", row.ppi, expected.ppi.is_some()),
        }
    }
    assert_eq!(with_ppi, 63, "rows with a PPI estimate");
    assert_eq!(differences, 32, "difference rows with a PPI estimate");
    eprintln!(
        "judge_ppi against ppi-python: {} values, max difference {:e}",
        checker.values, checker.max_difference
    );
    let notes = result.notes.join("\n");
    assert!(
        notes.contains("1 rated answer(s) have no correctness grade"),
        "{notes}"
    );
    assert!(
        notes.contains("5 judged question(s) have no categories"),
        "{notes}"
    );
    // The rows serialise as the report will read them.
    let json = serde_json::to_value(&result).unwrap();
    let back: JudgePpi = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, result);
    assert!(json["scales"][0]["differences"][0]["overall"]["ppi"]["excludes_zero"].is_boolean());
    assert!(json["scales"][0]["systems"][0]["overall"]["ppi"]["effective_n_rated"].is_number());
}

/// People's grade 0–3 with probabilities 0.2, 0.3, 0.3, 0.2 (mean 1.5, 0.5 on [0, 1]), and a
/// judge that grades one level too high 30 % of the time and at random 15 % of the time. One
/// draw per answer, its halves for the two choices, keeps the simulation fast in a debug build.
fn biased_answer(rng: &mut ChaCha8Rng) -> (f64, f64) {
    let bits = rng.next_u64();
    let u = (bits & 0xFFFF_FFFF) as f64 / 4_294_967_296.0;
    let v = (bits >> 32) as f64 / 4_294_967_296.0;
    let people: u8 = match u {
        u if u < 0.2 => 0,
        u if u < 0.5 => 1,
        u if u < 0.8 => 2,
        _ => 3,
    };
    let judge = if v < 0.3 {
        (people + 1).min(3)
    } else if v < 0.45 {
        // v is uniform on [0.3, 0.45) here: its position there is a uniform grade.
        ((v - 0.3) / 0.15 * 4.0) as u8
    } else {
        people
    };
    (f64::from(people) / 3.0, f64::from(judge) / 3.0)
}

#[test]
fn ppi_intervals_cover_the_true_mean_where_the_biased_judge_does_not() {
    const REPETITIONS: usize = 2_000;
    const ANSWERS: usize = 1_000;
    const RATED: usize = 100;
    let truth = 0.5;
    let mut rng = ChaCha8Rng::seed_from_u64(20_261_214);
    let (mut ppi_covers, mut judge_covers, mut people_covers) = (0usize, 0usize, 0usize);
    let (mut ppi_width, mut people_width) = (0.0, 0.0);
    let covers = |ci: [f64; 2]| ci[0] <= truth && truth <= ci[1];
    for _ in 0..REPETITIONS {
        // The answers are drawn independently, so the first RATED are a uniform random sample.
        let answers: Vec<(f64, f64)> = (0..ANSWERS).map(|_| biased_answer(&mut rng)).collect();
        let unrated: Vec<f64> = answers[RATED..].iter().map(|(_, judge)| *judge).collect();
        let row = ppi_row(&answers[..RATED], &unrated, 0.05);
        let ppi = row.ppi.expect("an estimate");
        let (judge, people) = (row.judge_only.unwrap(), row.people_only.unwrap());
        ppi_covers += usize::from(covers(ppi.ci));
        judge_covers += usize::from(covers(judge.ci));
        people_covers += usize::from(covers(people.ci));
        ppi_width += ppi.ci[1] - ppi.ci[0];
        people_width += people.ci[1] - people.ci[0];
    }
    let share = |k: usize| k as f64 / REPETITIONS as f64;
    eprintln!(
        "coverage over {REPETITIONS}: PPI {:.4}, judge-only {:.4}, people-only {:.4}; mean width \
PPI {:.4}, people-only {:.4}",
        share(ppi_covers),
        share(judge_covers),
        share(people_covers),
        ppi_width / REPETITIONS as f64,
        people_width / REPETITIONS as f64
    );
    let binomial_se = (0.95 * 0.05 / REPETITIONS as f64).sqrt();
    assert!(
        (share(ppi_covers) - 0.95).abs() <= 3.0 * binomial_se,
        "PPI coverage {}",
        share(ppi_covers)
    );
    // The judge's bias (+0.08 on [0, 1]) is about eight of its standard errors.
    assert!(
        share(judge_covers) < 0.2,
        "judge-only coverage {}",
        share(judge_covers)
    );
    // The judge is informative enough to narrow the people's interval.
    assert!(
        ppi_width < 0.95 * people_width,
        "{ppi_width} against {people_width}"
    );
}

#[test]
fn a_stratum_ppi_cannot_use_gets_a_note() {
    // One rating.
    let row = ppi_row(&[(1.0, 1.0)], &[0.0, 1.0, 0.5], 0.05);
    assert!(row.ppi.is_none());
    assert!(
        row.note.as_deref().unwrap().contains("at least 2"),
        "{row:?}"
    );
    assert!(row.people_only.is_none() && row.judge_only.is_some());
    // Every answer rated.
    let row = ppi_row(&[(1.0, 1.0), (0.0, 0.5)], &[], 0.05);
    assert!(row.ppi.is_none());
    assert!(
        row.note
            .as_deref()
            .unwrap()
            .contains("every judged answer is rated")
    );
    assert!(row.people_only.is_some());
    // A judge that gives every answer the same grade: ppi_mean's λ is 0/0.
    let row = ppi_row(&[(1.0, 2.0 / 3.0), (0.0, 2.0 / 3.0)], &[2.0 / 3.0; 5], 0.05);
    assert!(row.ppi.is_none());
    assert!(
        row.note.as_deref().unwrap().contains("same grade"),
        "{row:?}"
    );
    let judge = row.judge_only.unwrap();
    assert!(
        (judge.mean - 2.0 / 3.0).abs() < 1e-15 && judge.se < 1e-15,
        "{judge:?}"
    );
}

#[test]
fn judge_ppi_notes_what_it_cannot_compute() {
    let systems = vec!["s".to_string(), "t".to_string()];
    let mut judge = JudgeInputs::default();
    let mut items = Vec::new();
    let mut ratings = Vec::new();
    for q in 0..6 {
        for system in &systems {
            // The judge gives every answer 2 and sees no passage (no hallucination grade).
            judge
                .answers
                .insert((format!("q{q}"), system.clone()), [Some(2), None]);
        }
        if q < 3 {
            let mut answer = item(&format!("answer-{q}"), q, "a1", false);
            answer.answer = Some(SystemAnswer {
                question_id: format!("q{q}"),
                system: "s".into(),
                text: "An answer.".into(),
            });
            ratings.push(Rating {
                correctness: Some(q as u8),
                hallucination: Some(0),
                ..rating(&answer.item_id, "ann")
            });
            items.push(answer);
        }
    }
    let result = judge_ppi(&items, &ratings, &judge, &HashMap::new(), &systems, 0.1);
    let correctness = &result.scales[0];
    let s = &correctness.systems[0].overall;
    assert_eq!((s.n_rated, s.n_judged), (3, 6));
    assert!(s.ppi.is_none() && s.note.as_deref().unwrap().contains("same grade"));
    let t = &correctness.systems[1].overall;
    assert_eq!((t.n_rated, t.n_judged), (0, 6));
    assert!(t.note.as_deref().unwrap().contains("0 rated"));
    // No question has both answers rated.
    let pair = &correctness.differences[0].overall;
    assert_eq!((pair.n_rated, pair.n_judged), (0, 6));
    assert!(pair.ppi.is_none() && pair.note.is_some());
    // Hallucination: nothing judged, so the rated answers are counted as left out.
    let hallucination = &result.scales[1].systems[0].overall;
    assert_eq!((hallucination.n_rated, hallucination.n_judged), (0, 0));
    assert!(hallucination.judge_only.is_none());
    let notes = result.notes.join("\n");
    assert!(
        notes.contains("3 rated answer(s) have no hallucination grade"),
        "{notes}"
    );
    assert!(
        notes.contains("6 judged question(s) have no categories"),
        "{notes}"
    );
    let bad = judge_ppi(&items, &ratings, &judge, &HashMap::new(), &systems, 1.5);
    assert!(bad.scales.is_empty() && bad.notes[0].contains("alpha"));
}

#[test]
fn without_a_pilot_the_plan_is_the_people_only_bound() {
    let needed = ratings_for_width(&[], &[0.5; 1000], 0.1, 0.05);
    assert_eq!(needed.method, PlanMethod::PeopleOnlyBound);
    // (2 · 1.959964 · 0.5 / 0.1)² = 384.15.
    assert_eq!(needed.n_rated, Some(385));
    assert!(needed.note.as_deref().unwrap().contains("0 pilot rating"));
    let few = ratings_for_width(&[], &[0.5; 100], 0.1, 0.05);
    assert!(
        few.note
            .as_deref()
            .unwrap()
            .contains("more than the system's 100")
    );
    assert_eq!(ratings_for_width(&[], &[0.5], 0.0, 0.05).n_rated, None);
}

#[test]
fn a_pilot_plan_reaches_the_width_and_no_fewer_ratings_would() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let answers: Vec<(f64, f64)> = (0..2_000).map(|_| biased_answer(&mut rng)).collect();
    let pilot = &answers[..60];
    let unrated: Vec<f64> = answers[60..].iter().map(|(_, judge)| *judge).collect();
    let (width, alpha) = (0.08, 0.05);
    let needed = ratings_for_width(pilot, &unrated, width, alpha);
    assert_eq!(needed.method, PlanMethod::Pilot);
    let n = needed.n_rated.unwrap();
    let (v_r, v_j) = (
        needed.rectifier_variance.unwrap(),
        needed.judge_variance.unwrap(),
    );
    let half = |n: usize| {
        let se2 = v_r / n as f64 + v_j / (2_000 - n) as f64;
        normal_quantile(1.0 - alpha / 2.0) * se2.sqrt()
    };
    assert!(2.0 * half(n) <= width + 1e-12, "{needed:?}");
    assert!(2.0 * half(n - 1) > width, "{needed:?}");
    // The judge is worth something: fewer than the people-only bound's 601.
    let bound = ratings_for_width(&[], &unrated, width, alpha)
        .n_rated
        .unwrap();
    assert_eq!(bound, 601);
    assert!(n < bound, "{n} against {bound}");
    // A width the judge's own spread over 2,000 answers cannot reach.
    let unreachable = ratings_for_width(pilot, &unrated, 0.005, alpha);
    assert_eq!(unreachable.n_rated, None);
    assert!(unreachable.note.is_some());
}

#[test]
fn plan_ratings_uses_the_stores_ratings_as_the_pilot() {
    let fixture = fixture();
    let (items, ratings, judge, _) = inputs(&fixture);
    let plans = plan_ratings(&items, &ratings, &judge, &fixture.systems, 0.1, 0.05);
    assert_eq!(plans.len(), 6);
    for plan in &plans {
        assert_eq!(plan.needed.method, PlanMethod::Pilot, "{plan:?}");
        assert!(plan.needed.n_pilot > 50, "{plan:?}");
        assert!(plan.needed.n_judged > 200, "{plan:?}");
    }
}

#[test]
fn a_judge_of_one_grade_plans_with_the_pilots_people_only_variance() {
    // People's values 0 and 1 alternate (variance 0.25): n = 0.25 / (0.1 / 2z)² = 384.1.
    let pilot: Vec<(f64, f64)> = (0..20).map(|i| (f64::from(i % 2), 2.0 / 3.0)).collect();
    let needed = ratings_for_width(&pilot, &[2.0 / 3.0; 1000], 0.1, 0.05);
    assert_eq!(needed.method, PlanMethod::Pilot);
    assert_eq!(
        (needed.lambda, needed.judge_variance),
        (Some(0.0), Some(0.0))
    );
    assert_eq!(needed.n_rated, Some(385));
    assert!(needed.note.as_deref().unwrap().contains("same grade"));
}
