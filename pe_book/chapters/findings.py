"""Chapter "Findings" (08): the paper's claims against this run, each with its verdict by the
sound rule of :mod:`pe_book.stats`, and the claims about indicators by rank correlation."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from pe_book import claims, stats, tables
from pe_book.chapters import common
from pe_book.experiments.baselines import LABELS, baseline_payloads
from pe_book.experiments.profiles import GPU, Profile
from pe_lib.data.tasks import get_task
from pe_lib.positions import parse_variant, resolve_variants

VERDICT_LABELS = ("supported", "contradicted", "not decidable", "not tested")


@dataclass
class Findings:
    """What the chapter shows: ``indicators`` (probe indicators of the trained models, per
    variant), ``scores`` (seed means per variant of each group average), their ``correlation``,
    the ``variance`` components, the best variant of each column ``against_baselines``
    (:func:`pe_book.stats.against_baselines`), the ``verdicts`` on the paper's claims with the
    ``details`` of every comparison, what each undecided claim would ``need``, the
    ``indicator_verdicts`` and ``cited``, by glue name."""
    names: list[str]
    groups: dict[str, list[str]]
    indicators: pd.DataFrame
    scores: pd.DataFrame
    correlation: pd.DataFrame
    variance: pd.DataFrame
    against_baselines: pd.DataFrame
    verdicts: pd.DataFrame
    indicator_verdicts: pd.DataFrame
    details: pd.DataFrame
    needs: pd.DataFrame
    cited: dict

    def points(self) -> pd.DataFrame:
        """Indicators and scores per variant (``none`` left out: it has no position to measure),
        with each variant's ``kind``."""
        points = self.indicators.join(self.scores, how="inner").drop(index="none", errors="ignore")
        points["kind"] = [variant_kind(v) for v in points.index]
        return points


def variant_kind(variant: str) -> str:
    """``"absolute"``, ``"relative"``, ``"APE + relative"`` or ``"none"``: where position enters."""
    p = parse_variant(variant)
    if p.absolute and p.relative:
        return "APE + relative"
    return "absolute" if p.absolute else "relative" if p.relative else "none"


def compute(runner, variants: Sequence[str] = (), seeds: Sequence[int] = (), split: str = "test",
            layer: int = 0, alpha: float = 0.05) -> Findings:
    """Verdicts on the paper's claims from the scores of ``variants`` (default: the profile's) on
    ``split`` over fine-tuning ``seeds`` (default: the profile's) and every pretraining seed,
    familywise level ``alpha`` per claim; indicators of the probed ``layer``."""
    common.check_split(split)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    names = resolve_variants(variants, runner.profile.variants)
    specs = {t: get_task(t) for t in runner.profile.tasks}
    kinds = {t: s.meta.kind for t, s in specs.items()}
    span_tasks = [t for t, kind in kinds.items() if kind == "span"]
    groups = {k: v for k, v in {"classification": [t for t, kind in kinds.items() if kind != "span"],
                                "span": span_tasks}.items() if v}
    seed_list = list(seeds or runner.profile.seeds)
    finetuned = common.finetuned_payloads(runner, names, specs, seed_list)
    per_seed = tables.per_seed_scores(tables.score_records(finetuned, kinds, split), groups)
    validation = tables.per_seed_scores(tables.score_records(finetuned, kinds, "validation"), groups)
    floor = tables.per_seed_scores(tables.score_records(baseline_payloads(runner, list(specs)), kinds, split), groups)
    floor = floor.droplevel(["pretrain_seed", "seed"])  # one deterministic run per baseline
    floor = floor.reindex([label for label in LABELS.values() if label in floor.index])
    baselines = {column: float(score) for column, score in floor.loc[LABELS["constant"]].dropna().items()}  # best constant
    scores = tables.summarise(per_seed[list(groups)]).xs("mean", axis=1, level=1)
    analyses = {name: runner.ensure_analysis(name).payload for name in names}
    indicators = tables.indicator_table(analyses, "trained", "probe", layer)
    correlation = claims.correlations(indicators, scores)
    paper = claims.paper_claims(span_tasks=span_tasks, selection=validation)
    details = stats.comparison_table(paper, per_seed, baselines, alpha)
    verdicts = stats.assess_claims(paper, per_seed, baselines, alpha)
    verdicts["effects"] = effects_text(details).reindex(verdicts.index).fillna("no comparison")
    result = Findings(
        names, groups, indicators, scores, correlation,
        stats.variance_table(per_seed, list(groups) + [t for t in span_tasks if t in per_seed.columns]),
        stats.against_baselines(per_seed[list(groups) + list(specs)], validation,
                                {label: row.to_dict() for label, row in floor.iterrows()}, alpha),
        verdicts, claims.assess_indicator_claims(correlation, list(scores.columns), alpha), details,
        needs(verdicts, details), {})
    all_verdicts = list(result.verdicts["verdict"]) + list(result.indicator_verdicts["verdict"])
    result.cited = {
        "n_seeds": len(seed_list), "n_variants": len(names), "split": split, "alpha": alpha,
        "seed_design": common.seed_design(runner.profile.with_overrides(seeds=tuple(seed_list)), names),
        "classification_tasks": ", ".join(groups.get("classification", [])) or "none",
        "span_tasks": ", ".join(span_tasks) or "none",
        **{f"n_{label.replace(' ', '_')}": sum(v.startswith(label) for v in all_verdicts) for label in VERDICT_LABELS},
        "n_claims": len(all_verdicts), "mde_text": _mde_text(verdicts), "needs_text": needs_text(result.needs, GPU),
        **{f"{group}_baselines_text": baselines_text(result.against_baselines, group, alpha) for group in groups}}
    return result


