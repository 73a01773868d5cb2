r"""The verdicts on claims about scores: each claim's family of comparisons tested (effects,
Bonferroni intervals, Holm's p, outcomes, smallest detectable effects) and its verdict.

The rule and why: the mixed model and its t test (:mod:`pe_book.verdicts.mixed_model`), the
multiplicity correction and the quantifiers (:mod:`pe_book.verdicts.rule`), what the seeds can
detect (:mod:`pe_book.verdicts.power`), the gate of the columns the models learned
(:mod:`pe_book.verdicts.gate`, :mod:`pe_book.verdicts.testability`) and the intervals' levels
(:mod:`pe_book.verdicts.intervals`).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from pe_book.verdicts.intervals import interval_halfwidth
from pe_book.verdicts.mixed_model import ALPHA, ColumnStats, column_stats, difference_tests
from pe_book.verdicts.power import POWER, claim_seeds_needed, mde_projections, seeds_needed
from pe_book.verdicts.rule import UNDECIDED, Claim, Comparison, claim_verdict, holm, outcomes

def _variance_note(column: ColumnStats, better: str, worse: str) -> str:
    c = column.components
    if not c.df_tau > 0:
        return "pretraining variance unknown"
    pooled = len(column.pooled_from)
    note = f"pooled over {pooled} variant{'' if pooled == 1 else 's'}, df {int(c.df_tau)}"
    if float(c.pretrain) == 0.0:
        note += "; tau2 at its floor (fine-tuning part)"
    if bool(c.unequal_ft):
        note += f"; own fine-tuning variances (Bartlett p {float(c.equal_ft_p):.2g})"
    borrowed = [v for v in (better, worse) if c.n_pre[column.index(v)] < 2]
    return note + (f"; one pretraining seed (borrowed): {', '.join(borrowed)}" if borrowed else "")


def compare_family(comparisons: Sequence[Comparison], per_seed: pd.DataFrame,
                   untestable: Mapping[str, str] | None = None, alpha: float = ALPHA,
                   power: float = POWER) -> pd.DataFrame:
    """Test a family of comparisons (a claim's): one row per comparison whose variants and column
    are present, with the effect, its Bonferroni interval, p, Holm's p, the outcome, the MDE (80%
    power at the Bonferroni level) and its projections with 2x fine-tuning / pretraining seeds,
    and the intervals' ``level`` (``1 - alpha / K``) with the ``K`` it is corrected ``over``.

    ``untestable``: column -> why it is not testable (:func:`~pe_book.verdicts.gate.learned`). A comparison on such a
    column keeps its effect and interval but enters no decision: it is left out of the family
    (Holm's ``K`` and the Bonferroni level count only the testable comparisons) and its
    ``gate`` says why."""
    untestable = untestable or {}
    columns: dict[str, ColumnStats] = {}
    rows, pairs = [], []
    for comp in comparisons:
        if comp.column not in per_seed.columns:
            continue
        if comp.column not in columns:
            columns[comp.column] = column_stats(per_seed, comp.column, alpha)
        col = columns[comp.column]
        if comp.better not in col.variants or comp.worse not in col.variants:
            continue
        pair = (col.index(comp.better), col.index(comp.worse))
        test = {k: float(v[0]) for k, v in difference_tests(col.components, [pair[0]], [pair[1]]).items()}
        rows.append({"comparison": comp, "better": comp.better, "worse": comp.worse, "column": comp.column,
                     **test, "gate": untestable.get(comp.column, ""),
                     "variance": _variance_note(col, comp.better, comp.worse)})
        pairs.append((col.components, pair))
    table = pd.DataFrame(rows, columns=["comparison", "better", "worse", "column", "difference", "se", "df", "t", "p",
                                        "gate", "variance"])
    if not len(table):
        return _finish(table)
    testable = (table["gate"] == "").to_numpy()
    k = max(int(testable.sum()), 1)
    adjusted = np.full(len(table), np.nan)
    adjusted[testable] = holm(table["p"].to_numpy(dtype=float)[testable])
    table["p (Holm)"] = adjusted
    half = interval_halfwidth(table["se"].to_numpy(dtype=float), table["df"].to_numpy(dtype=float), alpha / k)
    table["low"], table["high"] = table["difference"] - half, table["difference"] + half
    table["level"], table["over"] = 1 - alpha / k, k  # every interval of the family: Bonferroni over K
    table["outcome"] = outcomes(table["difference"].to_numpy(dtype=float), adjusted, alpha)
    projections = [mde_projections(c, pair, alpha / k, power) if ok else (math.nan,) * 3
                   for (c, pair), ok in zip(pairs, testable)]
    table["MDE"], table["MDE 2x fine-tuning seeds"], table["MDE 2x pretraining seeds"] = map(list, zip(*projections))
    table["seeds needed"] = [seeds_needed(c, pair, d, alpha / k, power) if ok else math.nan
                             for (c, pair), d, ok in zip(pairs, table["difference"], testable)]
    return _finish(table)


def _finish(table: pd.DataFrame) -> pd.DataFrame:
    for name in ("p (Holm)", "low", "high", "level", "over", "MDE", "MDE 2x fine-tuning seeds",
                 "MDE 2x pretraining seeds", "seeds needed"):
        if name not in table:
            table[name] = pd.Series(dtype=float)
    if "outcome" not in table:
        table["outcome"] = pd.Series(dtype=int)
    return table.drop(columns=["t"])


def assess(claim: Claim, per_seed: pd.DataFrame, untestable: Mapping[str, str] | None = None,
           alpha: float = ALPHA, power: float = POWER) -> dict:
    """Test one claim on per-seed scores (index :data:`~pe_book.verdicts.mixed_model.LEVELS`): the
    verdict, counts, the mean effect, the claim's MDE (largest over its testable comparisons) and
    its projections, the columns it is ``not testable on`` and the comparison rows (``details``).
    Comparisons whose variants or column are absent are skipped."""
    details = compare_family(claim.comparisons, per_seed, untestable, alpha, power)
    verdict = claim_verdict(claim, details)
    undecided = verdict.startswith("not decidable")

    def largest(name):
        values = details[name].dropna()
        return float(values.max()) if undecided and len(values) else math.nan

    return {
        "claim": claim.text, "quantifier": claim.quantifier, "comparisons": len(details),
        "in claimed direction": int((details["difference"] > 0).sum()),
        "decided as claimed": int((details["outcome"] == 1).sum()),
        "decided against": int((details["outcome"] == -1).sum()),
        "mean difference": float(details["difference"].mean()) if len(details) else math.nan,
        "verdict": verdict, "not testable on": "; ".join(dict.fromkeys(g for g in details["gate"] if g)),
        "MDE": largest("MDE"), "MDE 2x fine-tuning seeds": largest("MDE 2x fine-tuning seeds"),
        "MDE 2x pretraining seeds": largest("MDE 2x pretraining seeds"),
        "seeds needed": claim_seeds_needed(details["seeds needed"], details["difference"], claim.quantifier)
        if verdict == UNDECIDED else math.nan, "details": details,
    }


def assess_claims(claims: Iterable[Claim], per_seed: pd.DataFrame, untestable: Mapping[str, str] | None = None,
                  alpha: float = ALPHA) -> pd.DataFrame:
    """:func:`assess` for each claim, one row per claim (index: the claim's key)."""
    rows = {claim.key: assess(claim, per_seed, untestable, alpha) for claim in claims}
    return pd.DataFrame.from_dict(rows, orient="index").drop(columns="details").rename_axis("claim id")


def comparison_table(claims: Iterable[Claim], per_seed: pd.DataFrame, untestable: Mapping[str, str] | None = None,
                     alpha: float = ALPHA) -> pd.DataFrame:
    """Every comparison of every claim: the effect, its Bonferroni interval with its ``level`` and
    the number of comparisons it is corrected ``over``, p, Holm's p, the outcome in words, the MDE
    and where the variance came from."""
    words = {1: "as claimed", -1: "against", 0: "not decided"}
    parts = []
    for claim in claims:
        details = assess(claim, per_seed, untestable, alpha)["details"]
        outcome = [("not testable" if gate else words[o]) for o, gate in zip(details["outcome"], details["gate"])]
        parts.append(pd.DataFrame({
            "claim id": claim.key, "expected higher": details["better"], "expected lower": details["worse"],
            "column": details["column"], "difference": details["difference"], "low": details["low"],
            "high": details["high"], "level": details["level"], "over": details["over"], "p": details["p"],
            "p (Holm)": details["p (Holm)"], "outcome": outcome, "MDE": details["MDE"], "variance": details["variance"]}))
    columns = ["claim id", "expected higher", "expected lower", "column", "difference", "low", "high", "level", "over",
               "p", "p (Holm)", "outcome", "MDE", "variance"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)
