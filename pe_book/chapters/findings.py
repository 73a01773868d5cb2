"""Chapter "Findings" (08): the paper's claims against this run, each with its verdict by the
sound rule of :mod:`pe_book.stats`, and the claims about indicators by rank correlation."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from pe_book import claims, design, plateau, stats, tables, testability
from pe_book.chapters import common
from pe_book.chapters.pretraining import Escapes, count_parameters, escape_cited, escapes_of, validation_curves
from pe_book.experiments.baselines import LABELS, baseline_payloads, reads_order
from pe_book.experiments.profiles import GPU, Profile
from pe_lib.data.tasks import get_task
from pe_lib.positions import parse_variant, resolve_variants

VERDICT_LABELS = ("supported", "contradicted", "not decidable", "not testable", "not tested")
#: Simulated runs per claim and case for the rule's false-verdict rate and power (seeded; a rate
#: near 5% has a standard error of 0.35 points; under a second on the cpu run), and the planted effects (points).
SIMULATED_RUNS = 4000
PLANTED = (2.0, 5.0)
#: The narrow verdict table that the intro and this chapter open with: verdicts' column -> heading.
NARROW_COLUMNS = {"claim": "the paper's claim", "verdict": "verdict at this scale", "effects": "effect (points) [interval]"}


@dataclass
class Findings:
    """What the chapter shows: ``indicators`` (probe indicators of the trained models, per
    variant), ``scores`` (seed means per variant of each score column: the order-sensitive and
    order-free groups of :func:`pe_book.tables.score_groups`), their ``correlation``, the
    ``variance`` components, which columns are ``testable`` (the best variant against every
    order-free baseline and, on tasks that need word order, ``none``, the rules that read word
    order beside them as references: :func:`pe_book.testability.testability`), the best variant
    of each column ``against_baselines`` (every distinct baseline, those that read word order
    marked as references: :func:`pe_book.stats.against_baselines`), the ``verdicts`` on the
    paper's claims with the ``details`` of every comparison, what each claim not decided would
    ``need``, the rule's ``operating`` characteristics per claim
    (:func:`pe_book.stats.operating_characteristics`), the ``indicator_verdicts`` and ``cited``,
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
    plateau: PlateauRelation | None = None
    #: Per column, the seed-index variance component and what pairing by seed index saves (:func:`pe_book.design.pairing`).
    pairing: pd.DataFrame | None = None

    def points(self) -> pd.DataFrame:
        """Indicators and scores per variant (``none`` left out: it has no position to measure),
        with each variant's ``kind``."""
        points = self.indicators.join(self.scores, how="inner").drop(index="none", errors="ignore")
        points["kind"] = [variant_kind(v) for v in points.index]
        return points


def verdict_text(verdict: str, not_testable_on: str = "") -> str:
    """A verdict, with the columns it could not be tested on when it rests on the others."""
    if not not_testable_on or verdict.startswith("not testable"):
        return verdict
    return f"{verdict} (not testable on {not_testable_on})"


