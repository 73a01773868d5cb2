"""Chapter "Findings" (08): the paper's claims against this run, each with its verdict by the
sound rule of :mod:`pe_book.verdicts`, and the claims about indicators by rank correlation."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from pe_book import design, plateau, tables
from pe_book.chapters import common
from pe_book.chapters.escapes import Escapes, escape_cited, escapes_of, validation_curves
from pe_book.chapters.paper_verdicts import PaperVerdicts, paper_verdicts
from pe_book.chapters.run_scale import scale_text
from pe_book.experiments.baselines import LABELS, baseline_payloads, reads_order
from pe_book.experiments.profiles import GPU, Profile
from pe_book.verdicts import claims, gate, intervals, mixed_model, power, rule, testability
from pe_book.verdicts.groups import score_ranges, task_and_group_columns
from pe_lib.positions import parse_variant

VERDICT_LABELS = ("supported", "contradicted", "not decidable", "not testable", "not tested")
#: Simulated runs per claim and case for the rule's false-verdict rate and power (seeded; a rate
#: near 5% has a standard error of 0.35 points; under a second on the cpu run), and the planted effects (points).
SIMULATED_RUNS = 4000
PLANTED = (2.0, 5.0)


@dataclass
class Findings:
    """What the chapter shows: ``indicators`` (probe indicators of the trained models, per
    variant), ``scores`` (seed means per variant of each score column: the order-sensitive and
    order-free groups of :func:`pe_book.verdicts.groups.score_groups`), their ``correlation``, the
    ``variance`` components, which columns are ``testable`` (the best variant against every
    order-free baseline and, on tasks that need word order, ``none``, the rules that read word
    order beside them as references: :func:`pe_book.verdicts.testability.testability`), the best variant
    of each column ``against_baselines`` (every distinct baseline, those that read word order
    marked as references: :func:`pe_book.verdicts.gate.against_baselines`), the ``verdicts`` on the
    paper's claims with the ``details`` of every comparison, what each claim not decided would
    ``need``, the rule's ``operating`` characteristics per claim
    (:func:`pe_book.verdicts.power.operating_characteristics`), the ``indicator_verdicts`` and ``cited``,
    by glue name."""
    names: list[str]
    groups: dict[str, list[str]]
    indicators: pd.DataFrame
    scores: pd.DataFrame
    correlation: pd.DataFrame
    variance: pd.DataFrame
    testable: pd.DataFrame
    against_baselines: pd.DataFrame
    verdicts: pd.DataFrame
    indicator_verdicts: pd.DataFrame
    details: pd.DataFrame
    needs: pd.DataFrame
    operating: pd.DataFrame
    cited: dict
    #: When each pretraining left none's plateau, and the APE models' escape steps beside their scores.
    plateau: PlateauRelation
    #: Per column, the seed-index variance component and what pairing by seed index saves (:func:`pe_book.design.pairing`).
    pairing: pd.DataFrame

    def points(self) -> pd.DataFrame:
        """Indicators and scores per variant (``none`` left out: it has no position to measure),
        with each variant's ``kind``."""
        points = self.indicators.join(self.scores, how="inner").drop(index="none", errors="ignore")
        points["kind"] = [variant_kind(v) for v in points.index]
        return points


#: How each variance component is shown (:func:`mixed_model.variance_table`'s columns, in its order).
VARIANCE_FORMATS = {"between": "{:.2f}", "df": "{:d}", "floor": "{:.2f}", "tau2": "{:.2f}", "fine-tuning": "{:.2f}",
                    "pretraining": "{:.2f}", "sd of one run": "{:.2f}", "equal fine-tuning (Bartlett p)": "{:.3f}"}


def variance_shown(variance: pd.DataFrame) -> pd.DataFrame:
    """:attr:`Findings.variance` as the book shows it: one column per score column and one row per
    component (a table as narrow as the columns are few), numbers as text, "unknown" for NaN."""
    def cell(component: str, value) -> str:
        if component not in VARIANCE_FORMATS:
            return str(value)
        if isinstance(value, float) and math.isnan(value):
            return "unknown"
        return VARIANCE_FORMATS[component].format(int(value) if component == "df" else value)

    shown = {column: {k: cell(k, v) for k, v in row.items()} for column, row in variance.iterrows()}
    return pd.DataFrame(shown).rename_axis("component").rename_axis(variance.index.name, axis="columns")


def variant_kind(variant: str) -> str:
    """``"absolute"``, ``"relative"``, ``"APE + relative"`` or ``"none"``: where position enters."""
    p = parse_variant(variant)
    if p.absolute and p.relative:
        return "APE + relative"
    return "absolute" if p.absolute else "relative" if p.relative else "none"


