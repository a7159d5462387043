#!/usr/bin/env python3
"""The rouge-score / sacrebleu oracle for the text metrics of corpora in other languages
(docs/design.md, "Languages").

Usage:
    .venv-oracles/bin/python scripts/oracles/multilingual_text_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-metrics/tests/data. The script writes two files there:

- `multilingual_pairs.jsonl`: one `{"id", "language", "reference", "prediction"}` object per
  line: Korean pairs built deterministically (`random.Random(11)`) from the sentences of
  examples/korean/corpus.jsonl (Korean Wikipedia, CC BY-SA; examples/korean/SOURCES.md) —
  identical, particles dropped, words reordered, unrelated, refusals, empty, mixed with Latin
  letters and digits — the pair of the issue that asked for this ("서울의 인구는 약 천만 명이다." /
  "서울 인구는 약 천만 명입니다."), and hand-written pairs in Japanese, Chinese, German, French,
  Russian, Greek, Turkish, Arabic and Tamil, with the characters sacrebleu's tokenizers treat
  specially (full-width forms, CJK punctuation, the general punctuation its `zh` tokenizer
  counts as Chinese, a supplementary ideograph, ideographic spaces);
- `multilingual_expected.json`: for every id, the ROUGE-1 tokens of both texts and ROUGE-1
  from `rouge-score` (`RougeScorer(['rouge1'], tokenizer=T).score(reference, prediction)`,
  `T` the language's tokenizer below), sentence BLEU from `sacrebleu.sentence_bleu(prediction,
  [reference], tokenize=...)` with its statistics; and corpus BLEU over each language's pairs.

The tokenizer given to rouge-score is written here from the specification, independently of
the Rust code (hierarag-lang): a word is a maximal run of characters whose Unicode general
category is a letter, mark or number (`unicodedata.category(c)[0] in "LMN"`) in the text
lowercased by `str.lower()`; for Chinese, Japanese and Korean every run of Han, kana and Hangul
characters (by Unicode block, the ranges below) inside a word becomes its overlapping bigrams,
a run of one character that character. BLEU's tokenizers are sacrebleu's own: `char` for
Korean and Japanese, `zh` for Chinese, `13a` for the rest.

`crates/hierarag-metrics/tests/it/multilingual_oracle.rs` reads both files (no Python at test
time). Rerun this script after changing the cases or the pinned package versions, and commit
both files.
"""

import json
import random
import sys
import unicodedata
from pathlib import Path

from rouge_score import rouge_scorer
import sacrebleu

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT_DIR = ROOT / "crates/hierarag-metrics/tests/data"
KOREAN_CORPUS = ROOT / "examples/korean/corpus.jsonl"
SEED = 11

# Han, kana and Hangul, by Unicode block (the specification of docs/design.md, "Languages").
CJK_RANGES = [
    (0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xFFA0, 0xFFDC),
    (0x3040, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F), (0x1B000, 0x1B16F),
    (0x2E80, 0x2FDF), (0x3005, 0x3005), (0x3007, 0x3007), (0x3021, 0x3029), (0x3038, 0x303B),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF),
]

CJK_LANGUAGES = {"ko", "ja", "zh"}
BLEU_TOKENIZER = {"ko": "char", "ja": "char", "zh": "zh"}


def is_cjk(c):
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def words(text):
    out, current = [], []
    for c in text:
        if unicodedata.category(c)[0] in "LMN":
            current.append(c)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


def cjk_tokens(word):
    out, run, other = [], [], []

    def flush_run():
        if len(run) == 1:
            out.append(run[0])
        for i in range(len(run) - 1):
            out.append(run[i] + run[i + 1])
        run.clear()

    for c in word:
        if is_cjk(c):
            if other:
                out.append("".join(other))
                other.clear()
            run.append(c)
        else:
            if run:
                flush_run()
            other.append(c)
    if other:
        out.append("".join(other))
    flush_run()
    return out


