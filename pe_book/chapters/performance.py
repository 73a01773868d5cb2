"""Chapter "Performance" (09): the side-by-side benchmark of ``make bench`` (``results/bench.json``),
read and tabulated; nothing is measured here."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pe_book.bench import pipeline_speed, report
from pe_lib.errors import InputError


@dataclass
class Performance:
    """The benchmark's sections as tables (``hf``, ``variants``, ``relative``, ``mfu``,
    ``smoke``, ``profile`` with its ``floor`` table, ``finetune`` with its ``finetune_time``
    table, ``targets``) and ``cited``, by glue name."""
    hf: pd.DataFrame
    variants: pd.DataFrame
    relative: pd.DataFrame
    mfu: pd.DataFrame
    smoke: dict
    profile: pd.DataFrame
    floor: pd.DataFrame
    finetune: pd.DataFrame
    finetune_time: pd.DataFrame
    targets: pd.DataFrame
    cited: dict


def config_text(configs: list[dict]) -> str:
    """The benchmark's model and batches in words, from its recorded ``configs``."""
    if not configs:
        return "not recorded by this benchmark run (rerun `make bench`)"
    first = configs[0]
    batches = " and ".join(f"{c['batch']} sequences at {c['seq']} tokens" for c in configs)
    return (f"{first['layers']} layers, hidden size {first['hidden']}, {first['heads']} heads, a vocabulary of "
            f"{first['vocab']:,}, batches of {batches}, {first['rounds']} timed steps per contender")


def compute(bench_json: str | Path = "results/bench.json") -> Performance:
    """The benchmark run saved in ``bench_json`` (``make bench``)."""
    path = Path(bench_json)
    if not path.exists():
        raise InputError(f"{bench_json} not found: run `make bench` (pe-book bench --json {bench_json})")
    result = json.loads(path.read_text())
    machine = result["machine"]
    hf, variants = pd.DataFrame(result["hf"]), pd.DataFrame(result["variants"])
    relative, mfu = pd.DataFrame(result["relative"]), pd.DataFrame(result["mfu"])
    smoke, profile = result.get("smoke", {}), pd.DataFrame(result.get("profile", []))
    cited = {"machine_cpu": machine["cpu"], "machine_cores": machine["cores"], "machine_threads": machine["torch_threads"],
             "torch_version": machine["versions"]["torch"], "transformers_version": machine["versions"]["transformers"],
             "bench_created": result["created"], "bench_commit": result["git_commit"][:12],
             "bench_config": config_text(result.get("configs", [])),
             **{f"speedup_{row.seq}_{row.dtype}": row.speedup for row in hf.itertuples()}}
    worst = variants.loc[variants.groupby("seq")["relative_to_ape_learned"].idxmax()]
    for row in worst.itertuples():
        cited[f"worst_variant_{row.seq}"] = row.variant
        cited[f"worst_ratio_{row.seq}"] = row.relative_to_ape_learned
    last = relative.iloc[-1]
    cited.update({"relative_seq": int(last["seq"]), "relative_memory_ratio": last["memory_ratio"],
                  "relative_time_ratio": last["time_ratio"]})
    for row in mfu.itertuples():
        cited[f"mfu_{row.dtype}"] = 100 * row.mfu
        cited[f"tokens_per_s_{row.dtype}"] = row.tokens_per_s
    cited["mfu_hidden"] = str(int(mfu["hidden"].iloc[0])) if "hidden" in mfu else "not recorded by this run"
    cited["profile_seq"] = int(profile["seq"].iloc[0]) if len(profile) else "not run"
    cited["smoke_minutes"] = smoke.get("end_to_end_s", math.nan) / 60
    floor = floor_table(profile)
    for dtype, row in (floor.iterrows() if len(profile) else ()):
        cited.update({f"floor_ms_{dtype}": row["matmul_floor_ms"], f"step_ms_{dtype}": row["step_ms"],
                      f"hf_half_ms_{dtype}": row["hf_step_ms"] / 2, f"max_speedup_{dtype}": row["max_speedup"],
                      f"matmul_share_{dtype}": 100 * row["matmul_floor_ms"] / row["step_ms"]})
    section = result.get("fine-tune", {})
    cited.update(finetune_cited(section))
    return Performance(hf, variants, relative, mfu, smoke, profile, floor, finetune_table(section), finetune_time(section),
                       pd.DataFrame(report.targets(result)), cited)


