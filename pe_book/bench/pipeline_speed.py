"""The pipeline's speed (sections 5, 7 and 8 of :mod:`pe_book.bench`): the smoke profile end to end,
fine-tuning against pretraining, and the dry run of the working tree against a base commit."""
from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from pe_book.bench.contenders import BenchConfig, PretrainingStepper, mlm_batch
from pe_lib.model import PEBertForMaskedLM


# ----------------------------------------------------------------------------- 5: smoke pipeline


def bench_smoke() -> dict:
    """``pe-book run --profile smoke`` into fresh results/work folders (the data cache is reused)."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    with tempfile.TemporaryDirectory(prefix="pe-bench-smoke-") as tmp:
        start = time.perf_counter()
        timings = Runner(get_profile("smoke"), f"{tmp}/results", f"{tmp}/work", progress=False).run()
        return {"end_to_end_s": time.perf_counter() - start, **{f"{k}_s": v for k, v in timings.items()}}


# ----------------------------------------------------------------------------- 7: fine-tuning


#: The tasks timed, by kind: those the cpu profile fine-tunes (the packaged analogues: offline).
FINETUNE_TASKS = {"sentence": "sst2", "word order": "cola", "span": "cloze", "span v2": "cloze_v2"}
#: The phases of a fine-tuning's time (``pe_lib.training.finetune.Tally``) in the order reported;
#: "training loop" is the training time outside collation, forward/backward and optimiser.
FINETUNE_PHASES = ("model", "features", "collation", "forward and backward", "optimiser", "training loop", "evaluation")


@dataclass
class FinetuneBench:
    profile: str = "cpu"  # whose model, pretraining step and FinetuneConfig are timed
    fraction: float = 0.25  # of the profile's training examples a task (fewer: minutes, not an hour)
    rounds: int = 10  # pretraining steps timed before and again after each fine-tuning


def finetune_phases(tally, wall_s: float) -> dict[str, float]:
    """Seconds of each of FINETUNE_PHASES, from a fine-tuning's tally and its wall time."""
    seconds = dict(tally.seconds)
    inner = sum(seconds.get(k, 0.0) for k in ("collation", "forward and backward", "optimiser"))
    phases = {k: seconds.get(k, 0.0) for k in FINETUNE_PHASES}
    phases["training loop"] = seconds.get("training", 0.0) - inner
    return phases | {"other": wall_s - sum(phases.values())}


