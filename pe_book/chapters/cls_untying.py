"""Chapter "The [CLS] hypothesis" (12): does untying [CLS] from positions (TUPE) close the gap
between a relative embedding and fully learnable APE on classification?"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from pe_book import claims, tables
from pe_book.chapters import common
from pe_book.experiments.baselines import best_constant_scores
from pe_lib.positions import resolve_variants

THETA = "theta_2 (words -> [CLS])"


@dataclass
class ClsUntying:
    """What the chapter shows: the untied -> tied ``pairs`` and the ``compared`` variants (the
    reference first), their ``per_seed`` group averages and ``summary``, the ``gaps``
    (:func:`pe_book.claims.cls_gap` per average), the learned ``thetas`` of the untied variants
    and ``cited``, by glue name."""
    reference: str
    pairs: dict[str, str]
    compared: list[str]
    tasks: list[str]
    per_seed: pd.DataFrame
    summary: pd.DataFrame
    gaps: pd.DataFrame
    thetas: pd.DataFrame
    cited: dict


def compute(runner, variants: Sequence[str] = (), reference: str = "ape-learned", tasks: Sequence[str] = (),
            seeds: Sequence[int] = (), split: str = "test") -> ClsUntying:
    """The [CLS] gap on ``split`` for every ``+untie-cls`` variant among ``variants`` (default:
    the profile's) whose tied counterpart is there too, against ``reference``; classification and
    span averages over ``tasks`` (default: the profile's), fine-tuning ``seeds`` (default: the
    profile's) and every pretraining seed."""
    common.check_split(split)
    names = resolve_variants(variants, runner.profile.variants)
    pairs = claims.untying_pairs(names)
    if not pairs:
        raise ValueError(f"no '+untie-cls' variant with its tied counterpart among {names}; "
                         "add e.g. 'rpe-learned' and 'rpe-learned+untie-cls' to variants")
    reference = resolve_variants([reference], [])[0]
    compared = list(dict.fromkeys([reference, *pairs.values(), *pairs]))
    all_tasks = list(tasks or runner.profile.tasks)
    groups = {group: specs for group, span in (("classification", False), ("span", True))
              if (specs := common.chapter_tasks([], all_tasks, span=span))}
    profile = runner.profile.with_seeds(seeds)
    per_seed = pd.concat([_group_scores(runner, compared, group, specs, seeds, split)
                          for group, specs in groups.items()], axis=1)
    baselines = best_constant_scores(runner, [t for specs in groups.values() for t in specs],
                                     {group: list(specs) for group, specs in groups.items()}, split)
    gaps = {group: claims.cls_gap(per_seed, reference, pairs, group, baselines) for group in groups}
    result = ClsUntying(reference, pairs, compared, all_tasks, per_seed, tables.summarise(per_seed).reindex(compared),
                        pd.concat(gaps, names=["average"]), _thetas(runner, pairs), {})
    result.cited = {
        "reference": reference, "n_seeds": common.finetuning_seeds(profile, all_tasks),
        "seed_design": common.seed_design(profile, compared, all_tasks),
        "pairs_text": "; ".join(f"{u} against {t}" for u, t in pairs.items()), **_gap_text(gaps),
        "theta2_mean": float(result.thetas[THETA].mean()),
        "theta2_range": f"{result.thetas[THETA].min():+.3f} to {result.thetas[THETA].max():+.3f}"}
    return result


def _group_scores(runner, names: list[str], group: str, specs: dict, seeds: Sequence[int], split: str) -> pd.DataFrame:
    """Per-seed task scores of one group of tasks and their average, named ``group``."""
    finetuned = common.finetuned_payloads(runner, names, specs, seeds)
    records = tables.score_records(finetuned, {t: s.meta.kind for t, s in specs.items()}, split)
    return tables.per_seed_scores(records, {group: list(specs)})


def _thetas(runner, pairs: dict[str, str]) -> pd.DataFrame:
    """The learned theta_2 (words -> [CLS]) of every untied variant, per layer and head."""
    rows = []
    for untied in pairs:
        theta = runner.ensure_analysis(untied).arrays["trained.untie_theta"].astype(float)  # (L, h)
        rows += [{"variant": untied, "layer": layer, "head": head, THETA: value}
                 for layer, values in enumerate(theta) for head, value in enumerate(values)]
    return pd.DataFrame(rows).set_index(["variant", "layer", "head"])


def _gap_text(gaps: dict[str, pd.DataFrame]) -> dict:
    """The prose's sentences on the classification gap and the span change."""
    classification = gaps["classification"]
    span = ("; ".join(f"{row['untied score'] - row['tied score']:+.1f} points for {u} ({row['untying helps']})"
                      for u, row in gaps["span"].iterrows()) if "span" in gaps else "not run")
    return {"cls_conclusions": "; ".join(f"{u}: {row['conclusion']}" for u, row in classification.iterrows()),
            "cls_gap_before": "; ".join(f"{row['gap before']:+.1f} points for {row['tied']}"
                                        for _, row in classification.iterrows()),
            "cls_gap_after": "; ".join(f"{row['gap after']:+.1f} for {u}" for u, row in classification.iterrows()),
            "span_change": span}
