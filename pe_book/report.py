r"""Tables, summaries and verdicts for the book's result chapters (03-08, 12).

The notebooks read artifacts with :class:`pe_book.experiments.runner.Runner` and plot; everything
in between that is more than a line lives here, on plain data (payload dicts, data frames), so
that it is tested (``tests/test_report.py``) and the notebooks stay thin.

Scores
------
Every fine-tuning metric is reported in percent: GLUE-style metrics (accuracy, F1, Matthews and
Pearson/Spearman correlations, in ``[-1, 1]``) are multiplied by 100, SQuAD's exact match and F1
are percentages already. The **score of a task** is the mean of its metrics (the GLUE benchmark's
convention for MRPC and STS-B; for SQuAD the mean of EM and F1). The **average** of a group of
tasks (classification, span prediction) is computed per run (one pretraining seed, one
fine-tuning seed), over the tasks of the group, then summarised like a task. Per-seed tables are
indexed ``(variant, pretrain_seed, seed)``. A variant's mean is the mean of its pretrained
models' means; the spread is the sample standard deviation of single runs (``ddof=1``); with one
run it is undefined (NaN).

Verdicts
--------
Claims about scores are tested by :mod:`pe_book.stats` (its docstring gives the rule
and why): each comparison "``better`` scores higher than ``worse`` on ``column``" gets its effect
with an interval from both variance sources (pretraining seeds, fine-tuning seeds nested in them),
a claim's comparisons are corrected for multiplicity (Holm), and an undecided claim reports the
smallest effect its seeds could detect. :class:`Comparison`, :class:`Claim`, :func:`assess`,
:func:`assess_claims` and :func:`comparison_table` are re-exported here; :func:`paper_claims`
states the paper's claims and :func:`cls_gap` tests the [CLS] hypothesis with the same machinery.

A claim about how an indicator relates to scores is tested by Spearman's rank correlation across
variants (seed means): *supported* when the correlation has the claimed sign and its two-sided
p-value is below ``alpha`` (0.05), *contradicted* when it has the other sign with ``p < alpha``,
else "not decidable: correlation not significant" (or ": too few variants" below four).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

# re-exported: the notebooks read the verdict machinery from here
from pe_book.stats import (AT_CHANCE, CONTRADICTED, LEVELS, NOT_TESTED, SUPPORTED, UNDECIDED,
                                      VARIANCE_UNKNOWN, Claim, Comparison, assess, assess_claims, best_on,
                                      compare_family, comparison_table, variance_table)
from pe_book.experiments.profiles import COMBINATIONS, PAPER_VARIANTS, SINGLE_PES  # noqa: F401 (the chapters' names)
from pe_lib.positions import parse_variant, resolve_variants  # noqa: F401 (the chapters' names)
from pe_lib.training.metrics import CORRELATIONS, scale_metric  # noqa: F401 (the chapters' names)

NOT_SIGNIFICANT = "not decidable: correlation not significant"
TOO_FEW = "not decidable: too few variants"
#: Indicator columns, in the order tables show them.
INDICATORS = ("monotonicity", "monotonicity_local", "translation_invariance", "symmetry")
PROBE_INDICATORS = INDICATORS + ("chen_locality", "chen_symmetry")
LABELS = {"monotonicity": "monotonicity", "monotonicity_local": "local monotonicity",
          "translation_invariance": "translation invariance", "symmetry": "symmetry",
          "chen_locality": "Chen locality", "chen_symmetry": "Chen symmetry"}


# ----------------------------------------------------------------------------- artifacts


def open_runner(profile: str, results: str = "results"):
    """A :class:`~pe_book.experiments.runner.Runner` of the named profile on the artifact store
    ``results``, without progress bars (notebooks read artifacts through it)."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    return Runner(get_profile(profile), results=results, progress=False)


def data_used(params: Mapping, runner, tasks: Iterable[str] = ()) -> pd.DataFrame:
    """A chapter's parameters table, with the data its results come from: the pretraining corpus
    (``packaged``: offline analogues from pinned packages; ``hub``: the paper's data from the
    HuggingFace hub) and the origin of each of ``tasks``. Online and offline runs differ here, so
    a reader (on Colab, say) knows why numbers differ from the published book."""
    corpus = runner.corpus
    sources = ", ".join(corpus.card.get("sources", {})) or corpus.origin
    rows = {**{name: repr(value) for name, value in params.items()},
            "data: pretraining text": f"{corpus.origin} ({sources})"}
    rows.update({f"data: task {t}": runner.task(t).origin for t in tasks})
    return pd.DataFrame({"value": rows})


