"""Chapter "Performance" (09): the side-by-side benchmark of ``make bench`` (``results/bench.json``),
read and tabulated; nothing is measured here."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pe_book import bench
from pe_lib.errors import InputError


@dataclass
class Performance:
    """The benchmark's sections as tables (``hf``, ``variants``, ``relative``, ``mfu``,
    ``smoke``, ``profile`` with its ``floor`` table, ``targets``) and ``cited``, by glue name."""
    hf: pd.DataFrame
    variants: pd.DataFrame
    relative: pd.DataFrame
    mfu: pd.DataFrame
    smoke: dict
    profile: pd.DataFrame
    floor: pd.DataFrame
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
        raise InputError(f"{bench_json} not found: run `make bench` (python -m pe_book.bench --json {bench_json})")
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
    return Performance(hf, variants, relative, mfu, smoke, profile, floor, pd.DataFrame(bench.targets(result)), cited)


def floor_table(profile: pd.DataFrame) -> pd.DataFrame:
    """pe_lib's step time, its matmul floor and the largest possible speed-up per dtype, beside HF's step time."""
    if not len(profile):
        return pd.DataFrame({"note": ["no profile section in this benchmark run: python -m pe_book.bench --sections profile"]})
    ours = profile[profile["model"] == "pe_lib"].set_index("dtype")
    theirs = profile[profile["model"] == "hf"].set_index("dtype")
    return ours[["step_ms", "matmul_floor_ms", "max_speedup"]].assign(hf_step_ms=theirs["step_ms"])
