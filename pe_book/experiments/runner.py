"""The runner: computes exactly what the artifact store lacks for a profile.

For each variant: pretraining (resumable, checkpoints in the work folder), the analysis of its
position embeddings at initialisation and after pretraining (proximity matrices, probing attention,
indicators, learned frequencies), the MLM loss at multiples of the pretraining length (length
extrapolation), and fine-tuning on every task and seed of the profile. Each result
is an artifact keyed by the hash of everything that produced it; a notebook asks ``Runner.ensure_*``
and gets plain data back.
"""
from __future__ import annotations

import functools
import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from pe_book.experiments.baselines import UNIGRAM_SMOOTHING, task_baselines, unigram_validation_loss
from pe_book.experiments.profiles import Profile
from pe_book.experiments.store import Artifact, Store, git_commit
from pe_lib.config import PEBertConfig
from pe_lib.errors import InputError
from pe_lib.extrapolation import BUCKETS_PER_LENGTH, length_extrapolation
from pe_lib.data.cache import cache_root
from pe_lib.data.tasks import prepared_folder
from pe_lib.io import MANIFEST, content_key, manifested_dir, remove_stale_parts, sha256_file, verified
from pe_lib.model import PEBertForMaskedLM, quiet_transformers
from pe_lib.positions import parse_variant
from pe_lib.probing import ANALYSIS_WINDOW, analyse_positions
from pe_lib.training.finetune import FinetuneConfig, TaskFeatures, feature_cut, finetune, task_features
from pe_lib.training.checkpoints import finished_result, finished_snapshot, snapshot_dir
from pe_lib.training.distributed import launched_processes
from pe_lib.training.mlm import MLMData, text_blocks
from pe_lib.training.optim import use_bf16
from pe_lib.training.pretrain import pretrain
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


#: Where the cache keeps task fingerprints (:meth:`Runner.task_fingerprint`): a folder each, its
#: value in ``fingerprint`` with a manifest (the plain files of ``fingerprints/`` had no checksum).
KEPT_FINGERPRINTS = "task-fingerprints"


class MissingResult(InputError):
    """A runner that may not compute (``compute=False``: a book built from the stored results
    only) was asked for an artifact its store lacks."""


def code_stage(stage: str) -> str:
    """The stage whose code version keys ``stage`` (itself, or :data:`CODE_STAGE`'s), also the
    :attr:`Runner.timings` entry its wall time goes to."""
    return CODE_STAGE.get(stage, stage)


def check_apart(store: Path, runs: Path) -> None:
    """Refuse, in one line, a work folder whose run folders (``runs``) share the artifact store's
    folder: the store would take a run's ``model/`` for an artifact (an orphan, or a false one)."""
    store_at, runs_at = store.resolve(), runs.resolve()
    if store_at == runs_at or store_at in runs_at.parents or runs_at in store_at.parents:
        raise InputError(f"the artifact store {store} and the work folder's runs {runs} overlap: "
                         "use separate folders for the results and the work (--results, --work)")


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