def compute(runner, variants: Sequence[str] = (), seeds: Sequence[int] = (), split: str = "test",
            layer: int = 0, alpha: float = 0.05, runs: int = SIMULATED_RUNS) -> Findings:
    """Verdicts on the paper's claims from the scores of ``variants`` (default: the profile's) on
    ``split`` over fine-tuning ``seeds`` (default: the profile's) and every pretraining seed,
    familywise level ``alpha`` per claim, on the columns the models learned
    (:func:`pe_book.chapters.paper_verdicts.paper_verdicts`); indicators of the probed ``layer``;
    the rule's false-verdict rate and power over ``runs`` simulated runs."""
    common.check_split(split)
    common.check_layer(runner.profile, layer)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    run = paper_verdicts(runner, variants, seeds, split, alpha)
    per_seed, groups, specs = run.per_seed, run.groups, run.specs
    baseline_runs = baseline_payloads(runner, list(specs))
    floor = tables.per_seed_scores(tables.score_records(baseline_runs, run.kinds, split), groups)
    floor = floor.droplevel(["pretrain_seed", "seed"])  # one deterministic run per baseline
    floor = floor.reindex([label for label in LABELS.values() if label in floor.index])
    scores = tables.summarise(per_seed[list(groups)]).xs("mean", axis=1, level=1)
    analyses = {name: runner.analysis(name).payload for name in run.names}
    indicators = tables.indicator_table(analyses, "trained", "probe", layer)
    correlation = claims.correlations(indicators, scores)
    references = {LABELS[name] for payload in run.baselines.values() for name in payload["baselines"]
                  if reads_order(payload, name)}
    columns = task_and_group_columns(specs, groups)
    parts = dict(
        variance=mixed_model.variance_table(
            per_seed, list(groups) + [t for t in run.span_tasks if t in per_seed.columns], alpha),
        against_baselines=gate.against_baselines(per_seed[list(groups) + list(specs)], run.validation,
                                                 {label: row.to_dict() for label, row in floor.iterrows()}, alpha,
                                                 score_ranges(specs, groups), references),
        indicator_verdicts=claims.assess_indicator_claims(correlation, list(scores.columns), alpha, run.untestable),
        needs=needs(run.verdicts, run.details, run.testable),
        operating=power.operating_characteristics(run.claims, per_seed, run.untestable, PLANTED, runs, 0, alpha),
        plateau=plateau_relation(runner, run.names, per_seed, columns, alpha), pairing=pairing_table(per_seed, columns))
    return Findings(names=run.names, groups=groups, indicators=indicators, scores=scores, correlation=correlation,
                    testable=run.testable, verdicts=run.verdicts, details=run.details,
                    cited=findings_cited(runner, run, parts, split, runs, alpha), **parts)


def findings_cited(runner, run: PaperVerdicts, parts: Mapping, split: str, runs: int, alpha: float) -> dict:
    """What the chapter's prose cites (by glue name), from the run's verdicts and the chapter's
    other ``parts`` (the :class:`Findings` fields computed beside them) on ``split``, with ``runs``
    simulated runs at level ``alpha``."""
    all_verdicts = list(run.verdicts["verdict"]) + list(parts["indicator_verdicts"]["verdict"])
    saved = parts["pairing"]["saved"].dropna()
    return {
        "n_seeds": common.finetuning_seeds(run.profile, run.specs), "n_variants": len(run.names),
        "split": split, "alpha": alpha,
        "seed_design": common.seed_design(run.profile, run.names, list(run.specs)),
        "scale_text": scale_text(runner, run.names, run.finetuned, run.profile),
        "groups_text": "; ".join(f"{group}: {', '.join(tasks)}" for group, tasks in run.groups.items()),
        "span_tasks": ", ".join(run.span_tasks) or "none",
        **{f"n_{label.replace(' ', '_')}": sum(v.startswith(label) for v in all_verdicts) for label in VERDICT_LABELS},
        "n_claims": len(all_verdicts), "mde_text": _mde_text(run.verdicts),
        "needs_text": needs_text(parts["needs"], GPU),
        "testable_text": testability.testable_text(run.testable), "operating_text": operating_text(parts["operating"], alpha),
        "gate_interval": intervals.interval_label(1 - alpha), "gate_seeds": gate.GATE_SEEDS,
        "n_runs": runs, "baselines_text": " ".join(f"On the {group} column, "
                                                   f"{baselines_text(parts['against_baselines'], group)}."
                                                   for group in run.groups),
        **parts["plateau"].cited,
        "pairing_saved_max": f"{100 * saved.max():.0f}%" if len(saved) else "nothing (no two variants share seeds)",
        "pairing_saved_column": str(saved.idxmax()) if len(saved) else "none"}


