"""Chapter "Pretraining" (03): the pretraining curves, final losses and setup of a profile, and
when each pretraining leaves none's plateau (:mod:`pe_book.plateau`; chapter 8 cites it too)."""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_book.chapters import common
from pe_book.chapters.escapes import Escapes, escape_cited, escapes_of, stored_validation_curves, validation_curves
from pe_book.chapters.run_scale import count_parameters
from pe_lib.positions import resolve_variants


def curve_frame(curves: Mapping[str, Sequence[Mapping]]) -> pd.DataFrame:
    """Long table ``variant, step, split, loss`` of the pretraining curves (``curve.jsonl`` records)."""
    rows = [{"variant": v, "step": int(r["step"]), "split": r["split"], "loss": float(r["loss"])}
            for v, records in curves.items() for r in records]
    return pd.DataFrame(rows, columns=["variant", "step", "split", "loss"])


def final_losses(results: Mapping[str, Mapping], parameters: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Final validation MLM loss per variant (lowest first), with its perplexity, throughput and
    wall time; ``parameters`` (variant -> count) adds a column."""
    rows = []
    for variant, result in results.items():
        loss = float(result["validation_loss"])
        row = {"variant": variant, "validation loss": loss, "perplexity": math.exp(loss),
               "tokens/s": result.get("tokens_per_s"), "wall (s)": result.get("wall_s")}
        if parameters is not None:
            row["parameters"] = parameters.get(variant)
        rows.append(row)
    table = pd.DataFrame(rows).set_index("variant")
    return table.sort_values("validation loss", kind="stable")


def standing(final: pd.DataFrame, variant: str) -> str:
    """Where ``variant`` stands in :func:`final_losses`'s table, as the rest of a sentence that
    starts with its name: "ranks 3 of 17 (loss 4.123)", or "was not run here"."""
    if variant not in final.index:
        return "was not run here"
    rank = list(final.index).index(variant) + 1
    return f"ranks {rank} of {len(final)} (loss {final.loc[variant, 'validation loss']:.3f})"


def machine_name(hardware: Mapping) -> str:
    """A machine in words (an artifact's ``provenance["hardware"]``): CPU model, its fast-bf16
    extension (AMX, AVX512-BF16) if any, cores and GPU."""
    isa = hardware.get("isa", [])
    extension = " with AMX" if "amx_bf16" in isa else " with AVX512-BF16" if "avx512_bf16" in isa else ""
    gpu = f", GPU {hardware['gpu']}" if hardware.get("gpu") else ""
    return f"{hardware['cpu']}{extension}, {hardware['cores']} cores{gpu}"


def machines_text(provenances: Sequence[Mapping]) -> str:
    """The machines that computed ``provenances``, most used first, each with how many it computed
    (a long run falls on whatever machine each session gets)."""
    counts = Counter(machine_name(p["hardware"]) for p in provenances)
    if len(counts) == 1:
        return next(iter(counts))
    return "; ".join(f"{name} ({n})" for name, n in counts.most_common())


def pretraining_setup(config: Mapping, results: Mapping[str, Mapping]) -> dict:
    """The setup of a profile's pretraining from one artifact's provenance ``config`` (the
    ``stage: pretrain`` config: ``model``, ``pretrain``, ``data``) and every variant's result:
    model size, steps, batch, tokens seen, mean throughput, total wall time."""
    model, train, data = config["model"], config["pretrain"], config["data"]
    tokens = int(train["steps"]) * int(train["batch_size"]) * int(data["seq_len"])
    rates = [r["tokens_per_s"] for r in results.values() if r.get("tokens_per_s")]
    walls = [r["wall_s"] for r in results.values() if r.get("wall_s") is not None]
    return {
        "hidden_size": model["hidden_size"], "layers": model["num_hidden_layers"],
        "heads": model["num_attention_heads"], "intermediate_size": model["intermediate_size"],
        "vocab_size": model["vocab_size"], "seq_len": data["seq_len"], "steps": train["steps"],
        "batch_size": train["batch_size"], "lr": train["lr"], "warmup_steps": train["warmup_steps"],
        "tokens": tokens, "tokens_per_s": float(np.mean(rates)) if rates else math.nan,
        "wall_s": float(np.sum(walls)) if walls else math.nan, "variants": len(results),
    }


#: The rows of the setup table, by key of :func:`pretraining_setup`.
SETUP_LABELS = {"hidden_size": "hidden size", "layers": "layers", "heads": "attention heads",
                "intermediate_size": "feed-forward size", "vocab_size": "vocabulary", "seq_len": "sequence length",
                "steps": "steps", "batch_size": "batch (sequences)", "lr": "peak learning rate",
                "warmup_steps": "warm-up steps", "tokens": "tokens seen per model",
                "tokens_per_s": "tokens per second (mean)", "wall_s": "pretraining wall time, all models (s)",
                "variants": "models"}
UNIGRAM = "baseline: unigram"


@dataclass
class Pretraining:
    """What the chapter shows: the ``setup`` (:func:`pretraining_setup`), the ``curves``
    (:func:`curve_frame`) and the ``final`` losses (:func:`final_losses`) of pretraining seed 0 of
    each variant, ``final`` also with the number of pretraining seeds of each variant and the spread
    of their final validation losses (the unigram baseline's row :data:`UNIGRAM` included), the
    unigram ``unigram_loss`` and ``cited``, by glue name."""
    names: list[str]
    setup: dict
    curves: pd.DataFrame
    final: pd.DataFrame
    unigram_loss: float
    cited: dict
    #: When each pretraining left none's plateau (:class:`Escapes`), and the same of the trend's runs
    #: where a trend profile is given and stored.
    escapes: Escapes | None = None
    trend: Escapes | None = None

    def setup_table(self) -> pd.DataFrame:
        """The setup as a table of formatted values (rows: :data:`SETUP_LABELS`): counts exactly, the
        other numbers to 4 significant digits, never in e-notation (:func:`common.number_text`)."""
        values = [common.number_text(self.setup[k], 4) for k in SETUP_LABELS]
        return pd.DataFrame({"value": values}, index=list(SETUP_LABELS.values()))


def compute(runner, variants: Sequence[str] = (), trend=None) -> Pretraining:
    """The pretraining of ``variants`` (default: the profile's), as stored,
    with when each of its pretrainings left none's plateau; ``trend`` (a runner of the trend
    profile, or None) adds the same of its longer runs, of what its store holds (never computed)."""
    names = resolve_variants(variants, runner.profile.variants)
    artifacts = {name: runner.pretrained(name) for name in names}
    outcomes = {name: a.payload["result"] for name, a in artifacts.items()}
    first = artifacts[names[0]].provenance
    setup = pretraining_setup(first["config"], outcomes)
    parameters = {name: count_parameters(a.provenance["config"]["model"]) for name, a in artifacts.items()}
    unigram = runner.unigram().payload
    final = final_losses(outcomes, parameters)
    spread = common.seed_spread(common.over_pretraining_seeds(
        runner.profile, names, lambda v, p: runner.pretrained(v, p).payload["result"]["validation_loss"]))
    final = final.assign(seeds=spread["seeds"], **{"seed spread": spread["value"]})
    widest = common.largest_spread(spread)
    ranked, loss = list(final.index), final["validation loss"]
    cited = {
        "profile_description": runner.profile.description, "n_variants": len(names),
        **{f"setup_{key}": value for key, value in setup.items()},
        "setup_tokens_m": setup["tokens"] / 1e6, "setup_wall_min": setup["wall_s"] / 60,
        "params_min": min(parameters.values()) / 1e6, "params_max": max(parameters.values()) / 1e6,
        "precision": ", ".join(sorted({str(r.get("precision")) for r in outcomes.values()})),
        "machines": machines_text([a.provenance for a in artifacts.values()]),
        "torch_version": ", ".join(sorted({a.provenance["versions"]["torch"] for a in artifacts.values()})),
        "git_commit": ", ".join(sorted({a.provenance["git_commit"][:12] for a in artifacts.values()})),
        "log_vocab": math.log(setup["vocab_size"]), "unigram_loss": unigram["validation_loss"],
        "unigram_tokens": unigram["tokens"],
        "best_variant": ranked[0], "best_loss": loss.iloc[0], "worst_variant": ranked[-1], "worst_loss": loss.iloc[-1],
        "loss_range": loss.iloc[-1] - loss.iloc[0],
        "none_standing": standing(final, "none"), "alibi_standing": standing(final, "alibi"),
        "below_unigram": f"{int((loss < unigram['validation_loss']).sum())} of {len(final)}",
        "unigram_margin": unigram["validation_loss"] - loss.iloc[0],
        "seed_variants": widest["variants"], "seed_spread_max": widest["value"], "seed_spread_variant": widest["variant"],
    }
    final.loc[UNIGRAM, ["validation loss", "perplexity"]] = [unigram["validation_loss"], math.exp(unigram["validation_loss"])]
    curves = curve_frame({name: a.payload["curve"] for name, a in artifacts.items()})
    found = escapes_of(validation_curves(runner, names))
    stored = stored_validation_curves(trend) if trend is not None else {}
    trended = escapes_of(stored) if any(v == "none" for v, _ in stored) else None
    cited.update(escape_cited(found))
    cited.update(trend_stored=trended is not None, trend_name=trend.profile.name if trend is not None else "none",
                 trend_budget=int(trended.table["budget"].max()) if trended is not None else 0)
    return Pretraining(names, setup, curves, final.sort_values("validation loss", kind="stable"),
                       unigram["validation_loss"], cited, found, trended)
