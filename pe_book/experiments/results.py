"""The results of a profile, read only: its keys, its plan and its stored artifacts.

Every artifact is keyed by the hash of everything that produced it (:meth:`Results.pretrain_config`
and the other ``*_config`` methods: the profile's settings, the data's fingerprints and a per-stage
code version). A :class:`Results` forms those keys and reads the artifacts they name
(:meth:`Results.pretrained`, :meth:`Results.analysis`, :meth:`Results.extrapolation`,
:meth:`Results.finetuned`, :meth:`Results.baselines`, :meth:`Results.unigram`); it never computes
one: a missing artifact raises :class:`MissingResult`, naming it and the command that computes it.
The chapters, the verdicts' tables and the README's headline read through it. The pipeline that
computes (:class:`pe_book.experiments.runner.Runner`) is a :class:`Results` that also computes what
the store lacks, so the keys it writes under are the keys read here.

A :class:`Results` takes the data it forms keys from out of the store's data record
(:mod:`pe_book.experiments.stored_data`) where one fits its profile, and so needs no data cache;
where none fits it reads the data as the pipeline does.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from importlib.metadata import version
from pathlib import Path

from pe_book.experiments.baselines import UNIGRAM_SMOOTHING
from pe_book.experiments.profiles import Profile
from pe_book.experiments.store import Artifact, Store
from pe_book.experiments.stored_data import (RECORD, StoredCorpus, StoredTask, data_settings, every_record, same_rows,
                                             task_settings)
from pe_lib.config import PEBertConfig
from pe_lib.data.cache import cache_root
from pe_lib.data.tasks import prepared_folder
from pe_lib.errors import InputError
from pe_lib.extrapolation import BUCKETS_PER_LENGTH
from pe_lib.io import MANIFEST, content_key, manifested_dir, sha256_file, verified
from pe_lib.model import PEBertForMaskedLM, quiet_transformers
from pe_lib.positions import parse_variant
from pe_lib.training.checkpoints import finished_result, finished_snapshot, snapshot_dir
from pe_lib.training.distributed import launched_processes
from pe_lib.training.pretrain_config import PretrainConfig, config_identity

#: The version of the code behind each stage, part of every artifact key of that stage. Bump a
#: stage's number in the commit that changes its numbers (not for a refactor that changes none),
#: so changed code never reuses a stale artifact and a pure refactor keeps every committed one.
#: What each number brought: studies/README.md, "Code versions".
#: ``pe_lib.probing.ANALYSIS_WINDOW`` is part of the analysis stage's code: a change of it goes with
#: a bump of ``CODE_VERSIONS["analysis"]``.
CODE_VERSIONS = {"pretrain": 1, "analysis": 1, "extrapolation": 1, "finetune": 3, "baselines": 2}
#: Stages keyed by another stage's code version (the unigram loss is a baseline).
CODE_STAGE = {"unigram": "baselines"}
#: Where a pretraining artifact keeps its model, under ``Profile.weights_in_store``.
STORED_MODEL = "model"
#: Where the cache keeps task fingerprints (:meth:`Results.task_fingerprint`): a folder each, its
#: value in ``fingerprint`` with a manifest (the plain files of ``fingerprints/`` had no checksum).
KEPT_FINGERPRINTS = "task-fingerprints"


class MissingResult(InputError):
    """An artifact that is not stored was read (:class:`Results` computes nothing)."""


def code_stage(stage: str) -> str:
    """The stage whose code version keys ``stage`` (itself, or :data:`CODE_STAGE`'s), also the
    :attr:`Results.timings` entry its wall time goes to."""
    return CODE_STAGE.get(stage, stage)


def kept_fingerprint(folder: Path | None) -> str | None:
    """The task fingerprint kept in ``folder`` (:data:`KEPT_FINGERPRINTS`), or None: none kept, or
    one failing its manifest (named in one warning; the caller computes it again and keeps it)."""
    if folder is None or not verified(folder, "task fingerprint", required=["fingerprint"]):
        return None
    return (folder / "fingerprint").read_text(encoding="utf-8")


def keep_fingerprint(folder: Path, value: str) -> None:
    """Keep a task fingerprint in ``folder``, with its manifest (atomically)."""
    with manifested_dir(folder, "task fingerprint") as work:
        (work / "fingerprint").write_text(value, encoding="utf-8")


def stage_name(stage: str, pretrain_seed: int, *parts: str, snapshot: int | None = None) -> str:
    """A store folder's stage: ``pretrain-p0``, ``analysis-p1``, ``finetune-sst2-p0-seed2``, ...
    (``p``: the pretraining seed); a snapshot's adds its step: ``analysis-p0-step2000``."""
    at = (f"step{snapshot}",) if snapshot is not None else ()
    return "-".join((stage, *parts[:1], f"p{pretrain_seed}", *at, *parts[1:]))


@dataclass(frozen=True)
class Place:
    """Where an artifact lives in the store: the ``variant`` folder (or :attr:`Results.BASELINES`),
    its ``stage`` name and the ``config`` its key hashes."""
    variant: str
    stage: str
    config: dict


@dataclass(frozen=True)
class PlannedArtifact:
    variant: str
    stage: str
    config: dict
    folder: Path
    stored: bool


class Results:
    """The stored results of ``profile`` in the artifact store ``results``, read only; ``work`` is
    the work folder whose finished runs hold the weights that the store does not keep."""

    #: The store folder of the baselines (beside the variants' folders; not a variant).
    BASELINES = "baselines"

    def __init__(self, profile: Profile, results: str | Path = "results", work: str | Path | None = None,
                 cache_dir: str | Path | None = None, progress: bool = True):
        self.profile = profile
        self.store = Store(results, profile.results_folder)
        self.cache_dir = cache_dir
        self.work = Path(work) if work is not None else cache_root(cache_dir) / "runs"
        self.progress = progress
        self.timings: dict[str, float] = defaultdict(float)  # wall seconds by stage, reading the data included
        self._tokenizer = None
        self._corpus = None
        self._tasks: dict = {}
        self._task_keys: dict[str, str] = {}
        self._data_key: dict | None = None  # data_fingerprint, computed at its first call
        self._model_keys: dict[str, dict] = {}  # model_identity, by variant
        self._stored_precision: str | None = None  # of the store's pretrained models
        self._facts, self._task_facts = self._record()

    def _record(self) -> tuple[dict | None, dict[str, dict]]:
        """The data record's facts that fit the profile (the pretraining data's, or None) and the
        recorded tasks whose rows the profile reads, by name: its own record's, or another profile's
        beside it (:mod:`pe_book.experiments.stored_data`)."""
        records = every_record(self.store.root)
        facts = next((facts for facts in records if facts["settings"] == data_settings(self.profile)), None)
        tasks = {}
        for task in self.profile.tasks:
            found = (facts["tasks"][task] for facts in records if task in facts["tasks"])
            match = next((f for f in found if same_rows(f, task_settings(self.profile, task))), None)
            if match is not None:
                tasks[task] = match
        return facts, tasks

    def with_profile(self, profile: Profile) -> Results:
        """The results of ``profile`` in the same store, work folder and cache (a study weighing
        another profile's plan against its own artifacts)."""
        return Results(profile, self.store.root.parent, self.work, self.cache_dir, self.progress)

    # ------------------------------------------------------------------ data

    @property
    def tokenizer(self):
        """The recorded tokenizer, else the profile's (trained on its corpus when missing)."""
        if self._tokenizer is None and self._facts is not None:
            from transformers import BertTokenizer

            self._tokenizer = BertTokenizer.from_pretrained(self.store.root / RECORD)
        if self._tokenizer is None:
            from pe_lib.data import load_tokenizer

            t0 = time.perf_counter()
            self._tokenizer = load_tokenizer(**self.profile.tokenizer, source=self.profile.data_source, cache_dir=self.cache_dir,
                                             progress=self.progress)
            self.timings["data"] += time.perf_counter() - t0
        return self._tokenizer

    @property
    def corpus(self):
        """The recorded corpus's origin and card, else the prepared corpus."""
        if self._corpus is None and self._facts is not None:
            self._corpus = StoredCorpus(**self._facts["corpus"])
        if self._corpus is None:
            from pe_lib.data import load_corpus

            self._corpus = load_corpus(self.profile.data_source, self.cache_dir, progress=self.progress)
        return self._corpus

    def _corpus_identity(self) -> str:
        """What names the pretraining text in :meth:`data_fingerprint`: the prepared corpus's folder."""
        return self.corpus.folder.name

    def data_fingerprint(self) -> dict:
        """What identifies the pretraining data, computed once: the prepared corpus (origin + key)
        or, for data given directly, its content; the tokenizer's vocabulary; the caps. The
        recorded fingerprint where the data record fits."""
        if self._data_key is None and self._facts is not None:
            self._data_key = self._facts["data"]
        if self._data_key is None:
            self._data_key = {"corpus": self._corpus_identity(), "tokenizer": content_key(self.tokenizer.get_vocab()),
                              "corpus_tokens": self.profile.corpus_tokens, "seq_len": self.profile.seq_len}
        return self._data_key

    def task(self, name: str):
        """A fine-tuning task, loaded once, train capped and evaluation splits cut; where the data
        record has it, its recorded origin and split sizes (no example is read)."""
        if name not in self._tasks and name in self._task_facts:
            from pe_lib.data.tasks import get_task

            facts = self._task_facts[name]
            self._tasks[name] = StoredTask(get_task(name).meta, facts["origin"],
                                           {split: range(n) for split, n in facts["examples"].items()})
        if name not in self._tasks:
            from pe_lib.data import load_task

            t0 = time.perf_counter()
            task = load_task(name, self.profile.data_source, self.cache_dir, max_train=self.profile.max_train_for(name))
            if self.profile.task_max_eval is not None:
                for split in ("validation", "test"):
                    task.splits[split] = task.splits[split].select(range(min(self.profile.task_max_eval, len(task.splits[split]))))
            self._tasks[name] = task
            self.timings["data"] += time.perf_counter() - t0
        return self._tasks[name]

    def task_fingerprint(self, name: str) -> str:
        """What identifies a task's data as the pipeline uses it: its origin and the content of every
        example of the (capped) splits, so a changed builder can never reuse a stale artifact. The
        recorded fingerprint where the data record has the task. A task not loaded yet whose
        prepared folder is intact takes the value kept at an earlier load of the same files
        (:meth:`_kept_fingerprint`, through its manifest: a damaged one is named in one warning and
        computed again), so a dry run reads no example."""
        if name not in self._task_keys and name in self._task_facts:
            self._task_keys[name] = self._task_facts[name]["fingerprint"]
        if name not in self._task_keys:
            value = kept_fingerprint(self._kept_fingerprint(name)) if name not in self._tasks else None
            if value is None:
                task = self.task(name)
                digest = hashlib.sha256(task.origin.encode())
                for split in ("train", "validation", "test"):
                    for row in task.splits[split].to_list():
                        digest.update(json.dumps(row, sort_keys=True, separators=(",", ":")).encode())
                value = digest.hexdigest()[:16]
                if task.folder is not None:
                    keep_fingerprint(self._kept_fingerprint(name, task.folder), value)
            self._task_keys[name] = value
        return self._task_keys[name]

    def _kept_fingerprint(self, name: str, folder: Path | None = None) -> Path | None:
        """The folder that keeps :meth:`task_fingerprint`'s value for a task read from a prepared
        folder (by default the intact one that would be read; None where there is none, or the
        hub would be read): it is named after all that the value depends on, the folder's manifest
        (the sha256 of each of its files), the caps and the libraries that render the rows."""
        folder = folder or prepared_folder(name, self.profile.data_source, self.cache_dir)
        if folder is None:
            return None
        identity = content_key({"manifest": sha256_file(folder / MANIFEST), "max_train": self.profile.max_train_for(name),
                                "max_eval": self.profile.task_max_eval, "datasets": version("datasets"),
                                "pyarrow": version("pyarrow")}, 16)
        return cache_root(self.cache_dir) / KEPT_FINGERPRINTS / f"{folder.name}-{identity}"

    # ------------------------------------------------------------------ keys

    def code_version(self, stage: str) -> int:
        """The code version of ``stage`` in this profile's keys: the code's own (:data:`CODE_VERSIONS`),
        unless the profile pins the older version its stored results were computed with."""
        return self.profile.code_versions.get(stage, CODE_VERSIONS[stage])

    def model_config(self, variant: str) -> PEBertConfig:
        return PEBertConfig(vocab_size=len(self.tokenizer), position_embedding=variant,
                            pad_token_id=self.tokenizer.pad_token_id, **self.profile.model)

    def model_identity(self, variant: str) -> dict:
        """The model of ``variant`` in a pretraining key, computed once per variant: its configuration's
        fields that differ from the defaults, without the library's version (provenance, not key: an
        upgrade that changes no number keeps the artifacts)."""
        if variant not in self._model_keys:
            diff = self.model_config(variant).to_diff_dict()
            self._model_keys[variant] = {k: v for k, v in diff.items() if k != "transformers_version"}
        return self._model_keys[variant]

    def run_pretrain_config(self, pretrain_seed: int = 0) -> PretrainConfig:
        """The pretraining run of a seed: the profile's, snapshots included."""
        return replace(self.profile.pretrain, seed=pretrain_seed)

    def snapshot(self, steps: int | None) -> int | None:
        """``steps`` as a snapshot step: None for the run's last step (the final model)."""
        return None if steps in (None, self.profile.pretrain.steps) else self.profile.pretrain.at(steps).steps

    def pretrain_config(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> dict:
        """The key of the model pretrained for ``steps`` (default: the profile's steps). A snapshot's
        is the configuration of a run of that length: the same model, whichever run kept it. A run
        launched as N > 1 processes (torchrun, ``accelerate launch``) is another run than 1 process's
        (:mod:`pe_lib.training.distributed`): its key has ``processes``; a 1-process key has none, as
        before the count was recorded."""
        variant = parse_variant(variant).name
        pretrain = self.run_pretrain_config(pretrain_seed).at(steps or self.profile.pretrain.steps)
        processes = launched_processes()
        return {"stage": "pretrain", "code_version": self.code_version("pretrain"), "variant": variant,
                "model": self.model_identity(variant), "pretrain": config_identity(pretrain), "data": self.data_fingerprint(),
                **({"processes": processes} if processes > 1 else {})}

    def pretrain_key(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> str:
        return Store.key(self.pretrain_config(variant, pretrain_seed, steps))

    def analysis_config(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> dict:
        return {"stage": "analysis", "code_version": self.code_version("analysis"),
                "pretrain": self.pretrain_key(variant, pretrain_seed, steps), "probe": self.profile.probe}

    def extrapolation_config(self, variant: str, pretrain_seed: int = 0) -> dict:
        """The masked validation tokens are drawn with seed 0 for every model, so all are scored on the same ones."""
        multipliers = list(self.profile.extrapolation_multipliers)
        return {"stage": "extrapolation", "code_version": self.code_version("extrapolation"),
                "pretrain": self.pretrain_key(variant, pretrain_seed),
                "multipliers": multipliers, "lengths": [m * self.profile.seq_len for m in multipliers],
                "tokens": self.profile.extrapolation_tokens, "seed": 0,
                "bucket": max(1, self.profile.seq_len // BUCKETS_PER_LENGTH)}

    def finetune_config(self, variant: str, task: str, seed: int, pretrain_seed: int = 0, steps: int | None = None) -> dict:
        return {"stage": "finetune", "code_version": self.code_version("finetune"),
                "pretrain": self.pretrain_key(variant, pretrain_seed, steps), "task": task, "seed": seed,
                "finetune": asdict(replace(self.profile.finetune_for(task), seed=seed)), "data": self.task_fingerprint(task)}

    def baselines_config(self, task: str) -> dict:
        return {"stage": "baselines", "code_version": self.code_version("baselines"), "task": task, "data": self.task_fingerprint(task)}

    def unigram_config(self) -> dict:
        cfg = self.profile.pretrain
        return {"stage": "unigram", "code_version": self.code_version("baselines"), "data": self.data_fingerprint(),
                "validation": {"batch_size": cfg.batch_size, "eval_batches": cfg.eval_batches, "mask_prob": cfg.mask_prob},
                "smoothing": UNIGRAM_SMOOTHING}

    # ------------------------------------------------------------------ places: one per stage, read and computed alike

    def pretrain_place(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Place:
        return Place(variant, stage_name("pretrain", pretrain_seed, snapshot=self.snapshot(steps)),
                     self.pretrain_config(variant, pretrain_seed, steps))

    def analysis_place(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Place:
        return Place(variant, stage_name("analysis", pretrain_seed, snapshot=self.snapshot(steps)),
                     self.analysis_config(variant, pretrain_seed, steps))

    def extrapolation_place(self, variant: str, pretrain_seed: int = 0) -> Place:
        return Place(variant, stage_name("extrapolation", pretrain_seed), self.extrapolation_config(variant, pretrain_seed))

    def finetune_place(self, variant: str, task: str, seed: int, pretrain_seed: int = 0, steps: int | None = None) -> Place:
        return Place(variant, stage_name("finetune", pretrain_seed, task, f"seed{seed}", snapshot=self.snapshot(steps)),
                     self.finetune_config(variant, task, seed, pretrain_seed, steps))

    def baselines_place(self, task: str) -> Place:
        return Place(self.BASELINES, f"baselines-{task}", self.baselines_config(task))

    def unigram_place(self) -> Place:
        return Place(self.BASELINES, "unigram", self.unigram_config())

    # ------------------------------------------------------------------ stored artifacts

    def stored(self, place: Place) -> Artifact | None:
        """The stored artifact at ``place``, checksum-valid, or None."""
        return self.store.load(place.variant, place.stage, place.config)

    def _read(self, place: Place) -> Artifact:
        """The stored artifact at ``place``, checksum-valid, else :class:`MissingResult` naming it."""
        found = self.stored(place)
        if found is None:
            raise MissingResult(f"{self.store.folder(place.variant, place.stage, place.config)} is not stored: "
                                f"compute it with `pe-book run --profile {self.profile.name}`")
        return found

    def pretrained(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Artifact:
        """The result and curve of the model pretrained for ``steps`` (default: the profile's steps;
        a snapshot step gives the curve up to it)."""
        return self._read(self.pretrain_place(variant, pretrain_seed, steps))

    def analysis(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Artifact:
        """PE proximity matrices, identical-word attention and indicators, at init and after pretraining."""
        return self._read(self.analysis_place(variant, pretrain_seed, steps))

    def extrapolation(self, variant: str, pretrain_seed: int = 0) -> Artifact:
        """MLM loss of the pretrained model at each multiple of the pretraining length."""
        return self._read(self.extrapolation_place(variant, pretrain_seed))

    def finetuned(self, variant: str, task: str, seed: int, pretrain_seed: int = 0, steps: int | None = None) -> Artifact:
        """The fine-tuning of the model pretrained for ``steps`` on a task with a fine-tuning seed."""
        return self._read(self.finetune_place(variant, task, seed, pretrain_seed, steps))

    def baselines(self, task: str) -> Artifact:
        """The baselines of a task (:func:`pe_book.experiments.baselines.task_baselines`)."""
        return self._read(self.baselines_place(task))

    def unigram(self) -> Artifact:
        """The validation loss of a unigram model of the training blocks
        (:func:`pe_book.experiments.baselines.unigram_validation_loss`)."""
        return self._read(self.unigram_place())

    # ------------------------------------------------------------------ models

    def run_dir(self, variant: str, pretrain_seed: int = 0) -> Path:
        """The run folder (checkpoints, snapshots, final model) of a variant's pretraining seed."""
        config = {**self.pretrain_config(variant, pretrain_seed), "pretrain": config_identity(self.run_pretrain_config(pretrain_seed))}
        return self.work / self.profile.results_folder / f"{variant}-{Store.key(config)}"

    def model_dir(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Path:
        """The saved model pretrained for ``steps``: the run's final model or one of its snapshots."""
        snapshot = self.snapshot(steps)
        run_dir = self.run_dir(variant, pretrain_seed)
        return run_dir / "model" if snapshot is None else snapshot_dir(run_dir, snapshot) / "model"

    def has_weights(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> bool:
        """Whether the model pretrained for ``steps`` is at hand, checksum-valid: stored with its
        pretraining artifact, or finished in the work folder."""
        stored = self.stored(self.pretrain_place(variant, pretrain_seed, steps))
        if stored is not None and (stored.folder / STORED_MODEL).is_dir():
            return True
        run_dir, snapshot = self.run_dir(variant, pretrain_seed), self.snapshot(steps)
        return (finished_result(run_dir) if snapshot is None else finished_snapshot(run_dir, snapshot)) is not None

    def weights(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Path:
        """The folder of the model pretrained for ``steps``: the one stored with its pretraining
        artifact (checked against the artifact's manifest), else the work folder's finished one
        (checked against its manifests), else :class:`MissingResult`."""
        stored = self.pretrained(variant, pretrain_seed, steps).folder / STORED_MODEL
        if stored.is_dir():
            return stored
        if not self.has_weights(variant, pretrain_seed, steps):
            raise MissingResult(f"{self.model_dir(variant, pretrain_seed, steps)} holds no finished model: "
                                f"train it with `pe-book run --profile {self.profile.name}`")
        return self.model_dir(variant, pretrain_seed, steps)

    def trained_model(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> PEBertForMaskedLM:
        """The pretrained model (:meth:`weights`)."""
        return load_model(self.weights(variant, pretrain_seed, steps))

    def stored_precision(self) -> str:
        """The precision the store's pretrained models ran in ("fp32", "bf16", both joined by a
        comma, or "" for none stored), read once, each through its manifest: a damaged one is named
        in a warning and left out (it is computed again), never read unchecked."""
        if self._stored_precision is None:
            stored = [self.store.read(folder) for folder in self.store.artifact_folders() if folder.name.startswith("pretrain-")]
            found = {artifact.payload["result"]["precision"] for artifact in stored if artifact is not None}
            self._stored_precision = ", ".join(sorted(found))
        return self._stored_precision

    # ------------------------------------------------------------------ plan

    def plan(self, variants: list[str] | None = None, tasks: list[str] | None = None) -> list[PlannedArtifact]:
        """Every artifact of the profile (or of the given variants/tasks), in the order the pipeline
        computes them (:meth:`pe_book.experiments.runner.Runner.run`), each marked stored (found and
        checksum-valid in the store) or to compute; nothing is computed (where no data record fits,
        the tokenizer, corpus and tasks are read to form the keys, so run ``pe-book data`` first)."""
        variants = [parse_variant(v).name for v in (variants or self.profile.variants)]
        tasks = list(tasks or self.profile.tasks)
        places = [self.unigram_place()] + [self.baselines_place(task) for task in tasks]
        planned = [self._planned(place) for place in places]
        for variant, p, steps in self.models(variants):
            planned += self.model_plan(variant, p, steps, tasks)
        return planned

    def model_plan(self, variant: str, pretrain_seed: int, steps: int, tasks: list[str]) -> list[PlannedArtifact]:
        """The artifacts of one model of :meth:`models`, in the pipeline's order: its pretraining
        first, then its analysis, its extrapolation (a final model's) and its fine-tunings on ``tasks``."""
        p = pretrain_seed
        places = [self.pretrain_place(variant, p, steps), self.analysis_place(variant, p, steps)]
        if self.snapshot(steps) is None:
            places.append(self.extrapolation_place(variant, p))
        places += [self.finetune_place(variant, task, seed, p, steps) for task in tasks for seed in self.profile.seeds_for(task)]
        return [self._planned(place) for place in places]

    def planned_pretraining(self, variant: str, pretrain_seed: int, steps: int) -> PlannedArtifact:
        """The pretraining artifact of one model of :meth:`models`, stored or to compute."""
        return self._planned(self.pretrain_place(variant, pretrain_seed, steps))

    def models(self, variants: list[str]) -> list[tuple[str, int, int]]:
        """``(variant, pretraining seed, steps)`` of every model of the profile, in the pipeline's
        order: budget by budget, then seed by seed, then variant by variant, so an interrupted run
        has the whole picture at the smaller budgets (a run folder resumes where it stopped)."""
        return [(variant, p, steps) for steps in self.profile.pretrain.budgets
                for p in range(max(len(self.profile.pretrain_seeds_for(v)) for v in variants))
                for variant in variants if p in self.profile.pretrain_seeds_for(variant)]

    def _planned(self, place: Place) -> PlannedArtifact:
        return PlannedArtifact(place.variant, place.stage, place.config, self.store.folder(place.variant, place.stage, place.config),
                               self.stored(place) is not None)

    def orphans(self, planned: list[PlannedArtifact]) -> list[Path]:
        """Artifact folders in the store that no planned artifact names: made by other code or
        another configuration (or another profile's variants), never read by this one."""
        wanted = {a.folder for a in planned}
        return [folder for folder in self.store.artifact_folders() if folder not in wanted]


def load_model(folder: Path) -> PEBertForMaskedLM:
    """The pretrained model saved in ``folder``, in evaluation mode."""
    with quiet_transformers():
        return PEBertForMaskedLM.from_pretrained(folder).eval()