#: What the chapter says in place of the fine-tune section's figures when the benchmark run has none.
NO_FINETUNE = "no fine-tune section in this benchmark run: pe-book bench --sections fine-tune --json results/bench.json --update"


def glue_key(kind: str) -> str:
    """A task kind as part of a glue name ("word order" -> "word_order")."""
    return kind.replace(" ", "_")


def finetune_table(section: dict) -> pd.DataFrame:
    """Each task kind's fine-tuning before and after: non-padding tokens/s, the pretraining step's
    beside it, their ratio, the padding share of the training batches and the wall time."""
    if not section.get("rows"):
        return pd.DataFrame({"note": [NO_FINETUNE]})
    columns = {"kind": "task kind", "task": "task", "when": "code", "train_examples": "training examples",
               "tokens_per_s": "fine-tuning tokens/s", "pretraining_tokens_per_s": "pretraining tokens/s",
               "ratio": "ratio", "padding_share": "padding", "wall_s": "seconds"}
    return pd.DataFrame(section["rows"])[list(columns)].rename(columns=columns)


def finetune_time(section: dict) -> pd.DataFrame:
    """Seconds of each phase of each fine-tuning (rows: task kind and code; columns: phases)."""
    rows = section.get("rows", [])
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame([r["seconds"] for r in rows], index=[f"{r['kind']} ({r['task']}), {r['when']}" for r in rows])
    return table[[*pipeline_speed.FINETUNE_PHASES, "other"]]  # the phases in the order of a fine-tuning (the JSON sorts them)


def finetune_cited(section: dict) -> dict:
    """Glue values of the fine-tune section: its machine and commit, and per task kind and code
    (before, after) the ratio to pretraining's tokens/s, the padding and evaluation shares."""
    rows = section.get("rows", [])
    cited = {f"finetune_{name}_{glue_key(kind)}_{when}": math.nan for kind in pipeline_speed.FINETUNE_TASKS for when in ("before", "after")
             for name in ("ratio", "tokens", "padding", "evaluation")}
    if not rows:
        return cited | {"finetune_note": NO_FINETUNE, "finetune_worst_ratio": math.nan, "finetune_machine": "not measured",
                        "finetune_created": "not measured", "finetune_commit": "not measured", "finetune_percent": math.nan,
                        "finetune_rounds": "no"}
    machine = section["machine"]
    cited |= {"finetune_note": "", "finetune_machine": f"{machine['cpu']} ({machine['cores']} cores, {machine['torch_threads']} torch threads)",
              "finetune_created": section["created"], "finetune_commit": section["git_commit"][:12] + ("-dirty" if section["git_commit"].endswith("-dirty") else ""),
              "finetune_percent": 100 * section["fraction"], "finetune_rounds": section["rounds"],
              "finetune_worst_ratio": min(r["ratio"] for r in rows if r["when"] == "after")}
    for r in rows:
        key = f"{glue_key(r['kind'])}_{r['when']}"
        cited.update({f"finetune_ratio_{key}": r["ratio"], f"finetune_tokens_{key}": r["tokens_per_s"],
                      f"finetune_padding_{key}": 100 * r["padding_share"],
                      f"finetune_evaluation_{key}": 100 * r["seconds"]["evaluation"] / r["wall_s"]})
    return cited


def floor_table(profile: pd.DataFrame) -> pd.DataFrame:
    """pe_lib's step time, its matmul floor and the largest possible speed-up per dtype, beside HF's step time."""
    if not len(profile):
        return pd.DataFrame({"note": ["no profile section in this benchmark run: pe-book bench --sections profile"]})
    ours = profile[profile["model"] == "pe_lib"].set_index("dtype")
    theirs = profile[profile["model"] == "hf"].set_index("dtype")
    return ours[["step_ms", "matmul_floor_ms", "max_speedup"]].assign(hf_step_ms=theirs["step_ms"])
