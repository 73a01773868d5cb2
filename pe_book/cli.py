"""The ``pe-book`` command line: thin subcommands over the library modules.

The command is named after the package that holds it (``python -m pe_book`` is the same); it is
the only way in: :mod:`pe_lib` is the library and has no command line of its own (``python -m
pe_lib`` names this one), and the benchmark and the book's browser check are subcommands too.

Each subcommand is one module (``pe_book.commands.<name>``), a thin layer over the modules that do
the work; it exposes ``configure(parser)`` (add its arguments) and ``run(args) -> int``. Modules are imported only when their subcommand runs, so
``pe-book --help`` stays fast.

Errors. The project's own errors (:class:`pe_lib.errors.PeLibError` and its subclasses: bad
input, a full disk, an unwritable or locked folder, a missing data source) are printed as one
line on stderr with exit status 1, and warnings as one line each; ``--debug`` shows the
traceback instead. Any other exception is a bug and keeps its traceback. Output cut short by
its reader (``pe-book variants | head``) ends quietly.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator

from pe_lib.errors import PeLibError

PROG = "pe-book"

#: subcommand -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "variants": ("pe_book.commands.variants", "list the registered position-embedding variants"),
    "data": ("pe_book.commands.data", "fetch and prepare the corpus, tokenizer and tasks"),
    "pretrain": ("pe_book.commands.pretrain", "MLM-pretrain one variant (resumable; accelerate/DDP aware)"),
    "finetune": ("pe_book.commands.finetune", "fine-tune a pretrained model on one task"),
    "run": ("pe_book.commands.run", "compute every missing artifact of a profile"),
    "adopt": ("pe_book.commands.adopt", "take the artifacts and models another profile computed under the same keys"),
    "design": ("pe_book.commands.design", "a run's seeds from its pilot by the power of the verdict rule, within a budget"),
    "verify": ("pe_book.commands.verify", "recompute one variant from scratch and compare it with the committed results"),
    "check-results": ("pe_book.commands.check_results", "check a results folder against its manifests and its blobs at HEAD"),
    "properties": ("pe_book.commands.properties", "property indicators of a model's position embeddings"),
    "book": ("pe_book.commands.book", "execute the notebooks with papermill and build the Jupyter Book"),
    "export": ("pe_book.commands.export", "a profile's stored scores as one tidy table (CSV and Parquet)"),
    "publish": ("pe_book.commands.publish", "the repository URL, its check, and the Colab notebooks of the published book"),
    "check-book": ("pe_book.commands.check_book", "open every page of the built book in headless Chromium and check it"),
    "bench": ("pe_book.commands.bench", "side-by-side benchmarks of the model, the pipeline and the precisions"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser_for(argv)
    args = parser.parse_args(argv)
    if args.debug:
        with sigterm_as_interrupt():
            return int(importlib.import_module(args._module).run(args) or 0)
    try:
        with one_line_warnings(), sigterm_as_interrupt():
            code = int(importlib.import_module(args._module).run(args) or 0)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except PeLibError as error:
        message = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
        if getattr(error, "usage", False):  # a bad option value found after parsing: argparse's form and status
            print(f"{PROG} {args.command}: error: {message} ({PROG} {args.command} --help shows the usage)", file=sys.stderr)
            return 2
        print(f"{PROG} {args.command}: error: {message} (--debug shows the traceback)", file=sys.stderr)
        return 1
    except Terminated:  # docker stop, systemd, SLURM: like Ctrl-C, with the status of a SIGTERM death
        print(f"{PROG} {args.command}: terminated (SIGTERM); finished artifacts and checkpoints are kept, and a rerun "
              "resumes from them", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:  # Ctrl-C, or the SIGINT of `timeout`: finished files are kept, the rest resumes
        print(f"{PROG} {args.command}: interrupted; finished artifacts and checkpoints are kept, and a rerun "
              "resumes from them", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped reading (| head): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit would raise again
        return 1
    except OSError as error:
        if error.errno != errno.ENAMETOOLONG:
            raise
        name = str(error.filename if error.filename is not None else "")
        shown = name if len(name) <= 100 else name[:100] + "..."
        print(f"{PROG} {args.command}: error: path too long ({error.strerror}: {shown}): a file or folder name has "
              "at most 255 bytes and a path 4096; use a shorter one", file=sys.stderr)
        return 1


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as Ctrl-C raises KeyboardInterrupt: the same code paths
    end the run (finished files are kept, temporaries removed, the lock released)."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the command runs, a SIGTERM raises :class:`Terminated` (a second one kills at once)."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return

    def terminate(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("pe-lib")
    except PackageNotFoundError:
        return "unknown (not installed)"


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Show each warning as one line ``warning: message`` on stderr while the command runs."""
    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split("\n"))
        print(f"warning: {text}", file=file or sys.stderr)

    saved = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = saved


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (exit status 2, as usual for usage errors) that
    points to ``--help`` instead of printing the whole usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help shows the usage)\n")


def build_parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser with only the requested subcommand's module imported."""
    parser = Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)  # the main parser's options are flags
    for name, (module, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module)
        sub_parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                help="show the traceback of an error instead of one line")
        if name == chosen:
            importlib.import_module(module).configure(sub_parser)
    return parser


if __name__ == "__main__":
    sys.exit(main())
