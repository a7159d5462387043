//! The findings in words, for a reader who is not a statistician.

use crate::{Decision, FEW_HUMAN_QUESTIONS, Mix, Property, Transfer, Validity};

fn interval(ci: Option<[f64; 2]>) -> String {
    ci.map_or_else(String::new, |[lo, hi]| {
        format!(", interval {lo:.2} to {hi:.2}")
    })
}

pub(crate) fn verdict(v: &Validity) -> Vec<String> {
    let mut out = Vec::new();
    if v.human_questions < FEW_HUMAN_QUESTIONS {
        out.push(format!(
            "Only {} human-written questions: every comparison below is indicative at best; \
{FEW_HUMAN_QUESTIONS} or more are needed before a difference can be trusted.",
            v.human_questions
        ));
    }
    if let Some(d) = &v.decisions {
        let n = v.systems.len();
        // Two systems make one pair: τ is the sign of its difference (±1, an interval of −1
        // to 1), and the pair's decision below says what there is to say.
        if let Some(tau) = d.tau.as_ref().filter(|_| n > 2) {
            let how = if tau.value >= 0.999 {
                "orders your systems as your real questions do"
            } else if tau.value > 0.0 {
                "orders your systems partly as your real questions do"
            } else {
                "does not order your systems as your real questions do"
            };
            out.push(format!(
                "Your synthetic benchmark {how} on {} (Kendall's τ = {:.2}{}, {n} systems).",
                d.metric,
                tau.value,
                interval(tau.ci)
            ));
        }
        let holds = d
            .pairs
            .iter()
            .filter(|p| p.transfer == Transfer::Holds)
            .count();
        let describe = |t: Transfer| match t {
            Transfer::Holds => "holds",
            Transfer::Vanishes => "vanishes",
            Transfer::Flips => "flips",
            Transfer::Appears => "appears only on real questions",
        };
        let changed: Vec<String> = d
            .pairs
            .iter()
            .filter(|p| p.transfer != Transfer::Holds)
            .map(|p| {
                let said = match p.synthetic {
                    Decision::Better => format!("{} beats {}", p.b, p.a),
                    Decision::Worse => format!("{} beats {}", p.a, p.b),
                    Decision::NoDifference => format!("{} and {} do not differ", p.a, p.b),
                };
                format!("\"{said}\" {}", describe(p.transfer))
            })
            .collect();
        out.push(format!(
            "{holds} of {} pairwise decisions transfer to the human questions{}",
            d.pairs.len(),
            if changed.is_empty() {
                ".".to_owned()
            } else {
                format!(": {}.", changed.join("; "))
            }
        ));
    }
    // The strongest mismatch of the category mix at the coarse levels.
    let mut mismatches: Vec<(f64, String)> = v
        .coverage
        .iter()
        .flat_map(|c| {
            c.categories.iter().filter_map(move |s| {
                let (human, synthetic) = (100.0 * s.human_share, 100.0 * s.synthetic_share);
                Some(match s.flag? {
                    Mix::Over => (
                        s.human_share - s.synthetic_share,
                        format!(
                            "People ask {} questions ({} at {}) more often than the benchmark \
does ({human:.0} % against {synthetic:.0} %).",
                            s.category, c.dimension, c.level
                        ),
                    ),
                    Mix::Under => (
                        s.synthetic_share - s.human_share,
                        format!(
                            "The benchmark over-represents {} questions ({} at {}: \
{synthetic:.0} % against {human:.0} % of real questions).",
                            s.category, c.dimension, c.level
                        ),
                    ),
                })
            })
        })
        .collect();
    mismatches.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.extend(mismatches.into_iter().take(2).map(|(_, said)| said));
    for row in v
        .properties
        .iter()
        .filter(|r| r.dimension.is_none() && r.p < 1.0 - v.settings.confidence)
    {
        let higher = row.effect > 0.0;
        let p = row.p;
        let said = match row.property {
            Property::Words => format!(
                "Synthetic questions are {} (median {} against {} words, p = {p:.2e}).",
                if higher { "longer" } else { "shorter" },
                row.synthetic_median,
                row.human_median,
            ),
            Property::Overlap => format!(
                "Synthetic questions share {} words with their relevant document (median {:.0} % \
against {:.0} % of their words, p = {p:.2e}).",
                if higher { "more" } else { "fewer" },
                100.0 * row.synthetic_median,
                100.0 * row.human_median,
            ),
            Property::GoldRank => format!(
                "BM25 ranks the relevant document of a synthetic question {} (mean rank {:.1} \
against {:.1}, p = {p:.2e}).",
                if higher { "lower" } else { "higher" },
                row.synthetic_mean,
                row.human_mean,
            ),
            Property::AnswerWords => format!(
                "Synthetic reference answers are {} (median {} against {} words, p = {p:.2e}).",
                if higher { "longer" } else { "shorter" },
                row.synthetic_median,
                row.human_median,
            ),
            Property::RefusalExpected => format!(
                "{} synthetic questions expect a refusal ({:.0} % against {:.0} %, p = {p:.2e}).",
                if higher { "More" } else { "Fewer" },
                100.0 * row.synthetic_mean,
                100.0 * row.human_mean,
            ),
        };
        out.push(said);
    }
    let differing: Vec<String> = v
        .granularity
        .iter()
        .filter(|g| !g.agree && g.synthetic_recommended.is_some())
        .map(|g| {
            format!(
                "{} ({}): {}",
                g.dimension,
                g.system,
                g.human_recommended.map_or_else(
                    || "the human questions support no recommendation".to_owned(),
                    |h| format!(
                        "{} on the synthetic benchmark, {h} on real questions",
                        g.synthetic_recommended.expect("filtered")
                    )
                )
            )
        })
        .collect();
    if !differing.is_empty() {
        out.push(format!(
            "The recommended granularity does not carry over for {}.",
            differing.join("; ")
        ));
    } else if !v.granularity.is_empty() {
        out.push("The recommended granularity is the same on both benchmarks.".to_owned());
    }
    out
}
