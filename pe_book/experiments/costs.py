"""What computing a profile's missing artifacts will cost, in hours of this machine type, from the
rates that stored artifacts measured (their provenance records the wall time of each).

Rates (:func:`measured_rates`, from every artifact of a calibration store):

* pretraining: tokens per second (each pretraining result's ``tokens_per_s``);
* fine-tuning: seconds per training example and epoch, per task (evaluation included, in
  proportion), from each fine-tuning artifact's wall time, training examples and epochs;
* every other stage (analysis, extrapolation, baselines, unigram): the wall time of one artifact.

Each rate is the median over the artifacts, so that the few computed beside other work (slower)
do not drag it.

A pretraining artifact at a kept budget costs the steps from where its run will resume: the run
folder's last checkpoint, or the run's latest earlier budget that the plan computes first (a long
run saves its snapshots on the way), else step 0. A stored earlier budget whose run folder went
with a session's work folder saves nothing: the run trains again from step 0. The book prices a plan
without looking at checkpoints (``checkpoints=False``), so that its numbers depend on the store alone,
never on what one machine's work folder holds. A fine-tuning artifact costs its task's training examples
(the profile's cap, or the task's size) times its epochs. The estimate is only as good as the
calibration: use a store of the same model and recipe on the same machine type, run on an
otherwise idle machine; a stage or task it never measured is reported as unknown, not guessed.
"""
from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pe_book.experiments.cards import ASSUMED_MFU, Card
from pe_book.experiments.results import PlannedArtifact, Results
from pe_book.experiments.store import Artifact, Store, hardware, same_machine_type
from pe_lib.training.checkpoints import latest_checkpoint

if TYPE_CHECKING:  # pandas is imported by the estimate alone: a dry run without one skips it
    import pandas as pd


@dataclass
class Rates:
    tokens_per_s: float  # pretraining; NaN when no pretraining was measured
    finetune_s_per_example: dict[str, float]  # task -> seconds per training example and epoch
    stage_s: dict[str, float]  # other stage kind -> wall seconds of one artifact


def stage_kind(stage: str) -> str:
    """``"finetune"`` from ``"finetune-sst2-p0-seed1"``, ``"baselines"`` from ``"baselines-cola"``."""
    return stage.split("-")[0]


def measured_rates(store: Store, machine: dict | None = None) -> Rates:
    """The rates of every artifact in ``store`` (see the module docstring); with ``machine`` (a
    :func:`~pe_book.experiments.store.hardware` record), only of those computed on its type. Each is
    read through its manifest: a damaged one is named in a warning and measures nothing."""
    tokens, per_example, walls = [], defaultdict(list), defaultdict(list)
    for artifact in checked_artifacts(store):
        payload, provenance = artifact.payload, artifact.provenance
        if machine is not None and not same_machine_type(provenance["hardware"], machine):
            continue
        kind = stage_kind(artifact.folder.name)
        if kind == "pretrain":
            tokens.append(float(payload["result"]["tokens_per_s"]))
        elif kind == "finetune":
            config = provenance["config"]
            work = payload["train_examples"] * config["finetune"]["epochs"]
            per_example[config["task"]].append(provenance["wall_s"] / work)
        else:
            walls[kind].append(provenance["wall_s"])
    return Rates(statistics.median(tokens) if tokens else math.nan,
                 {t: statistics.median(v) for t, v in per_example.items()},
                 {k: statistics.median(v) for k, v in walls.items()})


def spent_hours(store: Store) -> float:
    """The wall hours that computing the store's artifacts took, as their provenance records (a
    damaged one, named in a warning, left out)."""
    return sum(artifact.provenance["wall_s"] for artifact in checked_artifacts(store)) / 3600


def checked_artifacts(store: Store) -> list[Artifact]:
    """Every artifact of ``store`` that its manifest vouches for (:meth:`Store.read`; the others are
    named in one warning each and left out)."""
    return [artifact for artifact in map(store.read, store.artifact_folders()) if artifact is not None]


def with_fallback(rates: Rates, fallback: Rates) -> Rates:
    """``rates``, with ``fallback``'s where ``rates`` has measured nothing (a run that has not yet
    reached a stage or task, priced at a calibration store's rates meanwhile)."""
    return Rates(fallback.tokens_per_s if math.isnan(rates.tokens_per_s) else rates.tokens_per_s,
                 {**fallback.finetune_s_per_example, **rates.finetune_s_per_example}, {**fallback.stage_s, **rates.stage_s})


def artifact_seconds(runner: Results, artifact: PlannedArtifact, rates: Rates, checkpoints: bool = True) -> float:
    """The expected wall seconds of computing one planned artifact (NaN when its rate is unknown);
    ``checkpoints``: a pretraining resumes from its run folder's checkpoint (else from the plan alone)."""
    kind, config, profile = stage_kind(artifact.stage), artifact.config, runner.profile
    if kind == "pretrain":
        steps = config["pretrain"]["steps"]
        tokens = (steps - resume_step(runner, artifact, checkpoints)) * profile.pretrain.batch_size * profile.seq_len
        return tokens / rates.tokens_per_s
    if kind == "finetune":
        task = config["task"]
        if task not in rates.finetune_s_per_example:
            return math.nan
        examples = len(runner.task(task).splits["train"])
        return examples * config["finetune"]["epochs"] * rates.finetune_s_per_example[task]
    return rates.stage_s.get(kind, math.nan)


