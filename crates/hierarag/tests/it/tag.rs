//! `hierarag tag` against a mock OpenAI-compatible server that ignores the JSON schema: a
//! normal question gets the schema's first category, one question gets a name outside the
//! taxonomy once (repaired), one always (recorded as a failure); a rerun resumes. Then what
//! `analyze` does with tags, against scipy and statsmodels.

use std::path::Path;

use assert_cmd::Command;
use hierarag_test_support::mock::MockServer;
use serde_json::{Value, json};

use crate::support::{
    BIN, assert_close, chat_calls, chat_reply, count_lines, python, start_chat_mock, write_lines,
};

/// The mock; returns its base URL and the count of requests it answered.
fn start_mock() -> (String, MockServer) {
    start_chat_mock(reply)
}

fn reply(body: &Value) -> Value {
    let messages = body["messages"].as_array().unwrap();
    let prompt = messages[1]["content"].as_str().unwrap();
    let names = &body["response_format"]["json_schema"]["schema"]["properties"]["category"]["enum"];
    // The question itself (examples of other questions are listed above it).
    let question = prompt
        .rsplit_once("<question>\n")
        .and_then(|(_, rest)| rest.split_once("\n</question>"))
        .map_or("", |(text, _)| text);
    // A marker `=name]` in the question picks that category; else the first one offered.
    let first = names
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .find(|n| question.contains(&format!("={n}]")))
        .unwrap_or(names[0].as_str().unwrap())
        .to_string();
    let repaired = messages.len() > 2;
    let category = if question.contains("OUTSIDE") || (question.contains("ONCE") && !repaired) {
        "not_a_category".to_string()
    } else {
        first
    };
    chat_reply(&json!({"category": category}).to_string())
}

fn benchmark(dir: &Path) {
    let record = |id: &str, question: &str| {
        json!({
            "id": id, "question": question, "answer": "ref", "doc_ids": ["d1"],
            "design": "rq1", "set": "qc/fine",
            "categories": [{"dimension": "qc", "level": "fine", "category": "factoid"}],
            "persona": {}
        })
    };
    write_lines(
        &dir.join("benchmark.jsonl"),
        &[
            record("q1", "Who wrote Hamlet?"),
            record("q2", "ONCE: when was Rome founded?"),
            record("q3", "OUTSIDE: what is the capital of Peru?"),
        ],
    );
}

#[test]
fn questions_are_tagged_on_every_dimension_a_stray_name_is_repaired_then_a_failure() {
    let (url, calls) = start_mock();
    let dir = tempfile::tempdir().unwrap();
    benchmark(dir.path());
    let config = dir.path().join("tag.toml");
    std::fs::write(
        &config,
        format!(
            "[tag]\nrepairs = 1\n[tag.llm]\nbackend = \"openai\"\nmodel = \"mock-1\"\nbase_urls = [\"{url}\"]\n"
        ),
    )
    .unwrap();
    let tag = || {
        Command::new(BIN)
            .env_remove("RUST_LOG")
            .arg("tag")
            .arg(dir.path())
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap()
    };
    let out = tag();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 item failed"), "{stderr}");
    assert_eq!(count_lines(&dir.path().join("tags.jsonl")), 2);
    let failures = std::fs::read_to_string(dir.path().join("tag.failures.jsonl")).unwrap();
    let failure: Value = serde_json::from_str(failures.lines().next().unwrap()).unwrap();
    assert_eq!(failure["item_id"], "q3");
    let reason = failure["reason"].as_str().unwrap();
    assert!(
        reason.contains("\"not_a_category\" is not one of the categories")
            && reason.contains("after 1 repair message"),
        "{reason}"
    );

    let taxonomy = hierarag_taxonomy::Taxonomy::default_taxonomy();
    let text = std::fs::read_to_string(dir.path().join("tags.jsonl")).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["id"], "q1");
    assert_eq!(records[1]["id"], "q2");
    for record in &records {
        let tags = record["tags"].as_object().unwrap();
        assert_eq!(tags.len(), taxonomy.dimensions.len(), "{record}");
        for dimension in &taxonomy.dimensions {
            let categories = &tags[&dimension.key]["categories"];
            // The finest category is the first one offered, and each level is its parent.
            let finest = dimension.levels.last().unwrap();
            let mut name = categories[finest.granularity.as_str()].as_str().unwrap();
            assert_eq!(name, finest.categories[0].name);
            while let Some((level, parent)) = dimension.parent_of(name) {
                assert_eq!(categories[level.as_str()], parent.name.as_str(), "{record}");
                name = &parent.name;
            }
            assert!(tags[&dimension.key].get("confidence").is_none());
        }
        assert_eq!(record["tagger"]["model"], "mock-1");
    }

    // A rerun resumes: only q3 is asked again (from the cache, so no new request).
    let before = chat_calls(&calls);
    let out = tag();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("(2 from an earlier pass)"), "{stderr}");
    assert_eq!(chat_calls(&calls), before, "{stderr}");
    assert_eq!(
        text,
        std::fs::read_to_string(dir.path().join("tags.jsonl")).unwrap()
    );
}