def locked(method):
    """Run a Runner method while holding its store's lock (re-entrant). A runner that only reads
    takes none: every artifact appears in one rename, so a book can be built from a store while a
    chunk adds to it."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if not self.compute:
            return method(self, *args, **kwargs)
        with self.store.lock():
            return method(self, *args, **kwargs)

    return wrapper


class Runner:
    """Ensure the artifacts of ``profile`` exist in ``results``; heavy files go to ``work``."""

    def __init__(self, profile: Profile, results: str | Path = "results", work: str | Path | None = None,
                 cache_dir: str | Path | None = None, progress: bool = True, tokenizer=None, data: MLMData | None = None,
                 compute: bool = True):
        """``tokenizer`` and ``data`` replace the profile's (e.g. a user's own corpus). With
        ``compute=False`` the ``ensure_*`` methods only read: a missing artifact raises
        :class:`MissingResult`."""
        self.profile = profile
        git_commit()  # pins the code's commit for the provenance of everything this run saves
        self.store = Store(results, profile.results_folder)
        self.cache_dir = cache_dir
        self.work = Path(work) if work is not None else cache_root(cache_dir) / "runs"
        check_apart(self.store.root, self.work / profile.results_folder)
        self.progress = progress
        self.compute = compute
        self.timings: dict[str, float] = defaultdict(float)
        self._tokenizer = tokenizer
        self._data = data
        self._given_data = data is not None
        self._corpus = None
        self._tasks: dict = {}
        self._task_keys: dict[str, str] = {}
        self._features: dict[tuple[str, str], TaskFeatures] = {}  # by task and cut (task_features)
        self._data_key: dict | None = None  # data_fingerprint, computed at its first call
        self._model_keys: dict[str, dict] = {}  # model_identity, by variant
        self.stopped: str | None = None  # why the last run() ended before the profile's end, if it did
        self._stored_precision: str | None = None  # of the store's pretrained models (check_precision)

    def with_profile(self, profile: Profile) -> Runner:
        """A runner of ``profile`` on the same store, work folder, cache and given data (a study
        weighing another profile's plan against its own artifacts)."""
        return Runner(profile, self.store.root.parent, self.work, self.cache_dir, self.progress,
                      self._tokenizer if self._given_data else None, self._data if self._given_data else None,
                      self.compute)

    # ------------------------------------------------------------------ data

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from pe_lib.data import load_tokenizer

            t0 = time.perf_counter()
            self._tokenizer = load_tokenizer(**self.profile.tokenizer, source=self.profile.data_source, cache_dir=self.cache_dir,
                                             progress=self.progress)
            self.timings["data"] += time.perf_counter() - t0
        return self._tokenizer

    @property
    def corpus(self):
        if self._corpus is None:
            from pe_lib.data import load_corpus

            self._corpus = load_corpus(self.profile.data_source, self.cache_dir, progress=self.progress)
        return self._corpus

    def data_fingerprint(self) -> dict:
        """What identifies the pretraining data, computed once per runner: the prepared corpus
        (origin + key) or, for data given directly, its content; the tokenizer's vocabulary; the caps."""
        if self._data_key is None:
            text = hashlib.sha256(self._data.train.tobytes()).hexdigest()[:12] if self._given_data else self.corpus.folder.name
            self._data_key = {"corpus": text, "tokenizer": content_key(self.tokenizer.get_vocab()),
                              "corpus_tokens": self.profile.corpus_tokens, "seq_len": self.profile.seq_len}
        return self._data_key

    def mlm_data(self) -> MLMData:
        """Token blocks of the pretraining corpus, tokenised once and cached in the work folder."""
        if self._data is None:
            t0 = time.perf_counter()
            tok, corpus = self.tokenizer, self.corpus
            folder = self.work / "blocks" / content_key(self.data_fingerprint())
            if not verified(folder, "token blocks"):  # absent, or corrupt (reported): built again
                cap = self.profile.corpus_tokens
                blocks = {split: text_blocks(tok, corpus.lines(split), self.profile.seq_len,
                                             cap if split == "train" else cap and cap // 10)
                          for split in ("train", "validation")}
                with manifested_dir(folder, "token blocks") as work:
                    np.savez(work / "blocks.npz", **blocks)
            with np.load(folder / "blocks.npz", allow_pickle=False) as npz:
                self._data = MLMData.for_tokenizer(tok, npz["train"], npz["validation"])
            self.timings["data"] += time.perf_counter() - t0
        return self._data

    def task(self, name: str):
        """A fine-tuning task, loaded once per runner, train capped and evaluation splits cut."""
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

    # ------------------------------------------------------------------ configs

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
        stage = stage_name("pretrain", pretrain_seed, snapshot=self.snapshot(steps))
        stored = self.store.load(variant, stage, self.pretrain_config(variant, pretrain_seed, steps))
        if stored is not None and (stored.folder / STORED_MODEL).is_dir():
            return True
        run_dir, snapshot = self.run_dir(variant, pretrain_seed), self.snapshot(steps)
        return (finished_result(run_dir) if snapshot is None else finished_snapshot(run_dir, snapshot)) is not None

    def _pretrain(self, variant: str, pretrain_seed: int, steps: int | None) -> dict:
        """Train (or find) the run up to ``steps``; its result."""
        data = self.data_fingerprint()
        card = {"profile": f"`{self.profile.name}` ({self.profile.description})", "pretraining seed": pretrain_seed,
                "corpus": f"`{data['corpus']}` (pe-book data; {self.corpus_origin()})",
                "sequence length": data["seq_len"], "layer norm": self.profile.model.get("layer_norm", "post")}
        return pretrain(self.model_config(variant), self.mlm_data(), self.run_pretrain_config(pretrain_seed),
                        self.run_dir(variant, pretrain_seed), progress=self.progress, until=steps,
                        tokenizer=self.tokenizer, card=card)

    def corpus_origin(self) -> str:
        """Where the pretraining text came from, in words."""
        return "text given directly" if self._given_data else f"{self.corpus.origin} corpus"

    def check_precision(self) -> None:
        """Refuse to add to a store in another arithmetic than its models': ``precision="auto"``
        means bf16 on a CPU with AMX or AVX512-BF16 and fp32 elsewhere, so a profile that runs in
        chunks on different machines would mix bf16 and fp32 models in one comparison. The stored
        pretrainings record the precision they ran in, hence the machine class of the store (its
        "auto" fine-tunings and extrapolations ran in the same). Profiles with an explicit
        pretraining precision (the cpu profile's fp32) always pass."""
        if self.profile.pretrain.precision != "auto":
            return
        stored = self.stored_precision()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        here = "bf16" if use_bf16("auto", device) else "fp32"
        if stored not in ("", here):
            raise InputError(f"profile {self.profile.name}: its stored models were trained in {stored}, and "
                             f"precision 'auto' means {here} on this machine; adding {here} results would mix precisions in "
                             f"one comparison: continue it on a machine where 'auto' means {stored}")

    def stored_precision(self) -> str:
        """The precision the store's pretrained models ran in ("fp32", "bf16", both joined by a
        comma, or "" for none stored), read once, each through its manifest: a damaged one is named
        in a warning and left out (it is computed again), never read unchecked."""
        if self._stored_precision is None:
            stored = [self.store.read(folder) for folder in self.store.artifact_folders() if folder.name.startswith("pretrain-")]
            found = {artifact.payload["result"]["precision"] for artifact in stored if artifact is not None}
            self._stored_precision = ", ".join(sorted(found))
        return self._stored_precision

    def code_version(self, stage: str) -> int:
        """The code version of ``stage`` in this profile's keys: the code's own (:data:`CODE_VERSIONS`),
        unless the profile pins the older version its stored results were computed with."""
        return self.profile.code_versions.get(stage, CODE_VERSIONS[stage])

    def _found(self, variant: str, stage: str, config: dict) -> Artifact | None:
        """The stored artifact, or None when it is to be computed (refused without ``compute``, and
        refused for a stage whose pinned code version this code no longer runs)."""
        found = self.store.load(variant, stage, config)
        if found is None and not self.compute:
            raise MissingResult(f"{self.store.folder(variant, stage, config)} is not stored, and this runner only reads: "
                                f"compute it with `pe-book run --profile {self.profile.name}`")
        current = CODE_VERSIONS[code_stage(config["stage"])]
        if found is None and config["code_version"] != current:
            raise InputError(f"{self.store.folder(variant, stage, config)} is not stored, and profile {self.profile.name} "
                             f"pins {config['stage']} code version {config['code_version']}, which this code no longer "
                             f"runs (it runs {current}): the profile's results can be read, not added to")
        return found

    # ------------------------------------------------------------------ stages

    def _ensure(self, variant: str, stage: str, config: dict, compute: Callable[[Any], Computed],
                prepare: Callable[[], Any] = lambda: None) -> Artifact:
        """The stored artifact of ``config``, or else the one computed now: ``prepare()`` readies what
        the stage reads (untimed: the pretrained model, the data), ``compute`` turns it into the
        result (timed: the artifact's wall time, added to :attr:`timings`), which is saved."""
        found = self._found(variant, stage, config)
        if found is not None:
            return found
        inputs = prepare()
        t0 = time.perf_counter()
        computed = compute(inputs)
        wall = time.perf_counter() - t0
        self.timings[code_stage(config["stage"])] += wall
        return self.store.save(variant, stage, config, computed.payload, wall, computed.arrays, computed.copies)

    @locked
    def ensure_pretrained(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Artifact:
        """The result and curve of the model pretrained for ``steps`` (default: the profile's steps;
        a snapshot step gives the curve up to it)."""
        stage = stage_name("pretrain", pretrain_seed, snapshot=self.snapshot(steps))
        return self._ensure(variant, stage, self.pretrain_config(variant, pretrain_seed, steps),
                            lambda _: self._pretrained(variant, pretrain_seed, steps), prepare=self.check_precision)

    def _pretrained(self, variant: str, pretrain_seed: int, steps: int | None) -> Computed:
        """Train the model (resuming its run folder): its result, its curve up to it and, where the
        store keeps weights, its files."""
        result = self._pretrain(variant, pretrain_seed, steps)
        lines = (self.run_dir(variant, pretrain_seed) / "curve.jsonl").read_text().splitlines()
        curve = [record for record in map(json.loads, filter(None, lines)) if record["step"] <= result["steps"]]
        model = self.model_dir(variant, pretrain_seed, steps)
        copies = {f"{STORED_MODEL}/{f.name}": f for f in sorted(model.iterdir()) if f.is_file() and f.name != MANIFEST}
        return Computed({"result": result, "curve": curve}, copies=copies if self.profile.weights_in_store else None)

    def weights(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Path:
        """The folder of the model pretrained for ``steps``: the one stored with its pretraining
        artifact (checked against the artifact's manifest), else the work folder's, trained there
        when missing (a runner that only reads refuses to)."""
        stored = self.ensure_pretrained(variant, pretrain_seed, steps).folder / STORED_MODEL
        if stored.is_dir():
            return stored
        if not self.compute and not self.has_weights(variant, pretrain_seed, steps):
            raise MissingResult(f"{self.model_dir(variant, pretrain_seed, steps)} holds no finished model, and this runner "
                                f"only reads: train it with `pe-book run --profile {self.profile.name}`")
        # checks a finished run folder's (or snapshot's) manifests (fast), or trains up to it; never read unchecked
        self._pretrain(variant, pretrain_seed, steps)
        return self.model_dir(variant, pretrain_seed, steps)

    def trained_model(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> PEBertForMaskedLM:
        """The pretrained model (:meth:`weights`)."""
        return load_model(self.weights(variant, pretrain_seed, steps))

    def analysis_config(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> dict:
        return {"stage": "analysis", "code_version": self.code_version("analysis"),
                "pretrain": self.pretrain_key(variant, pretrain_seed, steps), "probe": self.profile.probe}

    @locked
    def ensure_analysis(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Artifact:
        """PE proximity matrices, identical-word attention and indicators, at init and after pretraining."""
        stage = stage_name("analysis", pretrain_seed, snapshot=self.snapshot(steps))
        return self._ensure(variant, stage, self.analysis_config(variant, pretrain_seed, steps),
                            lambda weights: self._analysis(variant, pretrain_seed, weights),
                            prepare=lambda: self.weights(variant, pretrain_seed, steps))

    def _analysis(self, variant: str, pretrain_seed: int, weights: Path) -> Computed:
        """:func:`pe_lib.probing.analyse_positions` of the model at initialisation (seeded as its
        pretraining was) and of the pretrained one in ``weights``, by state (``init``, ``trained``)."""
        torch.manual_seed(pretrain_seed)  # the same initialisation as pretraining
        initial = PEBertForMaskedLM(self.model_config(variant)).eval()
        payload, arrays = {}, {}
        for state, model in (("init", initial), ("trained", load_model(weights))):
            payload[state], state_arrays = analyse_positions(model, self.profile.seq_len, self.profile.probe, ANALYSIS_WINDOW)
            arrays.update({f"{state}.{name}": a for name, a in state_arrays.items()})
        return Computed(payload, arrays)

    def extrapolation_config(self, variant: str, pretrain_seed: int = 0) -> dict:
        """The masked validation tokens are drawn with seed 0 for every model, so all are scored on the same ones."""
        multipliers = list(self.profile.extrapolation_multipliers)
        return {"stage": "extrapolation", "code_version": self.code_version("extrapolation"),
                "pretrain": self.pretrain_key(variant, pretrain_seed),
                "multipliers": multipliers, "lengths": [m * self.profile.seq_len for m in multipliers],
                "tokens": self.profile.extrapolation_tokens, "seed": 0,
                "bucket": max(1, self.profile.seq_len // BUCKETS_PER_LENGTH)}

    @locked
    def ensure_extrapolation(self, variant: str, pretrain_seed: int = 0) -> Artifact:
        """MLM loss of the pretrained model at each multiple of the pretraining length
        (:func:`pe_lib.extrapolation.length_extrapolation`; "cannot run" where the PE has too few positions)."""
        config = self.extrapolation_config(variant, pretrain_seed)
        return self._ensure(variant, stage_name("extrapolation", pretrain_seed), config,
                            lambda ready: self._extrapolation(*ready, config),
                            prepare=lambda: (self._weights_to_evaluate(variant, pretrain_seed), self.mlm_data()))

    def _weights_to_evaluate(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Path:
        """:meth:`weights` for a stage that evaluates the model into a new artifact, once this machine
        may add to the store (:meth:`check_precision`)."""
        weights = self.weights(variant, pretrain_seed, steps)
        self.check_precision()
        return weights

    def _extrapolation(self, weights: Path, data: MLMData, config: dict) -> Computed:
        """:func:`pe_lib.extrapolation.length_extrapolation` of the model in ``weights`` on ``data``, as ``config`` sets it."""
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return Computed(length_extrapolation(
            load_model(weights).to(device), data, config["lengths"], config["tokens"], seed=config["seed"],
            mask_prob=self.profile.pretrain.mask_prob, train_length=self.profile.seq_len, bucket=config["bucket"],
            bf16=use_bf16(self.profile.pretrain.precision, device)))

    def task_fingerprint(self, name: str) -> str:
        """What identifies a task's data as the runner uses it: its origin and the content of every
        example of the (capped) splits, so a changed builder can never reuse a stale artifact. A
        task not loaded yet whose prepared folder is intact takes the value kept at an earlier load
        of the same files (:meth:`_kept_fingerprint`, through its manifest: a damaged one is named
        in one warning and computed again), so a dry run reads no example."""
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
        folder (by default the intact one this runner would read; None where there is none, or the
        hub would be read): it is named after all that the value depends on, the folder's manifest
        (the sha256 of each of its files), the caps and the libraries that render the rows."""
        folder = folder or prepared_folder(name, self.profile.data_source, self.cache_dir)
        if folder is None:
            return None
        identity = content_key({"manifest": sha256_file(folder / MANIFEST), "max_train": self.profile.max_train_for(name),
                                "max_eval": self.profile.task_max_eval, "datasets": version("datasets"),
                                "pyarrow": version("pyarrow")}, 16)
        return cache_root(self.cache_dir) / KEPT_FINGERPRINTS / f"{folder.name}-{identity}"

    def task_features(self, name: str, cfg: FinetuneConfig) -> TaskFeatures:
        """A task's fine-tuning features (tokenised, cut and padded once), built at the first
        fine-tuning of the task and reused by every seed and model that cuts it as ``cfg`` does:
        they depend on the task, this runner's one tokenizer and :func:`feature_cut` alone."""
        key = (name, json.dumps(feature_cut(cfg), sort_keys=True))
        if key not in self._features:
            t0 = time.perf_counter()
            self._features[key] = task_features(self.tokenizer, self.task(name), cfg)
            self.timings["finetune"] += time.perf_counter() - t0
        return self._features[key]

    def finetune_config(self, variant: str, task: str, seed: int, pretrain_seed: int = 0, steps: int | None = None) -> dict:
        return {"stage": "finetune", "code_version": self.code_version("finetune"),
                "pretrain": self.pretrain_key(variant, pretrain_seed, steps), "task": task, "seed": seed,
                "finetune": asdict(replace(self.profile.finetune_for(task), seed=seed)), "data": self.task_fingerprint(task)}

    @locked
    def ensure_finetuned(self, variant: str, task_name: str, seed: int, pretrain_seed: int = 0,
                         steps: int | None = None) -> Artifact:
        """The fine-tuning of the model pretrained for ``steps`` on a task with a fine-tuning seed
        (:func:`pe_lib.training.finetune.finetune` on the task's features, built once per runner)."""
        stage = stage_name("finetune", pretrain_seed, task_name, f"seed{seed}", snapshot=self.snapshot(steps))
        cfg = replace(self.profile.finetune_for(task_name), seed=seed)
        return self._ensure(variant, stage, self.finetune_config(variant, task_name, seed, pretrain_seed, steps),
                            lambda ready: self._finetuned(task_name, cfg, *ready),
                            prepare=lambda: (self._weights_to_evaluate(variant, pretrain_seed, steps),
                                             self.task_features(task_name, cfg)))

    def _finetuned(self, task_name: str, cfg: FinetuneConfig, weights: Path, features: TaskFeatures) -> Computed:
        """:func:`pe_lib.training.finetune.finetune` of the model in ``weights`` on the task's
        ``features``, as ``cfg`` sets it."""
        return Computed(finetune(weights, self.tokenizer, self.task(task_name), cfg, progress=self.progress, features=features))

    #: The store folder of the baselines (beside the variants' folders; not a variant).
    BASELINES = "baselines"

    def baselines_config(self, task: str) -> dict:
        return {"stage": "baselines", "code_version": self.code_version("baselines"), "task": task, "data": self.task_fingerprint(task)}

    @locked
    def ensure_baselines(self, task_name: str) -> Artifact:
        """The baselines of a task (:func:`pe_book.experiments.baselines.task_baselines`: best
        constant, bag of words or fixed span rules) on the examples the models see."""
        return self._ensure(self.BASELINES, f"baselines-{task_name}", self.baselines_config(task_name),
                            lambda _: Computed(task_baselines(self.task(task_name))))

    def unigram_config(self) -> dict:
        cfg = self.profile.pretrain
        return {"stage": "unigram", "code_version": self.code_version("baselines"), "data": self.data_fingerprint(),
                "validation": {"batch_size": cfg.batch_size, "eval_batches": cfg.eval_batches, "mask_prob": cfg.mask_prob},
                "smoothing": UNIGRAM_SMOOTHING}

    @locked
    def ensure_unigram(self) -> Artifact:
        """The validation loss of a unigram model of the training blocks on the masked validation
        tokens of the models' validation loss (:func:`pe_book.experiments.baselines.unigram_validation_loss`)."""
        return self._ensure(self.BASELINES, "unigram", self.unigram_config(),
                            lambda data: Computed(unigram_validation_loss(data, self.profile.pretrain, UNIGRAM_SMOOTHING)),
                            prepare=self.mlm_data)

    @locked
    def run(self, variants: list[str] | None = None, tasks: list[str] | None = None,
            stop: Callable[[list[PlannedArtifact]], str | None] | None = None) -> dict[str, float]:
        """Ensure every artifact of the profile (or of the given variants/tasks); returns stage wall
        times. ``stop``, asked before each model with its artifacts (:meth:`model_plan`), may end
        the run there (a reason in words, kept as :attr:`stopped`), e.g. before a model whose work
        would not finish in the time left (``pe-book run --stop-after``)."""
        from pe_lib.data.tasks import get_task

        variants = [parse_variant(v).name for v in (variants or self.profile.variants)]
        tasks = [get_task(task).meta.name for task in (tasks or self.profile.tasks)]  # unknown: one error, now
        remove_stale_parts(self.store.root, ["*/*-*"])  # what a killed run left half-written of an artifact
        t0 = time.perf_counter()
        self.ensure_unigram()
        for task in tasks:
            self.ensure_baselines(task)
        models = self.models(variants)
        self.stopped = None
        for variant, p, steps in tqdm(models, desc=f"profile {self.profile.name}", unit="model", disable=not self.progress):
            if stop is not None and (reason := stop(self.model_plan(variant, p, steps, tasks))):
                self.stopped = reason
                break
            self.ensure_pretrained(variant, p, steps)
            self.ensure_analysis(variant, p, steps)
            if self.snapshot(steps) is None:
                self.ensure_extrapolation(variant, p)
            for task in tasks:
                for seed in self.profile.seeds_for(task):
                    self.ensure_finetuned(variant, task, seed, p, steps)
        self.timings["total"] = time.perf_counter() - t0
        return dict(self.timings)

    def plan(self, variants: list[str] | None = None, tasks: list[str] | None = None) -> list[PlannedArtifact]:
        """Every artifact :meth:`run` would need, in its order, each marked stored (found and
        checksum-valid in the store) or to compute; nothing is computed (the tokenizer, corpus and
        tasks are read to form the keys, so run ``pe-book data`` first)."""
        variants = [parse_variant(v).name for v in (variants or self.profile.variants)]
        tasks = list(tasks or self.profile.tasks)
        baselines = [("unigram", self.unigram_config())]
        baselines += [(f"baselines-{task}", self.baselines_config(task)) for task in tasks]
        planned = [self._planned(self.BASELINES, stage, config) for stage, config in baselines]
        for variant, p, steps in self.models(variants):
            planned += self.model_plan(variant, p, steps, tasks)
        return planned

    def model_plan(self, variant: str, pretrain_seed: int, steps: int, tasks: list[str]) -> list[PlannedArtifact]:
        """The artifacts of one model of :meth:`models`, in :meth:`run`'s order: its pretraining
        first, then its analysis, its extrapolation (a final model's) and its fine-tunings on ``tasks``."""
        p, at = pretrain_seed, self.snapshot(steps)
        stages = [(stage_name("analysis", p, snapshot=at), self.analysis_config(variant, p, steps))]
        if at is None:
            stages.append((stage_name("extrapolation", p), self.extrapolation_config(variant, p)))
        stages += [(stage_name("finetune", p, task, f"seed{seed}", snapshot=at), self.finetune_config(variant, task, seed, p, steps))
                   for task in tasks for seed in self.profile.seeds_for(task)]
        return [self.planned_pretraining(variant, p, steps)] + [self._planned(variant, stage, config) for stage, config in stages]

    def planned_pretraining(self, variant: str, pretrain_seed: int, steps: int) -> PlannedArtifact:
        """The pretraining artifact of one model of :meth:`models`, stored or to compute."""
        stage = stage_name("pretrain", pretrain_seed, snapshot=self.snapshot(steps))
        return self._planned(variant, stage, self.pretrain_config(variant, pretrain_seed, steps))

    def models(self, variants: list[str]) -> list[tuple[str, int, int]]:
        """``(variant, pretraining seed, steps)`` of every model :meth:`run` evaluates, in its order:
        budget by budget, then seed by seed, then variant by variant, so an interrupted run has
        the whole picture at the smaller budgets (a run folder resumes where it stopped)."""
        return [(variant, p, steps) for steps in self.profile.pretrain.budgets
                for p in range(max(len(self.profile.pretrain_seeds_for(v)) for v in variants))
                for variant in variants if p in self.profile.pretrain_seeds_for(variant)]

    def _planned(self, variant: str, stage: str, config: dict) -> PlannedArtifact:
        return PlannedArtifact(variant, stage, config, self.store.folder(variant, stage, config),
                               self.store.load(variant, stage, config) is not None)

    def orphans(self, planned: list[PlannedArtifact]) -> list[Path]:
        """Artifact folders in the store that no planned artifact names: made by other code or
        another configuration (or another profile's variants), never read by this one."""
        wanted = {a.folder for a in planned}
        return [folder for folder in self.store.artifact_folders() if folder not in wanted]


@dataclass(frozen=True)
class PlannedArtifact:
    variant: str
    stage: str
    config: dict
    folder: Path
    stored: bool


# ----------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Computed:
    """What a stage computed, as :meth:`Store.save` keeps it: the JSON payload, arrays and files copied in."""
    payload: dict
    arrays: dict[str, np.ndarray] | None = None
    copies: dict[str, Path] | None = None


def load_model(folder: Path) -> PEBertForMaskedLM:
    """The pretrained model saved in ``folder``, in evaluation mode."""
    with quiet_transformers():
        return PEBertForMaskedLM.from_pretrained(folder).eval()
