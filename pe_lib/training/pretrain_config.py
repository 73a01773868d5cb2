"""The configuration of a pretraining run (:class:`PretrainConfig`) and a run's identity.

A run's identity (:func:`run_identity`: its model config and :func:`config_identity`) is what its
checkpoints and result belong to, and part of the runner's keys: it is written in every checkpoint
and result, and a run folder is resumed only by a run of the same identity
(:func:`pe_lib.training.distributed.check_same_run`).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace

from pe_lib.config import PEBertConfig
from pe_lib.errors import InputError

PRECISIONS = ("auto", "bf16", "fp32")
#: Learning-rate schedules after the linear warm-up: ``linear`` decays to 0 at the last step;
#: ``constant`` holds the peak; ``inverse-sqrt`` decays as sqrt(warmup / step). The last two are
#: anytime schedules: the learning rate of a step does not depend on the run's length.
SCHEDULES = ("linear", "constant", "inverse-sqrt")


@dataclass(frozen=True)
class PretrainConfig:
    """Optimisation settings of one pretraining run (model size lives in ``PEBertConfig``)."""

    steps: int = 1000
    batch_size: int = 32  # global batch (sequences per step, over all processes)
    lr: float = 5e-4
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    mask_prob: float = 0.15
    precision: str = "auto"  # auto: bf16 where the CPU/GPU supports it, else fp32
    seed: int = 0
    log_every: int = 10
    eval_every: int = 100
    eval_batches: int = 4
    checkpoint_every: int = 100
    schedule: str = "linear"  # one of SCHEDULES
    snapshot_steps: tuple[int, ...] = ()  # steps whose models are kept (anytime schedules only)
    accumulation_steps: int = 1  # micro-batches per process and step, gradients summed (module docstring: Memory)
    activation_checkpointing: bool = False  # recompute each layer in the backward pass (less activation memory)

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.schedule not in SCHEDULES:
            raise InputError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        for name in ("steps", "batch_size", "log_every", "eval_every", "eval_batches", "checkpoint_every",
                     "accumulation_steps"):
            if getattr(self, name) < 1:
                raise InputError(f"PretrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.seed < 0:
            raise InputError(f"PretrainConfig.seed must be an integer of at least 0, got {self.seed!r}")
        if self.warmup_steps < 0:
            raise InputError(f"PretrainConfig.warmup_steps must be an integer of at least 0, got "
                             f"{self.warmup_steps!r}")
        for name in ("lr", "grad_clip"):
            check_number(self, name, above=0)
        check_number(self, "weight_decay", at_least=0)
        check_number(self, "mask_prob", above=0, at_most=1)
        object.__setattr__(self, "snapshot_steps", tuple(sorted(set(self.snapshot_steps))))
        if self.snapshot_steps and self.schedule == "linear":
            raise InputError("snapshot_steps need an anytime schedule (constant or inverse-sqrt): under the linear "
                             "schedule a snapshot is not the model of a run of that length")
        if any(not 0 < s < self.steps for s in self.snapshot_steps):
            raise InputError(f"snapshot_steps must lie between 0 and steps ({self.steps}), got {self.snapshot_steps}")

    def at(self, steps: int) -> PretrainConfig:
        """The configuration of a run of ``steps`` steps whose model is this run's snapshot at ``steps``
        (the same configuration without snapshots when ``steps`` is this run's length)."""
        if steps != self.steps and steps not in self.snapshot_steps:
            raise InputError(f"no model is kept at step {steps}; kept: {', '.join(map(str, self.budgets))}")
        return replace(self, steps=steps, snapshot_steps=())

    @property
    def budgets(self) -> tuple[int, ...]:
        """The steps at which a model is kept: every snapshot, then the last step."""
        return (*self.snapshot_steps, self.steps)


def check_number(config, name: str, above: float | None = None, at_least: float | None = None,
                 at_most: float = math.inf) -> None:
    """Refuse, naming it, a field of ``config`` that is not a finite number above ``above`` (or at
    least ``at_least``) and at most ``at_most``: a NaN learning rate would reach the optimiser."""
    value = getattr(config, name)
    low, included = (at_least, True) if above is None else (above, False)
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if number and low <= value <= at_most and (included or value > low):
        return
    bounds = f"{'at least' if included else 'above'} {low:g}"
    bounds += f" and at most {at_most:g}" if at_most < math.inf else ""
    raise InputError(f"{type(config).__name__}.{name} must be a finite number {bounds}, got {value!r}")


#: PretrainConfig fields added after runs were stored, with their defaults: a field at its default is
#: left out of a run's identity, so the identities (and the runner's keys) of earlier runs stay.
LATER_FIELDS = {"accumulation_steps": 1, "activation_checkpointing": False}


def config_identity(cfg: PretrainConfig) -> dict:
    """``asdict(cfg)`` without the :data:`LATER_FIELDS` that are at their defaults."""
    return {k: v for k, v in asdict(cfg).items() if not (k in LATER_FIELDS and v == LATER_FIELDS[k])}


def run_identity(model_config: PEBertConfig, cfg: PretrainConfig) -> dict:
    """What a run folder's checkpoints and result belong to (as read back from JSON)."""
    return json.loads(json.dumps({"model": model_config.to_diff_dict(), "config": config_identity(cfg)}))


def same_recipe(saved: dict, model_config: PEBertConfig, cfg: PretrainConfig) -> bool:
    """True when the run ``saved`` (its result) is ``cfg``'s model and recipe, whatever its length and snapshots."""
    def recipe(identity: dict) -> dict:
        return {"model": identity["model"], "config": {**identity["config"], "steps": None, "snapshot_steps": None}}
    return recipe(saved) == recipe(run_identity(model_config, cfg))
