#!/usr/bin/env python3
"""BM25 on a Korean known-item task with each of hierarag's analyzers (bench/korean.sh).

KorQuAD 1.0's development set has 5,774 questions written by people about 964 paragraphs of
140 Korean Wikipedia articles. Each paragraph is a document (id `{title}#{n}`), each question a
query whose one relevant document is its paragraph. The same corpus is indexed with
`hierarag index --language en` (the English analyzer: tantivy's simple tokenizer, English
stop words and stemmer; Korean words stay whole with their particles) and `--language ko`
(CJK bigrams), queried with `hierarag retrieve -k 10`, and scored with
`hierarag eval retrieval` (trec_eval's semantics). Prints a table and writes
`results.json` to --out.
"""

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

LANGUAGES = ["en", "ko"]


def convert(data: Path, out: Path):
    squad = json.loads(data.read_text(encoding="utf-8"))
    corpus, queries, qrels = [], [], []
    for article in squad["data"]:
        for n, paragraph in enumerate(article["paragraphs"]):
            doc_id = f"{article['title']}#{n}"
            corpus.append({"id": doc_id, "text": paragraph["context"]})
            for qa in paragraph["qas"]:
                queries.append({"id": qa["id"], "text": qa["question"]})
                qrels.append(f"{qa['id']} 0 {doc_id} 1")
    (out / "corpus.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus), encoding="utf-8"
    )
    (out / "queries.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8"
    )
    (out / "qrels.txt").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return len(corpus), len(queries)


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{result.stderr}")
    return result.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path, help="KorQuAD_v1.0_dev.json")
    ap.add_argument("--bin", required=True, help="the hierarag binary")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sha256 = hashlib.sha256(args.data.read_bytes()).hexdigest()
    n_docs, n_queries = convert(args.data, args.out)
    results = {"data": str(args.data), "sha256": sha256, "documents": n_docs,
               "queries": n_queries, "analyzers": {}}
    for language in LANGUAGES:
        index = args.out / f"index-{language}"
        started = time.perf_counter()
        run([args.bin, "-q", "index", "--corpus", args.out / "corpus.jsonl", "--out", index,
             "--language", language, "--overwrite"])
        index_s = time.perf_counter() - started
        trec = args.out / f"run-{language}.trec"
        run([args.bin, "-q", "retrieve", "--index", index, "--queries", args.out / "queries.jsonl",
             "--query-field", "text", "-k", "10", "--out", trec, "--threads", "1"])
        scores = json.loads(run([args.bin, "-q", "eval", "retrieval", "--qrels",
                                 args.out / "qrels.txt", "--run", trec, "--json", "--mean-only"]))
        manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
        results["analyzers"][language] = {
            "analyzer": manifest["analyzer"],
            "index_seconds": index_s,
            "mean": scores["mean"] if "mean" in scores else scores,
        }
    (args.out / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(f"KorQuAD 1.0 dev (sha256 {sha256[:12]}…): {n_docs} paragraphs, {n_queries} questions, "
          f"top 10, one relevant paragraph a question")
    print(f"{'analyzer':<40} {'nDCG@10':>8} {'R@10':>8} {'MRR':>8}")
    for language, result in results["analyzers"].items():
        mean = result["mean"]
        name = f"--language {language}: {result['analyzer']['tokenizer']}"
        print(f"{name[:40]:<40} {mean['ndcg_cut_10']:>8.4f} {mean['recall_10']:>8.4f} "
              f"{mean['recip_rank']:>8.4f}")


if __name__ == "__main__":
    main()
