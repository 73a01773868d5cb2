"""``pe-book variants``: the registered position-embedding variants and how each enters the model."""
from __future__ import annotations


def configure(parser) -> None:
    parser.add_argument("--all", action="store_true",
                        help="also list every APE+relative combination and every +untie-cls variant")


def run(args) -> int:
    from pe_lib.positions import PE_VARIANTS, _REGISTRY, UNTIE_CLS, all_variants, parse_variant

    for name in all_variants(untied=True) if args.all else PE_VARIANTS:
        variant = parse_variant(name)
        kinds = [_REGISTRY[p].integration for p in (variant.absolute, variant.relative) if p] or ["none"]
        kinds += [UNTIE_CLS] if variant.untie_cls else []
        print(f"{name:42s} {'+'.join(kinds)}")
    return 0
