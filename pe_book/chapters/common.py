"""What every result chapter starts from: the runner on the store, the table of its parameters
and data, the tasks it covers, and the fine-tuned results of its variants.

The ``ensure_*`` methods of the runner compute what the store lacks (a notebook rerun with other
parameters trains what it needs); on the published profiles everything is found.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from pe_book.experiments.profiles import get_profile
from pe_book.experiments.runner import Runner
from pe_book.tables import origin_table
from pe_lib.data.tasks import TASKS, get_task

def open_runner(profile: str, results: str = "results"):
    """A :class:`~pe_book.experiments.runner.Runner` of the named profile on the artifact store
    ``results``, without progress bars (notebooks read artifacts through it)."""

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


def chapter_tasks(requested: Sequence[str], default: Sequence[str], span: bool) -> dict:
    """The task specs of a fine-tuning chapter: the ``requested`` ones, which must all be of the
    chapter's kind (span prediction or sentence level), else the ``default`` ones of that kind."""
    specs = {t: get_task(t) for t in (requested or default)}  # raises on an unknown task
    if not requested:
        return {t: s for t, s in specs.items() if (s.meta.kind == "span") == span}
    wrong = [t for t, s in specs.items() if (s.meta.kind == "span") != span]
    if wrong:
        kind = "span-prediction" if span else "sentence-level"
        valid = [t for t, s in TASKS.items() if (s.meta.kind == "span") == span]
        raise ValueError(f"this chapter shows {kind} tasks, not {', '.join(wrong)}; valid: {', '.join(valid)}")
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
