# %% [markdown]
# # HieraRAG from Python
#
# The quickstart run, then your own RAG system as a Python function answering the same
# benchmark, compared per category with the built-in systems. Runs top to bottom as a plain
# script or cell by cell in Jupyter (the `# %%` markers), on the embedded defaults:
#
#     python3 -m venv v && v/bin/pip install .
#     v/bin/python examples/python/quickstart.py            # or: ... quickstart.py RUN_DIR
#
# Given a finished run directory it uses that run instead of making the quickstart's.

# %%
import sys

import hierarag

if len(sys.argv) > 1:
    run = hierarag.Run(sys.argv[1])
else:
    run = hierarag.run("examples/quickstart.toml", quiet=True)
print(run, run.systems)
run.benchmark[["id", "question", "answer"]].head()

# %% [markdown]
# A RAG system in ten lines: the run's own BM25 index as the retriever, and the first sentence
# of the best passage as the answer (put your LLM call there). Return the answer, or a dict
# with the answer and the contexts it used; an `async def` works the same way.

# %%
index = hierarag.Index(run.path / "index")


def my_rag(question: str) -> dict:
    hits = index.search(question, k=3)
    if not hits:
        return {"answer": "I cannot answer this question from the given context."}
    first_sentence = hits[0]["text"].split(". ")[0].strip() + "."
    return {
        "answer": first_sentence,
        "contexts": [{"doc_id": h["doc_id"], "text": h["text"]} for h in hits],
    }


outcome = run.answer_with(my_rag, system="mine", concurrency=4, quiet=True)
print(outcome)

# %% [markdown]
# Its scores beside the built-in systems', per question and per category.

# %%
scores = run.scores(system="mine")
print(scores[["id", "ndcg_10", "cs", "rouge1"]].head())
for system in run.systems:
    print(f"{system:>8}  nDCG@10 {run.scores(system=system).ndcg_10.mean():.3f}  "
          f"CS {run.scores(system=system).cs.mean():.3f}")

hierarag.analyze(run.path, system="mine", quiet=True)
hierarag.compare(run.path, quiet=True)
hierarag.report(run.path, quiet=True)
print(run.analysis_of("mine").levels[["set", "category", "n", "metric"]])

# %%
run.report()  # the HTML report, inline in Jupyter