def baselines_text(table: pd.DataFrame, column: str, alpha: float) -> str:
    """One column of :func:`pe_book.stats.against_baselines` in words: the best variant's mean with
    its interval, and each baseline's score with where the variant stands against it."""
    rows = table[table["column"] == column]
    if not len(rows):
        return f"no baseline scores the {column} column"
    first = rows.iloc[0]
    level = f"{100 * (1 - alpha / len(rows)):.1f}%"
    where = {"above": " (the variant is above it)", "below": " (the variant is below it)",
             "not decided": " (within the variant's interval)", "variance unknown": ""}
    against = "; ".join(f"{row['baseline'].removeprefix('baseline: ')} {row['baseline score']:.1f}"
                        f"{where[row['outcome']]}" for _, row in rows.iterrows())
    interval = ("no interval: the pretraining variance is unknown" if math.isnan(first["low"])
                else f"{level} interval {first['low']:.1f} to {first['high']:.1f}")
    return f"{first['best variant']} (chosen on the validation split) scores {first['mean']:.1f} ({interval}); {against}"


def effects_text(details: pd.DataFrame) -> pd.Series:
    """Per claim id, its smallest and largest effect (percentage points, expected higher minus
    expected lower) with their Bonferroni intervals, e.g. ``"-9.3 [-12.0, -6.6] to +1.2 [-1.5, +3.9]"``."""
    def one(row) -> str:
        if math.isnan(row["low"]):
            return f"{row['difference']:+.1f} (no interval)"
        return f"{row['difference']:+.1f} [{row['low']:+.1f}, {row['high']:+.1f}]"

    def claim(rows: pd.DataFrame) -> str:
        ordered = rows.sort_values("difference")
        ends = [ordered.iloc[0]] if len(ordered) == 1 else [ordered.iloc[0], ordered.iloc[-1]]
        return " to ".join(one(row) for row in ends)

    return pd.Series({key: claim(rows) for key, rows in details.groupby("claim id", sort=False)}, dtype=object)


def needs(verdicts: pd.DataFrame, details: pd.DataFrame) -> pd.DataFrame:
    """What each claim not decided would take, one row per claim: the reason, the columns where
    every variant is at chance (more scale, not more seeds), and the pretraining seeds per variant
    that would decide it if the observed differences were true (:func:`pe_book.stats.seeds_needed`)."""
    rows = {}
    for key, row in verdicts[verdicts["verdict"].str.startswith("not decidable")].iterrows():
        comparisons = details[details["claim id"] == key]
        at_chance = sorted(set(comparisons.loc[comparisons["outcome"] == "at chance", "column"]))
        if row["verdict"] == stats.AT_CHANCE:
            what = f"models that learn {', '.join(at_chance)} (more pretraining or fine-tuning data)"
        elif row["verdict"] == stats.VARIANCE_UNKNOWN:
            what = "two pretraining seeds of some variant, to know the pretraining variance"
        elif math.isnan(row["seeds needed"]):
            what = f"more than {stats.MAX_SEEDS} pretraining seeds a variant at this variance, or larger effects"
        else:
            what = f"{row['seeds needed']:.0f} pretraining seeds a variant, if the observed differences are true"
        rows[key] = {"claim": row["claim"], "verdict": row["verdict"], "mean difference": row["mean difference"],
                     "MDE": row["MDE"], "seeds needed": row["seeds needed"],
                     "at chance on": ", ".join(at_chance) or "none", "needs": what}
    columns = ["claim", "verdict", "mean difference", "MDE", "seeds needed", "at chance on", "needs"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis("claim id")


def needs_text(table: pd.DataFrame, gpu: Profile) -> str:
    """:func:`needs` in words, with what ``gpu`` (the paper-scale profile) brings against it."""
    if not len(table):
        return "every claim about scores is decided at this scale"
    chance = int((table["verdict"] == stats.AT_CHANCE).sum())
    unknown = int((table["verdict"] == stats.VARIANCE_UNKNOWN).sum())
    seeds = table["seeds needed"].dropna()
    most = max(len(gpu.pretrain_seeds_for(v)) for v in gpu.variants)
    within = int((seeds <= most).sum())
    tokens = gpu.pretrain.steps * gpu.pretrain.batch_size * gpu.seq_len
    parts = [f"{len(table)} claim(s) about scores are not decided"]
    if chance:
        parts.append(f"{chance} because every variant is at chance on their tasks, which more seeds cannot mend: "
                     f"they need models that learn those tasks, such as the {gpu.name} profile's (hidden size "
                     f"{gpu.model['hidden_size']}, {gpu.model['num_hidden_layers']} layers, {tokens / 1e9:.1f} billion "
                     "tokens a model)")
    if unknown:
        parts.append(f"{unknown} because no variant has two pretraining seeds")
    if len(seeds):
        parts.append(f"{len(seeds)} would be decided with {seeds.min():.0f} to {seeds.max():.0f} pretraining seeds a "
                     f"variant if their observed differences were true; the gpu profile's {most} pretraining seeds "
                     f"would be enough for {within} of them at this run's variance")
    return "; ".join(parts)


def _mde_text(verdicts: pd.DataFrame) -> str:
    """The smallest detectable effects of the undecided claims, now and with twice the seeds."""
    undecided = verdicts["MDE"].dropna()
    if not len(undecided):
        return "not available (no undecided claim with a known variance)"
    doubled = verdicts.loc[undecided.index]
    return (f"from {undecided.min():.1f} to {undecided.max():.1f} points (median {undecided.median():.1f}); "
            f"with twice the pretraining seeds the median would be {doubled['MDE 2x pretraining seeds'].median():.1f}, "
            f"with twice the fine-tuning seeds {doubled['MDE 2x fine-tuning seeds'].median():.1f}")
