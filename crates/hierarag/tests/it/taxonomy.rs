//! `hierarag taxonomy …` end to end on the built-in default and edited copies of it.

use assert_cmd::Command;

fn hierarag() -> Command {
    let mut cmd = Command::cargo_bin("hierarag").unwrap();
    cmd.env_remove("RUST_LOG");
    cmd
}

fn stdout_of(args: &[&str]) -> String {
    let out = hierarag().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn show_prints_each_category_under_its_parent() {
    let text = stdout_of(&["taxonomy", "show", "--dimension", "qc"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "qc — Question Complexity (coarse 2, medium 4, fine 8)"
    );
    let position = |name: &str| {
        lines
            .iter()
            .position(|l| l.trim_start().starts_with(name))
            .unwrap()
    };
    // A fine category sits after its medium parent, which sits after its coarse parent.
    assert!(position("simple ") < position("single_fact "));
    assert!(position("single_fact ") < position("extractive_span "));
    assert!(position("extractive_span ") < position("complex "));
    assert_eq!(lines.len(), 1 + 2 + 4 + 8);
}

#[test]
fn show_names_the_valid_dimensions_for_an_unknown_one() {
    hierarag()
        .args(["taxonomy", "show", "--dimension", "xx"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("`qc`, `at`, `lv`, `ph`"));
}

#[test]
fn init_writes_a_file_that_validates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("my.toml");
    std::fs::write(&path, stdout_of(&["taxonomy", "init"])).unwrap();
    let text = stdout_of(&["taxonomy", "validate", path.to_str().unwrap()]);
    assert!(
        text.contains("valid (4 dimensions, 46 categories, 2 personas)"),
        "{text}"
    );
}

#[test]
fn validate_names_file_dimension_and_category_of_each_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let text = stdout_of(&["taxonomy", "init"])
        .replacen("parent = \"simple\"", "parent = \"simpel\"", 1)
        .replacen(
            "name = \"entity_extraction\"",
            "name = \"extractive_span\"",
            1,
        );
    std::fs::write(&path, text).unwrap();
    let out = hierarag()
        .args(["taxonomy", "validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(
            "bad.toml: dimension `qc`: medium category `single_fact` has unknown parent `simpel`"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("extractive_span"), "{stderr}");
}

#[test]
fn datamorgana_export_reads_back_as_the_same_flat_taxonomy() {
    let json = stdout_of(&[
        "taxonomy",
        "export",
        "--format",
        "datamorgana",
        "--granularity",
        "fine",
    ]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let categorizations = value["question_categorizations"].as_array().unwrap();
    let sizes: Vec<usize> = categorizations
        .iter()
        .map(|c| c["categories"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [8, 8, 8, 4]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dm.json");
    std::fs::write(&path, &json).unwrap();
    let again = stdout_of(&[
        "taxonomy",
        "export",
        "--format",
        "datamorgana",
        "--file",
        path.to_str().unwrap(),
    ]);
    let again: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again, value);
}
