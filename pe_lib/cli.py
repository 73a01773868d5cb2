"""The ``pe-lib`` command line: thin subcommands over the library modules.

Each subcommand lives in the module that does the work; that module exposes
``configure(parser)`` (add its arguments) and ``run(args) -> int``. Modules are imported
only when their subcommand runs, so ``pe-lib --help`` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import sys

#: subcommand -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "variants": ("pe_lib.commands.variants", "list the registered position-embedding variants"),
    "data": ("pe_lib.data.cli", "fetch and prepare the corpus, tokenizer and tasks"),
    "pretrain": ("pe_lib.commands.pretrain", "MLM-pretrain one variant (resumable; accelerate/DDP aware)"),
    "finetune": ("pe_lib.commands.finetune", "fine-tune a pretrained model on one task"),
    "run": ("pe_lib.commands.run", "compute every missing artifact of a profile"),
    "properties": ("pe_lib.commands.properties", "property indicators of a model's position embeddings"),
    "book": ("pe_lib.book", "execute the notebooks with papermill and build the Jupyter Book"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser_for(argv)
    args = parser.parse_args(argv)
    return int(importlib.import_module(args._module).run(args) or 0)


def build_parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser with only the requested subcommand's module imported."""
    parser = argparse.ArgumentParser(prog="pe-lib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module)
        if argv[:1] == [name]:
            importlib.import_module(module).configure(sub_parser)
    return parser


if __name__ == "__main__":
    sys.exit(main())