def narrow_verdicts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The claims' ``verdicts`` (:attr:`Findings.verdicts`) as the narrow table a reader meets
    first: one row per claim, :data:`NARROW_COLUMNS`, each verdict naming the columns it could not
    be tested on."""
    table = verdicts.copy()
    if "not testable on" in table.columns:
        table["verdict"] = [verdict_text(v, on if isinstance(on, str) else "")
                            for v, on in zip(table["verdict"], table["not testable on"])]
    return table[list(NARROW_COLUMNS)].rename(columns=NARROW_COLUMNS).reset_index(drop=True)


#: How each variance component is shown (:func:`stats.variance_table`'s columns, in its order).
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
    familywise level ``alpha`` per claim, on the columns the models learned; indicators of the
    probed ``layer``; the rule's false-verdict rate and power over ``runs`` simulated runs."""
    common.check_split(split)
    common.check_layer(runner.profile, layer)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    names = resolve_variants(variants, runner.profile.variants)
    specs = {t: get_task(t) for t in runner.profile.tasks}
    kinds = {t: s.meta.kind for t, s in specs.items()}
    span_tasks = [t for t, kind in kinds.items() if kind == "span"]
    groups = tables.score_groups(specs)
    profile = runner.profile.with_seeds(seeds)
    finetuned = common.finetuned_payloads(runner, names, specs, seeds)
    per_seed = tables.per_seed_scores(tables.score_records(finetuned, kinds, split), groups)
    validation = tables.per_seed_scores(tables.score_records(finetuned, kinds, "validation"), groups)
    floor = tables.per_seed_scores(tables.score_records(baseline_payloads(runner, list(specs)), kinds, split), groups)
    floor = floor.droplevel(["pretrain_seed", "seed"])  # one deterministic run per baseline
    floor = floor.reindex([label for label in LABELS.values() if label in floor.index])
    testable = testability.gate(runner, per_seed, validation, specs, groups, split, alpha)
    untestable = testability.untestable(testable)
    scores = tables.summarise(per_seed[list(groups)]).xs("mean", axis=1, level=1)
    analyses = {name: runner.ensure_analysis(name).payload for name in names}
    indicators = tables.indicator_table(analyses, "trained", "probe", layer)
    correlation = claims.correlations(indicators, scores)
    paper = claims.paper_claims(span_tasks=span_tasks, selection=validation)
    details = stats.comparison_table(paper, per_seed, untestable, alpha)
    verdicts = stats.assess_claims(paper, per_seed, untestable, alpha)
    verdicts["effects"] = effects_text(details).reindex(verdicts.index).fillna("no comparison")
    stored = {task: runner.ensure_baselines(task).payload for task in specs}
    references = {LABELS[name] for payload in stored.values() for name in payload["baselines"]
                  if reads_order(payload, name)}
    result = Findings(
        names, groups, indicators, scores, correlation,
        stats.variance_table(per_seed, list(groups) + [t for t in span_tasks if t in per_seed.columns], alpha),
        testable,
        stats.against_baselines(per_seed[list(groups) + list(specs)], validation,
                                {label: row.to_dict() for label, row in floor.iterrows()}, alpha,
                                tables.score_ranges(specs, groups), references),
        verdicts, claims.assess_indicator_claims(correlation, list(scores.columns), alpha, untestable), details,
        needs(verdicts, details, testable), stats.operating_characteristics(paper, per_seed, untestable, PLANTED, runs, 0, alpha),
        {})
    all_verdicts = list(result.verdicts["verdict"]) + list(result.indicator_verdicts["verdict"])
    result.cited = {
        "n_seeds": common.finetuning_seeds(profile, specs), "n_variants": len(names), "split": split, "alpha": alpha,
        "seed_design": common.seed_design(profile, names, list(specs)),
        "scale_text": scale_text(runner, names, finetuned, profile),
        "groups_text": "; ".join(f"{group}: {', '.join(tasks)}" for group, tasks in groups.items()),
        "span_tasks": ", ".join(span_tasks) or "none",
        **{f"n_{label.replace(' ', '_')}": sum(v.startswith(label) for v in all_verdicts) for label in VERDICT_LABELS},
        "n_claims": len(all_verdicts), "mde_text": _mde_text(verdicts), "needs_text": needs_text(result.needs, GPU),
        "testable_text": testability.testable_text(testable), "operating_text": operating_text(result.operating, alpha),
        "gate_interval": stats.interval_label(1 - alpha), "gate_seeds": stats.GATE_SEEDS,
        "n_runs": runs, "baselines_text": " ".join(f"On the {group} column, {baselines_text(result.against_baselines, group)}."
                                                   for group in groups)}
    columns = tables.task_and_group_columns(specs, groups)
    result.plateau = plateau_relation(runner, names, per_seed, columns, alpha)
    result.cited.update(result.plateau.cited)
    result.pairing = pairing_table(per_seed, columns)
    saved = result.pairing["saved"].dropna()
    result.cited["pairing_saved_max"] = f"{100 * saved.max():.0f}%" if len(saved) else "nothing (no two variants share seeds)"
    result.cited["pairing_saved_column"] = str(saved.idxmax()) if len(saved) else "none"
    return result


