# Type stubs of the compiled module (crates/hierarag-py/src/lib.rs). Values cross as JSON text;
# the Python modules beside this one turn them into dicts and DataFrames.

__version__: str

def cli(argv: list[str], tables: bool = True) -> int:
    """Runs the command line ``argv`` (the program name first); returns its exit code.
    Without ``tables`` the summary tables are not printed on stdout."""

def read_records(path: str, kind: str) -> str:
    """The records of a run file as a JSON array; ``kind`` is benchmark, answers, scores or any."""

def eval_text(references: list[str], predictions: list[str], language: str = "en") -> str:
    """``hierarag eval text --no-cs --json`` of the pairs, as JSON text."""

def eval_retrieval(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> str:
    """``hierarag eval retrieval --json`` of the run against the qrels, as JSON text."""

def run_dir_of(config: str) -> str:
    """The run directory of a run config."""

def systems(run_dir: str) -> str:
    """The systems of a run as a JSON array of ``[name, folder]``."""

def answer_with(
    run_dir: str, system: str, call: object, concurrency: int, quiet: bool = False
) -> str:
    """Answers the run's unanswered questions with ``call(question, id) -> reply JSON``."""

def evaluate_system(run_dir: str, system: str, quiet: bool = False) -> bool:
    """Scores a system of the run with the settings its manifest recorded; True when every
    answer was scored."""

class Index:
    """A BM25 index built by ``hierarag index``."""

    def __init__(self, dir: str) -> None: ...
    def search(self, query: str, k: int = 10, documents: bool = False) -> str:
        """``hierarag search --json`` of the query, as JSON text."""
    def __len__(self) -> int: ...