# ----------------------------------------------------------------------------- variants


def has_offset_table(variant: str) -> bool:
    """Whether the variant has a learned or sinusoidal table of offset vectors (``rpe-*``)."""
    return parse_variant(variant).has_offset_table


# ----------------------------------------------------------------------------- pretraining


def curve_frame(curves: Mapping[str, Sequence[Mapping]]) -> pd.DataFrame:
    """Long table ``variant, step, split, loss`` of the pretraining curves (``curve.jsonl`` records)."""
    rows = [{"variant": v, "step": int(r["step"]), "split": r["split"], "loss": float(r["loss"])}
            for v, records in curves.items() for r in records]
    return pd.DataFrame(rows, columns=["variant", "step", "split", "loss"])


def final_losses(results: Mapping[str, Mapping], parameters: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Final validation MLM loss per variant (lowest first), with its perplexity, throughput and
    wall time; ``parameters`` (variant -> count) adds a column."""
    rows = []
    for variant, result in results.items():
        loss = float(result["validation_loss"])
        row = {"variant": variant, "validation loss": loss, "perplexity": math.exp(loss),
               "tokens/s": result.get("tokens_per_s"), "wall (s)": result.get("wall_s")}
        if parameters is not None:
            row["parameters"] = parameters.get(variant)
        rows.append(row)
    table = pd.DataFrame(rows).set_index("variant")
    return table.sort_values("validation loss", kind="stable")


def count_parameters(model_config: Mapping) -> int:
    """Parameters of a :class:`PEBertForMaskedLM` with this config (tied weights counted once),
    built on the ``meta`` device (no memory, milliseconds)."""
    import torch

    from pe_lib.model import PEBertConfig, PEBertForMaskedLM

    with torch.device("meta"):
        model = PEBertForMaskedLM(PEBertConfig(**model_config))
    return sum(p.numel() for p in model.parameters())


def pretraining_setup(config: Mapping, results: Mapping[str, Mapping]) -> dict:
    """The setup of a profile's pretraining from one artifact's provenance ``config`` (the
    ``stage: pretrain`` config: ``model``, ``pretrain``, ``data``) and every variant's result:
    model size, steps, batch, tokens seen, mean throughput, total wall time."""
    model, train, data = config["model"], config["pretrain"], config["data"]
    tokens = int(train["steps"]) * int(train["batch_size"]) * int(data["seq_len"])
    rates = [r["tokens_per_s"] for r in results.values() if r.get("tokens_per_s")]
    walls = [r["wall_s"] for r in results.values() if r.get("wall_s") is not None]
    return {
        "hidden_size": model["hidden_size"], "layers": model["num_hidden_layers"],
        "heads": model["num_attention_heads"], "intermediate_size": model["intermediate_size"],
        "vocab_size": model["vocab_size"], "seq_len": data["seq_len"], "steps": train["steps"],
        "batch_size": train["batch_size"], "lr": train["lr"], "warmup_steps": train["warmup_steps"],
        "tokens": tokens, "tokens_per_s": float(np.mean(rates)) if rates else math.nan,
        "wall_s": float(np.sum(walls)) if walls else math.nan, "variants": len(results),
    }


# ----------------------------------------------------------------------------- indicators


def indicator_table(analyses: Mapping[str, Mapping], state: str = "trained", kind: str = "probe",
                    layer: int = 0, window: int | None = None,
                    maps: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> pd.DataFrame:
    """Indicators per variant (rows) from analysis payloads: ``kind`` is ``"probe"`` (identical-
    word attention of ``layer``), ``"ape"`` or ``"rpe"`` (dot products of position / offset
    vectors; variants without them are left out). ``state``: ``"init"`` or ``"trained"``.
    ``window`` other than the analysis's own (``ANALYSIS_WINDOW``): local monotonicity over
    offsets 1..window, recomputed from the stored maps (``maps``: variant -> analysis arrays)."""
    from pe_book.experiments.runner import ANALYSIS_WINDOW
    from pe_lib.properties import indicators

    columns = PROBE_INDICATORS if kind == "probe" else INDICATORS
    rows = {}
    for variant, payload in analyses.items():
        found = payload[state].get(kind)
        if found is None:
            continue
        values = found[layer] if kind == "probe" else found
        rows[variant] = {c: _number(values.get(c)) for c in columns}
        if window is not None and window != ANALYSIS_WINDOW:
            gram = maps[variant][f"{state}.{kind}"]
            gram = gram[layer] if kind == "probe" else gram
            rows[variant]["monotonicity_local"] = indicators(np.asarray(gram, dtype=np.float64), window=window)["monotonicity_local"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(columns)).rename_axis("variant")


def _number(value) -> float:
    return math.nan if value is None else float(value)


def indicator_change(analyses: Mapping[str, Mapping], kind: str = "probe", layer: int = 0) -> pd.DataFrame:
    """Init, trained and trained - init of every indicator: columns ``(indicator, state)``."""
    init = indicator_table(analyses, "init", kind, layer)
    trained = indicator_table(analyses, "trained", kind, layer)
    parts = {"init": init, "trained": trained, "change": trained - init}
    table = pd.concat(parts, axis=1).swaplevel(0, 1, axis=1)
    order = [(c, s) for c in init.columns for s in parts]
    return table[order]


# ----------------------------------------------------------------------------- scores


#: What each task stands for in the paper (GLUE / SQuAD names).
PAPER_TASKS = {"cola": "CoLA: grammatical acceptability", "sst2": "SST-2: sentiment",
               "mrpc": "MRPC: paraphrase", "stsb": "STS-B: sentence similarity (regression)",
               "qnli": "QNLI: question-answer entailment", "rte": "RTE: textual entailment",
               "squad": "SQuAD v1.1: extractive question answering",
               "squad_v2": "SQuAD v2.0: extractive QA with unanswerable questions"}


def score_records(finetuned: Mapping[tuple[str, str, int, int], Mapping], kinds: Mapping[str, str],
                  split: str = "test") -> pd.DataFrame:
    """Long table ``variant, task, pretrain_seed, seed, metric, value`` (percent) from fine-tuning
    payloads keyed by ``(variant, task, pretrain_seed, seed)``; ``kinds`` maps each task to its
    kind (``TaskMeta.kind``)."""
    rows = [{"variant": v, "task": t, "pretrain_seed": p, "seed": s, "metric": metric,
             "value": scale_metric(value, kinds[t], metric)}
            for (v, t, p, s), payload in finetuned.items() for metric, value in payload[split].items()]
    return pd.DataFrame(rows, columns=["variant", "task", "pretrain_seed", "seed", "metric", "value"])


def metric_means(records: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of every metric: rows variants (in order of appearance), columns
    ``(task, metric)``."""
    table = records.pivot_table(index="variant", columns=["task", "metric"], values="value", aggfunc="mean",
                                sort=False)
    return table.reindex(list(dict.fromkeys(records["variant"])))


def chapter_tasks(requested: Sequence[str], default: Sequence[str], span: bool) -> dict:
    """The task specs of a fine-tuning chapter: the ``requested`` ones, which must all be of the
    chapter's kind (span prediction or sentence level), else the ``default`` ones of that kind."""
    from pe_lib.data.tasks import get_task

    specs = {t: get_task(t) for t in (requested or default)}  # raises on an unknown task
    if not requested:
        return {t: s for t, s in specs.items() if (s.meta.kind == "span") == span}
    wrong = [t for t, s in specs.items() if (s.meta.kind == "span") != span]
    if wrong:
        other = "sentence-level tasks are" if span else "span tasks (squad, squad_v2) are"
        chapter = "06_classification" if span else "07_span_prediction"
        raise ValueError(f"{other} the subject of chapter {chapter} (got {', '.join(wrong)})")
    return specs


def finetuned_payloads(runner, names: Sequence[str], tasks: Iterable[str], seeds: Sequence[int]) -> dict:
    """Every fine-tuning payload keyed ``(variant, task, pretrain_seed, seed)``: each of the
    profile's pretraining seeds of the variant, each fine-tuning seed of ``seeds``."""
    tasks = list(tasks)
    return {(v, t, p, s): runner.ensure_finetuned(v, t, s, pretrain_seed=p).payload
            for v in names for p in runner.profile.pretrain_seeds_for(v) for t in tasks for s in seeds}


def seed_design(profile, names: Sequence[str]) -> str:
    """The seeds of a profile in words: how many pretraining seeds each of ``names`` has (the most
    common count as "the other N"), and the fine-tuning seeds run on each pretrained model."""
    by_count: dict[int, list[str]] = {}
    for name in names:
        by_count.setdefault(len(profile.pretrain_seeds_for(name)), []).append(name)
    common = max(by_count, key=lambda n: len(by_count[n])) if by_count else 0
    parts = [f"{n} pretraining seed(s) for {', '.join(vs)}" for n, vs in sorted(by_count.items(), reverse=True)
             if n != common]
    rest = f"{common} for the other {len(by_count[common])} variant(s)" if parts else f"{common} for every variant"
    pre = "; ".join(parts + [rest]) if parts else f"{common} pretraining seed(s) for every variant"
    return f"{pre}; {len(profile.seeds)} fine-tuning seed(s) on each pretrained model"


def finetuned_with_origins(runner, names: Sequence[str], specs: Mapping, seeds: Sequence[int], split: str):
    """Every (variant, task, pretrain_seed, seed) fine-tuning payload of a chapter, its task origin
    table, and the tasks whose data were packaged analogues in this run."""
    finetuned = finetuned_payloads(runner, names, specs, seeds)
    origin = origin_table(finetuned, {t: s.analogue for t, s in specs.items()},
                          {t: s.meta.metrics for t, s in specs.items()},
                          {t: len(runner.task(t).splits[split]) for t in specs})
    packaged = [t for t in specs if origin.loc[t, "origin"].startswith("packaged")]
    return finetuned, origin, packaged


def origin_table(finetuned: Mapping[tuple[str, str, int, int], Mapping], analogues: Mapping[str, str],
                 metrics: Mapping[str, Sequence[str]], test_sizes: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One row per task: what it stands for in the paper, where this run's data came from
    (``hub:...`` or ``packaged:...``, from the artifacts), the packaged analogue's description,
    its metrics and sizes."""
    found = origins(finetuned)
    train = {}
    for (_, task, *_), payload in finetuned.items():
        train.setdefault(task, payload.get("train_examples"))
    rows = {}
    for task, kinds in found.items():
        packaged = any(o.startswith("packaged") for o in kinds)
        rows[task] = {"in the paper": PAPER_TASKS.get(task, task), "origin": ", ".join(sorted(kinds)),
                      "data in this run": analogues.get(task, "") if packaged else "the original data set",
                      "metrics": ", ".join(metrics.get(task, ())),
                      "examples (train / test)": f"{train.get(task)} / {(test_sizes or {}).get(task, '?')}"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("task")


def per_seed_scores(records: pd.DataFrame, groups: Mapping[str, Sequence[str]] | None = None,
                    metrics: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """Scores per ``(variant, pretrain_seed, seed)`` (rows) and column: each task's score (the mean
    of its metrics, or of ``metrics[task]`` when given) and, for each ``groups`` entry (name ->
    tasks), the mean of those task scores (NaN unless every task of the group has a score for that
    run)."""
    chosen = records
    if metrics:
        keep = [m in metrics.get(t, [m]) for t, m in zip(records["task"], records["metric"])]
        chosen = records[keep]
    table = chosen.pivot_table(index=list(LEVELS), columns="task", values="value", aggfunc="mean")
    table.columns.name = None
    for name, tasks in (groups or {}).items():
        present = [t for t in tasks if t in table.columns]
        if len(present) == len(tasks) and present:
            table[name] = table[present].mean(axis=1, skipna=False)
        else:
            table[name] = np.nan
    return table


def per_seed_by_metric(records: pd.DataFrame, short: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every metric of every task as its own column ``"<task> <metric>"`` (metric names shortened
    by ``short``), per ``(variant, pretrain_seed, seed)``, in the order of ``records``."""
    short = short or {}
    labelled = records.assign(column=[f"{t} {short.get(m, m)}" for t, m in zip(records["task"], records["metric"])])
    table = labelled.pivot_table(index=list(LEVELS), columns="column", values="value", aggfunc="mean")
    table.columns.name = None
    return table[list(dict.fromkeys(labelled["column"]))]


def summarise(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per variant and column: the mean (of the pretrained models' means, each pretraining seed
    weighing the same: the variant mean that :mod:`~pe_book.stats` tests), the standard
    deviation of single runs over all pretraining and fine-tuning seeds (``ddof=1``; NaN with one
    run) and the number of runs: columns ``(column, "mean" | "std" | "n")``."""
    grouped = per_seed.groupby(level="variant", sort=False)
    model_means = per_seed.groupby(level=["variant", "pretrain_seed"], sort=False).mean()
    parts = {"mean": model_means.groupby(level="variant", sort=False).mean(), "std": grouped.std(ddof=1),
             "n": grouped.count()}
    table = pd.concat(parts, axis=1).swaplevel(0, 1, axis=1)
    return table[[(c, s) for c in per_seed.columns for s in parts]]


def best_per_column(summary: pd.DataFrame, exclude: Sequence[str] = ()) -> dict[str, list[str]]:
    """The variant(s) with the highest mean in each column of a :func:`summarise` table (rows
    in ``exclude``, e.g. a baseline, are not candidates). Ties are all listed."""
    best = {}
    for column in dict.fromkeys(c for c, _ in summary.columns):
        means = summary[(column, "mean")].drop(index=list(exclude), errors="ignore").dropna()
        best[column] = list(means.index[np.isclose(means, means.max())]) if len(means) else []
    return best


def best_text(best: Sequence[str], total: int, most: int = 3) -> str:
    """The best variant(s) of a column in words: their names, or how many tie when more than
    ``most`` do."""
    if not best:
        return "none"
    if len(best) > most:
        return f"all {total} variants tie" if len(best) == total else f"{len(best)} variants tie"
    return ", ".join(best)


def format_summary(summary: pd.DataFrame, digits: int = 1, mark: str = "▲",
                   exclude: Sequence[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Strings ``"mean ± std"`` (``"mean"`` when the spread is undefined, ``"—"`` when missing) per
    variant and column, the best mean of each column (rows in ``exclude`` aside) suffixed by
    ``mark`` (nothing is marked in a column where every variant ties); and a boolean frame
    marking those best cells."""
    columns = list(dict.fromkeys(c for c, _ in summary.columns))
    best = best_per_column(summary, exclude)
    text = pd.DataFrame(index=summary.index, columns=columns, dtype=object)
    flags = pd.DataFrame(False, index=summary.index, columns=columns)
    for column in columns:
        candidates = summary[(column, "mean")].drop(index=list(exclude), errors="ignore").notna().sum()
        marked = best[column] if len(best[column]) < candidates else []  # all tie: no best
        for variant in summary.index:
            mean, std = summary.loc[variant, (column, "mean")], summary.loc[variant, (column, "std")]
            if pd.isna(mean):
                cell = "—"
            elif pd.isna(std):
                cell = f"{mean:.{digits}f}"
            else:
                cell = f"{mean:.{digits}f} ± {std:.{digits}f}"
            if variant in marked:
                cell += f" {mark}"
                flags.loc[variant, column] = True
            text.loc[variant, column] = cell
    return text, flags


def style_summary(summary: pd.DataFrame, digits: int = 1, exclude: Sequence[str] = ()):
    """A pandas Styler of :func:`format_summary` with the best cell of each column in bold."""
    text, flags = format_summary(summary, digits, exclude=exclude)
    bold = flags.replace({True: "font-weight: bold", False: ""})
    return text.style.apply(lambda _: bold, axis=None).set_table_attributes('class="dataframe"')


def origins(finetuned: Mapping[tuple[str, str, int, int], Mapping]) -> dict[str, set[str]]:
    """Task -> the set of origins (``hub:...`` / ``packaged:...``) found in fine-tuning payloads."""
    found: dict[str, set[str]] = {}
    for (_, task, *_), payload in finetuned.items():
        found.setdefault(task, set()).add(str(payload.get("origin", "unknown")))
    return found


# ----------------------------------------------------------------------------- verdicts


def paper_claims(classification: str = "classification", span: str = "span",
                 span_tasks: Sequence[str] = ("squad", "squad_v2"),
                 selection: pd.DataFrame | None = None) -> list[Claim]:
    """The paper's claims about task scores (PAPER.md), as :class:`Claim` objects on the columns
    ``classification`` and ``span`` (group averages) and the ``span_tasks``.

    "The best models on each SQuAD version use fully learnable RPE" compares, on each span task,
    the best variant with ``rpe-learned`` with every variant without it. The best is chosen on
    ``selection``, per-seed scores of the **validation** split (:func:`~pe_book.stats.best_on`),
    and the claim is then tested on the test split: choosing on the tested scores would favour
    the claim. Without ``selection`` (or a score for it) that task's comparisons start from
    ``rpe-learned`` itself."""
    rpe_models = [v for v in SINGLE_PES + COMBINATIONS if has_offset_table(v)]
    with_learned_rpe = [v for v in PAPER_VARIANTS if parse_variant(v).relative == "rpe-learned"]
    best_rpe_learned = []
    for task in span_tasks:
        best = (best_on(selection, task, with_learned_rpe) if selection is not None else None) or "rpe-learned"
        best_rpe_learned += [Comparison(best, v, task) for v in PAPER_VARIANTS if v not in with_learned_rpe]
    return [
        Claim("cls-ape-best", "Fully learnable APE is the best single PE on classification (GLUE average).",
              tuple(Comparison("ape-learned", v, classification) for v in SINGLE_PES if v != "ape-learned"), "all"),
        Claim("cls-combination", "Among APE+RPE combinations, fully learnable APE + learnable sinusoidal RPE is "
              "relatively better on classification.",
              tuple(Comparison("ape-learned+rpe-sin-learned", v, classification)
                    for v in COMBINATIONS if v != "ape-learned+rpe-sin-learned"), "most"),
        Claim("cls-combining-not-always", "Combining APE and RPE does not always help classification "
              "(some combination scores below its APE alone).",
              tuple(Comparison(parse_variant(v).absolute, v, classification) for v in COMBINATIONS), "any"),
        Claim("span-rpe-beats-ape", "On span prediction (SQuAD average), almost every model with an RPE beats "
              "fully learnable APE.",
              tuple(Comparison(v, "ape-learned", span) for v in rpe_models), "most"),
        Claim("span-best-learned-rpe", "The best models on each SQuAD version use fully learnable RPE "
              "(best chosen on the validation split).",
              tuple(best_rpe_learned), "all"),
        Claim("span-none-drops", "Span prediction drops sharply without any PE (every PE beats none).",
              tuple(Comparison(v, "none", span) for v in SINGLE_PES + COMBINATIONS), "all"),
        Claim("learnable-sin-beats-fixed", "Learnable sinusoidal PEs beat fixed ones (APE and RPE, "
              "classification and span averages).",
              tuple(Comparison(f"{kind}-sin-learned", f"{kind}-sin", column)
                    for kind in ("ape", "rpe") for column in (classification, span)), "most"),
    ]


# ----------------------------------------------------------------------------- the [CLS] hypothesis


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
    if row["outcome"]:
        return SUPPORTED if row["outcome"] > 0 else CONTRADICTED
    if row["chance"] == "at chance":
        return AT_CHANCE
    return VARIANCE_UNKNOWN if row["variance"] == "pretraining variance unknown" else UNDECIDED


def cls_gap(per_seed: pd.DataFrame, reference: str, pairs: Mapping[str, str], column: str,
            baselines: Mapping[str, float] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Does untying [CLS] close the gap between an RPE and the ``reference`` (fully learnable APE)
    on ``column``? One row per ``untied -> tied`` pair: the three variant means, the gap before
    (``reference - tied``) and after (``reference - untied``), the share of the gap closed
    ``(untied - tied) / (reference - tied)`` (NaN when there is no gap), the gain of untying with
    its interval, and the verdicts of "untied beats tied" and "the reference still beats untied":
    the two comparisons of a pair are one family of :func:`~pe_book.stats.compare_family`
    (Holm over the two, Bonferroni intervals)."""
    means = summarise(per_seed[[column]])[(column, "mean")]

    def mean(variant: str) -> float:
        return float(means.get(variant, math.nan))

    rows = {}
    for untied, tied in pairs.items():
        family = compare_family((Comparison(untied, tied, column), Comparison(reference, untied, column)),
                                per_seed, baselines, alpha)
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
    """Verdict on "the score rises (``expected_sign=+1``) / falls (``-1``) with the indicator"."""
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


def assess_indicator_claims(table: pd.DataFrame, scores: Sequence[str], alpha: float = 0.05) -> pd.DataFrame:
    """:data:`INDICATOR_CLAIMS` for each score column, from a :func:`correlations` table."""
    rows = []
    for key, text, indicator, sign in INDICATOR_CLAIMS:
        for score in scores:
            if (indicator, score) not in table.index:
                continue
            rho, p, n = table.loc[(indicator, score), ["rho", "p", "n"]]
            rows.append({"claim id": f"{key}-{score}", "claim": f"{text} {score}.", "indicator": indicator,
                         "score": score, "rho": rho, "p": p, "n": int(n),
                         "verdict": correlation_verdict(rho, p, int(n), sign, alpha)})
    return pd.DataFrame(rows).set_index("claim id") if rows else pd.DataFrame(
        columns=["claim", "indicator", "score", "rho", "p", "n", "verdict"])
