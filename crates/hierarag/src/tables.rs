//! Tables on stdout that more than one command prints: the run's means per category, the
//! analysis, the recommended granularity.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use hierarag_analysis::{Analysis, format_delta};
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{ScoreRecord, read_records};
use hierarag_run::chain::RunOutcome;

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Means over the scored questions, overall and per category.
pub fn run_summary(outcome: &RunOutcome) -> anyhow::Result<()> {
    let run = &outcome.run;
    let system = run.main_system();
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
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<44} {:>5} {:>6} {:>7} {:>6} {:>6} {:>7} {:>6} {:>7}",
        "questions", "n", "AP", "nDCG@10", "R@10", "CS", "ROUGE-1", "BLEU", "refused"
    )?;
    for (name, group) in &groups {
        let n = group.len() as f64;
        // `+ 0.0` turns a mean of -0.0 into 0.0 for printing.
        let mean = |f: fn(&ScoreRecord) -> f64| group.iter().map(|s| f(s)).sum::<f64>() / n + 0.0;
        writeln!(
            out,
            "{:<44} {:>5} {:>6.3} {:>7.3} {:>6.3} {:>6.3} {:>7.3} {:>6.2} {:>7.3}",
            name,
            group.len(),
            mean(|s| s.ap),
            mean(|s| s.ndcg_10),
            mean(|s| s.recall_10),
            mean(|s| s.cs),
            mean(|s| s.rouge1),
            mean(|s| s.bleu),
            mean(|s| f64::from(u8::from(s.refused)))
        )?;
    }
    let n_failures: usize = outcome.stages.iter().map(|(_, o)| o.failures.len()).sum();
    writeln!(
        out,
        "\nresults in {}: {} (questions), {}, {}, {}, manifest.json — {} question{} scored in {:.0} s{}",
        run.root().display(),
        file_name(&run.benchmark()),
        file_name(&system.answers()),
        file_name(&system.scores()),
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
    Ok(())
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// Tables 1 and 2, the splits and the recommendations, on stdout.
pub fn analysis_summary(analysis: &Analysis) -> anyhow::Result<()> {
    let metric = analysis.settings.metric.mean_label();
    let mut out = std::io::stdout().lock();
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
                "  {:<12} {:>5} {:>6.3} {:>6.3} {:>6} {:>5}",
                row.dimension,
                row.n,
                row.map,
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
                "  {:<10} {:<10} {:>5} {:>6.3} {:>6.3} {:>6} {:>8} {:>6}",
                row.dimension,
                format!("{} ({})", row.level, row.n_categories),
                row.n,
                row.map,
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
    let mut out = std::io::stdout().lock();
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
    let mut out = std::io::stdout().lock();
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