def pairing_table(per_seed: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Per column: the seed-index and residual variance components (points squared) of each
    pretrained model's mean, the share of a paired difference's variance that pairing by seed
    index removes, and the variants and seeds it rests on (:func:`pe_book.design.pairing`)."""
    return pd.DataFrame({column: design.pairing(per_seed, column) for column in columns
                         if column in per_seed.columns}).T.rename_axis("column")


def operating_text(table: pd.DataFrame, alpha: float) -> str:
    """The rule's false-verdict rate and power over the claims, in words."""
    false = table["false verdicts (no true difference)"].dropna()
    if not len(false):
        return "not simulated: no claim has a testable column with a known pretraining variance"
    powers = [c for c in table.columns if c.startswith("power at")]
    power_ranges = "; ".join(f"{c.removeprefix('power ')}: {table[c].min():.0%} to {table[c].max():.0%}" for c in powers)
    return (f"with no true difference, {false.max():.1%} of simulated runs at most gave a claim a verdict "
            f"(level {alpha:.0%}); the power to support a claim whose every comparison truly holds, {power_ranges}")


#: How the text says where the best variant stands against a baseline (:func:`pe_book.verdicts.intervals.standing`).
STANDING_TEXT = {intervals.ABOVE: "the variant is above it", intervals.BELOW: "the variant is below it",
                 intervals.WITHIN: "within the variant's interval", intervals.UNKNOWN: ""}


def baselines_text(table: pd.DataFrame, column: str) -> str:
    """One column of :func:`pe_book.verdicts.gate.against_baselines` in words: the best variant's mean with
    its interval (and the interval's level), and each baseline's score with where the variant
    stands against it, a rule that reads word order named as a reference."""
    rows = table[table["column"] == column]
    if not len(rows):
        return f"no baseline scores the {column} column"
    first = rows.iloc[0]

    def one(row) -> str:
        notes = [n for n in ("reads word order: a reference, not a bar" if row["role"] == gate.REFERENCE else "",
                             STANDING_TEXT[row["outcome"]]) if n]
        return f"{row['baseline'].removeprefix('baseline: ')} {row['baseline score']:.1f}" + (
            f" ({'; '.join(notes)})" if notes else "")

    interval = ("no interval: the pretraining variance is unknown" if math.isnan(first["low"])
                else f"{intervals.interval_label(first['level'], first['over'], what='baselines')} "
                     f"{first['low']:.1f} to {first['high']:.1f}")
    return (f"{first['best variant']} (chosen on the validation split) scores {first['mean']:.1f}, {interval}; "
            + "; ".join(one(row) for _, row in rows.iterrows()))


def needs(verdicts: pd.DataFrame, details: pd.DataFrame, testable: pd.DataFrame | None = None) -> pd.DataFrame:
    """What each claim not decided would take, one row per claim (not testable or not decidable):
    the reason, the columns no model learned, of them those ``within reach`` of the gate
    (:func:`pe_book.verdicts.testability.within_reach` on the ``testable`` table: above every order-free
    baseline in the mean, kept out by the interval: more seeds) and the others (below a baseline: more scale,
    not more seeds), and the pretraining seeds per variant that would decide it if the observed
    differences were true (:func:`pe_book.verdicts.power.seeds_needed`)."""
    rows = {}
    open_claims = verdicts["verdict"].str.startswith("not decidable") | verdicts["verdict"].str.startswith(rule.NOT_TESTABLE)
    for key, row in verdicts[open_claims].iterrows():
        rows_of_claim = details[details["claim id"] == key]
        not_learned = list(dict.fromkeys(rows_of_claim.loc[rows_of_claim["outcome"] == "not testable", "column"]))
        reach = [c for c in not_learned if testable is not None and testability.within_reach(testable, c)]
        below = [c for c in not_learned if c not in reach]
        if row["verdict"].startswith(rule.NOT_TESTABLE):
            what = "; ".join(
                ([f"models that learn {', '.join(below)} beyond their order-free baselines (more pretraining or "
                  "fine-tuning data, or tasks that need word order)"] if below else [])
                + ([f"narrower intervals on {', '.join(reach)}, whose best variants are above every order-free "
                    "baseline in the mean (more pretraining seeds)"] if reach else []))
        elif row["verdict"] == rule.VARIANCE_UNKNOWN:
            what = "two pretraining seeds of some variant, to know the pretraining variance"
        elif math.isnan(row["seeds needed"]):
            what = f"more than {power.MAX_SEEDS} pretraining seeds a variant at this variance, or larger effects"
        else:
            what = f"{row['seeds needed']:.0f} pretraining seeds a variant, if the observed differences are true"
        rows[key] = {"claim": row["claim"], "verdict": row["verdict"], "mean difference": row["mean difference"],
                     "MDE": row["MDE"], "seeds needed": row["seeds needed"],
                     "not testable on": ", ".join(not_learned) or "none", "within reach": ", ".join(reach) or "none",
                     "needs": what}
    columns = ["claim", "verdict", "mean difference", "MDE", "seeds needed", "not testable on", "within reach", "needs"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis("claim id")


def needs_text(table: pd.DataFrame, gpu: Profile) -> str:
    """:func:`needs` in words, with what ``gpu`` (the paper-scale profile) brings against it."""
    if not len(table):
        return "every claim about scores is decided at this scale"
    untested = table["verdict"].str.startswith(rule.NOT_TESTABLE)
    reach = table["within reach"]
    all_near = (reach != "none") & (reach == table["not testable on"])  # both list the same columns in one order
    not_learned = int((untested & ~all_near).sum())
    near = int((untested & all_near).sum())
    unknown = int((table["verdict"] == rule.VARIANCE_UNKNOWN).sum())
    seeds = table["seeds needed"].dropna()
    most = max(len(gpu.pretrain_seeds_for(v)) for v in gpu.variants)
    within = int((seeds <= most).sum())
    tokens = gpu.pretrain.steps * gpu.pretrain.batch_size * gpu.seq_len
    parts = [f"{common.plural(len(table), 'claim')} about scores {'is' if len(table) == 1 else 'are'} not decided"]
    if not_learned:
        parts.append(f"{not_learned} because no model beats the order-free baselines of their columns, which more "
                     f"seeds cannot mend: they need models that learn those tasks, such as the {gpu.name} profile's "
                     f"(hidden size {gpu.model['hidden_size']}, {gpu.model['num_hidden_layers']} layers, "
                     f"{tokens / 1e9:.1f} billion tokens a model)")
    if near:
        columns = ", ".join(dict.fromkeys(c for cell in reach[untested & all_near] for c in cell.split(", ")))
        parts.append(f"{near} because on {columns} the best variant is above every order-free baseline in the mean "
                     "but its interval reaches below one: more pretraining seeds would narrow it")
    if unknown:
        parts.append(f"{unknown} because no variant has two pretraining seeds")
    if len(seeds):
        span = f"{seeds.min():.0f}" if seeds.min() == seeds.max() else f"{seeds.min():.0f} to {seeds.max():.0f}"
        parts.append(f"{len(seeds)} would be decided with {span} pretraining seeds a variant if their observed "
                     f"differences were true; the gpu profile's {most} pretraining seeds would be enough for "
                     f"{within} of them at this run's variance")
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


# ----------------------------------------------------------------------------- leaving none's plateau


@dataclass
class PlateauRelation:
    """When each pretraining left none's plateau (``escapes``: chapter 3's,
    :class:`pe_book.chapters.escapes.Escapes`) and, for every pretraining of an APE alone, its
    escape step beside its scores (``per_model``: the mean over its fine-tuning seeds of each score
    column), with Spearman's ``correlation`` between the two over those pretrainings
    (:func:`pe_book.plateau.rank_correlation`, with Holm's correction over the columns) and
    ``cited``, by glue name."""
    escapes: Escapes
    per_model: pd.DataFrame
    correlation: pd.DataFrame
    cited: dict


def plateau_relation(runner, names: Sequence[str], per_seed: pd.DataFrame, columns: Sequence[str],
                     alpha: float = mixed_model.ALPHA) -> PlateauRelation:
    """:class:`PlateauRelation` of ``names`` (none's seeds make the plateau), with the scores of
    ``per_seed`` (rows ``(variant, pretrain_seed, seed)``) on ``columns`` (e.g. the tasks and the
    groups of several tasks: a group of one task would repeat it), level ``alpha``."""
    found = escapes_of(validation_curves(runner, names))
    ape = found.table[found.table["family"] == plateau.APE]
    scores = per_seed[[c for c in columns if c in per_seed.columns]]
    scores = scores.groupby(level=["variant", "pretrain_seed"], sort=False).mean().rename_axis(ape.index.names)
    correlation = plateau.rank_correlation(found.table, scores)
    correlation["p (Holm)"] = rule.holm(correlation["p"].to_numpy()) if len(correlation) else []
    per_model = ape[["escape"]].join(scores, how="left")
    per_model["escape"] = per_model["escape"].map(plateau.escape_text)
    decided = correlation[correlation["p (Holm)"] < alpha]
    n = int(correlation["n"].max()) if len(correlation) else 0
    cited = {**escape_cited(found), "escape_rho_n": n, "escape_rho_decided": len(decided),
             "escape_rho_columns": len(correlation)}
    return PlateauRelation(found, per_model, correlation, cited)
