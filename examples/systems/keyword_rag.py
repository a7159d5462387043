#!/usr/bin/env python3
"""A RAG system speaking HieraRAG's command protocol (`kind = "command"`), standard library only.

    [[system]]
    name = "keywords"
    kind = "command"
    command = ["python3", "examples/systems/keyword_rag.py", "corpus.jsonl"]

HieraRAG starts the program once and writes one question a line on its stdin:

    {"id": "rq1-qc-0001", "question": "Where is the Mackenzie River?"}

The program writes one answer a line on its stdout, in any order, flushing each line:

    {"id": "rq1-qc-0001", "answer": "...", "contexts": [{"doc_id": "...", "text": "..."}]}

`contexts` may be omitted, or be a list of texts; with document ids the retrieval metrics are
scored from them, with texts only HieraRAG finds the documents in the run's index. Anything the
program prints on stderr goes to `systems/<name>/command.log`.

This one "retrieves" the documents of a JSONL corpus (fields `id` and `text`) that share the most
words with the question and "generates" the best one's first sentence. Replace `answer()` with
your own chain (see docs/guide/own-system.md).
"""

import json
import re
import sys

WORD = re.compile(r"[a-z0-9]+")


def words(text):
    return set(WORD.findall(text.lower()))


def load(path):
    documents = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                documents.append((record["id"], record["text"], words(record["text"])))
    return documents


def answer(question, documents, k=3):
    asked = words(question)
    ranked = sorted(documents, key=lambda d: (-len(asked & d[2]), d[0]))[:k]
    ranked = [d for d in ranked if asked & d[2]]
    if not ranked:
        return "I cannot answer this question from the given context.", []
    best = ranked[0][1]
    first_sentence = re.split(r"(?<=[.!?])\s", best, maxsplit=1)[0]
    return first_sentence, [{"doc_id": d[0], "text": d[1]} for d in ranked]


def main():
    documents = load(sys.argv[1]) if len(sys.argv) > 1 else []
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        text, contexts = answer(request["question"], documents)
        reply = {"id": request["id"], "answer": text, "contexts": contexts}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