def resume_step(runner: Results, pretraining: PlannedArtifact, checkpoints: bool = True) -> int:
    """The step from which the planned ``pretraining`` will train (see the module docstring)."""
    steps, seed = pretraining.config["pretrain"]["steps"], pretraining.config["pretrain"]["seed"]
    checkpoint = latest_checkpoint(runner.run_dir(pretraining.variant, seed)) if checkpoints else None
    reached = int(checkpoint.name.removeprefix("step-")) if checkpoint is not None else 0
    computed_first = [b for b in runner.profile.pretrain.budgets
                      if b < steps and not runner.planned_pretraining(pretraining.variant, seed, b).stored]
    return min(steps, max([reached, *computed_first]))


def estimate(runner: Results, planned: list[PlannedArtifact], rates: Rates, checkpoints: bool = True) -> pd.DataFrame:
    """Per stage kind: artifacts to compute, their expected hours, and how many have no measured
    rate (``unknown``); a last row ``total``. ``checkpoints``: as in :func:`artifact_seconds`."""
    import pandas as pd

    rows: dict[str, dict] = defaultdict(lambda: {"to compute": 0, "hours": 0.0, "unknown": 0})
    for artifact in planned:
        if artifact.stored:
            continue
        row = rows[stage_kind(artifact.stage)]
        seconds = artifact_seconds(runner, artifact, rates, checkpoints)
        row["to compute"] += 1
        if math.isnan(seconds):
            row["unknown"] += 1
        else:
            row["hours"] += seconds / 3600
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["to compute", "hours", "unknown"]).rename_axis("stage")
    table.loc["total"] = table.sum()
    return table.astype({"to compute": int, "unknown": int})


def model_seconds(runner: Results, model: list[PlannedArtifact], rates: Rates) -> float:
    """The expected wall seconds of a model's missing artifacts (:meth:`Results.model_plan`, its
    pretraining first), the parts without a measured rate left out (NaN when none has one). A
    stored pretraining is priced again when something else is missing and the work folder lacks
    its weights: the analysis and the fine-tunings start from them, so the run trains them again."""
    pretraining, rest = model[0], [a for a in model[1:] if not a.stored]
    seed, steps = pretraining.config["pretrain"]["seed"], pretraining.config["pretrain"]["steps"]
    retrain = not pretraining.stored or (rest and not runner.has_weights(pretraining.variant, seed, steps))
    parts = [artifact_seconds(runner, a, rates) for a in ([pretraining] if retrain else []) + rest]
    known = [s for s in parts if not math.isnan(s)]
    return sum(known) if known or not parts else math.nan


def stop_when_out_of_time(runner: Results, seconds: float, clock: Callable[[], float] = time.monotonic
                          ) -> Callable[[list[PlannedArtifact]], str | None]:
    """A ``stop`` rule for :meth:`pe_book.experiments.runner.Runner.run`: end the run before a model
    whose missing artifacts (:func:`model_seconds`: its pretraining, analysis and fine-tunings) would not be finished within
    ``seconds`` of now, at the rates its store has measured so far on this machine type (on any,
    where it has measured none here; read again before each model, so the run's own artifacts
    calibrate it). A session's work folder goes with it: a run stopped so loses no partial
    pretraining, and leaves no stored model without its fine-tunings, whose weights the next
    session would have to train again. With no measured rate yet, every model starts."""
    deadline = clock() + seconds
    here = hardware()

    def stop(model: list[PlannedArtifact]) -> str | None:
        if all(a.stored for a in model):
            return None
        rates = with_fallback(measured_rates(runner.store, here), measured_rates(runner.store))
        needed = model_seconds(runner, model, rates)
        left = deadline - clock()
        if math.isnan(needed) or needed <= left:
            return None
        return (f"stopped before {model[0].variant} {model[0].stage}: its missing artifacts take about "
                f"{needed / 60:.0f} min at the measured rates, {max(left, 0) / 60:.0f} min are left")

    return stop


# ----------------------------------------------------------------------------- accelerators


#: Training examples of the hub tasks (their train splits), for the fine-tuning of a profile without a cap.
HUB_TRAIN_EXAMPLES = {"cola": 8_551, "sst2": 67_349, "mrpc": 3_668, "stsb": 5_749, "qnli": 104_743, "rte": 2_490,
                      "squad": 87_599, "squad_v2": 130_319}
#: Bytes a parameter takes in training: fp32 weights, gradients and AdamW's two moments.
STATE_BYTES = 16


