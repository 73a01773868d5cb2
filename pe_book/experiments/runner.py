"""The pipeline: computes exactly what the artifact store lacks for a profile.

For each variant: pretraining (resumable, checkpoints in the work folder), the analysis of its
position embeddings at initialisation and after pretraining (proximity matrices, probing attention,
indicators, learned frequencies), the MLM loss at multiples of the pretraining length (length
extrapolation), and fine-tuning on every task and seed of the profile. Each result is an artifact
keyed by the hash of everything that produced it. A :class:`Runner` is the
:class:`~pe_book.experiments.results.Results` of its profile (the same keys, plan and readers) that
also computes: its ``ensure_*`` methods return the stored artifact or compute it now, and
:meth:`Runner.run` ensures every artifact of the profile. Computing is always this explicit call
(``pe-book run``, or ``pe-book book`` before a build that computes); the chapters only read.
"""
from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from pe_book.experiments.baselines import UNIGRAM_SMOOTHING, task_baselines, unigram_validation_loss
from pe_book.experiments.profiles import Profile
from pe_book.experiments.results import (CODE_VERSIONS, STORED_MODEL, PlannedArtifact, Place, Results, code_stage,
                                         load_model)
from pe_book.experiments.store import Artifact, git_commit
from pe_lib.errors import InputError
from pe_lib.extrapolation import length_extrapolation
from pe_lib.io import MANIFEST, content_key, manifested_dir, remove_stale_parts, verified
from pe_lib.model import PEBertForMaskedLM
from pe_lib.positions import parse_variant
from pe_lib.probing import ANALYSIS_WINDOW, analyse_positions
from pe_lib.training.finetune import FinetuneConfig, TaskFeatures, feature_cut, finetune, task_features
from pe_lib.training.mlm import MLMData, text_blocks
from pe_lib.training.optim import use_bf16
from pe_lib.training.pretrain import pretrain


def check_apart(store: Path, runs: Path) -> None:
    """Refuse, in one line, a work folder whose run folders (``runs``) share the artifact store's
    folder: the store would take a run's ``model/`` for an artifact (an orphan, or a false one)."""
    store_at, runs_at = store.resolve(), runs.resolve()
    if store_at == runs_at or store_at in runs_at.parents or runs_at in store_at.parents:
        raise InputError(f"the artifact store {store} and the work folder's runs {runs} overlap: "
                         "use separate folders for the results and the work (--results, --work)")


