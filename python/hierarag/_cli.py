"""The `hierarag` command of the Python package: the same command line as the binary, run in
this process by the compiled module."""

import signal
import sys

from . import _native


def main() -> None:
    # Ctrl-C stops the command as it stops the binary (every stage resumes after a kill);
    # Python's own handler would only run once the command returned.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.cli(["hierarag", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