class Tokenizer:
    """What rouge-score calls: `tokenize(text) -> list of tokens`."""

    def __init__(self, language):
        self.cjk = language in CJK_LANGUAGES

    def tokenize(self, text):
        tokens = words(text.lower())
        if self.cjk:
            tokens = [t for word in tokens for t in cjk_tokens(word)]
        return tokens


HANDWRITTEN = {
    "ja": [
        ("東京は日本の首都であり、人口は約千四百万人です。", "東京は日本の首都で、人口はおよそ千四百万人だ。"),
        ("富士山の高さは3776メートルです。", "富士山は標高3,776mの山です。"),
        ("コーヒーを一杯ください。", "紅茶を二杯お願いします。"),
        ("与えられた文脈からはこの質問に答えられません。", "与えられた文脈からはこの質問に答えられません。"),
        ("ｶﾀｶﾅとカタカナ、全角ＡＢＣと半角ABC。", "カタカナとｶﾀｶﾅ、ABCとＡＢＣ。"),
        ("京都　大阪\t神戸", "京都 大阪 神戸"),
    ],
    "zh": [
        ("北京是中华人民共和国的首都。", "中华人民共和国的首都是北京。"),
        ("长城全长约21196千米，是世界上最长的建筑。", "长城长约两万一千公里。"),
        ("他说：“我明天去上海。”", "他说“明天我去上海”。"),
        ("根据给定的上下文，我无法回答这个问题。", "我不知道。"),
        ("价格是100元—不含税’s", "价格为１００元 — 含税"),
        ("𠀀字是扩展B区的汉字。", "扩展B区有𠀀字。"),
        ("Python 3.12 发布于2023年10月2日.", "Python3.12于2023年发布。"),
    ],
    "de": [
        ("Die Häuser in der Altstadt wurden 1850 gebaut.", "Die Altstadthäuser wurden im Jahr 1850 errichtet."),
        ("Straße, Größe und Maß.", "STRASSE, Größe und Maß!"),
        ("Ich kann diese Frage anhand des gegebenen Kontexts nicht beantworten.", "Keine Ahnung."),
    ],
    "fr": [
        ("L'été dernier, nous sommes allés à Montréal.", "Nous sommes allés à Montréal l'été dernier."),
        ("Le château « fort » date du XIIᵉ siècle.", "Le château fort date du douzième siècle."),
    ],
    "ru": [
        ("Москва — столица России, её население около 13 миллионов.", "Столица России — Москва."),
        ("Я не могу ответить на этот вопрос на основе данного контекста.", "Ответ: 1812 год."),
    ],
    "el": [
        ("ΟΔΟΣ ΑΘΗΝΑΣ: η Αθήνα είναι η πρωτεύουσα της Ελλάδας.", "Η Αθήνα είναι πρωτεύουσα της Ελλάδας."),
    ],
    "tr": [
        ("İstanbul, Türkiye'nin en kalabalık şehridir.", "Türkiye'nin en kalabalık şehri İstanbul'dur."),
    ],
    "ar": [
        ("القاهرة هي عاصمة مصر وأكبر مدنها.", "عاصمة مصر هي القاهرة."),
    ],
    "ta": [
        ("சென்னை தமிழ்நாட்டின் தலைநகரம் ஆகும்.", "தமிழ்நாட்டின் தலைநகரம் சென்னை."),
    ],
}


def korean_sentences():
    sentences = []
    for line in KOREAN_CORPUS.read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["text"]
        for sentence in text.replace("다. ", "다.\n").split("\n"):
            sentence = sentence.strip()
            if 8 <= len(sentence) <= 160:
                sentences.append(sentence)
    return sentences


def drop_particles(sentence, rng):
    """Drops the last syllable of some words (often a particle: 서울의 -> 서울)."""
    out = []
    for word in sentence.split():
        if len(word) > 2 and rng.random() < 0.5:
            word = word[:-1]
        out.append(word)
    return " ".join(out)


