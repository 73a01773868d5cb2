"""Thin ``pe-lib`` subcommands: each module has ``configure(parser)`` and ``run(args) -> int``."""
