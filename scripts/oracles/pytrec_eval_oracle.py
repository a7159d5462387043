#!/usr/bin/env python3
"""The pytrec_eval oracle for hierarag-metrics (docs/design.md, "Metrics").

Usage:
    python3 scripts/oracles/pytrec_eval_oracle.py QRELS RUN OUT.json

Reads TREC qrels (`qid iter docno rel`) and a TREC run (`qid Q0 docno rank score tag`), scores the
run with pytrec_eval (trec_eval 9 inside) on the measures `map`, `ndcg_cut_10`, `recall_10` and
`recip_rank`, and writes `{query_id: {measure: value}}` as JSON to OUT.json. Scores are read with
`float()`, so they are exactly the values written in the file; the rank column is passed through
unchanged and, as in trec_eval, ignored. Like trec_eval, pytrec_eval reports only queries present in
both files; hierarag-metrics additionally scores judged queries without results as 0.

`crates/hierarag-metrics/tests/pytrec_eval_oracle.rs` runs this script and requires our values to
equal these to 1e-9. It needs `pip install pytrec_eval-terrier==0.5.11` (the wheel that provides
`import pytrec_eval`); without it the script exits with status 3 and says so.
"""

import json
import sys

MEASURES = {"map", "ndcg_cut_10", "recall_10", "recip_rank"}
EXIT_MISSING_MODULE = 3


def read_columns(path, n_columns):
    """Yields the whitespace-separated columns of every non-blank line of `path`."""
    with open(path, encoding="utf-8") as lines:
        for line_no, line in enumerate(lines, start=1):
            columns = line.split()
            if not columns:
                continue
            if len(columns) != n_columns:
                sys.exit(f"{path} line {line_no}: expected {n_columns} columns, found {len(columns)}")
            yield columns


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    qrels_path, run_path, out_path = sys.argv[1:]
    try:
        import pytrec_eval
    except ImportError as error:
        print(
            f"cannot import pytrec_eval ({error}); run `pip install pytrec_eval-terrier==0.5.11`",
            file=sys.stderr,
        )
        sys.exit(EXIT_MISSING_MODULE)

    qrels = {}
    for qid, _iter, docno, rel in read_columns(qrels_path, 4):
        qrels.setdefault(qid, {})[docno] = int(rel)
    run = {}
    for qid, _q0, docno, _rank, score, _tag in read_columns(run_path, 6):
        run.setdefault(qid, {})[docno] = float(score)

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, MEASURES)
    results = evaluator.evaluate(run)
    with open(out_path, "w", encoding="utf-8") as out:
        # json writes floats with repr(), which round-trips exactly.
        json.dump(results, out, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