def korean_pairs(rng):
    sentences = korean_sentences()
    pairs = [
        ("서울 인구는 약 천만 명입니다.", "서울의 인구는 약 천만 명이다."),
        ("한국 전통 발효 음식", "김치는 한국의 전통 발효 음식이다."),
        ("주어진 문맥으로는 이 질문에 답할 수 없습니다.", "주어진 문맥으로는 이 질문에 답할 수 없습니다."),
        ("주어진 문맥으로는 이 질문에 답할 수 없습니다.", "금강산은 강원도에 있다."),
        ("금강산의 높이는 1,638m이다.", ""),
        ("", "금강산"),
        ("KTX는 2004년 4월 1일에 개통했다.", "KTX 개통: 2004.4.1"),
        ("ｆｕｌｌｗｉｄｔｈ ＡＢＣ와 １２３", "fullwidth ABC와 123"),
    ]
    chosen = rng.sample(sentences, 18)
    for i, sentence in enumerate(chosen[:6]):
        pairs.append((sentence, sentence))
    for sentence in chosen[6:10]:
        pairs.append((sentence, drop_particles(sentence, rng)))
    for sentence in chosen[10:13]:
        words_ = sentence.split()
        rng.shuffle(words_)
        pairs.append((sentence, " ".join(words_)))
    for a, b in zip(chosen[13:16], chosen[16:18] + chosen[:1]):
        pairs.append((a, b))
    # A long reference against its first half.
    long_text = " ".join(sentences[:12])
    pairs.append((long_text, " ".join(long_text.split()[: len(long_text.split()) // 2])))
    return pairs


def main():
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT_DIR
    rng = random.Random(SEED)
    cases = [("ko", ref, pred) for ref, pred in korean_pairs(rng)]
    for language, pairs in HANDWRITTEN.items():
        cases.extend((language, ref, pred) for ref, pred in pairs)

    from importlib.metadata import version

    pairs_out = []
    expected = {
        "packages": {"rouge-score": version("rouge-score"), "sacrebleu": version("sacrebleu")},
        "pairs": {},
        "corpus_bleu": {},
    }
    by_language = {}
    for n, (language, reference, prediction) in enumerate(cases):
        pair_id = f"{language}-{n:03d}"
        pairs_out.append(
            {"id": pair_id, "language": language, "reference": reference, "prediction": prediction}
        )
        tokenizer = Tokenizer(language)
        scorer = rouge_scorer.RougeScorer(["rouge1"], tokenizer=tokenizer)
        rouge = scorer.score(reference, prediction)["rouge1"]
        bleu_tok = BLEU_TOKENIZER.get(language, "13a")
        bleu = sacrebleu.sentence_bleu(prediction, [reference], tokenize=bleu_tok)
        expected["pairs"][pair_id] = {
            "rouge1_tokenizer": "cjk-bigram" if language in CJK_LANGUAGES else "unicode",
            "bleu_tokenizer": bleu_tok,
            "reference_tokens": tokenizer.tokenize(reference),
            "prediction_tokens": tokenizer.tokenize(prediction),
            "rouge1": {
                "precision": rouge.precision,
                "recall": rouge.recall,
                "fmeasure": rouge.fmeasure,
            },
            "bleu": {
                "score": bleu.score,
                "counts": bleu.counts,
                "totals": bleu.totals,
                "sys_len": bleu.sys_len,
                "ref_len": bleu.ref_len,
            },
        }
        by_language.setdefault(language, ([], []))
        by_language[language][0].append(prediction)
        by_language[language][1].append(reference)
    for language, (predictions, references) in by_language.items():
        bleu = sacrebleu.corpus_bleu(
            predictions, [references], tokenize=BLEU_TOKENIZER.get(language, "13a")
        )
        expected["corpus_bleu"][language] = bleu.score

    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "multilingual_pairs.jsonl", "w", encoding="utf-8") as f:
        for pair in pairs_out:
            f.write(json.dumps(pair, ensure_ascii=False) + "\n")
    with open(out_dir / "multilingual_expected.json", "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(pairs_out)} pairs in {len(by_language)} languages written to {out_dir}")


if __name__ == "__main__":
    main()