@dataclass(frozen=True)
class CardEstimate:
    """A profile's cost on ``devices`` cards (:func:`card_estimate`)."""
    card: Card
    devices: int
    models: int  # pretrainings
    parameters: int
    micro_batch: int
    state_gib: float
    activation_gib: float
    logits_gib: float
    pretrain_hours: float
    finetune_hours: float
    rate: str  # where the throughput came from, in words

    @property
    def memory_gib(self) -> float:
        return self.state_gib + self.activation_gib + self.logits_gib


def parameter_count(profile, variant: str) -> int:
    """The parameters of ``profile``'s model of ``variant``, counted on PyTorch's meta device (no memory)."""
    import torch

    from pe_lib.model import PEBertConfig, PEBertForMaskedLM, quiet_transformers

    config = PEBertConfig(vocab_size=profile.tokenizer["vocab_size"], position_embedding=variant, **profile.model)
    with torch.device("meta"), quiet_transformers():
        return sum(p.numel() for p in PEBertForMaskedLM(config).parameters())


def flops_per_token(parameters: int, layers: int, hidden: int, length: int) -> float:
    """Training FLOPs of one token: 6N + 6·L·s·h (Kaplan et al. 2020: 2N + 2·L·s·h forward, twice that backward)."""
    return 6 * parameters + 6 * layers * length * hidden


def activation_gib(profile, micro_batch: int, bf16: bool) -> float:
    """Activation memory of one micro-batch, after Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h) bytes a
    layer in 16-bit (twice that in fp32); with activation checkpointing, 2·s·b·h bytes a layer plus one
    layer's full activations."""
    s, h, a, layers = profile.seq_len, profile.model["hidden_size"], profile.model["num_attention_heads"], profile.model["num_hidden_layers"]
    layer = s * micro_batch * h * (34 + 5 * a * s / h) * (1 if bf16 else 2)
    total = 2 * s * micro_batch * h * layers + layer if profile.pretrain.activation_checkpointing else layer * layers
    return total / 2**30


def measured_tokens_per_s(bench: dict, profile, card: Card) -> float | None:
    """Pretraining tokens per second of ``profile``'s model that ``bench`` (``results/bench.json``)
    measured on ``card`` (its ``mfu`` rows of the profile, on a machine whose GPU the card names),
    or None."""
    gpu = (bench.get("machine") or {}).get("gpu") or ""
    if card.name.split()[1] not in gpu:
        return None
    rows = [row["tokens_per_s"] for row in bench.get("mfu", []) if row.get("profile") == profile.name]
    return statistics.median(rows) if rows else None


def card_estimate(profile, card: Card, devices: int = 1, bench: dict | None = None) -> CardEstimate:
    """GPU-hours and memory per device of every model of ``profile`` on ``devices`` ``card``\\ s: its
    pretrainings (steps × batch × sequence length tokens) and fine-tunings, at every kept budget (training examples ×
    epochs × the fine-tuning length, an upper bound: padding counted), at the throughput ``bench``
    measured on the card (:func:`measured_tokens_per_s`), else at :data:`ASSUMED_MFU` of its peak
    (:func:`flops_per_token`); memory from :data:`STATE_BYTES` a parameter, :func:`activation_gib`
    and the MLM logits at the masked positions (bf16, their fp32 copy and its gradient: 10 bytes)."""
    cfg, model = profile.pretrain, profile.model
    models = sum(len(profile.pretrain_seeds_for(v)) for v in profile.variants)
    parameters = max(parameter_count(profile, v) for v in profile.variants)
    micro_batch = max(1, cfg.batch_size // (devices * cfg.accumulation_steps))
    bf16 = cfg.precision != "fp32"
    measured = measured_tokens_per_s(bench or {}, profile, card)
    per_token = flops_per_token(parameters, model["num_hidden_layers"], model["hidden_size"], profile.seq_len)
    tokens_per_s = measured or ASSUMED_MFU * card.bf16_tflops * 1e12 / per_token
    rate = (f"{measured:,.0f} tokens/s measured on the card (results/bench.json)" if measured else
            f"{ASSUMED_MFU:.0%} of the card's peak, assumed (no rate measured on it in results/bench.json): "
            f"6N + 6·L·s·h FLOPs a token, N = {parameters / 1e6:.0f}M parameters")
    pretrain_tokens = models * cfg.steps * cfg.batch_size * profile.seq_len
    finetune_tokens = models * len(cfg.budgets) * sum(
        (profile.max_train_for(t) or HUB_TRAIN_EXAMPLES.get(t, 0)) * profile.finetune_for(t).epochs
        * profile.finetune_for(t).max_seq_len * len(profile.seeds_for(t)) for t in profile.tasks)
    vocab = profile.tokenizer["vocab_size"]
    logits = micro_batch * profile.seq_len * cfg.mask_prob * vocab * 10 / 2**30
    return CardEstimate(card, devices, models, parameters, micro_batch, parameters * STATE_BYTES / 2**30,
                        activation_gib(profile, micro_batch, bf16), logits,
                        pretrain_tokens / tokens_per_s / 3600, finetune_tokens / tokens_per_s / 3600, rate)
