"""The benchmark's results read: the project's performance targets, the printed report, and the stored
file with some sections replaced."""
from __future__ import annotations

import json
from pathlib import Path


#: (name, section, row filter, value, comparison, threshold) of the project's performance targets.
TARGETS = (
    ("throughput vs HF, seq 128, fp32", "hf", {"seq": 128, "dtype": "fp32"}, "speedup", ">=", 2.0),
    ("throughput vs HF, seq 128, bf16", "hf", {"seq": 128, "dtype": "bf16"}, "speedup", ">=", 2.0),
    ("slowest variant vs ape-learned, seq 128", "variants", {"seq": 128}, "relative_to_ape_learned", "<=", 1.25),
    ("slowest variant vs ape-learned, seq 512", "variants", {"seq": 512}, "relative_to_ape_learned", "<=", 1.5),
    ("relative attention peak memory vs naive, seq 2048", "relative", {"seq": 2048}, "memory_ratio", "<=", 0.25),
    ("MFU of the cpu profile's model, bf16", "mfu", {"dtype": "bf16"}, "mfu", ">=", 0.25),
    ("fine-tuning vs pretraining tokens/s, every task kind", "fine-tune", {"when": "after"}, "ratio", ">=", 0.8),
)


def section_rows(result: dict, section: str) -> list[dict]:
    """A section's rows: the section itself, or its ``rows`` when it records more (fine-tune)."""
    rows = result.get(section, [])
    return rows.get("rows", []) if isinstance(rows, dict) else rows


def targets(result: dict) -> list[dict]:
    """Each target with the measured value (the worst matching row), whether it is met, and for a
    missed one how far it is short, relative to the threshold."""
    rows = []
    for name, section, where, key, op, threshold in TARGETS:
        values = [r[key] for r in section_rows(result, section) if all(r.get(k) == v for k, v in where.items())]
        if not values:
            rows.append({"target": name, "threshold": f"{op} {threshold:g}", "measured": None, "met": None, "short by": None})
            continue
        value = min(values) if op == ">=" else max(values)
        met = value >= threshold if op == ">=" else value <= threshold
        short = None if met else abs(value - threshold) / threshold
        rows.append({"target": name, "threshold": f"{op} {threshold:g}", "measured": value, "met": bool(met), "short by": short})
    return rows


def print_report(result: dict) -> None:
    m = result["machine"]
    print(f"machine: {m['cpu']}, {m['cores']} cores, torch {m['versions']['torch']}, {m['torch_threads']} threads")
    for r in result.get("hf", []):
        print(f"[hf]       seq {r['seq']:4d} {r['dtype']}: pe_lib {r['pe_lib_tok_s']:7.0f} tok/s, hf {r['hf_tok_s']:7.0f} tok/s,"
              f" speedup {r['speedup']:.2f}x")
    for r in result.get("variants", []):
        print(f"[variants] seq {r['seq']:4d} {r['variant']:16s} {r['ms_per_step']:8.1f} ms  {r['relative_to_ape_learned']:.2f}x")
    for r in result.get("relative", []):
        print(f"[relative] seq {r['seq']:4d}: time {r['pe_lib_s'] * 1e3:8.1f} vs {r['naive_s'] * 1e3:8.1f} ms ({r['time_ratio']:.2f}x),"
              f" peak {r['pe_lib_peak_mib']:7.1f} vs {r['naive_peak_mib']:7.1f} MiB ({r['memory_ratio']:.2f}x)")
    for r in result.get("mfu", []):
        print(f"[mfu]      {r['profile']} model {r['dtype']}: {r['tokens_per_s']:.0f} tok/s, {r['achieved_tflops']:.3f} of"
              f" {r['peak_tflops']:.3f} TFLOP/s peak = MFU {100 * r['mfu']:.1f}%")
    for r in result.get("profile", []):
        shares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["shares"].items())
        floor = f", matmul floor {r['matmul_floor_ms']:.0f} ms (max speed-up {r['max_speedup']:.2f}x)" if "max_speedup" in r else ""
        print(f"[profile]  seq {r['seq']} {r['dtype']} {r['model']:6s}: {r['step_ms']:.0f} ms/step{floor}; {shares}")
    if "smoke" in result:
        print("[smoke]    " + ", ".join(f"{k} {v:.1f}" for k, v in result["smoke"].items()))
    if "dry-run" in result:
        r = result["dry-run"]
        print(f"[dry-run]  {r['profile']}: base {r['base'][:10]} {r['base_s']:.1f} s, working tree {r['working_tree_s']:.1f} s"
              f" (median of {r['rounds']}): {r['speedup']:.2f}x faster; same plan: {'yes' if r['same_plan'] else 'NO'}")
    for kind, entry in result.get("precision", {}).items():
        for r in entry["rows"]:
            print(f"[precision] {r['variant']:12s} {r['dtype']}: {r['tokens_per_s']:7.0f} tok/s = {r['vs_fp32']:.2f}x fp32 ({kind})")
    for r in result.get("fine-tune", {}).get("rows", []):
        phases = ", ".join(f"{k} {v:.1f}" for k, v in r["seconds"].items())
        print(f"[fine-tune] {r['kind']:15s} ({r['task']}) {r['when']:6s}: {r['tokens_per_s']:7.0f} tok/s vs pretraining"
              f" {r['pretraining_tokens_per_s']:7.0f} = {r['ratio']:.2f}x; padding {100 * r['padding_share']:.0f}%;"
              f" {r['wall_s']:.1f} s: {phases}")


def updated(path: str, result: dict, sections: list[str]) -> dict:
    """The benchmark stored at ``path`` with ``sections`` replaced by this run's (the rest kept,
    with the machine, time and commit they were measured on)."""
    stored = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    if not stored:
        return result
    replaced = [*sections, *(["configs"] if {"hf", "variants"} & set(sections) else [])]  # configs: of hf and variants
    return stored | {key: result[key] for key in replaced if key in result}
