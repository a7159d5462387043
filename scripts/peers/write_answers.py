#!/usr/bin/env python3
"""Answers files written by the peers' own code, for the tests of `kind = "file"` systems.

Usage:
    .venv-peers/bin/python scripts/peers/write_answers.py ROWS.json OUT_DIR

ROWS.json is a list of {"question", "answer", "contexts": [...], "context_ids": [...]}. Writes,
with each package's own writer:

- ragas.jsonl, ragas.csv: `ragas.EvaluationDataset(samples=[SingleTurnSample(user_input,
  response, retrieved_contexts, retrieved_context_ids)])` `.to_jsonl` / `.to_csv`;
- deepeval.json, deepeval.jsonl, deepeval.csv: `deepeval.dataset.EvaluationDataset(goldens=[
  Golden(input, actual_output, retrieval_context)])` `.save_as(file_type=...)`.

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

from ragas import EvaluationDataset as RagasDataset  # noqa: E402
from ragas import SingleTurnSample  # noqa: E402
from deepeval.dataset import EvaluationDataset as DeepEvalDataset  # noqa: E402
from deepeval.dataset import Golden  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    ragas = RagasDataset(samples=[
        SingleTurnSample(user_input=row["question"], response=row["answer"],
                         retrieved_contexts=row["contexts"],
                         retrieved_context_ids=row["context_ids"])
        for row in rows])
    ragas.to_jsonl(str(out / "ragas.jsonl"))
    ragas.to_csv(str(out / "ragas.csv"))
    deepeval = DeepEvalDataset(goldens=[
        Golden(input=row["question"], actual_output=row["answer"],
               retrieval_context=row["contexts"])
        for row in rows])
    for file_type in ["json", "jsonl", "csv"]:
        deepeval.save_as(file_type=file_type, directory=str(out), file_name="deepeval")
    print(f"{len(rows)} rows written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
