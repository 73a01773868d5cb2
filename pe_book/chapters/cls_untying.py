"""Chapter "The [CLS] hypothesis" (12): does untying [CLS] from positions (TUPE) close the gap
between a relative embedding and fully learnable APE on classification?"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from pe_book import tables
from pe_book.chapters import common
from pe_book.experiments.baselines import stored_baselines
from pe_book.verdicts import claims, rule, testability
from pe_book.verdicts.groups import SPAN, score_groups
from pe_lib.data.tasks import get_task
from pe_lib.positions import resolve_variants

THETA = "theta_2 (words -> [CLS])"


@dataclass
class ClsUntying:
    """What the chapter shows: the untied -> tied ``pairs`` and the ``compared`` variants (the
    reference first), the score ``groups`` (:func:`pe_book.verdicts.groups.score_groups`), the
    ``per_seed`` scores of every variant read (tasks and groups) and the ``summary`` of the
    compared ones, which columns are ``testable`` (:mod:`pe_book.verdicts.testability`), the ``gaps``
    (:func:`pe_book.verdicts.claims.cls_gap` per group), the learned ``thetas`` of the untied variants and
    ``cited``, by glue name."""
    reference: str
    pairs: dict[str, str]
    compared: list[str]
    tasks: list[str]
    groups: dict[str, list[str]]
    per_seed: pd.DataFrame
    summary: pd.DataFrame
    testable: pd.DataFrame
    gaps: pd.DataFrame
    thetas: pd.DataFrame
    cited: dict


def compute(runner, variants: Sequence[str] = (), reference: str = "ape-learned", tasks: Sequence[str] = (),
            seeds: Sequence[int] = (), split: str = "test") -> ClsUntying:
    """The [CLS] gap on ``split`` for every ``+untie-cls`` variant among ``variants`` (default:
    the profile's) whose tied counterpart is there too, against ``reference``, on each score
    group of ``tasks`` (default: the profile's), over fine-tuning ``seeds`` (default: the
    profile's) and every pretraining seed. The gate (which groups the models learned) and the
    variance are those of the findings chapter: from every variant of ``variants``."""
    common.check_split(split)
    names = resolve_variants(variants, runner.profile.variants)
    pairs = claims.untying_pairs(names)
    if not pairs:
        raise ValueError(f"no '+untie-cls' variant with its tied counterpart among {names}; "
                         "add e.g. 'rpe-learned' and 'rpe-learned+untie-cls' to variants")
    reference = resolve_variants([reference], [])[0]
    compared = list(dict.fromkeys([reference, *pairs.values(), *pairs]))
    specs = {t: get_task(t) for t in (tasks or runner.profile.tasks)}
    groups = score_groups(specs)
    profile = runner.profile.with_seeds(seeds)
    read = list(dict.fromkeys([*names, *compared]))
    finetuned = common.finetuned_payloads(runner, read, specs, seeds)
    per_seed, validation = (_scores(finetuned, specs, groups, s) for s in (split, "validation"))
    testable = testability.gate(stored_baselines(runner, specs), per_seed, validation, specs, groups, split)
    gaps = {group: claims.cls_gap(per_seed, reference, pairs, group, testability.untestable(testable))
            for group in groups}
    result = ClsUntying(reference, pairs, compared, list(specs), groups, per_seed,
                        tables.summarise(per_seed[list(groups)]).reindex(compared), testable,
                        pd.concat(gaps, names=["average"]), _thetas(runner, pairs), {})
    result.cited = {
        "reference": reference, "n_seeds": common.finetuning_seeds(profile, list(specs)),
        "seed_design": common.seed_design(profile, compared, list(specs)),
        "pairs_text": "; ".join(f"{u} against {t}" for u, t in pairs.items()), **_gap_text(gaps),
        "groups_text": "; ".join(f"{group}: {', '.join(members)}" for group, members in groups.items()),
        "testable_text": testability.testable_text(testable.loc[[g for g in groups if g in testable.index]]),
        "theta2_mean": float(result.thetas[THETA].mean()),
        "theta2_range": f"{result.thetas[THETA].min():+.3f} to {result.thetas[THETA].max():+.3f}"}
    return result


def _scores(finetuned: dict, specs: dict, groups: dict, split: str) -> pd.DataFrame:
    """Per-seed task scores of the ``finetuned`` payloads on ``split`` and the averages of ``groups``."""
    records = tables.score_records(finetuned, {t: s.meta.kind for t, s in specs.items()}, split)
    return tables.per_seed_scores(records, groups)


def _thetas(runner, pairs: dict[str, str]) -> pd.DataFrame:
    """The learned theta_2 (words -> [CLS]) of every untied variant, per layer and head."""
    rows = []
    for untied in pairs:
        theta = runner.analysis(untied).arrays["trained.untie_theta"].astype(float)  # (L, h)
        rows += [{"variant": untied, "layer": layer, "head": head, THETA: value}
                 for layer, values in enumerate(theta) for head, value in enumerate(values)]
    return pd.DataFrame(rows).set_index(["variant", "layer", "head"])


def verdicts_shown(gaps: pd.DataFrame) -> pd.DataFrame:
    """The ``gaps`` table with each "not testable at this scale: <why>" cell cut to its verdict
    (the chapter states why once, above the table)."""
    return gaps.map(lambda v: rule.NOT_TESTABLE if isinstance(v, str) and v.startswith(rule.NOT_TESTABLE) else v)


def _gap_text(gaps: dict[str, pd.DataFrame]) -> dict:
    """The prose's sentences on the classification gaps (per classification group) and the span
    change; a column no model learned is named once with its verdict."""
    classification = {group: rows for group, rows in gaps.items() if group != SPAN}

    def untested(rows: pd.DataFrame) -> str | None:
        verdict = rows["untying helps"].iloc[0] if len(rows) else ""
        return verdict if verdict.startswith(rule.NOT_TESTABLE) else None

    def each(text, verdicts: bool = False) -> str:
        parts = []
        for group, rows in classification.items():
            if verdicts and untested(rows):
                parts.append(f"on {group}, {untested(rows)}")
            else:
                parts.append(f"on {group}, {', '.join(text(u, row) for u, row in rows.iterrows())}")
        return "; ".join(parts) or "not run"

    span = "not run"
    if SPAN in gaps:
        rows = gaps[SPAN]
        changes = [f"{row['untied score'] - row['tied score']:+.1f} points for {u}" for u, row in rows.iterrows()]
        span = (f"{', '.join(changes)} ({untested(rows)})" if untested(rows) else
                "; ".join(f"{c} ({row['untying helps']})" for c, (_, row) in zip(changes, rows.iterrows())))
    return {"cls_conclusions": each(lambda u, row: f"{u}: {row['conclusion']}", verdicts=True),
            "cls_gap_before": each(lambda u, row: f"{row['gap before']:+.1f} points for {row['tied']}"),
            "cls_gap_after": each(lambda u, row: f"{row['gap after']:+.1f} for {u}"),
            "span_change": span}
