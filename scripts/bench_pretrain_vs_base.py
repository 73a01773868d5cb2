"""Pretraining speed of the cpu profile's model, this repository's commit against a base commit, side by side.

``make bench-pretrain`` (``python scripts/bench_pretrain_vs_base.py [--base COMMIT] [--head COMMIT]
[--variant V] [--rounds N] [--steps N] [--json FILE]``) checks out ``--base`` (default
:data:`DEFAULT_BASE`, issue 37's base) and ``--head`` (default ``HEAD``) into temporary git
worktrees and times the real pretraining path of each, ``pe_lib.training.pretrain.pretrain``
(batch drawing, masking, forward, backward, clipping, AdamW and schedule), on the profile's model
configuration, recipe and packaged pretraining data, in the profile's precision, with
:data:`pe_book.bench.contenders.THREADS` torch threads.

Each commit trains in a process of its own (this script with ``--worker``, the worktree first on
its path, the same Python and virtual environment), paced by this one: after each completed step
the worker reports the step's wall time and waits for the word to train the next, so only one of
the two trains at any moment. After :data:`WARMUP` untimed steps each, every round lets one commit
train ``--steps`` steps, then the other, the order reversed every round, so that a background load
hits both alike; the last step, which evaluates and saves a checkpoint, is not timed. A round's
rate of a commit is the tokens of a step over its median step time in the round; the report gives
each commit's median over the rounds and the ratio head/base: the median of the rounds' ratios with
their smallest and largest. The machine line and the load average before and after say how busy
the machine was: absolute rates on a loaded machine are low, the interleaved ratio stays fair.

The worker uses only what both commits share: ``PEBertConfig``, ``MLMData``, ``PretrainConfig``
and ``pretrain`` (its ``on_step`` callback paces it); the driver prepares the data
(``Runner.mlm_data``) and the configurations with this working tree's code and hands them over in
a folder. A recipe field that the base commit does not know fails the base's run (its
``PretrainConfig`` refuses it) rather than timing another recipe.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The commit the pretraining speed is compared with: issue 37's base.
DEFAULT_BASE = "f19d8f7"
#: Steps each commit trains, untimed, before the rounds (allocator, kernels, optimizer state).
WARMUP = 3
#: The prefix of the worker's report lines (anything else it prints is not read).
REPORT = "pe-bench-pretrain "
ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- worker (either commit's pe_lib)


def say(message: dict) -> None:
    print(REPORT + json.dumps(message), flush=True)


class Pacer:
    """``pretrain``'s ``on_step``: reports each completed step's wall seconds (from the word to
    train it; none for the first step, which starts unpaced) and, except after the last step,
    waits for the word (a line on stdin) to train the next; ends the process when stdin closes."""

    def __init__(self, steps: int):
        self.steps = steps
        self.go = 0.0

    def __call__(self, done: int) -> None:
        seconds = time.perf_counter() - self.go
        say({"step": done, "seconds": seconds if done > 1 else None})
        if done < self.steps:
            if not sys.stdin.readline():  # the driver is gone
                sys.exit(1)
            self.go = time.perf_counter()


def worker(spec_folder: Path) -> None:
    """Train the run described in ``spec_folder`` with the ``pe_lib`` first on the path, paced
    (:class:`Pacer`); then report where ``pe_lib`` came from, the tokens a step trains and the
    torch threads."""
    import numpy as np
    import torch

    spec = json.loads((spec_folder / "spec.json").read_text())
    torch.set_num_threads(spec["threads"])
    import pe_lib
    from pe_lib import PEBertConfig
    # the one path where the base commit's pe_lib has these too (before issue 61 pretrain.py held them all)
    from pe_lib.training.pretrain import MLMData, PretrainConfig, pretrain

    with np.load(spec_folder / "blocks.npz", allow_pickle=False) as blocks:
        data = MLMData(blocks["train"], blocks["validation"], spec["vocab_size"], spec["mask_id"], tuple(spec["special_ids"]))
    steps = spec["steps"]
    cfg = PretrainConfig(**spec["pretrain"], steps=steps, log_every=steps, eval_every=steps, checkpoint_every=steps,
                         eval_batches=1)
    with tempfile.TemporaryDirectory(prefix="pe-bench-pretrain-run-") as out:
        pretrain(PEBertConfig(**spec["model"]), data, cfg, Path(out) / "run", progress=False, on_step=Pacer(steps))
    say({"pe_lib": str(Path(pe_lib.__file__).parent), "tokens_per_step": cfg.batch_size * data.seq_len,
         "threads": torch.get_num_threads()})


# ----------------------------------------------------------------------------- driver (this working tree's pe_book)


def write_spec(folder: Path, profile_name: str, variant: str, steps: int, threads: int) -> dict:
    """Write the run every worker trains into ``folder``: the profile's pretraining blocks (all
    training rows, one batch of validation rows) and ``spec.json`` (the model configuration, the
    recipe's fields that differ from ``PretrainConfig``'s defaults, snapshots left out, the run's
    ``steps`` and the threads); returns the spec."""
    import dataclasses

    import numpy as np

    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner
    from pe_lib.training.pretrain_config import PretrainConfig

    profile = get_profile(profile_name)
    runner = Runner(profile, folder / "results", progress=False)
    data = runner.mlm_data()
    recipe, defaults = dataclasses.replace(profile.pretrain, snapshot_steps=()), PretrainConfig()
    run_fields = ("steps", "snapshot_steps", "log_every", "eval_every", "checkpoint_every", "eval_batches")  # the worker's
    spec = {"profile": profile_name, "variant": variant, "steps": steps, "threads": threads,
            "model": {k: v for k, v in runner.model_config(variant).to_diff_dict().items()
                      if k not in ("transformers_version", "model_type")},
            "pretrain": {f.name: getattr(recipe, f.name) for f in dataclasses.fields(recipe)
                         if f.name not in run_fields and getattr(recipe, f.name) != getattr(defaults, f.name)},
            "vocab_size": data.vocab_size, "mask_id": data.mask_id, "special_ids": list(data.special_ids)}
    np.savez(folder / "blocks.npz", train=data.train, validation=data.validation[: recipe.batch_size])
    (folder / "spec.json").write_text(json.dumps(spec, indent=1))
    return spec


class Worker:
    """A worker process training with the code of ``tree`` (first on its path; ``-P``: not this
    script's folder), offline, its stderr in ``log``; it has trained its first step when built."""

    def __init__(self, tree: Path, spec_folder: Path, log: Path):
        env = os.environ | {"PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        command = [sys.executable, "-P", str(Path(__file__).resolve()), "--worker", str(spec_folder)]
        self.tree, self.log = tree, log
        with open(log, "w") as stderr:
            self.process = subprocess.Popen(command, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=stderr, text=True, bufsize=1)
        self.read()

    def read(self) -> dict:
        """The worker's next report."""
        for line in self.process.stdout:
            if line.startswith(REPORT):
                return json.loads(line[len(REPORT):])
        self.process.wait()
        raise RuntimeError(f"the worker of {self.tree} stopped (exit {self.process.returncode}):\n"
                           f"{self.log.read_text()[-3000:]}")

    def step(self) -> float:
        """Train one step; its wall seconds."""
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return self.read()["seconds"]

    def finish(self) -> dict:
        """Train the last step (untimed) and end; the final report, checked to come from ``tree``."""
        self.step()
        final = self.read()
        self.process.wait()
        if not Path(final["pe_lib"]).is_relative_to(self.tree):
            raise RuntimeError(f"the worker of {self.tree} imported pe_lib from {final['pe_lib']}")
        return final


def race(workers: dict[str, Worker], rounds: int, steps: int) -> dict[str, list[list[float]]]:
    """The step seconds of each worker, by round: :data:`WARMUP` untimed steps each, then ``rounds``
    rounds in which each trains ``steps`` steps in turn, the order reversed every round."""
    for worker_ in workers.values():
        for _ in range(WARMUP):
            worker_.step()
    seconds: dict[str, list[list[float]]] = {name: [] for name in workers}
    for i in range(rounds):
        for name in (list(workers) if i % 2 == 0 else list(workers)[::-1]):
            seconds[name].append([workers[name].step() for _ in range(steps)])
        print(f"round {i + 1}/{rounds}: " + ", ".join(f"{n} {statistics.median(s[-1]):.3f} s/step" for n, s in seconds.items()),
              file=sys.stderr, flush=True)
    return seconds


def summary(seconds: dict[str, list[list[float]]], tokens_per_step: int) -> dict:
    """Each commit's median tokens/s over the rounds (a round's: the tokens of a step over its
    median step time), and head/base: the median of the rounds' ratios, with the smallest and the
    largest."""
    rates = {name: [tokens_per_step / statistics.median(r) for r in rounds] for name, rounds in seconds.items()}
    ratios = [h / b for h, b in zip(rates["head"], rates["base"])]
    return {"base_tokens_per_s": statistics.median(rates["base"]), "head_tokens_per_s": statistics.median(rates["head"]),
            "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            "tokens_per_s_by_round": rates}


def rev_parse(commit: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{commit}^{{commit}}"],
                          capture_output=True, text=True, check=True).stdout.strip()


def bench(base: str, head: str, profile: str, variant: str, rounds: int, steps: int) -> dict:
    """Worktrees of ``base`` and ``head`` in a temporary folder, the spec, the two workers and the
    race; the result with the machine, the load averages before and after, and every step's seconds."""
    from pe_book.bench.contenders import THREADS, machine

    commits = {"base": rev_parse(base), "head": rev_parse(head)}
    load_before = os.getloadavg()
    git = ["git", "-C", str(ROOT), "worktree"]
    with tempfile.TemporaryDirectory(prefix="pe-bench-pretrain-") as tmp:
        trees = {name: Path(tmp) / name for name in commits}
        spec_folder = Path(tmp) / "spec"
        spec_folder.mkdir()
        spec = write_spec(spec_folder, profile, variant, 1 + WARMUP + rounds * steps + 1, THREADS)
        for name, commit in commits.items():
            subprocess.run([*git, "add", "--quiet", "--detach", str(trees[name]), commit], check=True)
        workers: dict[str, Worker] = {}
        try:
            for name, tree in trees.items():
                workers[name] = Worker(tree, spec_folder, Path(tmp) / f"{name}.log")
            seconds = race(workers, rounds, steps)
            finals = {name: worker_.finish() for name, worker_ in workers.items()}
        finally:
            for worker_ in workers.values():
                worker_.process.kill()  # a no-op for a finished one
                worker_.process.wait()
            for tree in trees.values():
                subprocess.run([*git, "remove", "--force", str(tree)], check=False)
    tokens = finals["head"]["tokens_per_step"]
    return {"machine": {**machine(), "torch_threads": finals["head"]["threads"]}, "load_average_before": load_before,
            "load_average_after": os.getloadavg(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commits": commits, "profile": profile, "variant": variant, "rounds": rounds, "steps": steps,
            "tokens_per_step": tokens, "pretrain": spec["pretrain"], "step_seconds": seconds, **summary(seconds, tokens)}


def report(result: dict) -> str:
    m = result["machine"]
    load = "/".join(f"{x:.1f}" for x in result["load_average_before"]) + " -> " + "/".join(f"{x:.1f}" for x in result["load_average_after"])
    return (f"machine: {m['cpu']}, {m['cores']} cores, torch {m['versions']['torch']}, {m['torch_threads']} threads;"
            f" load average (1/5/15 min) {load}\n"
            f"pretraining, profile {result['profile']} ({result['variant']}), {result['rounds']} rounds of"
            f" {result['steps']} timed steps of each:\n"
            f"  base {result['commits']['base'][:10]}: {result['base_tokens_per_s']:7.0f} tok/s (median)\n"
            f"  head {result['commits']['head'][:10]}: {result['head_tokens_per_s']:7.0f} tok/s (median)\n"
            f"  head/base {result['ratio']:.3f} (median of the rounds; {result['ratio_min']:.3f} to {result['ratio_max']:.3f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help=f"the commit compared with (default {DEFAULT_BASE})")
    parser.add_argument("--head", default="HEAD", help="the commit measured (default HEAD)")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--variant", default="ape-learned")
    parser.add_argument("--rounds", type=int, default=10, help="rounds in which each commit trains in turn")
    parser.add_argument("--steps", type=int, default=5, help="timed steps of each commit a round")
    parser.add_argument("--json", help="also write the result to this JSON file")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # a worker process (Worker)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker)
        return 0
    if args.rounds < 1 or args.steps < 1:
        parser.error("--rounds and --steps must be at least 1")
    result = bench(args.base, args.head, args.profile, args.variant, args.rounds, args.steps)
    print(report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
