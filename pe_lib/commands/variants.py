"""``pe-lib variants``: the registered position-embedding variants and how each enters the model."""
from __future__ import annotations


def configure(parser) -> None:
    parser.add_argument("--all", action="store_true", help="also list every APE+relative combination")


def run(args) -> int:
    from pe_lib.positions import PE_VARIANTS, _REGISTRY, all_variants, parse_variant

    for name in all_variants() if args.all else PE_VARIANTS:
        variant = parse_variant(name)
        kinds = [_REGISTRY[p].integration for p in (variant.absolute, variant.relative) if p] or ["none"]
        print(f"{name:32s} {'+'.join(kinds)}")
    return 0