def bench_finetune(cfg: FinetuneBench) -> dict:
    """Each task kind's fine-tuning, before and after, with the pretraining step of the same model
    timed ``cfg.rounds`` times just before and just after each fine-tuning (their median is its
    reference). A fine-tuning's tokens/s: its non-padding training tokens over its whole wall time
    (model, features, training, evaluation), the rate that makes a run's hours. "after" reuses the
    task's features, built once beforehand (``features_s``) as the runner does for every seed and
    model of a task."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner
    from pe_lib.training.finetune import Tally, finetune, task_features

    profile = get_profile(cfg.profile)
    rows = []
    with tempfile.TemporaryDirectory(prefix="pe-bench-finetune-") as tmp:
        runner = Runner(profile, f"{tmp}/results", f"{tmp}/work", progress=False)
        tokenizer = runner.tokenizer
        torch.manual_seed(0)
        model = PEBertForMaskedLM(runner.model_config("ape-learned"))
        model.save_pretrained(f"{tmp}/model")  # the fine-tunings start from it (speed does not depend on the weights)
        pre = profile.pretrain
        shape = BenchConfig(vocab=model.config.vocab_size, batch=pre.batch_size, seq=profile.seq_len)
        pretraining = PretrainingStepper(model, mlm_batch(shape, mask_prob=pre.mask_prob), pre.precision == "bf16",
                                         pre.lr, pre.weight_decay, pre.grad_clip)
        for kind, name in FINETUNE_TASKS.items():
            task = runner.task(name)
            task.splits["train"] = task.splits["train"].select(range(math.ceil(cfg.fraction * len(task.splits["train"]))))
            ft = profile.finetune_for(name)
            start = time.perf_counter()
            features = task_features(tokenizer, task, ft)
            features_s = time.perf_counter() - start
            for when, options in (("before", {"group_by_length": False}), ("after", {"features": features})):
                steps = [pretraining.step() for _ in range(cfg.rounds)]
                tally = Tally()
                result = finetune(f"{tmp}/model", tokenizer, task, ft, progress=False, tally=tally, **options)
                steps += [pretraining.step() for _ in range(cfg.rounds)]
                pretraining_tok_s = shape.batch * shape.seq / statistics.median(steps)
                tok_s = tally.tokens / result["wall_s"]
                rows.append({"kind": kind, "task": name, "when": when, "train_examples": len(task.splits["train"]),
                             "eval_examples": len(task.splits["validation"]) + len(task.splits["test"]),
                             "train_features": len(features.splits["train"]), "features_s": features_s,
                             "tokens": tally.tokens, "padded_tokens": tally.padded_tokens,
                             "padding_share": 1 - tally.tokens / tally.padded_tokens, "wall_s": result["wall_s"],
                             "tokens_per_s": tok_s, "pretraining_tokens_per_s": pretraining_tok_s,
                             "ratio": tok_s / pretraining_tok_s, "seconds": finetune_phases(tally, result["wall_s"]),
                             "forward_backward_tokens_per_s": tally.tokens / tally.seconds["forward and backward"]})
    return {"profile": cfg.profile, "fraction": cfg.fraction, "rounds": cfg.rounds,
            "pretraining": {"batch": shape.batch, "seq": shape.seq, "mask_prob": pre.mask_prob, "precision": pre.precision},
            "finetune": asdict(profile.finetune), "rows": rows}


# ----------------------------------------------------------------------------- 8: dry run


#: The repository whose working tree this module belongs to.
REPOSITORY = Path(__file__).resolve().parents[2]


@dataclass
class DryRunBench:
    profile: str = "cpu"  # whose dry run is timed
    base: str = "HEAD"  # the commit timed against the working tree
    rounds: int = 2  # dry runs of each, in turns


def dry_run(tree: Path, profile: str) -> tuple[float, str]:
    """Wall time and output of ``pe-book run --profile <profile> --dry-run`` in a new process running
    the code of ``tree`` (first on its path) on this repository's results, offline."""
    env = os.environ | {"PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    command = [sys.executable, "-m", "pe_book", "run", "--profile", profile, "--dry-run", "--no-progress",
               "--results", str(REPOSITORY / "results")]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def bench_dry_run(cfg: DryRunBench) -> dict:
    """The dry run of the working tree and of the commit ``cfg.base``, in turns ``cfg.rounds`` times:
    the median wall time of each, ``speedup`` = base / working tree, and whether the last two listed
    the same artifacts (``same_plan``: the same counts stored and to compute)."""
    git = ["git", "-C", str(REPOSITORY)]
    commit = subprocess.run([*git, "rev-parse", cfg.base], capture_output=True, text=True, check=True).stdout.strip()
    seconds: dict[str, list[float]] = {"base": [], "working tree": []}
    with tempfile.TemporaryDirectory(prefix="pe-bench-dry-run-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run([*git, "worktree", "add", "--quiet", "--detach", str(base), commit], check=True)
        try:
            for _ in range(cfg.rounds):
                outputs = {}
                for name, tree in (("base", base), ("working tree", REPOSITORY)):
                    wall, outputs[name] = dry_run(tree, cfg.profile)
                    seconds[name].append(wall)
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(base)], check=True)
    base_s, current_s = statistics.median(seconds["base"]), statistics.median(seconds["working tree"])
    return {"profile": cfg.profile, "base": commit, "rounds": cfg.rounds, "base_s": base_s, "working_tree_s": current_s,
            "speedup": base_s / current_s, "same_plan": outputs["base"] == outputs["working tree"], "seconds": seconds}
