"""The verdicts on the paper's claims about scores of a run, as the intro and the findings chapter
(08) show them: the scores read from the runner, the gate of the columns the models learned
(:mod:`pe_book.verdicts.testability`), each claim tested (:mod:`pe_book.verdicts.comparisons`) with
its effects in words, and the narrow table a reader meets first. Shared by chapters; no chapter of
its own."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from pe_book import tables
from pe_book.chapters import common
from pe_book.experiments.baselines import stored_baselines
from pe_book.experiments.profiles import Profile
from pe_book.verdicts import claims, comparisons, intervals, testability
from pe_book.verdicts.groups import score_groups
from pe_book.verdicts.rule import Claim
from pe_lib.data.tasks import get_task
from pe_lib.positions import resolve_variants

#: The narrow verdict table that the intro and the findings chapter open with: verdicts' column -> heading.
NARROW_COLUMNS = {"claim": "the paper's claim", "verdict": "verdict at this scale",
                  "effects": "effect (points) [interval]"}


@dataclass(frozen=True)
class PaperVerdicts:
    """The verdicts of a run on the paper's claims about scores, with what they rest on: the
    variants (``names``), the tasks (``specs``: task -> ``TaskSpec``) and their score ``groups``,
    the ``profile`` (the runner's with the chapter's fine-tuning seeds), the ``finetuned`` payloads,
    the per-seed scores of the tested split (``per_seed``) and of the ``validation`` split, every
    task's stored ``baselines`` payload, which columns are ``testable`` (and why the others are
    not: ``untestable``), the ``claims``, the ``details`` of every comparison and the ``verdicts``
    (one row per claim, with its ``effects`` in words)."""
    names: list[str]
    specs: dict
    groups: dict[str, list[str]]
    profile: Profile
    finetuned: dict
    per_seed: pd.DataFrame
    validation: pd.DataFrame
    baselines: dict[str, dict]
    testable: pd.DataFrame
    untestable: dict[str, str]
    claims: list[Claim]
    details: pd.DataFrame
    verdicts: pd.DataFrame

    @property
    def kinds(self) -> dict[str, str]:
        """Each task's kind (``"classification"`` or ``"span"``)."""
        return {t: s.meta.kind for t, s in self.specs.items()}

    @property
    def span_tasks(self) -> list[str]:
        """The span tasks, in the order of the profile's tasks."""
        return [t for t, kind in self.kinds.items() if kind == "span"]


def paper_verdicts(runner, variants: Sequence[str] = (), seeds: Sequence[int] = (), split: str = "test",
                   alpha: float = 0.05) -> PaperVerdicts:
    """:class:`PaperVerdicts` of ``runner``'s profile from the scores of ``variants`` (default: the
    profile's) on ``split`` over fine-tuning ``seeds`` (default: the profile's) and every
    pretraining seed, familywise level ``alpha`` per claim, on the columns the models learned
    (as stored)."""
    names = resolve_variants(variants, runner.profile.variants)
    specs = {t: get_task(t) for t in runner.profile.tasks}
    kinds = {t: s.meta.kind for t, s in specs.items()}
    groups = score_groups(specs)
    finetuned = common.finetuned_payloads(runner, names, specs, seeds)
    per_seed = tables.per_seed_scores(tables.score_records(finetuned, kinds, split), groups)
    validation = tables.per_seed_scores(tables.score_records(finetuned, kinds, "validation"), groups)
    stored = stored_baselines(runner, specs)
    testable = testability.gate(stored, per_seed, validation, specs, groups, split, alpha)
    untestable = testability.untestable(testable)
    span_tasks = [t for t, kind in kinds.items() if kind == "span"]
    paper = claims.paper_claims(span_tasks=span_tasks, selection=validation)
    details = comparisons.comparison_table(paper, per_seed, untestable, alpha)
    verdicts = comparisons.assess_claims(paper, per_seed, untestable, alpha)
    verdicts["effects"] = effects_text(details).reindex(verdicts.index).fillna("no comparison")
    return PaperVerdicts(names=names, specs=specs, groups=groups, profile=runner.profile.with_seeds(seeds),
                         finetuned=finetuned, per_seed=per_seed, validation=validation, baselines=stored,
                         testable=testable, untestable=untestable, claims=paper, details=details, verdicts=verdicts)


def verdict_text(verdict: str, not_testable_on: str = "") -> str:
    """A verdict, with the columns it could not be tested on when it rests on the others."""
    if not not_testable_on or verdict.startswith("not testable"):
        return verdict
    return f"{verdict} (not testable on {not_testable_on})"


def narrow_verdicts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The claims' ``verdicts`` (:attr:`PaperVerdicts.verdicts`) as the narrow table a reader meets
    first: one row per claim, :data:`NARROW_COLUMNS`, each verdict naming the columns it could not
    be tested on."""
    table = verdicts.copy()
    if "not testable on" in table.columns:
        table["verdict"] = [verdict_text(v, on if isinstance(on, str) else "")
                            for v, on in zip(table["verdict"], table["not testable on"])]
    return table[list(NARROW_COLUMNS)].rename(columns=NARROW_COLUMNS).reset_index(drop=True)


def effects_text(details: pd.DataFrame) -> pd.Series:
    """Per claim id, its smallest and largest effect (percentage points, expected higher minus
    expected lower) with their Bonferroni intervals and the intervals' level (``level``, ``over``
    of :func:`pe_book.verdicts.comparisons.comparison_table`), e.g. ``"-9.3 [-12.0, -6.6] to +1.2 [-1.5, +3.9];
    98.8% intervals (Bonferroni over 4 comparisons)"``."""
    def one(row) -> str:
        if math.isnan(row["low"]):
            return f"{row['difference']:+.1f} (no interval)"
        return f"{row['difference']:+.1f} [{row['low']:+.1f}, {row['high']:+.1f}]"

    def claim(rows: pd.DataFrame) -> str:
        ordered = rows.sort_values("difference")
        ends = [ordered.iloc[0]] if len(ordered) == 1 else [ordered.iloc[0], ordered.iloc[-1]]
        shown = [row for row in ends if not math.isnan(row["low"])]
        level = (f"; {intervals.interval_label(shown[0]['level'], shown[0]['over'], len(shown) > 1, 'comparisons')}"
                 if shown else "")
        return " to ".join(one(row) for row in ends) + level

    return pd.Series({key: claim(rows) for key, rows in details.groupby("claim id", sort=False)}, dtype=object)
