//! Tables on stdout that more than one command prints: the run's means per category, the
//! analysis, the recommended granularity.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use hierarag_analysis::{Analysis, format_delta};
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{ScoreRecord, read_records};
use hierarag_run::chain::RunOutcome;

thread_local! {
    /// Whether the tables are printed on this thread (the Python package's `quiet=True` hides
    /// them; the command line always prints them, `--quiet` being about stderr).
    static SHOWN: Cell<bool> = const { Cell::new(true) };
}

/// Runs `f` with the tables of this thread hidden.
pub fn hidden<R>(f: impl FnOnce() -> R) -> R {
    let before = SHOWN.replace(false);
    let result = f();
    SHOWN.set(before);
    result
}

/// Where the tables go: stdout, or nowhere while [`hidden`].
fn stdout() -> Box<dyn Write> {
    if SHOWN.get() {
        Box::new(crate::printer::stdout())
    } else {
        Box::new(std::io::sink())
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// `path` relative to the run directory `root` (`systems/bm25/answers.jsonl`).
fn in_run(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map_or_else(|_| file_name(path), |p| p.display().to_string())
}

/// Means over the scored questions (of the run's first system), overall and per category;
/// with several systems, each system's overall means too.
pub fn run_summary(outcome: &RunOutcome) -> anyhow::Result<()> {
    let run = &outcome.run;
    let systems = hierarag_run::systems::systems_of_run(run)?;
    let (first, system) = systems.first().cloned().expect("a run has a system");
    let benchmark: Vec<BenchmarkRecord> = read_records(&run.benchmark())?;
    let scores: Vec<ScoreRecord> = read_records(&system.scores())?;
    let categories: BTreeMap<&str, &BenchmarkRecord> =
        benchmark.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut groups: BTreeMap<String, Vec<&ScoreRecord>> = BTreeMap::new();
    for score in &scores {
        groups.entry("all".into()).or_default().push(score);
        if let Some(record) = categories.get(score.id.as_str()) {
            for category in &record.categories {
                groups
                    .entry(format!(
                        "{}/{}:{}",
                        category.dimension,
                        category.level.as_str(),
                        category.category
                    ))
                    .or_default()
                    .push(score);
            }
        }
    }
    let mut out = stdout();
    let several = systems.len() > 1;
    let title = if several {
        format!("questions (system {first})")
    } else {
        "questions".to_owned()
    };
    means_header(&mut out, &title)?;
    for (name, group) in &groups {
        means_row(&mut out, name, group)?;
    }
    if several {
        writeln!(out)?;
        means_header(&mut out, "systems (all questions)")?;
        for (name, system) in &systems {
            let scores: Vec<ScoreRecord> = if system.scores().exists() {
                read_records(&system.scores())?
            } else {
                Vec::new()
            };
            means_row(&mut out, name, &scores.iter().collect::<Vec<_>>())?;
        }
    }
    let n_failures: usize = outcome.stages.iter().map(|(_, o)| o.failures.len()).sum();
    let answers_and_scores = if several {
        let folders: Vec<String> = systems
            .iter()
            .map(|(_, s)| format!("{}/", in_run(run.root(), s.root())))
            .collect();
        format!(
            "{} (answers, scores, analysis of each system)",
            folders.join(", ")
        )
    } else {
        format!(
            "{}, {}",
            in_run(run.root(), &system.answers()),
            in_run(run.root(), &system.scores())
        )
    };
    writeln!(
        out,
        "\nresults in {}: {} (questions), {answers_and_scores}, {}, manifest.json — {} question{} scored in {:.0} s{}",
        run.root().display(),
        file_name(&run.benchmark()),
        file_name(&run.analysis()),
        scores.len(),
        if scores.len() == 1 { "" } else { "s" },
        outcome.seconds,
        if n_failures == 0 {
            String::new()
        } else {
            format!(
                "; {n_failures} item{} failed (see the *.failures.jsonl files; rerun to retry them)",
                if n_failures == 1 { "" } else { "s" }
            )
        }
    )?;
    // What the run was estimated to cost beside what its stages spent.
    let manifest = hierarag_run::Manifest::load(run)?;
    if let Some(estimate) = &manifest.estimate {
        let usage = manifest
            .stages
            .values()
            .flat_map(|s| &s.usage)
            .filter(|u| u.role != "embeddings");
        let (mut calls, mut cost, mut priced) = (0, 0.0, false);
        for u in usage {
            calls += u.summary.requests;
            if let Some(c) = u.cost {
                cost += c;
                priced = true;
            }
        }
        let price = |c: Option<f64>| c.map_or_else(String::new, |c| format!(", {c:.2}"));
        writeln!(
            out,
            "LLM calls: estimated {}{} at the start, made {calls}{} (cache hits included; \
manifest.json has both per role)",
            estimate.calls,
            price(estimate.cost),
            price(priced.then_some(cost))
        )?;
    }
    Ok(())
}

fn means_header(out: &mut impl Write, title: &str) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<44} {:>5} {:>5} {:>6} {:>7} {:>6} {:>6} {:>7} {:>6} {:>7}",
        title, "n", "empty", "AP", "nDCG@10", "R@10", "CS", "ROUGE-1", "BLEU", "refused"
    )
}

