#!/usr/bin/env python3
"""Benchmarks written by the peers' own code, for the tests of `hierarag import`.

Usage:
    .venv-peers/bin/python scripts/peers/write_testsets.py ROWS.json OUT_DIR

ROWS.json is a list of {"question", "reference", "contexts": [...], "synthesizer", "persona",
"query_style", "query_length", "metadata": {...}}. Writes, with each package's own writer:

- ragas.jsonl, ragas.csv: a Ragas test set, `ragas.testset.synthesizers.testset_schema.Testset(
  samples=[TestsetSample(eval_sample=SingleTurnSample(user_input, reference,
  reference_contexts, persona_name, query_style, query_length), synthesizer_name)])`
  `.to_jsonl` / `.to_csv` (no LLM is called);
- goldens.json, goldens.jsonl, goldens.csv: DeepEval goldens, `deepeval.dataset.
  EvaluationDataset(goldens=[Golden(input, expected_output, context, additional_metadata)])`
  `.save_as(file_type=...)`.

Both packages' telemetry is switched off before they are imported: the tests make no call
outside 127.0.0.1 and the package registries.
"""

import json
import os
import sys
from pathlib import Path

os.environ["RAGAS_DO_NOT_TRACK"] = "true"
os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"
os.environ["DEEPEVAL_UPDATE_WARNING_OPT_IN"] = "NO"

from ragas.dataset_schema import SingleTurnSample  # noqa: E402
from ragas.testset.synthesizers.testset_schema import Testset, TestsetSample  # noqa: E402
from deepeval.dataset import EvaluationDataset, Golden  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    testset = Testset(samples=[
        TestsetSample(
            eval_sample=SingleTurnSample(
                user_input=row["question"], reference=row["reference"],
                reference_contexts=row["contexts"], persona_name=row["persona"],
                query_style=row["query_style"], query_length=row["query_length"]),
            synthesizer_name=row["synthesizer"])
        for row in rows])
    testset.to_jsonl(str(out / "ragas.jsonl"))
    testset.to_csv(str(out / "ragas.csv"))
    goldens = EvaluationDataset(goldens=[
        Golden(input=row["question"], expected_output=row["reference"],
               context=row["contexts"], additional_metadata=row["metadata"])
        for row in rows])
    for file_type in ["json", "jsonl", "csv"]:
        goldens.save_as(file_type=file_type, directory=str(out), file_name="goldens")
    print(f"{len(rows)} rows written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
