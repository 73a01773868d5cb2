"""Chapter "Properties" (01): the paper's three properties, what each variant has by construction,
and the indicators measured on randomly initialised models and on a profile's pretrained ones."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from pe_book import tables
from pe_book.chapters import common
from pe_lib import PEBertConfig, PEBertModel, parse_variant
from pe_lib.probing import proximity
from pe_lib.properties import chen_locality, chen_symmetry, indicators

INDICATORS = ["monotonicity", "monotonicity_local", "translation_invariance", "symmetry"]
PROBE_COLUMNS = INDICATORS + ["Chen locality", "Chen symmetry"]

YES, NO, LOCAL = "✓", "✗", "local"
#: What each basic variant has by construction (the chapter's argument, one row per variant).
THEORY = pd.DataFrame(
    [
        ("none", "— (no position)", "✓ (trivially)", "✓ (trivially)"),
        ("ape-learned", NO, NO, YES),
        ("ape-sin", LOCAL, YES, YES),
        ("ape-sin-learned", LOCAL + " (range learned)", YES, YES),
        ("rpe-learned", NO, YES, NO),
        ("rpe-sin", LOCAL, YES, YES + " (|x - y|)"),
        ("rpe-sin-learned", LOCAL + " (range learned)", YES, YES + " (|x - y|)"),
        ("alibi", YES, YES, YES),
        ("t5-bias", NO, YES + " (bucketed)", NO),
        ("rope", NO + " (decaying bound)", YES, NO),
    ],
    columns=["variant", "monotonicity", "translation invariance", "symmetry"],
).set_index("variant")


@dataclass
class Properties:
    """What the chapter shows, at initialisation: identical-word ``probes`` (variant -> (n, n))
    and their ``probe_table``, the APE dot products ``ape_grams`` and RPE ones ``rpe_grams`` with
    the APE ``gram_table``; after pretraining (the profile's models): ``trained_probe`` and
    ``trained_ape``; and ``cited``, by glue name."""
    probes: dict[str, np.ndarray]
    ape_grams: dict[str, np.ndarray]
    rpe_grams: dict[str, np.ndarray]
    probe_table: pd.DataFrame
    gram_table: pd.DataFrame
    trained_probe: pd.DataFrame
    trained_ape: pd.DataFrame
    cited: dict


def build(variant: str, hidden_size: int, num_heads: int, num_layers: int, length: int, seed: int) -> PEBertModel:
    """A randomly initialised encoder with ``variant`` (seeded), in eval mode."""
    torch.manual_seed(seed)
    config = PEBertConfig(hidden_size=hidden_size, num_attention_heads=num_heads, num_hidden_layers=num_layers,
                          intermediate_size=4 * hidden_size, max_position_embeddings=length, position_embedding=variant)
    return PEBertModel(config, add_pooling_layer=False).eval()


def compute(runner, variants: Sequence[str], hidden_size: int = 64, num_heads: int = 4, num_layers: int = 2,
            length: int = 32, n_words: int = 50, window: int = 8, seed: int = 0) -> Properties:
    """The indicators of ``variants`` on fresh models of this shape (first layer probed with
    ``n_words`` random words over ``length`` positions; local monotonicity over offsets
    1..``window``) and on the pretrained models of ``runner``'s profile among them (their stored
    maps, with this ``window``)."""
    parsed = {name: parse_variant(name) for name in variants}  # raises naming the valid variants
    probes, ape_grams, rpe_grams, rows = {}, {}, {}, {}
    for name, variant in parsed.items():
        model = build(name, hidden_size, num_heads, num_layers, length, seed)
        phi = proximity(model, "probe", length=length, n_words=n_words, seed=seed)  # (n, n)
        probes[name] = phi
        rows[name] = {**indicators(phi, window=window), "Chen locality": chen_locality(phi),
                      "Chen symmetry": chen_symmetry(phi)}
        if variant.absolute:
            ape_grams[name] = proximity(model, "ape", length=length)
        if variant.has_offset_table:
            rpe_grams[name] = proximity(model, "rpe", length=length)
    probe_table = pd.DataFrame.from_dict(rows, orient="index")[PROBE_COLUMNS].rename_axis("variant")
    gram_table = pd.DataFrame({name: indicators(phi, window=window) for name, phi in ape_grams.items()}).T[INDICATORS]

    trained = [v.name for v in parsed.values() if v.name in runner.profile.variants]
    artifacts = {v: runner.analysis(v) for v in trained}
    analyses = {v: a.payload for v, a in artifacts.items()}
    maps = {v: a.arrays for v, a in artifacts.items()}  # the stored maps: local monotonicity with this window
    result = Properties(probes, ape_grams, rpe_grams, probe_table, gram_table,
                        tables.indicator_table(analyses, "trained", "probe", window=window, maps=maps),
                        tables.indicator_table(analyses, "trained", "ape", window=window, maps=maps), {})
    result.cited = {"seed": seed, "length": length, "n_words": n_words, "window": window, "hidden_size": hidden_size,
                    **_cited(result, parsed, hidden_size, length),
                    "n_trained": len(trained), "trained_steps": runner.profile.pretrain.steps,
                    "trained_init": common.learned_init(runner)}
    return result


def _cited(result: Properties, parsed: dict, hidden_size: int, length: int) -> dict:
    """The indicator values the prose quotes."""
    relative_only = [n for n, v in parsed.items() if v.absolute is None and v.relative]
    absolute_only = [n for n, v in parsed.items() if v.absolute and v.relative is None]
    probe, gram, ti = result.probe_table, result.gram_table, result.probe_table["translation_invariance"]
    cell = tables.cell
    return {
        "none_ti": cell(probe, "none", "translation_invariance"), "alibi_mono": cell(probe, "alibi", "monotonicity"),
        "rel_ti_min": ti[relative_only].min() if relative_only else np.nan,
        "abs_ti_max": ti[absolute_only].max() if absolute_only else np.nan,
        "rpe_learned_sym": cell(probe, "rpe-learned", "symmetry"), "rpe_sin_sym": cell(probe, "rpe-sin", "symmetry"),
        "t5_sym": cell(probe, "t5-bias", "symmetry"),
        "ape_sin_gram_ti": cell(gram, "ape-sin", "translation_invariance"),
        "ape_learned_gram_ti": cell(gram, "ape-learned", "translation_invariance"),
        "random_gram_ti": hidden_size / (length + hidden_size),
        "trained_ape_sin_ti": cell(result.trained_ape, "ape-sin", "translation_invariance"),
        "trained_ape_learned_ti": cell(result.trained_ape, "ape-learned", "translation_invariance"),
        "trained_ape_learned_mono": cell(result.trained_ape, "ape-learned", "monotonicity"),
        "trained_rpe_learned_sym": cell(result.trained_probe, "rpe-learned", "symmetry"),
    }
