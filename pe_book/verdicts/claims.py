r"""The paper's claims and the verdicts on them.

Claims about scores are tested by :mod:`pe_book.verdicts.comparisons` (its modules give the rule and why):
each comparison "``better`` scores higher than ``worse`` on ``column``" gets its effect with an
interval from both variance sources (pretraining seeds, fine-tuning seeds nested in them), a
claim's comparisons are corrected for multiplicity (Holm), and an undecided claim reports the
smallest effect its seeds could detect. :func:`paper_claims` states the paper's claims and
:func:`cls_gap` tests the [CLS] hypothesis with the same machinery.

A claim about how an indicator relates to scores is tested by Spearman's rank correlation across
variants (seed means). The indicator claims on all score columns are one family: their p-values
are corrected with Holm's method (six uncorrected tests on the first cpu run gave one
"supported" at p 0.027). A claim is *supported* when the correlation has the claimed sign and its
Holm-adjusted p is below ``alpha`` (0.05), *contradicted* when it has the other sign with an
adjusted ``p < alpha``, else "not decidable: correlation not significant" (or ": too few variants"
below four); on a column that no model has learned (:mod:`pe_book.verdicts.testability`) it is "not
testable at this scale" and leaves the family.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pe_book.experiments.profiles import COMBINATIONS, PAPER_VARIANTS, SINGLE_PES
from pe_book.verdicts.comparisons import compare_family
from pe_book.verdicts.gate import best_on
from pe_book.verdicts.groups import ORDER_SENSITIVE_CLASSIFICATION, SPAN
from pe_book.verdicts.intervals import interval_label
from pe_book.verdicts.mixed_model import variant_means
from pe_book.verdicts.rule import (CONTRADICTED, NOT_TESTABLE, NOT_TESTED, SUPPORTED, UNDECIDED, VARIANCE_UNKNOWN,
                                   Claim, Comparison, holm, not_testable)
from pe_lib.positions import parse_variant

NOT_SIGNIFICANT = "not decidable: correlation not significant"

TOO_FEW = "not decidable: too few variants"


def paper_claims(classification: str = ORDER_SENSITIVE_CLASSIFICATION, span: str = SPAN,
                 span_tasks: Sequence[str] = ("squad", "squad_v2"),
                 selection: pd.DataFrame | None = None) -> list[Claim]:
    """The paper's claims about task scores (PAPER.md), as :class:`Claim` objects on the columns
    ``classification`` and ``span`` (group averages: the paper's GLUE and SQuAD averages, here
    over the tasks whose label depends on word order, so that a task solved without positions
    cannot dilute a difference between position embeddings) and the ``span_tasks``.


    "The best models on each span task use fully learnable RPE" compares, on each span task,
    the best variant with ``rpe-learned`` with every variant without it. The best is chosen on
    ``selection``, per-seed scores of the **validation** split (:func:`~pe_book.verdicts.gate.best_on`),
    and the claim is then tested on the test split: choosing on the tested scores would favour
    the claim. Without ``selection`` (or a score for it) that task's comparisons start from
    ``rpe-learned`` itself."""
    rpe_models = [v for v in SINGLE_PES + COMBINATIONS if parse_variant(v).has_offset_table]
    with_learned_rpe = [v for v in PAPER_VARIANTS if parse_variant(v).relative == "rpe-learned"]
    best_rpe_learned = []
    for task in span_tasks:
        best = (best_on(selection, task, with_learned_rpe) if selection is not None else None) or "rpe-learned"
        best_rpe_learned += [Comparison(best, v, task) for v in PAPER_VARIANTS if v not in with_learned_rpe]
    return [
        Claim("cls-ape-best", "Fully learnable APE is the best single PE on classification (the paper's GLUE average; "
              "here the order-sensitive classification tasks).",
              tuple(Comparison("ape-learned", v, classification) for v in SINGLE_PES if v != "ape-learned"), "all"),
        Claim("cls-combination", "Among APE+RPE combinations, fully learnable APE + learnable sinusoidal RPE is "
              "relatively better on classification.",
              tuple(Comparison("ape-learned+rpe-sin-learned", v, classification)
                    for v in COMBINATIONS if v != "ape-learned+rpe-sin-learned"), "most"),
        Claim("cls-combining-not-always", "Combining APE and RPE does not always help classification "
              "(some combination scores below its APE alone).",
              tuple(Comparison(parse_variant(v).absolute, v, classification) for v in COMBINATIONS), "any"),
        Claim("span-rpe-beats-ape", "On span prediction (the paper's SQuAD average; here the span tasks' average), almost "
              "every model with an RPE beats fully learnable APE.",
              tuple(Comparison(v, "ape-learned", span) for v in rpe_models), "most"),
        Claim("span-best-learned-rpe", "The best models on each span task (each SQuAD version in the paper) use fully "
              "learnable RPE (best chosen on the validation split).",
              tuple(best_rpe_learned), "all"),
        Claim("span-none-drops", "Span prediction drops sharply without any PE (every PE beats none).",
              tuple(Comparison(v, "none", span) for v in SINGLE_PES + COMBINATIONS), "all"),
        Claim("learnable-sin-beats-fixed", "Learnable sinusoidal PEs beat fixed ones (APE and RPE, "
              "classification and span averages).",
              tuple(Comparison(f"{kind}-sin-learned", f"{kind}-sin", column)
                    for kind in ("ape", "rpe") for column in (classification, span)), "most"),
    ]


def untying_pairs(variants: Sequence[str]) -> dict[str, str]:
    """``untied variant -> its tied counterpart`` for every ``+untie-cls`` variant among
    ``variants`` whose counterpart is there too."""
    pairs = {}
    for name in variants:
        v = parse_variant(name)
        tied = type(v)(v.absolute, v.relative).name
        if v.untie_cls and tied in variants:
            pairs[name] = tied
    return pairs


def _gap_conclusion(gap: float, helps: str, remains: str) -> str:
    """What untying did to the gap ``reference - tied``, from the two verdicts."""
    if helps.startswith(NOT_TESTABLE):
        return helps  # no model learned the column: there is no gap to read
    if not gap > 0:
        return "no gap to close (the tied RPE is not behind)"
    if helps == SUPPORTED:
        return {SUPPORTED: "narrows the gap", CONTRADICTED: "reverses the gap"}.get(
            remains, "closes the gap (no remaining gap detected)")
    if helps == CONTRADICTED:
        return "widens the gap"
    return helps  # not decidable, and why


def _one_verdict(row: pd.Series) -> str:
    """The verdict of one comparison of a :func:`compare_family` table."""
    if row["gate"]:
        return not_testable([row["gate"]])
    if row["outcome"]:
        return SUPPORTED if row["outcome"] > 0 else CONTRADICTED
    return VARIANCE_UNKNOWN if row["variance"] == "pretraining variance unknown" else UNDECIDED


def cls_gap(per_seed: pd.DataFrame, reference: str, pairs: Mapping[str, str], column: str,
            untestable: Mapping[str, str] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Does untying [CLS] close the gap between an RPE and the ``reference`` (fully learnable APE)
    on ``column``? One row per ``untied -> tied`` pair: the three variant means, the gap before
    (``reference - tied``) and after (``reference - untied``), the share of the gap closed
    ``(untied - tied) / (reference - tied)`` (NaN when there is no gap), the gain of untying with
    its interval and the interval's level (``gain level``, :func:`~pe_book.verdicts.intervals.interval_label`),
    and the verdicts of "untied beats tied" and "the reference still beats untied":
    the two comparisons of a pair are one family of :func:`~pe_book.verdicts.comparisons.compare_family`
    (Holm over the two, Bonferroni intervals). ``untestable``: column -> why no model learned it
    (:func:`pe_book.verdicts.testability.untestable`); there both verdicts are "not testable"."""
    means = variant_means(per_seed[[column]])[column]
    untestable = untestable or {}

    def mean(variant: str) -> float:
        return float(means.get(variant, math.nan))

    rows = {}
    for untied, tied in pairs.items():
        family = compare_family((Comparison(untied, tied, column), Comparison(reference, untied, column)),
                                per_seed, untestable, alpha)
        found = {(r.better, r.worse): r for _, r in family.iterrows()}
        helps_row, remains_row = found.get((untied, tied)), found.get((reference, untied))
        helps = _one_verdict(helps_row) if helps_row is not None else NOT_TESTED
        remains = _one_verdict(remains_row) if remains_row is not None else NOT_TESTED
        gap = mean(reference) - mean(tied)
        rows[untied] = {"tied": tied, reference: mean(reference), "tied score": mean(tied),
                        "untied score": mean(untied), "gap before": gap, "gap after": mean(reference) - mean(untied),
                        "share closed": (mean(untied) - mean(tied)) / gap if gap > 0 else math.nan,
                        "gain": mean(untied) - mean(tied),
                        "gain low": helps_row["low"] if helps_row is not None else math.nan,
                        "gain high": helps_row["high"] if helps_row is not None else math.nan,
                        "gain level": interval_label(helps_row["level"], helps_row["over"], what="comparisons")
                        if helps_row is not None and not math.isnan(helps_row["low"]) else "no interval",
                        "untying helps": helps, "reference still ahead": remains,
                        "conclusion": _gap_conclusion(gap, helps, remains)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("untied variant")


def correlations(indicators: pd.DataFrame, scores: pd.Series | pd.DataFrame,
                 exclude: Sequence[str] = ("none",)) -> pd.DataFrame:
    """Spearman correlation across variants between each indicator (columns of ``indicators``)
    and each score column (seed means, rows: variants), variants in ``exclude`` and NaNs left
    out. Rows ``(indicator, score)``; columns ``rho``, ``p``, ``n``."""
    from scipy.stats import spearmanr

    scores = scores.to_frame() if isinstance(scores, pd.Series) else scores
    rows = []
    for indicator in indicators.columns:
        for score in scores.columns:
            joined = pd.concat([indicators[indicator], scores[score]], axis=1, join="inner").dropna()
            joined = joined[~joined.index.isin(exclude)]
            n = len(joined)
            if n >= 3 and joined.iloc[:, 0].nunique() > 1 and joined.iloc[:, 1].nunique() > 1:
                rho, p = spearmanr(joined.iloc[:, 0], joined.iloc[:, 1])
            else:
                rho, p = math.nan, math.nan
            rows.append({"indicator": indicator, "score": score, "rho": float(rho), "p": float(p), "n": n})
    return pd.DataFrame(rows).set_index(["indicator", "score"])


def correlation_verdict(rho: float, p: float, n: int, expected_sign: int, alpha: float = 0.05) -> str:
    """Verdict on "the score rises (``expected_sign=+1``) / falls (``-1``) with the indicator";
    ``p``: the (Holm-adjusted) p-value of the correlation."""
    if n < 4 or pd.isna(rho) or pd.isna(p):
        return TOO_FEW
    if p >= alpha:
        return NOT_SIGNIFICANT
    return SUPPORTED if np.sign(rho) == np.sign(expected_sign) else CONTRADICTED


#: The paper's claims about indicators and scores: (key, claim, indicator, expected sign).
INDICATOR_CLAIMS = (
    ("ti-helps", "Translation invariance helps", "translation_invariance", +1),
    ("local-mono-helps", "Local monotonicity helps", "monotonicity_local", +1),
    ("symmetry-hurts", "Symmetry slightly hurts", "symmetry", -1),
)


def assess_indicator_claims(table: pd.DataFrame, scores: Sequence[str], alpha: float = 0.05,
                            untestable: Mapping[str, str] | None = None) -> pd.DataFrame:
    """:data:`INDICATOR_CLAIMS` for each score column, from a :func:`correlations` table: one
    family, Holm's adjusted p over the claims on testable columns (``untestable``: column -> why
    not; those claims are "not testable at this scale")."""
    untestable = untestable or {}
    rows = []
    for key, text, indicator, sign in INDICATOR_CLAIMS:
        for score in scores:
            if (indicator, score) not in table.index:
                continue
            rho, p, n = table.loc[(indicator, score), ["rho", "p", "n"]]
            rows.append({"claim id": f"{key}-{score}", "claim": f"{text} ({score}).", "indicator": indicator,
                         "score": score, "rho": rho, "p": p, "n": int(n), "sign": sign})
    columns = ["claim", "indicator", "score", "rho", "p", "p (Holm)", "n", "verdict"]
    if not rows:
        return pd.DataFrame(columns=columns)
    found = pd.DataFrame(rows).set_index("claim id")
    testable = ~found["score"].isin(list(untestable)).to_numpy()
    adjusted = np.full(len(found), np.nan)
    adjusted[testable] = holm(found["p"].to_numpy(dtype=float)[testable])
    found["p (Holm)"] = adjusted
    found["verdict"] = [correlation_verdict(rho, p, n, sign, alpha) if ok else not_testable([untestable[score]])
                        for rho, p, n, sign, ok, score in zip(found["rho"], adjusted, found["n"], found["sign"],
                                                             testable, found["score"])]
    return found[columns]
