"""A profile's stored results as data: one tidy table of every score it holds, and its pretrained
models, found by variant and seed (never by a folder's hash).

Both read the store's folders through their checksums (:meth:`Store.read`) and compute nothing:
no corpus, tokenizer or task data is needed, so they work on a fresh clone and outside the
repository (give ``results``). A folder's name says what it holds (:func:`stage_name`):
``finetune-sst2-p1-step8000-seed2-<key>`` is the fine-tuning seed 2 on sst2 of the snapshot at
step 8,000 of pretraining seed 1; without ``step`` it is the pretraining's final model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pe_book.experiments.profiles import get_profile
from pe_book.experiments.store import Store
from pe_lib.data.tasks import get_task
from pe_lib.errors import InputError
from pe_lib.training.metrics import scale_metric

#: ``<stage>[-<task>]-p<seed>[-step<N>][-seed<F>]-<key>``, the store's folder names.
FOLDER = re.compile(r"(?P<stage>[a-z]+)(?:-(?P<task>[a-z0-9_]+))?-p(?P<pretrain_seed>\d+)"
                    r"(?:-step(?P<step>\d+))?(?:-seed(?P<finetune_seed>\d+))?-(?P<key>[0-9a-f]{12})")
#: The tidy table's columns, in order.
COLUMNS = ["profile", "variant", "pretrain_seed", "finetune_seed", "steps", "task", "split", "metric",
           "value", "se", "points", "key", "git_commit"]


@dataclass(frozen=True)
class Located:
    """A store folder's place: variant, the parts of its name, and the folder itself."""
    variant: str
    stage: str
    task: str | None
    pretrain_seed: int
    step: int | None
    finetune_seed: int | None
    key: str
    folder: Path


def locate(folder: Path) -> Located | None:
    """What ``folder``'s name says it holds; None for a folder of another kind (baselines, unigram)."""
    match = FOLDER.fullmatch(folder.name)
    if match is None:
        return None
    step, finetune_seed = (int(match[name]) if match[name] else None for name in ("step", "finetune_seed"))
    return Located(folder.parent.name, match["stage"], match["task"], int(match["pretrain_seed"]),
                   step, finetune_seed, match["key"], folder)


def profile_store(profile: str, results: str | Path = "results") -> Store:
    """The store of ``profile`` under ``results``; a clear error when it holds nothing."""
    store = Store(results, get_profile(profile).results_folder)
    if not store.artifact_folders():
        raise InputError(f"{store.root} holds no artifacts of profile {profile!r}; give --results the folder "
                         "that holds the published results (a clone's results/)")
    return store


def score_table(profile: str, results: str | Path = "results") -> pd.DataFrame:
    """Every score of ``profile``'s stored results, one row a value (:data:`COLUMNS`): each
    fine-tuning's validation and test metrics, and each pretraining's validation MLM loss (task
    ``mlm``, metric ``loss``). ``steps`` is the pretraining steps of the model that was scored;
    ``value`` and ``se`` (the test set's bootstrap standard error, where the fine-tuning recorded
    it: finetune 3) are on the metric's own scale (accuracy and correlations in [0, 1], span metrics
    in percent); ``points`` is the score in percent as the book's tables show it."""
    store = profile_store(profile, results)
    pretrainings = {p.key: p for p in map(locate, store.artifact_folders()) if p is not None and p.stage == "pretrain"}
    rows = []
    for place in map(locate, store.artifact_folders()):
        if place is None or place.stage not in ("pretrain", "finetune"):
            continue
        artifact = store.read(place.folder)
        if artifact is None:
            continue
        config = artifact.provenance["config"]
        common = dict(profile=profile, variant=place.variant, pretrain_seed=place.pretrain_seed,
                      finetune_seed=place.finetune_seed, key=place.key, git_commit=artifact.provenance["git_commit"])
        if place.stage == "pretrain":
            result = artifact.payload["result"]
            rows.append(dict(common, steps=result["steps"], task="mlm", split="validation", metric="loss",
                             value=number(result["validation_loss"]), points=float("nan")))
            continue
        steps = model_steps(place, pretrainings.get(config["pretrain"]), store)
        kind = get_task(place.task).meta.kind
        for split in ("validation", "test"):
            errors = artifact.payload.get("test_se", {}) if split == "test" else {}
            for metric, value in artifact.payload[split].items():
                rows.append(dict(common, steps=steps, task=place.task, split=split, metric=metric,
                                 value=number(value), se=number(errors.get(metric)),
                                 points=scale_metric(value, kind, metric)))
    table = pd.DataFrame(rows, columns=COLUMNS).astype({"finetune_seed": "Int64", "steps": "Int64"})
    return table.sort_values(["variant", "pretrain_seed", "steps", "task", "finetune_seed", "split", "metric"],
                             ignore_index=True)


def number(value) -> float:
    """A stored metric as a float; NaN for none (a diverged model's missing score)."""
    return float(value) if value is not None else float("nan")


def model_steps(place: Located, pretraining: Located | None, store: Store) -> int | None:
    """The pretraining steps of the model a fine-tuning started from: its snapshot's step, else
    those of its pretraining artifact (None when that is not stored)."""
    if place.step is not None:
        return place.step
    artifact = store.read(pretraining.folder) if pretraining is not None else None
    return artifact.payload["result"]["steps"] if artifact is not None else None


def model_folder(profile: str, variant: str, pretrain_seed: int = 0, steps: int | None = None,
                 results: str | Path = "results") -> Path:
    """The folder of ``profile``'s stored pretrained model of ``variant`` (pretraining seed
    ``pretrain_seed``; ``steps``: a snapshot's step, None for the final model), checked against
    its manifest; one line naming what is stored when it is not."""
    store = profile_store(profile, results)
    pretrainings = [p for p in map(locate, store.artifact_folders())
                    if p is not None and p.stage == "pretrain" and p.variant == variant]
    found = [p for p in pretrainings if p.pretrain_seed == pretrain_seed and p.step == steps]
    if len(found) != 1 or store.read(found[0].folder) is None or not (found[0].folder / "model").is_dir():
        held = [p for p in pretrainings if (p.folder / "model").is_dir()]
        stored = ", ".join(f"seed {p.pretrain_seed}" + (f" at step {p.step}" if p.step else "") for p in held)
        variants = sorted({p.variant for p in map(locate, store.artifact_folders()) if p and p.stage == "pretrain"})
        raise InputError(f"{store.root} holds no single readable model of {variant} with pretraining seed "
                         f"{pretrain_seed}" + (f" at step {steps}" if steps else "") + "; " +
                         (f"its models of {variant}: {stored}" if held else f"its variants: {', '.join(variants)}"))
    return found[0].folder / "model"


def load_published(profile: str, variant: str, pretrain_seed: int = 0, steps: int | None = None,
                   results: str | Path = "results"):
    """The stored pretrained model (a :class:`pe_lib.PEBertForMaskedLM`, in evaluation mode) of
    ``variant`` in ``profile``'s results: ``load_published("cpu", "rope", pretrain_seed=1)``."""
    from pe_book.experiments.results import load_model

    return load_model(model_folder(profile, variant, pretrain_seed, steps, results))
