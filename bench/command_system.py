#!/usr/bin/env python3
"""Throughput of a `kind = "command"` system: `hierarag answer` asking a program that answers
at once, against the same program fed the same questions from a file (its own speed, the
ceiling), in one run on this machine. See docs/benchmarks.md ("Command systems").

    python3 bench/command_system.py [--questions 20000] [--concurrency 64] [--bin target/release/hierarag]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = r'''
import json, sys
for line in sys.stdin:
    q = json.loads(line)
    sys.stdout.write(json.dumps({"id": q["id"], "answer": "answer to " + q["question"],
                                 "contexts": [{"doc_id": "doc-1", "text": "t"}]}) + "\n")
    sys.stdout.flush()
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--bin", default="target/release/hierarag")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with open(tmp / "benchmark.jsonl", "w") as out:
            for i in range(args.questions):
                out.write(json.dumps({
                    "id": f"q{i:06}", "question": f"What is item {i}?", "answer": "ref",
                    "doc_ids": ["doc-1"], "design": "rq1", "set": "qc",
                    "categories": [{"dimension": "qc", "level": "coarse", "category": "simple"}],
                    "persona": {}, "generator": {"backend": "b", "model": "m", "params": {}},
                    "candidates_considered": 1, "attempts": 1,
                    "filter": {"enabled": False, "passed": 1, "judged": 1}}) + "\n")
        (tmp / "program.py").write_text(PROGRAM)
        (tmp / "run.toml").write_text(
            f'[[system]]\nname = "fast"\nkind = "command"\n'
            f'command = ["{sys.executable}", "{tmp / "program.py"}"]\n'
            f"concurrency = {args.concurrency}\n")
        # The program alone, questions from a file, answers to a file.
        with open(tmp / "questions.jsonl", "w") as out:
            for i in range(args.questions):
                out.write(json.dumps({"id": f"q{i:06}", "question": f"What is item {i}?"}) + "\n")
        started = time.perf_counter()
        with open(tmp / "questions.jsonl") as stdin, open(tmp / "alone.jsonl", "w") as stdout:
            subprocess.run([sys.executable, str(tmp / "program.py")], stdin=stdin, stdout=stdout,
                           check=True)
        alone = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run([args.bin, "answer", "-q", "--benchmark", str(tmp / "benchmark.jsonl"),
                        "--config", str(tmp / "run.toml"), "--out", str(tmp / "out")], check=True)
        ours = time.perf_counter() - started
        answered = sum(1 for _ in open(tmp / "out/systems/fast/answers.jsonl"))
        assert answered == args.questions, answered
    n = args.questions
    print(f"{n} questions, concurrency {args.concurrency}, {os.cpu_count()} cores")
    print(f"  the program alone:        {alone:6.2f} s  {n / alone:8.0f} questions/s")
    print(f"  hierarag answer (command): {ours:6.2f} s  {n / ours:8.0f} questions/s")
    print(f"  hierarag takes {ours / alone:.2f}× the program's own time (its start, reading the "
          f"benchmark, the journal); target ≥ 2,000 questions/s")


if __name__ == "__main__":
    main()
