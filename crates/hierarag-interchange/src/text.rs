//! Text metrics of any prediction/reference pairs (`hierarag eval text`): ROUGE-1, sentence
//! BLEU and the MiniLM cosine (CS, as `hierarag evaluate` scores it) per pair, their means, and
//! corpus BLEU, from a JSONL file read strictly. A pair may have several references; each metric
//! then does what its reference package does with several (see [`evaluate`]).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, bail};
use hierarag_lang::Language;
use hierarag_metrics::{RougeScore, TextTokenizers};
use serde::Serialize;
use serde_json::Value;

/// One line of the pairs file.
#[derive(Debug)]
pub struct TextPair {
    pub id: String,
    /// The reference answers, at least one (the `reference` field, or each of `references`).
    pub references: Vec<String>,
    pub prediction: String,
}

/// The scores of one pair, as `--json` prints them.
#[derive(Debug, Serialize)]
pub struct PairScores {
    pub id: String,
    pub rouge1: RougeScore,
    pub bleu: f64,
    /// The cosine of the two texts' embeddings (absent with `--no-cs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cs: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct MeanScores {
    pub rouge1: RougeScore,
    pub bleu: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cs: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct TextEvaluation {
    /// The language of the texts, and the tokenizers it chose; both left out for English (the
    /// reference packages' defaults).
    #[serde(skip_serializing_if = "Language::is_english")]
    pub language: Language,
    #[serde(skip_serializing_if = "TextTokenizers::is_default")]
    pub tokenizers: TextTokenizers,
    pub pairs: Vec<PairScores>,
    pub mean: MeanScores,
    pub corpus_bleu: f64,
}

/// ROUGE-1 and sentence BLEU of every pair with the tokenizers of `language`
/// ([`TextTokenizers::for_language`]), their means, and corpus BLEU; with `cs` (one per pair,
/// as `hierarag_run::text::cosine_similarities` gives them) CS and its mean too.
///
/// With several references, each metric does what its reference package does: ROUGE-1 is the
/// score against the reference with the best F-measure (rouge-score's `score_multi`), sentence
/// and corpus BLEU count n-grams against all references at once (sacrebleu with several
/// reference streams), and CS is the highest cosine over the references.
pub fn evaluate(pairs: &[TextPair], cs: Option<&[f64]>, language: Language) -> TextEvaluation {
    let tokenizers = TextTokenizers::for_language(language);
    let scores: Vec<PairScores> = pairs
        .iter()
        .enumerate()
        .map(|(i, pair)| PairScores {
            id: pair.id.clone(),
            rouge1: tokenizers.rouge1_multi(&pair.references, &pair.prediction),
            bleu: tokenizers
                .sentence_bleu(&pair.prediction, &pair.references)
                .score,
            cs: cs.map(|cs| cs[i]),
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
        cs: cs.map(|cs| cs.iter().sum::<f64>() / n_pairs),
    };
    let predictions: Vec<&str> = pairs.iter().map(|pair| pair.prediction.as_str()).collect();
    let references: Vec<&[String]> = pairs
        .iter()
        .map(|pair| pair.references.as_slice())
        .collect();
    TextEvaluation {
        language,
        tokenizers,
        pairs: scores,
        mean,
        corpus_bleu: tokenizers
            .corpus_bleu_multi(&predictions, &references)
            .score,
    }
}

/// Reads the pairs file, refusing anything a user could have meant differently: lines that are
/// not UTF-8 or not JSON objects, missing or non-string fields, repeated ids and empty files.
/// The references are the string `reference` or the array of strings `references` (at least
/// one); a line with both, or with neither, is refused.
pub fn read_pairs(path: &Path) -> anyhow::Result<Vec<TextPair>> {
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
                "{}: expected a JSON object with fields id, reference (or references) and \
                 prediction, found {}",
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
        let id = field("id")?;
        let references = match (record.get("reference"), record.get("references")) {
            (Some(_), Some(_)) => bail!(
                "{}: fields `reference` and `references` both given; keep one (`references` \
                 holds every reference of the pair)",
                at()
            ),
            (None, Some(Value::Array(items))) if items.is_empty() => bail!(
                "{}, field `references`: empty; give at least one reference",
                at()
            ),
            (None, Some(Value::Array(items))) => items
                .iter()
                .enumerate()
                .map(|(item_idx, item)| match item {
                    Value::String(text) => Ok(text.clone()),
                    other => bail!(
                        "{}, field `references`, item {}: expected a string, found {}",
                        at(),
                        item_idx + 1,
                        json_kind(other)
                    ),
                })
                .collect::<anyhow::Result<Vec<String>>>()?,
            (None, Some(other)) => bail!(
                "{}, field `references`: expected an array of strings, found {}",
                at(),
                json_kind(other)
            ),
            (_, None) => vec![field("reference")?],
        };
        let pair = TextPair {
            id,
            references,
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
            "{}: no pairs (expected one JSON object with fields id, reference (or references) and \
             prediction per line)",
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
