"""The scale of a run as the book states it beside its verdicts (the intro, chapters 3 and 8, the
README): the size of its models and the tokens, tasks and seeds behind them. Shared by chapters;
no chapter of its own."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from pe_book import tables
from pe_book.chapters import common
from pe_lib.config import PEBertConfig
from pe_lib.model import PEBertForMaskedLM


def count_parameters(model_config: Mapping) -> int:
    """Parameters of a :class:`PEBertForMaskedLM` with this config (tied weights counted once),
    built on the ``meta`` device (no memory, milliseconds)."""
    with torch.device("meta"):
        model = PEBertForMaskedLM(PEBertConfig(**model_config))
    return sum(p.numel() for p in model.parameters())


def scale_text(runner, names: Sequence[str], finetuned: Mapping, profile) -> str:
    """The scale a verdict holds at, from the pretraining artifacts (their recorded configuration)
    and the fine-tuning ones: the models' size (layers, width, parameters), the tokens each was
    pretrained on (steps x batch size x sequence length), the tasks and where their data came
    from, and the seeds (of ``profile``: the runner's with the chapter's fine-tuning seeds)."""
    configs = [runner.pretrained(n).provenance["config"] for n in names]
    shapes = " or ".join(dict.fromkeys(f"{c['model']['num_hidden_layers']}-layer, {c['model']['hidden_size']}-wide"
                                       for c in configs))
    parameters = [count_parameters(c["model"]) for c in configs]
    size = " to ".join(dict.fromkeys(f"{p / 1e6:.2f}M" for p in (min(parameters), max(parameters))))
    tokens = [c["pretrain"]["steps"] * c["pretrain"]["batch_size"] * c["data"]["seq_len"] for c in configs]
    seen = " to ".join(dict.fromkeys(f"{t / 1e6:.1f}M" for t in (min(tokens), max(tokens))))
    found = tables.origins(finetuned)
    packaged = all(o.startswith("packaged") for kinds in found.values() for o in kinds)
    tasks = f"{len(found)} tasks ({', '.join(found)}{'; offline analogues' if packaged else ''})"
    return (f"{shapes} models of {size} parameters, pretrained on {seen} tokens each; {tasks}; "
            f"{common.seed_design(profile, names, list(found))}")
