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
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from pe_lib.experiments.profiles import Profile
from pe_lib.experiments.store import Artifact, Store, git_commit
from pe_lib.extrapolation import BUCKETS_PER_LENGTH, length_extrapolation
from pe_lib.io import content_key, remove_stale_parts
from pe_lib.model import PEBertConfig, PEBertForMaskedLM, quiet_transformers
from pe_lib.positions import OffsetTableRPE, parse_variant
from pe_lib.probing import identical_word_attention
from pe_lib.properties import chen_locality, chen_symmetry, indicators
from pe_lib.training.finetune import finetune
from pe_lib.training.pretrain import MLMData, make_blocks, pretrain, use_bf16

ANALYSIS_VERSION = 1
EXTRAPOLATION_VERSION = 2  # 2: paired changes against the same tokens at 1x


def locked(method):
    """Run a Runner method while holding its store's lock (re-entrant)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.store.lock():
            return method(self, *args, **kwargs)

    return wrapper


class Runner:
    """Ensure the artifacts of ``profile`` exist in ``results``; heavy files go to ``work``."""

    def __init__(self, profile: Profile, results: str | Path = "results", work: str | Path | None = None,
                 cache_dir: str | Path | None = None, progress: bool = True, tokenizer=None, data: MLMData | None = None):
        """``tokenizer`` and ``data`` replace the profile's (e.g. a user's own corpus)."""
        from pe_lib.data.cache import cache_root

        self.profile = profile
        git_commit()  # pins the code's commit for the provenance of everything this run saves
        self.store = Store(results, profile.name)
        self.cache_dir = cache_dir
        self.work = Path(work) if work is not None else cache_root(cache_dir) / "runs"
        self.progress = progress
        self.timings: dict[str, float] = defaultdict(float)
        self._tokenizer = tokenizer
        self._data = data
        self._given_data = data is not None
        self._corpus = None
        self._tasks: dict = {}

    # ------------------------------------------------------------------ data

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from pe_lib.data import load_tokenizer

            t0 = time.perf_counter()
            self._tokenizer = load_tokenizer(**self.profile.tokenizer, source=self.profile.data_source, cache_dir=self.cache_dir)
            self.timings["data"] += time.perf_counter() - t0
        return self._tokenizer

    @property
    def corpus(self):
        if self._corpus is None:
            from pe_lib.data import load_corpus

            self._corpus = load_corpus(self.profile.data_source, self.cache_dir)
        return self._corpus

    def data_fingerprint(self) -> dict:
        """What identifies the pretraining data: the prepared corpus (origin + key) or, for data
        given directly, its content; the tokenizer's vocabulary; the caps."""
        text = hashlib.sha256(self._data.train.tobytes()).hexdigest()[:12] if self._given_data else self.corpus.folder.name
        return {"corpus": text, "tokenizer": content_key(self.tokenizer.get_vocab()),
                "corpus_tokens": self.profile.corpus_tokens, "seq_len": self.profile.seq_len}

    def mlm_data(self) -> MLMData:
        """Token blocks of the pretraining corpus, tokenised once and cached in the work folder."""
        if self._data is None:
            t0 = time.perf_counter()
            tok, corpus = self.tokenizer, self.corpus
            path = self.work / "blocks" / f"{content_key(self.data_fingerprint())}.npz"
            if not path.exists():
                cap = self.profile.corpus_tokens
                blocks = {split: text_blocks(tok, corpus.lines(split), self.profile.seq_len,
                                             cap if split == "train" else cap and cap // 10)
                          for split in ("train", "validation")}
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".part.npz")
                np.savez(tmp, **blocks)
                tmp.replace(path)
            with np.load(path) as npz:
                self._data = MLMData.for_tokenizer(tok, npz["train"], npz["validation"])
            self.timings["data"] += time.perf_counter() - t0
        return self._data

    def task(self, name: str):
        """A fine-tuning task, loaded once per runner, train capped and evaluation splits cut."""
        if name not in self._tasks:
            from pe_lib.data import load_task

            t0 = time.perf_counter()
            task = load_task(name, self.profile.data_source, self.cache_dir, max_train=self.profile.task_max_train)
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

    def pretrain_config(self, variant: str) -> dict:
        variant = parse_variant(variant).name
        return {"stage": "pretrain", "variant": variant, "model": self.model_config(variant).to_diff_dict(),
                "pretrain": asdict(self.profile.pretrain), "data": self.data_fingerprint()}

    def run_dir(self, variant: str) -> Path:
        return self.work / self.profile.name / f"{variant}-{Store.key(self.pretrain_config(variant))}"

    # ------------------------------------------------------------------ stages

    @locked
    def ensure_pretrained(self, variant: str) -> Artifact:
        config = self.pretrain_config(variant)
        found = self.store.load(variant, "pretrain", config)
        if found is not None:
            return found
        data = self.mlm_data()
        t0 = time.perf_counter()
        result = pretrain(self.model_config(variant), data, self.profile.pretrain, self.run_dir(variant), progress=self.progress)
        wall = time.perf_counter() - t0
        self.timings["pretrain"] += wall
        curve = [json.loads(line) for line in (self.run_dir(variant) / "curve.jsonl").read_text().splitlines() if line]
        return self.store.save(variant, "pretrain", config, {"result": result, "curve": curve}, wall)

    def trained_model(self, variant: str) -> PEBertForMaskedLM:
        """The pretrained model (re-running pretraining if only its artifact, not its weights, is here)."""
        model_dir = self.run_dir(variant) / "model"
        if not model_dir.exists():
            pretrain(self.model_config(variant), self.mlm_data(), self.profile.pretrain, self.run_dir(variant),
                     progress=self.progress)
        with quiet_transformers():
            return PEBertForMaskedLM.from_pretrained(model_dir).eval()

    @locked
    def ensure_analysis(self, variant: str) -> Artifact:
        """PE proximity matrices, identical-word attention and indicators, at init and after pretraining."""
        config = {"stage": "analysis", "version": ANALYSIS_VERSION, "pretrain": Store.key(self.pretrain_config(variant)),
                  "probe": self.profile.probe}
        found = self.store.load(variant, "analysis", config)
        if found is not None:
            return found
        self.ensure_pretrained(variant)
        t0 = time.perf_counter()
        torch.manual_seed(self.profile.pretrain.seed)  # the same initialisation as pretraining
        initial = PEBertForMaskedLM(self.model_config(variant)).eval()
        payload, arrays = {}, {}
        for state, model in (("init", initial), ("trained", self.trained_model(variant))):
            payload[state], state_arrays = analyse(model, self.profile.seq_len, self.profile.probe)
            arrays.update({f"{state}.{name}": a for name, a in state_arrays.items()})
        wall = time.perf_counter() - t0
        self.timings["analysis"] += wall
        return self.store.save(variant, "analysis", config, payload, wall, arrays)

    def extrapolation_config(self, variant: str) -> dict:
        multipliers = list(self.profile.extrapolation_multipliers)
        return {"stage": "extrapolation", "version": EXTRAPOLATION_VERSION, "pretrain": Store.key(self.pretrain_config(variant)),
                "multipliers": multipliers, "lengths": [m * self.profile.seq_len for m in multipliers],
                "tokens": self.profile.extrapolation_tokens, "seed": self.profile.pretrain.seed,
                "bucket": max(1, self.profile.seq_len // BUCKETS_PER_LENGTH)}

    @locked
    def ensure_extrapolation(self, variant: str) -> Artifact:
        """MLM loss of the pretrained model at each multiple of the pretraining length
        (:func:`pe_lib.extrapolation.length_extrapolation`; "cannot run" where the PE has too few positions)."""
        config = self.extrapolation_config(variant)
        found = self.store.load(variant, "extrapolation", config)
        if found is not None:
            return found
        self.ensure_pretrained(variant)
        data = self.mlm_data()
        t0 = time.perf_counter()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = self.trained_model(variant).to(device)
        payload = length_extrapolation(model, data, config["lengths"], config["tokens"], seed=config["seed"],
                                       mask_prob=self.profile.pretrain.mask_prob, train_length=self.profile.seq_len,
                                       bucket=config["bucket"], bf16=use_bf16(self.profile.pretrain.precision, device))
        wall = time.perf_counter() - t0
        self.timings["extrapolation"] += wall
        return self.store.save(variant, "extrapolation", config, payload, wall)

    def finetune_config(self, variant: str, task: str, seed: int) -> dict:
        return {"stage": "finetune", "pretrain": Store.key(self.pretrain_config(variant)), "task": task, "seed": seed,
                "finetune": asdict(replace(self.profile.finetune, seed=seed)), "data": content_key(self.task(task).card),
                "max_eval": self.profile.task_max_eval}

    @locked
    def ensure_finetuned(self, variant: str, task_name: str, seed: int) -> Artifact:
        config = self.finetune_config(variant, task_name, seed)
        found = self.store.load(variant, f"finetune-{task_name}-seed{seed}", config)
        if found is not None:
            return found
        self.ensure_pretrained(variant)
        task = self.task(task_name)
        t0 = time.perf_counter()
        self.trained_model(variant)  # makes sure the weights are on disk
        result = finetune(self.run_dir(variant) / "model", self.tokenizer, task, replace(self.profile.finetune, seed=seed),
                          progress=self.progress)
        wall = time.perf_counter() - t0
        self.timings["finetune"] += wall
        return self.store.save(variant, f"finetune-{task_name}-seed{seed}", config, result, wall)

    @locked
    def run(self, variants: list[str] | None = None, tasks: list[str] | None = None) -> dict[str, float]:
        """Ensure every artifact of the profile (or of the given variants/tasks); returns stage wall times."""
        variants = [parse_variant(v).name for v in (variants or self.profile.variants)]
        tasks = list(tasks or self.profile.tasks)
        remove_stale_parts(self.store.root)  # what a killed run left half-written
        t0 = time.perf_counter()
        for variant in tqdm(variants, desc=f"profile {self.profile.name}", unit="variant", disable=not self.progress):
            self.ensure_pretrained(variant)
            self.ensure_analysis(variant)
            self.ensure_extrapolation(variant)
            for task in tasks:
                for seed in self.profile.seeds:
                    self.ensure_finetuned(variant, task, seed)
        self.timings["total"] = time.perf_counter() - t0
        return dict(self.timings)


# ----------------------------------------------------------------------------- helpers


def text_blocks(tokenizer, lines, seq_len: int, max_tokens: int | None = None) -> np.ndarray:
    """``[CLS] ... [SEP]`` blocks of ``seq_len`` tokens from lines of text."""
    return make_blocks(tokenize(tokenizer, lines, max_tokens), seq_len, tokenizer.cls_token_id, tokenizer.sep_token_id)


def tokenize(tokenizer, lines, max_tokens: int | None, batch: int = 1000) -> np.ndarray:
    """Concatenated token ids of ``lines`` (no special tokens), stopping after ``max_tokens``."""
    pieces, total, chunk = [], 0, []
    for line in lines:
        chunk.append(line)
        if len(chunk) == batch:
            total += _encode(tokenizer, chunk, pieces)
            chunk = []
            if max_tokens is not None and total >= max_tokens:
                break
    if chunk and (max_tokens is None or total < max_tokens):
        _encode(tokenizer, chunk, pieces)
    ids = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    return ids[:max_tokens] if max_tokens is not None else ids


def _encode(tokenizer, lines: list[str], pieces: list[np.ndarray]) -> int:
    encoded = tokenizer(lines, add_special_tokens=False)["input_ids"]
    flat = np.fromiter((t for ids in encoded for t in ids), dtype=np.int32)
    pieces.append(flat)
    return len(flat)


def analyse(model: PEBertForMaskedLM, seq_len: int, probe: dict) -> tuple[dict, dict[str, np.ndarray]]:
    """Indicators (JSON) and matrices (arrays) of one model's position embeddings."""
    encoder = model.bert
    variant = parse_variant(encoder.config.position_embedding)
    payload: dict = {}
    arrays: dict[str, np.ndarray] = {}
    with torch.no_grad():
        ape = encoder.embeddings.position
        if ape is not None:
            vectors = ape.vectors(torch.arange(seq_len))  # (n, H)
            arrays["ape"] = (vectors @ vectors.T).double().numpy()
            payload["ape"] = indicators(arrays["ape"], window=8)
            if hasattr(ape, "freqs"):
                arrays["ape_freqs"] = ape.freqs.double().numpy()
        rpe = encoder.relative_for(0)
        if isinstance(rpe, OffsetTableRPE):
            k = min(rpe.max_distance, seq_len - 1)
            table = rpe.table(k)  # (2k+1, d)
            arrays["rpe"] = (table @ table.T).double().numpy()
            payload["rpe"] = indicators(arrays["rpe"], window=8)
            if hasattr(rpe, "freqs"):
                arrays["rpe_freqs"] = np.stack([encoder.relative_for(i).freqs.double().numpy()
                                                for i in range(encoder.config.num_hidden_layers)])
        if variant.untie_cls:  # TUPE's words -> [CLS] bias, one (h,) per relative module
            modules = dict.fromkeys(encoder.relative_for(i) for i in range(encoder.config.num_hidden_layers))
            arrays["untie_theta"] = np.stack([m.untie.theta.double().numpy() for m in modules])  # (L or 1, h)
    layers = []
    for layer in range(encoder.config.num_hidden_layers):
        attention = identical_word_attention(encoder, layer=layer, **probe)  # (n, n)
        layers.append(attention)
    arrays["probe"] = np.stack(layers)  # (L, n, n)
    payload["probe"] = [{**indicators(a, window=8), "chen_locality": chen_locality(a), "chen_symmetry": chen_symmetry(a)}
                        for a in layers]
    payload["variant"] = variant.name
    return payload, arrays