def pairing_table(per_seed: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Per column: the seed-index and residual variance components (points squared) of each
    pretrained model's mean, the share of a paired difference's variance that pairing by seed
    index removes, and the variants and seeds it rests on (:func:`pe_book.design.pairing`)."""
    return pd.DataFrame({column: design.pairing(per_seed, column) for column in columns
                         if column in per_seed.columns}).T.rename_axis("column")


def scale_text(runner, names: Sequence[str], finetuned: Mapping, profile) -> str:
    """The scale a verdict holds at, from the pretraining artifacts (their recorded configuration)
    and the fine-tuning ones: the models' size (layers, width, parameters), the tokens each was
    pretrained on (steps x batch size x sequence length), the tasks and where their data came
    from, and the seeds (of ``profile``: the runner's with the chapter's fine-tuning seeds)."""
    configs = [runner.ensure_pretrained(n).provenance["config"] for n in names]
    shapes = " or ".join(dict.fromkeys(f"{c['model']['num_hidden_layers']}-layer, {c['model']['hidden_size']}-wide"
                                       for c in configs))
    parameters = [count_parameters(c["model"]) for c in configs]
    size = " to ".join(dict.fromkeys(f"{p / 1e6:.2f}M" for p in (min(parameters), max(parameters))))
    tokens = [c["pretrain"]["steps"] * c["pretrain"]["batch_size"] * c["data"]["seq_len"] for c in configs]
    seen = " to ".join(dict.fromkeys(f"{t / 1e6:.1f}M" for t in (min(tokens), max(tokens))))
    found = tables.origins(finetuned)
    packaged = all(o.startswith("packaged") for kinds in found.values() for o in kinds)
    tasks = f"{len(found)} tasks ({', '.join(found)}{'; offline analogues' if packaged else ''})"
    return (f"{shapes} models of {size} parameters, pretrained on {seen} tokens each; {tasks}; "
            f"{common.seed_design(profile, names, list(found))}")


def operating_text(table: pd.DataFrame, alpha: float) -> str:
    """The rule's false-verdict rate and power over the claims, in words."""
    false = table["false verdicts (no true difference)"].dropna()
    if not len(false):
        return "not simulated: no claim has a testable column with a known pretraining variance"
    powers = [c for c in table.columns if c.startswith("power at")]
    power = "; ".join(f"{c.removeprefix('power ')}: {table[c].min():.0%} to {table[c].max():.0%}" for c in powers)
    return (f"with no true difference, {false.max():.1%} of simulated runs at most gave a claim a verdict "
            f"(level {alpha:.0%}); the power to support a claim whose every comparison truly holds, {power}")


#: How the text says where the best variant stands against a baseline (:func:`pe_book.stats.standing`).
STANDING_TEXT = {stats.ABOVE: "the variant is above it", stats.BELOW: "the variant is below it",
                 stats.WITHIN: "within the variant's interval", stats.UNKNOWN: ""}


def baselines_text(table: pd.DataFrame, column: str) -> str:
    """One column of :func:`pe_book.stats.against_baselines` in words: the best variant's mean with
    its interval (and the interval's level), and each baseline's score with where the variant
    stands against it, a rule that reads word order named as a reference."""
    rows = table[table["column"] == column]
    if not len(rows):
        return f"no baseline scores the {column} column"
    first = rows.iloc[0]

    def one(row) -> str:
        notes = [n for n in ("reads word order: a reference, not a bar" if row["role"] == stats.REFERENCE else "",
                             STANDING_TEXT[row["outcome"]]) if n]
        return f"{row['baseline'].removeprefix('baseline: ')} {row['baseline score']:.1f}" + (
            f" ({'; '.join(notes)})" if notes else "")

    interval = ("no interval: the pretraining variance is unknown" if math.isnan(first["low"])
                else f"{stats.interval_label(first['level'], first['over'], what='baselines')} "
                     f"{first['low']:.1f} to {first['high']:.1f}")
    return (f"{first['best variant']} (chosen on the validation split) scores {first['mean']:.1f}, {interval}; "
            + "; ".join(one(row) for _, row in rows.iterrows()))


def effects_text(details: pd.DataFrame) -> pd.Series:
    """Per claim id, its smallest and largest effect (percentage points, expected higher minus
    expected lower) with their Bonferroni intervals and the intervals' level (``level``, ``over``
    of :func:`pe_book.stats.comparison_table`), e.g. ``"-9.3 [-12.0, -6.6] to +1.2 [-1.5, +3.9];
    98.8% intervals (Bonferroni over 4 comparisons)"``."""
    def one(row) -> str:
        if math.isnan(row["low"]):
            return f"{row['difference']:+.1f} (no interval)"
        return f"{row['difference']:+.1f} [{row['low']:+.1f}, {row['high']:+.1f}]"

    def claim(rows: pd.DataFrame) -> str:
        ordered = rows.sort_values("difference")
        ends = [ordered.iloc[0]] if len(ordered) == 1 else [ordered.iloc[0], ordered.iloc[-1]]
        shown = [row for row in ends if not math.isnan(row["low"])]
        level = (f"; {stats.interval_label(shown[0]['level'], shown[0]['over'], len(shown) > 1, 'comparisons')}"
                 if shown else "")
        return " to ".join(one(row) for row in ends) + level

    return pd.Series({key: claim(rows) for key, rows in details.groupby("claim id", sort=False)}, dtype=object)


def needs(verdicts: pd.DataFrame, details: pd.DataFrame, testable: pd.DataFrame | None = None) -> pd.DataFrame:
    """What each claim not decided would take, one row per claim (not testable or not decidable):
    the reason, the columns no model learned, of them those ``within reach`` of the gate
    (:func:`pe_book.testability.within_reach` on the ``testable`` table: above every order-free
    baseline in the mean, kept out by the interval: more seeds) and the others (below a baseline: more scale,
    not more seeds), and the pretraining seeds per variant that would decide it if the observed
    differences were true (:func:`pe_book.stats.seeds_needed`)."""
    rows = {}
    open_claims = verdicts["verdict"].str.startswith("not decidable") | verdicts["verdict"].str.startswith(stats.NOT_TESTABLE)
    for key, row in verdicts[open_claims].iterrows():
        comparisons = details[details["claim id"] == key]
        not_learned = list(dict.fromkeys(comparisons.loc[comparisons["outcome"] == "not testable", "column"]))
        reach = [c for c in not_learned if testable is not None and testability.within_reach(testable, c)]
        below = [c for c in not_learned if c not in reach]
        if row["verdict"].startswith(stats.NOT_TESTABLE):
            what = "; ".join(
                ([f"models that learn {', '.join(below)} beyond their order-free baselines (more pretraining or "
                  "fine-tuning data, or tasks that need word order)"] if below else [])
                + ([f"narrower intervals on {', '.join(reach)}, whose best variants are above every order-free "
                    "baseline in the mean (more pretraining seeds)"] if reach else []))
        elif row["verdict"] == stats.VARIANCE_UNKNOWN:
            what = "two pretraining seeds of some variant, to know the pretraining variance"
        elif math.isnan(row["seeds needed"]):
            what = f"more than {stats.MAX_SEEDS} pretraining seeds a variant at this variance, or larger effects"
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
    untested = table["verdict"].str.startswith(stats.NOT_TESTABLE)
    reach = table["within reach"]
    all_near = (reach != "none") & (reach == table["not testable on"])  # both list the same columns in one order
    not_learned = int((untested & ~all_near).sum())
    near = int((untested & all_near).sum())
    unknown = int((table["verdict"] == stats.VARIANCE_UNKNOWN).sum())
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
    :class:`pe_book.chapters.pretraining.Escapes`) and, for every pretraining of an APE alone, its
    escape step beside its scores (``per_model``: the mean over its fine-tuning seeds of each score
    column), with Spearman's ``correlation`` between the two over those pretrainings
    (:func:`pe_book.plateau.rank_correlation`, with Holm's correction over the columns) and
    ``cited``, by glue name."""
    escapes: Escapes
    per_model: pd.DataFrame
    correlation: pd.DataFrame
    cited: dict


def plateau_relation(runner, names: Sequence[str], per_seed: pd.DataFrame, columns: Sequence[str],
                     alpha: float = stats.ALPHA) -> PlateauRelation:
    """:class:`PlateauRelation` of ``names`` (none's seeds make the plateau), with the scores of
    ``per_seed`` (rows ``(variant, pretrain_seed, seed)``) on ``columns`` (e.g. the tasks and the
    groups of several tasks: a group of one task would repeat it), level ``alpha``."""
    found = escapes_of(validation_curves(runner, names))
    ape = found.table[found.table["family"] == plateau.APE]
    scores = per_seed[[c for c in columns if c in per_seed.columns]]
    scores = scores.groupby(level=["variant", "pretrain_seed"], sort=False).mean().rename_axis(ape.index.names)
    correlation = plateau.rank_correlation(found.table, scores)
    correlation["p (Holm)"] = stats.holm(correlation["p"].to_numpy()) if len(correlation) else []
    per_model = ape[["escape"]].join(scores, how="left")
    per_model["escape"] = per_model["escape"].map(plateau.escape_text)
    decided = correlation[correlation["p (Holm)"] < alpha]
    n = int(correlation["n"].max()) if len(correlation) else 0
    cited = {**escape_cited(found), "escape_rho_n": n, "escape_rho_decided": len(decided),
             "escape_rho_columns": len(correlation)}
    return PlateauRelation(found, per_model, correlation, cited)
