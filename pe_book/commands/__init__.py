"""Thin ``pe-book`` subcommands: each module has ``configure(parser)`` and ``run(args) -> int``."""