def locked(method):
    """Run a Runner method while holding its store's lock (re-entrant). A reader
    (:class:`~pe_book.experiments.results.Results`) takes none: every artifact appears in one
    rename, so a book can be built from a store while a chunk adds to it."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.store.lock():
            return method(self, *args, **kwargs)

    return wrapper


class Runner(Results):
    """Ensure the artifacts of ``profile`` exist in ``results``; heavy files go to ``work``."""

    def __init__(self, profile: Profile, results: str | Path = "results", work: str | Path | None = None,
                 cache_dir: str | Path | None = None, progress: bool = True, tokenizer=None, data: MLMData | None = None):
        """``tokenizer`` and ``data`` replace the profile's (e.g. a user's own corpus)."""
        git_commit()  # pins the code's commit for the provenance of everything this run saves
        super().__init__(profile, results, work, cache_dir, progress)
        check_apart(self.store.root, self.work / profile.results_folder)
        self._tokenizer = tokenizer
        self._data = data
        self._given_data = data is not None
        self._features: dict[tuple[str, str], TaskFeatures] = {}  # by task and cut (task_features)
        self.stopped: str | None = None  # why the last run() ended before the profile's end, if it did

    def _record(self) -> tuple[dict | None, dict[str, dict]]:
        """None: the pipeline forms its keys from the data it trains on, never from a data record."""
        return None, {}

    def with_profile(self, profile: Profile) -> Runner:
        """A runner of ``profile`` on the same store, work folder, cache and given data (a study
        weighing another profile's plan against its own artifacts)."""
        return Runner(profile, self.store.root.parent, self.work, self.cache_dir, self.progress,
                      self._tokenizer if self._given_data else None, self._data if self._given_data else None)

    # ------------------------------------------------------------------ data

    def _corpus_identity(self) -> str:
        """The prepared corpus's folder or, for data given directly, a hash of its training blocks."""
        return hashlib.sha256(self._data.train.tobytes()).hexdigest()[:12] if self._given_data else super()._corpus_identity()

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

    # ------------------------------------------------------------------ stages

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

    def _found(self, place: Place) -> Artifact | None:
        """The stored artifact, or None when it is to be computed (refused for a stage whose pinned
        code version this code no longer runs)."""
        found = self.stored(place)
        current = CODE_VERSIONS[code_stage(place.config["stage"])]
        if found is None and place.config["code_version"] != current:
            raise InputError(f"{self.store.folder(place.variant, place.stage, place.config)} is not stored, and profile "
                             f"{self.profile.name} pins {place.config['stage']} code version {place.config['code_version']}, "
                             f"which this code no longer runs (it runs {current}): the profile's results can be read, not added to")
        return found

    def _ensure(self, place: Place, compute: Callable[[Any], Computed], prepare: Callable[[], Any] = lambda: None) -> Artifact:
        """The stored artifact at ``place``, or else the one computed now: ``prepare()`` readies what
        the stage reads (untimed: the pretrained model, the data), ``compute`` turns it into the
        result (timed: the artifact's wall time, added to :attr:`timings`), which is saved."""
        found = self._found(place)
        if found is not None:
            return found
        inputs = prepare()
        t0 = time.perf_counter()
        computed = compute(inputs)
        wall = time.perf_counter() - t0
        self.timings[code_stage(place.config["stage"])] += wall
        return self.store.save(place.variant, place.stage, place.config, computed.payload, wall, computed.arrays, computed.copies)

    @locked
    def ensure_pretrained(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Artifact:
        """The result and curve of the model pretrained for ``steps`` (:meth:`Results.pretrained`),
        trained now when the store lacks it."""
        return self._ensure(self.pretrain_place(variant, pretrain_seed, steps),
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
        when missing."""
        stored = self.ensure_pretrained(variant, pretrain_seed, steps).folder / STORED_MODEL
        if stored.is_dir():
            return stored
        # checks a finished run folder's (or snapshot's) manifests (fast), or trains up to it; never read unchecked
        self._pretrain(variant, pretrain_seed, steps)
        return self.model_dir(variant, pretrain_seed, steps)

    @locked
    def ensure_analysis(self, variant: str, pretrain_seed: int = 0, steps: int | None = None) -> Artifact:
        """PE proximity matrices, identical-word attention and indicators, at init and after
        pretraining (:meth:`Results.analysis`), computed now when the store lacks them."""
        return self._ensure(self.analysis_place(variant, pretrain_seed, steps),
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

    @locked
    def ensure_extrapolation(self, variant: str, pretrain_seed: int = 0) -> Artifact:
        """MLM loss of the pretrained model at each multiple of the pretraining length
        (:func:`pe_lib.extrapolation.length_extrapolation`; "cannot run" where the PE has too few positions)."""
        place = self.extrapolation_place(variant, pretrain_seed)
        return self._ensure(place, lambda ready: self._extrapolation(*ready, place.config),
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

    @locked
    def ensure_finetuned(self, variant: str, task_name: str, seed: int, pretrain_seed: int = 0,
                         steps: int | None = None) -> Artifact:
        """The fine-tuning of the model pretrained for ``steps`` on a task with a fine-tuning seed
        (:func:`pe_lib.training.finetune.finetune` on the task's features, built once per runner)."""
        cfg = replace(self.profile.finetune_for(task_name), seed=seed)
        return self._ensure(self.finetune_place(variant, task_name, seed, pretrain_seed, steps),
                            lambda ready: self._finetuned(task_name, cfg, *ready),
                            prepare=lambda: (self._weights_to_evaluate(variant, pretrain_seed, steps),
                                             self.task_features(task_name, cfg)))

    def _finetuned(self, task_name: str, cfg: FinetuneConfig, weights: Path, features: TaskFeatures) -> Computed:
        """:func:`pe_lib.training.finetune.finetune` of the model in ``weights`` on the task's
        ``features``, as ``cfg`` sets it."""
        return Computed(finetune(weights, self.tokenizer, self.task(task_name), cfg, progress=self.progress, features=features))

    @locked
    def ensure_baselines(self, task_name: str) -> Artifact:
        """The baselines of a task (:func:`pe_book.experiments.baselines.task_baselines`: best
        constant, bag of words or fixed span rules) on the examples the models see."""
        return self._ensure(self.baselines_place(task_name), lambda _: Computed(task_baselines(self.task(task_name))))

    @locked
    def ensure_unigram(self) -> Artifact:
        """The validation loss of a unigram model of the training blocks on the masked validation
        tokens of the models' validation loss (:func:`pe_book.experiments.baselines.unigram_validation_loss`)."""
        return self._ensure(self.unigram_place(),
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


# ----------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Computed:
    """What a stage computed, as :meth:`Store.save` keeps it: the JSON payload, arrays and files copied in."""
    payload: dict
    arrays: dict[str, np.ndarray] | None = None
    copies: dict[str, Path] | None = None
