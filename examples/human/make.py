#!/usr/bin/env python3
"""Build examples/human/ from the English file of XQuAD (xquad.en.json).

Usage: python3 examples/human/make.py PATH/TO/xquad.en.json [OUT_DIR]

XQuAD's English file is a subset of the SQuAD v1.1 development set: 48 Wikipedia
articles, 5 paragraphs each, with questions written by SQuAD's crowdworkers and one
of their answers per question. This script keeps every 4th article in file order
(12 articles), all 5 paragraphs of each, and the first 3 questions of each paragraph
in file order. Paragraph text, questions and answers are copied verbatim; question
ids are SQuAD's own. Standard library only; the output is deterministic.
"""
import json
import os
import sys

ARTICLE_STEP = 4          # keep articles 0, 4, 8, ... in file order
QUESTIONS_PER_PARAGRAPH = 3


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    src = argv[1]
    out = argv[2] if len(argv) == 3 else os.path.dirname(os.path.abspath(__file__))
    with open(src, encoding="utf-8") as f:
        data = json.load(f)["data"]

    docs, questions = [], []
    for article in data[::ARTICLE_STEP]:
        slug = article["title"]                      # e.g. "Sky_(United_Kingdom)"
        title = slug.replace("_", " ")
        for i, para in enumerate(article["paragraphs"]):
            doc_id = f"{slug}#{i}"
            text = para["context"]
            docs.append({"id": doc_id, "text": text, "title": title})
            for qa in para["qas"][:QUESTIONS_PER_PARAGRAPH]:
                ans = qa["answers"][0]
                start = ans["answer_start"]
                if text[start:start + len(ans["text"])] != ans["text"]:
                    sys.exit(f"answer of {qa['id']} is not at its offset")
                questions.append({
                    "id": qa["id"],
                    "question": qa["question"],
                    "answer": ans["text"],
                    "doc_ids": [doc_id],
                })

    for name, rows in (("corpus.jsonl", docs), ("questions.jsonl", questions)):
        with open(os.path.join(out, name), "w", encoding="utf-8", newline="\n") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    articles = len({d["title"] for d in docs})
    print(f"{len(docs)} paragraphs from {articles} articles, {len(questions)} questions")


if __name__ == "__main__":
    main(sys.argv)
