"""Chapter "Pretraining" (03): the pretraining curves, final losses and setup of a profile."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from pe_lib.model import PEBertConfig, PEBertForMaskedLM

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


def count_parameters(model_config: Mapping) -> int:
    """Parameters of a :class:`PEBertForMaskedLM` with this config (tied weights counted once),
    built on the ``meta`` device (no memory, milliseconds)."""
    import torch


    from pe_lib.model import PEBertConfig, PEBertForMaskedLM


    with torch.device("meta"):
        model = PEBertForMaskedLM(PEBertConfig(**model_config))
    return sum(p.numel() for p in model.parameters())


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