/// `hierarag tag` with the mock's `[tag.llm]`, then `hierarag analyze` and `report`.
fn tag_analyze_report(dir: &Path, url: &str, taxonomy: Option<&Path>) -> Value {
    let config = dir.join("tag.toml");
    std::fs::write(
        &config,
        format!(
            "[tag]\n[tag.llm]\nbackend = \"openai\"\nmodel = \"mock-1\"\nbase_urls = [\"{url}\"]\n"
        ),
    )
    .unwrap();
    let mut tag = Command::new(BIN);
    tag.env_remove("RUST_LOG")
        .arg("tag")
        .arg(dir)
        .arg("--config")
        .arg(&config);
    if let Some(taxonomy) = taxonomy {
        tag.arg("--taxonomy").arg(taxonomy);
    }
    let out = tag.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for args in [
        &["analyze", "-q", "--bootstrap", "50", "--permutations", "50"][..],
        &["report", "-q"][..],
    ] {
        let out = Command::new(BIN)
            .env_remove("RUST_LOG")
            .args(args)
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(dir.join("analysis.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The reference: scipy's χ² of qc × lv, statsmodels' type II ANOVA of cs on all three factors
/// and each factor alone, from the rows written for the test.
const REFERENCE: &str = r#"
import json, sys
import pandas as pd
from scipy.stats import chi2_contingency
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
rows = pd.DataFrame(json.load(open(sys.argv[1])))
chi2, p, dof, _ = chi2_contingency(pd.crosstab(rows.qc, rows.lv).values)
full = anova_lm(ols("cs ~ C(qc) + C(at) + C(lv)", rows).fit(), typ=2)
out = {"chi2": chi2, "chi2_p": p, "dof": int(dof)}
for f in ["qc", "at", "lv"]:
    out[f + "_f"] = full.loc[f"C({f})", "F"]
    out[f + "_p"] = full.loc[f"C({f})", "PR(>F)"]
    out[f + "_alone"] = anova_lm(ols(f"cs ~ C({f})", rows).fit(), typ=2).loc[f"C({f})", "PR(>F)"]
print(json.dumps(out))
"#;

#[test]
fn tags_give_agreement_confounders_and_adjusted_effects_equal_to_scipy_and_statsmodels() {
    let (url, _) = start_mock();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // 24 questions made for qc at the coarse level; the tagger puts two simple ones under
    // complex, and their wording (lv) follows their complexity, which drives the score.
    let mut benchmark = Vec::new();
    let mut scores = Vec::new();
    let mut rows = Vec::new();
    for i in 0..24 {
        let simple = i < 12;
        let qc = if simple { "simple" } else { "complex" };
        let tagged_qc = match (simple, i) {
            (true, 0 | 1) | (false, _) => "causal_reasoning",
            (true, _) => "extractive_span",
        };
        let distant = if simple { i < 2 } else { i < 22 };
        let lv = if distant {
            "low_lexical_overlap"
        } else {
            "exact_phrase_match"
        };
        let at = if i % 2 == 0 {
            "phrase_extraction"
        } else {
            "condensed_summary"
        };
        let cs = if distant { 0.5 } else { 0.8 }
            + if simple { 0.02 } else { 0.0 }
            + f64::from(i % 5) * 0.01;
        let id = format!("q{i:02}");
        benchmark.push(json!({
            "id": id, "question": format!("Question {i} [qc={tagged_qc}] [at={at}] [lv={lv}]?"),
            "answer": "ref", "doc_ids": ["d1"], "design": "rq1", "set": "qc",
            "categories": [{"dimension": "qc", "level": "coarse", "category": qc}],
            "persona": {}
        }));
        scores.push(json!({"id": id, "cs": cs, "rouge1": 0.3, "bleu": 10.0, "refused": false}));
        rows.push(json!({
            "cs": cs, "qc": qc,
            "at": if i % 2 == 0 { "extractive" } else { "abstractive" },
            "lv": if distant { "distant" } else { "similar" },
        }));
    }
    write_lines(&root.join("benchmark.jsonl"), &benchmark);
    write_lines(&root.join("scores.jsonl"), &scores);
    let analysis = tag_analyze_report(root, &url, None);
    let tags = &analysis["tags"];
    assert_eq!(tags["n_tagged"], 24, "{tags}");
    assert_eq!(tags["tagger"], "mock-1 (openai)");

    // Agreement at the coarse level of qc: 22 of 24, against 1/2 by chance.
    let agreement = &tags["agreement"][0];
    assert_eq!(
        (&agreement["dimension"], &agreement["level"]),
        (&json!("qc"), &json!("coarse"))
    );
    assert_eq!(agreement["exact"]["hits"], 22);
    assert_eq!(agreement["exact"]["n"], 24);
    assert_close(&agreement["exact"]["baseline"], 0.5, "chance");
    // P(X ≥ 22) for X ~ Binomial(24, 1/2) = (1 + 24 + 276) / 2^24.
    assert_close(&agreement["exact"]["p"], 301.0 / 16_777_216.0, "binomial p");

    let rows_path = root.join("rows.json");
    std::fs::write(&rows_path, serde_json::to_string(&rows).unwrap()).unwrap();
    let out = std::process::Command::new(python())
        .args(["-c", REFERENCE])
        .arg(&rows_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: Value = serde_json::from_slice(&out.stdout).unwrap();

    // Confounders: qc × lv is far from independent; qc × at is balanced.
    let confounders = tags["confounders"].as_array().unwrap();
    let lv = confounders.iter().find(|c| c["other"] == "lv").unwrap();
    assert_eq!(lv["categories"], json!(["simple", "complex"]));
    assert_eq!(lv["other_categories"], json!(["similar", "distant"]));
    assert_eq!(lv["counts"], json!([[10, 2], [2, 10]]));
    assert_close(&lv["chi2"], reference["chi2"].as_f64().unwrap(), "χ²");
    assert_close(&lv["p"], reference["chi2_p"].as_f64().unwrap(), "χ² p");
    assert_eq!(lv["dof"], reference["dof"]);
    assert_eq!(lv["flagged"], true);
    let at = confounders.iter().find(|c| c["other"] == "at").unwrap();
    assert_eq!(at["flagged"], false);

    // The adjusted model: each factor as statsmodels' type II table, and alone.
    let model = &tags["adjusted"][0];
    assert_eq!(model["set"], "qc");
    assert_eq!(model["n"], 24);
    let factors = model["factors"].as_array().unwrap();
    for (factor, name) in factors.iter().zip(["qc", "at", "lv"]) {
        assert_eq!(factor["dimension"], name);
        assert_eq!(factor["intended"], name == "qc");
        for (ours, theirs) in [("f", "_f"), ("adjusted_p", "_p"), ("one_way_p", "_alone")] {
            let expected = reference[format!("{name}{theirs}")].as_f64().unwrap();
            let actual = factor[ours].as_f64().unwrap();
            assert!(
                (actual - expected).abs() <= 1e-9 * expected.abs() + 1e-15,
                "{name} {ours}: {actual} != {expected}"
            );
        }
        let alone = factor["one_way_p"].as_f64().unwrap() < 0.05;
        let adjusted = factor["adjusted_p"].as_f64().unwrap() < 0.05;
        assert_eq!(factor["disagrees"], alone != adjusted, "{factor}");
    }

    let report = std::fs::read_to_string(root.join("report.html")).unwrap();
    for heading in [
        "Agreement with the intended category",
        "Confounders",
        "adjusted for the other dimensions",
    ] {
        assert!(report.contains(heading), "{heading}");
    }
}

#[test]
fn an_import_without_hierarchical_categories_is_analysed_on_its_tags() {
    let (url, _) = start_mock();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let fine = [
        "extractive_span",
        "entity_extraction",
        "fact_aggregation",
        "single_hop_inference",
        "multi_hop_reasoning",
        "causal_reasoning",
        "comparative_synthesis_entities",
        "comparative_synthesis_concepts",
    ];
    let mut benchmark = Vec::new();
    let mut scores = Vec::new();
    for i in 0..32 {
        let category = fine[i % 8];
        let id = format!("imp-{i:02}");
        benchmark.push(json!({
            "id": id, "question": format!("Imported question {i} [qc={category}]?"),
            "answer": "ref", "doc_ids": ["d1"], "design": "import", "set": "import",
            "categories": [{"dimension": "topic", "level": "coarse",
                            "category": if i % 2 == 0 { "sports" } else { "music" }}],
            "persona": {},
            "source": {"format": "jsonl", "file": "mine.jsonl", "line": i + 1}
        }));
        let cs = 0.4 + 0.05 * (i % 8) as f64 + 0.01 * (i % 3) as f64;
        scores.push(json!({"id": id, "cs": cs, "rouge1": 0.3, "bleu": 10.0, "refused": false}));
    }
    write_lines(&root.join("benchmark.jsonl"), &benchmark);
    write_lines(&root.join("scores.jsonl"), &scores);
    std::fs::write(
        root.join("taxonomy.toml"),
        "[[dimension]]\nkey = \"topic\"\nname = \"topic\"\n\n[[dimension.coarse]]\nname = \"sports\"\n\
description = \"sports\"\n\n[[dimension.coarse]]\nname = \"music\"\ndescription = \"music\"\n",
    )
    .unwrap();
    let taxonomy = root.join("default.toml");
    std::fs::write(
        &taxonomy,
        hierarag_taxonomy::Taxonomy::default_taxonomy().to_toml_string(),
    )
    .unwrap();
    let analysis = tag_analyze_report(root, &url, Some(&taxonomy));

    // The file's own dimension is still analysed; qc comes from the tags at all three levels.
    let levels = analysis["levels"].as_array().unwrap();
    let of = |set: &str, level: &str| {
        levels
            .iter()
            .find(|l| l["set"] == set && l["level"] == level)
            .unwrap_or_else(|| panic!("no {set} {level} in {levels:?}"))
    };
    assert_eq!(of("import", "coarse")["dimension"], "topic");
    for (level, n_categories) in [("coarse", 2), ("medium", 4), ("fine", 8)] {
        let stats = of("tags/qc", level);
        assert_eq!(stats["n"], 32);
        assert_eq!(stats["categories"].as_array().unwrap().len(), n_categories);
    }
    let qc = analysis["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dimension"] == "qc")
        .unwrap();
    assert_eq!(qc["levels"], json!(["coarse", "medium", "fine"]), "{qc}");
    assert!(
        analysis["splits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["dimension"] == "qc"),
        "{analysis}"
    );
    let tags = &analysis["tags"];
    assert_eq!(
        tags["tag_sets"],
        json!(["tags/at", "tags/lv", "tags/ph", "tags/qc"])
    );
    // No label of the file is in the tagger's taxonomy: nothing to agree with.
    assert_eq!(tags["agreement"], json!([]));
    // The import has no intended factor: one model on the three tagged dimensions.
    let model = &tags["adjusted"][0];
    assert_eq!(model["set"], "import");
    let names: Vec<&str> = model["factors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["dimension"].as_str().unwrap())
        .collect();
    // The other dimensions were tagged their first category for every question: constant,
    // so left out.
    assert_eq!(names, ["qc"]);
}
