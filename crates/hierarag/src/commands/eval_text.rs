//! `hierarag eval text`: ROUGE-1 and BLEU of any prediction/reference pairs.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use hierarag_metrics::{RougeScore, corpus_bleu, rouge1, sentence_bleu};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Args)]
#[command(after_long_help = "Semantics (DESIGN.md §7):
  ROUGE-1  precision, recall and F of unigram overlap, equal to rouge-score 0.1.2's
           RougeScorer(['rouge1'], use_stemmer=False): lowercase, tokens are runs of [a-z0-9]
           (accented and non-Latin letters separate tokens and vanish), counted with
           multiplicity. 0 to 1.
  BLEU     sentence BLEU equal to sacrebleu 2.6.0's sentence_bleu(prediction, [reference]):
           13a tokenizer, case-sensitive, exp smoothing, effective order. 0 to 100.
  corpus   sacrebleu's corpus_bleu(predictions, [references]) over all pairs: n-gram statistics
           summed before scoring, no effective order; not the mean of sentence BLEU.
  mean     the arithmetic mean of the per-pair values.

Example line of --pairs:
  {\"id\": \"q17\", \"reference\": \"The tower was built in 1841.\", \"prediction\": \"In 1841.\"}")]
pub struct EvalTextArgs {
    /// JSONL file of pairs, one JSON object per line with the string fields `id` (unique),
    /// `reference` (the reference answer) and `prediction` (the generated answer); other fields
    /// are ignored and blank lines skipped.
    #[arg(long, value_name = "FILE")]
    pub pairs: PathBuf,
    /// Print JSON instead of a table: `{"pairs": [{id, rouge1: {precision, recall, fmeasure},
    /// bleu}], "mean": {rouge1: {...}, bleu}, "corpus_bleu": ...}`.
    #[arg(long)]
    pub json: bool,
}

/// One line of the pairs file.
#[derive(Debug)]
struct TextPair {
    id: String,
    reference: String,
    prediction: String,
}

/// The scores of one pair, as `--json` prints them.
#[derive(Debug, Serialize)]
struct PairScores {
    id: String,
    rouge1: RougeScore,
    bleu: f64,
}

#[derive(Debug, Serialize)]
struct MeanScores {
    rouge1: RougeScore,
    bleu: f64,
}

#[derive(Debug, Serialize)]
struct TextEvaluation {
    pairs: Vec<PairScores>,
    mean: MeanScores,
    corpus_bleu: f64,
}

pub fn run(args: &EvalTextArgs) -> anyhow::Result<ExitCode> {
    let pairs = read_pairs(&args.pairs)?;
    let evaluation = evaluate(&pairs);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &evaluation)?;
        writeln!(out)?;
    } else {
        print_table(&mut out, &evaluation)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn evaluate(pairs: &[TextPair]) -> TextEvaluation {
    let scores: Vec<PairScores> = pairs
        .iter()
        .map(|pair| PairScores {
            id: pair.id.clone(),
            rouge1: rouge1(&pair.reference, &pair.prediction),
            bleu: sentence_bleu(&pair.prediction, &[&pair.reference]).score,
        })
        .collect();
    let n_pairs = scores.len() as f64;
    let mean_of = |value: fn(&PairScores) -> f64| scores.iter().map(value).sum::<f64>() / n_pairs;
    let mean = MeanScores {
        rouge1: RougeScore {
            precision: mean_of(|pair| pair.rouge1.precision),
            recall: mean_of(|pair| pair.rouge1.recall),
            fmeasure: mean_of(|pair| pair.rouge1.fmeasure),
        },
        bleu: mean_of(|pair| pair.bleu),
    };
    let predictions: Vec<&str> = pairs.iter().map(|pair| pair.prediction.as_str()).collect();
    let references: Vec<&str> = pairs.iter().map(|pair| pair.reference.as_str()).collect();
    TextEvaluation {
        pairs: scores,
        mean,
        corpus_bleu: corpus_bleu(&predictions, &references).score,
    }
}

fn print_table(out: &mut impl Write, evaluation: &TextEvaluation) -> std::io::Result<()> {
    let width = evaluation
        .pairs
        .iter()
        .map(|pair| pair.id.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(11, 40);
    writeln!(out, "{:<width$}  {:>9}  {:>7}", "id", "ROUGE-1 F", "BLEU")?;
    for pair in &evaluation.pairs {
        writeln!(
            out,
            "{:<width$}  {:>9.4}  {:>7.2}",
            pair.id, pair.rouge1.fmeasure, pair.bleu
        )?;
    }
    writeln!(
        out,
        "{:<width$}  {:>9.4}  {:>7.2}",
        "mean", evaluation.mean.rouge1.fmeasure, evaluation.mean.bleu
    )?;
    writeln!(
        out,
        "{:<width$}  {:>9}  {:>7.2}",
        "corpus BLEU", "", evaluation.corpus_bleu
    )?;
    writeln!(
        out,
        "{} pairs; ROUGE-1 as rouge-score 0.1.2 (no stemming); BLEU 0-100 as sacrebleu 2.6.0",
        evaluation.pairs.len()
    )?;
    Ok(())
}

/// Reads the pairs file, refusing anything a user could have meant differently: lines that are
/// not UTF-8 or not JSON objects, missing or non-string fields, repeated ids and empty files.
fn read_pairs(path: &Path) -> anyhow::Result<Vec<TextPair>> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let mut pairs = Vec::new();
    let mut first_line_of_id: HashMap<String, usize> = HashMap::new();
    for (line_idx, line) in bytes.split(|&byte| byte == b'\n').enumerate() {
        let line_no = line_idx + 1;
        let at = || format!("{} line {line_no}", path.display());
        let line = std::str::from_utf8(line).map_err(|error| {
            anyhow::anyhow!(
                "{}: not valid UTF-8 (at byte {} of the line)",
                at(),
                error.valid_up_to() + 1
            )
        })?;
        // A byte-order mark some editors write is not part of the first object.
        let line = if line_idx == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        if line.trim().is_empty() {
            continue;
        }
        let record: Value = serde_json::from_str(line)
            .map_err(|error| anyhow::anyhow!("{}: not valid JSON: {error}", at()))?;
        let Value::Object(record) = record else {
            bail!(
                "{}: expected a JSON object with fields id, reference and prediction, found {}",
                at(),
                json_kind(&record)
            );
        };
        let field = |name: &str| -> anyhow::Result<String> {
            match record.get(name) {
                Some(Value::String(text)) => Ok(text.clone()),
                Some(other) => bail!(
                    "{}, field `{name}`: expected a string, found {}",
                    at(),
                    json_kind(other)
                ),
                None => bail!("{}, field `{name}`: missing", at()),
            }
        };
        let pair = TextPair {
            id: field("id")?,
            reference: field("reference")?,
            prediction: field("prediction")?,
        };
        if let Some(first_line) = first_line_of_id.insert(pair.id.clone(), line_no) {
            bail!(
                "{}, field `id`: `{}` appears twice (first on line {first_line})",
                at(),
                pair.id
            );
        }
        pairs.push(pair);
    }
    if pairs.is_empty() {
        bail!(
            "{}: no pairs (expected one JSON object with fields id, reference and prediction per \
             line)",
            path.display()
        );
    }
    Ok(pairs)
}

/// A JSON value's kind and a short excerpt, for error messages.
fn json_kind(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let mut excerpt = value.to_string();
    if excerpt.chars().count() > 40 {
        excerpt = excerpt.chars().take(39).collect::<String>() + "…";
    }
    format!("{kind} `{excerpt}`")
}