/// One row of means; a retrieval mean is over the questions that have the metric ("–" when
/// none has), an empty ranking counted as 0 (`empty`: how many were).
fn means_row(out: &mut impl Write, name: &str, group: &[&ScoreRecord]) -> std::io::Result<()> {
    let m = hierarag_run::report::means(group.iter().copied());
    writeln!(
        out,
        "{:<44} {:>5} {:>5} {:>6} {:>7} {:>6} {:>6} {:>7} {:>6} {:>7}",
        name,
        group.len(),
        m.empty_rankings,
        opt(m.map, 3),
        opt(m.ndcg_10, 3),
        opt(m.recall_10, 3),
        opt(m.cs, 3),
        opt(m.rouge1, 3),
        opt(m.bleu, 2),
        opt(m.refusal_rate, 3)
    )
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// Tables 1 and 2, the splits and the recommendations, on stdout.
pub fn analysis_summary(analysis: &Analysis) -> anyhow::Result<()> {
    let metric = analysis.settings.metric.mean_label();
    let mut out = stdout();
    if !analysis.table1.is_empty() {
        writeln!(out, "Dimensions at the coarse level (Table 1)")?;
        writeln!(
            out,
            "  {:<12} {:>5} {:>6} {:>6} {:>6} {:>5}",
            "dimension", "n", "MAP", metric, "range", "rank"
        )?;
        for row in &analysis.table1 {
            writeln!(
                out,
                "  {:<12} {:>5} {:>6} {:>6.3} {:>6} {:>5}",
                row.dimension,
                row.n,
                opt(row.map, 3),
                row.metric,
                opt(row.range, 3),
                row.rank.map_or_else(|| "–".into(), |r| r.to_string())
            )?;
        }
    }
    if !analysis.table2.is_empty() {
        writeln!(out, "\nGranularity (Table 2)")?;
        writeln!(
            out,
            "  {:<10} {:<10} {:>5} {:>6} {:>6} {:>6} {:>8} {:>6}",
            "dimension", "level", "n", "MAP", metric, "NMI", "DiscPow", "Δ"
        )?;
        for row in &analysis.table2 {
            writeln!(
                out,
                "  {:<10} {:<10} {:>5} {:>6} {:>6.3} {:>6} {:>8} {:>6}",
                row.dimension,
                format!("{} ({})", row.level, row.n_categories),
                row.n,
                opt(row.map, 3),
                row.metric,
                opt(row.nmi, 3),
                opt(row.discpow.map(|d| d.value), 3),
                row.delta
                    .map_or_else(|| "–".into(), |d| format_delta(d.value))
            )?;
        }
    }
    if !analysis.splits.is_empty() {
        writeln!(out, "\nSplits (Coherence Ratio)")?;
        for split in &analysis.splits {
            writeln!(
                out,
                "  {:<4} {:<28} σ_sib {:.3}  δ_vert {:.3}  ρ {:>7.2}  {}",
                split.dimension,
                split.parent,
                split.sigma_sib.value,
                split.delta_vert.value,
                split.rho.value,
                split.calibration.describe()
            )?;
        }
    }
    for factorial in &analysis.factorials {
        writeln!(out, "\nFactorial {}", factorial.set)?;
        for effect in factorial.main_effects.iter().chain(&factorial.interaction) {
            writeln!(out, "  {:<44} {:+.3}", effect.contrast, effect.value.value)?;
        }
        if let Some(anova) = &factorial.anova {
            writeln!(
                out,
                "  interaction F({}, {}) = {:.2}, p = {:.3}",
                anova.interaction.df, anova.residual_df, anova.interaction.f, anova.interaction.p
            )?;
        }
    }
    drop(out);
    recommendations(analysis)?;
    let mut out = stdout();
    if !analysis.notes.is_empty() {
        writeln!(out, "\nNot computed")?;
        for line in &analysis.notes {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// The recommended granularity of each dimension, with the reason, on stdout.
pub fn recommendations(analysis: &Analysis) -> anyhow::Result<()> {
    let mut out = stdout();
    let recommendations: Vec<_> = analysis
        .dimensions
        .iter()
        .filter_map(|d| d.recommendation.as_ref().map(|r| (d, r)))
        .collect();
    if !recommendations.is_empty() {
        writeln!(out, "\nRecommended granularity")?;
        for (dimension, recommendation) in recommendations {
            writeln!(
                out,
                "  {}: {} — {}",
                dimension.dimension, recommendation.level, recommendation.reason
            )?;
        }
    }
    Ok(())
}

/// `hierarag power`'s answer: one line per planned test, its cost, and the notes.
pub fn power_summary(report: &hierarag_run::power::PowerReport) -> anyhow::Result<()> {
    let power = &report.power;
    let mut out = stdout();
    let steps = if power.comparisons == 0 {
        "no steps between levels".to_owned()
    } else {
        format!(
            "steps at p < {:.4} ({} compared)",
            power.alpha_step, power.comparisons
        )
    };
    writeln!(
        out,
        "Power {:.0}% on {} (seed {}); {steps}, levels at p < {:.4} ({} dimension{}); {} \
simulated studies a size",
        power.settings.power * 100.0,
        power.analysis.metric,
        power.analysis.seed,
        power.alpha_level,
        power.level_comparisons,
        if power.level_comparisons == 1 {
            ""
        } else {
            "s"
        },
        power.settings.simulations
    )?;
    writeln!(
        out,
        "\n  {:<22} {:>8} {:>8} {:>7} {:>8} {:>10} {:>10} {:>11}",
        "test", "spread", "against", "pilot n", "power", "n/category", "questions", "detectable"
    )?;
    for step in &power.steps {
        let test = match step.against {
            Some(against) => format!("{} {} vs {against}", step.dimension, step.level),
            None => format!("{} {}", step.dimension, step.level),
        };
        let dash = || "–".to_owned();
        writeln!(
            out,
            "  {test:<22} {:>8.4} {:>8} {:>7.0} {:>8} {:>10} {:>10} {:>11}",
            step.spread,
            step.against
                .map_or_else(dash, |_| format!("{:.4}", step.spread_against)),
            step.pilot_per_category[1],
            // Against no observed gain, "power" would be the chance of a false pass.
            if step.gain.map_or(step.spread > 0.0, |gain| gain > 1.0) {
                format!("{:.0}%", step.power_at_pilot * 100.0)
            } else {
                dash()
            },
            step.per_category.map_or_else(dash, |n| n.to_string()),
            step.questions.map_or_else(dash, |n| n.to_string()),
            step.detectable.map_or_else(dash, |d| match d.gain {
                Some(gain) => format!("{gain:.2}×"),
                None => format!("{:.4}", d.spread),
            }),
        )?;
    }
    if !report.costs.is_empty() {
        writeln!(out, "\nCost (generation + filter + answer calls)")?;
        for cost in &report.costs {
            let size = match cost.size {
                hierarag_run::power::SizeKind::Needed => "needed",
                hierarag_run::power::SizeKind::Planned => "planned",
            };
            let test = match cost.against {
                Some(against) => format!("{} {} vs {against}", cost.dimension, cost.level),
                None => format!("{} {}", cost.dimension, cost.level),
            };
            let tokens = match (cost.input_tokens, cost.output_tokens) {
                (Some(input), Some(output)) => format!(", ≈{input} tokens in, ≈{output} out"),
                _ => String::new(),
            };
            writeln!(
                out,
                "  {test:<22} {size:<7} {} questions from {} plan items: {} + {} + {} LLM \
calls{tokens}",
                cost.questions,
                cost.plan_items,
                cost.generation_calls,
                cost.filter_calls,
                cost.answer_calls
            )?;
        }
    }
    writeln!(out)?;
    for step in &power.steps {
        writeln!(out, "  {}", step.note)?;
    }
    for note in power.notes.iter().chain(&report.cost_notes) {
        writeln!(out, "  note: {note}")?;
    }
    Ok(())
}

/// The comparison on stdout: every metric's means and pairwise differences over all common
/// questions, the granularity that separates the systems, and the questions none answers.
pub fn comparison_summary(comparison: &hierarag_analysis::Comparison) -> anyhow::Result<()> {
    let mut out = stdout();
    let names: Vec<&str> = comparison.systems.iter().map(|s| s.name.as_str()).collect();
    writeln!(
        out,
        "Systems compared on {} questions: {} (differences are later − earlier)",
        comparison.common,
        names.join(", ")
    )?;
    let level = comparison.settings.confidence * 100.0;
    writeln!(
        out,
        "  {:<10} {:<28} {:>9} {:>22} {:>8} {:>8} {:>12}",
        "metric",
        "pair",
        "diff",
        format!("{level:.0}% interval"),
        "t p",
        "W p",
        "win/tie/loss"
    )?;
    let mut equal = Vec::new();
    for metric in &comparison.overall {
        if metric
            .pairs
            .iter()
            .all(|p| p.diff.wins == 0 && p.diff.losses == 0)
        {
            equal.push(metric.metric.as_str());
            continue;
        }
        let means: Vec<String> = metric
            .systems
            .iter()
            .zip(&metric.means)
            .map(|(s, m)| format!("{s} {m:.3}"))
            .collect();
        writeln!(out, "  {:<10} {}", metric.metric, means.join(", "))?;
        for pair in &metric.pairs {
            let d = &pair.diff;
            writeln!(
                out,
                "  {:<10} {:<28} {:>+9.4} {:>22} {:>8} {:>8} {:>12}",
                "",
                format!("{} − {}", pair.b, pair.a),
                d.mean.value,
                d.mean
                    .ci
                    .map_or_else(|| "–".into(), |[lo, hi]| format!("[{lo:+.4}, {hi:+.4}]")),
                p_value(d.t_p),
                p_value(d.w_p),
                format!("{}/{}/{}", d.wins, d.ties, d.losses)
            )?;
        }
    }
    if !equal.is_empty() {
        writeln!(
            out,
            "  the same for every system on every question: {}",
            equal.join(", ")
        )?;
    }
    if !comparison.dimensions.is_empty() {
        writeln!(
            out,
            "\nWhich granularity separates the systems ({})",
            comparison.settings.metric.mean_label()
        )?;
        for dimension in &comparison.dimensions {
            if let Some(separating) = &dimension.separating {
                writeln!(out, "  {}: {}", dimension.dimension, separating.reason)?;
            }
            writeln!(
                out,
                "    recommended granularity per system: {}{}",
                dimension.recommended_levels(),
                if dimension.same_for_all {
                    " (the same for every system)"
                } else {
                    " (not the same for every system)"
                }
            )?;
        }
    }
    if !comparison.unanswered.is_empty() {
        writeln!(
            out,
            "\n{} question{} no system answered (refused, or {} below {}); check them first: \
`hierarag annotate sample RUN --from-compare`",
            comparison.unanswered.len(),
            if comparison.unanswered.len() == 1 {
                ""
            } else {
                "s"
            },
            comparison.settings.metric,
            comparison.threshold
        )?;
    }
    for note in &comparison.notes {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}

fn p_value(p: Option<f64>) -> String {
    match p {
        None => "–".into(),
        Some(p) if p < 1e-4 => "<0.0001".into(),
        Some(p) => format!("{p:.4}"),
    }
}

/// The paired differences of the judge's grades corrected by people's ratings (`ppi.json`),
/// beside a comparison: per scale and pair, the PPI difference with its interval.
pub fn ppi_differences(ppi: &hierarag_annotate::JudgePpi) -> anyhow::Result<()> {
    let mut out = crate::printer::stdout();
    let level = 100.0 * (1.0 - ppi.alpha);
    let mut wrote_header = false;
    for scale in &ppi.scales {
        for d in &scale.differences {
            if !wrote_header {
                writeln!(
                    out,
                    "\nThe judge corrected by people's ratings (ppi.json, a − b, 0-1 scale, \
{level:.0}% intervals):"
                )?;
                wrote_header = true;
            }
            let row = &d.overall;
            let text = row.ppi.as_ref().map_or_else(
                || row.note.clone().unwrap_or_else(|| "–".to_owned()),
                |p| {
                    format!(
                        "{:+.3} [{:+.3}, {:+.3}]{}",
                        p.estimate,
                        p.ci[0],
                        p.ci[1],
                        if p.excludes_zero == Some(true) {
                            ", excludes 0"
                        } else {
                            ""
                        }
                    )
                },
            );
            writeln!(
                out,
                "  {:<14} {} − {}: {text} (judge only {}, {} rated)",
                scale.scale,
                d.system_a,
                d.system_b,
                row.judge_only
                    .as_ref()
                    .map_or_else(|| "–".to_owned(), |m| format!("{:+.3}", m.mean)),
                row.n_rated
            )?;
        }
    }
    Ok(())
}

/// A run's cost estimate: one row per role, the total, the assumptions.
pub fn estimate(estimate: &hierarag_run::config::estimate::RunEstimate) -> anyhow::Result<()> {
    let mut out = crate::printer::stdout();
    let price = |cost: Option<f64>| cost.map_or_else(|| "–".to_owned(), |c| format!("{c:.2}"));
    writeln!(
        out,
        "{:<16} {:<12} {:<28} {:>9} {:>14} {:>14} {:>10}",
        "role", "system", "model", "calls", "prompt tok", "completion tok", "price"
    )?;
    for role in &estimate.roles {
        writeln!(
            out,
            "{:<16} {:<12} {:<28} {:>9} {:>14} {:>14} {:>10}",
            role.role,
            role.system.as_deref().unwrap_or(""),
            role.model,
            role.calls,
            role.prompt_tokens,
            role.completion_tokens,
            price(role.cost)
        )?;
    }
    writeln!(
        out,
        "{:<16} {:<12} {:<28} {:>9} {:>14} {:>14} {:>10}",
        "total",
        "",
        "",
        estimate.calls,
        estimate.prompt_tokens,
        estimate.completion_tokens,
        price(estimate.cost)
    )?;
    writeln!(out, "\nassumptions:")?;
    for line in &estimate.assumptions {
        writeln!(out, "  - {line}")?;
    }
    Ok(())
}
