import json

import pytest

from pe_book.bench import precision
from pe_book.bench.contenders import BenchConfig, pe_model
from pe_book.bench.model_speed import model_flops_per_step, step_matmuls
from pe_book.bench.pipeline_speed import FINETUNE_PHASES, FINETUNE_TASKS, dry_run, finetune_phases
from pe_book.bench.report import targets, updated
from pe_lib.training.finetune import Tally


def test_targets_take_the_worst_row_and_say_whether_it_is_met():
    result = {
        "hf": [{"seq": 128, "dtype": "fp32", "speedup": 2.1}, {"seq": 128, "dtype": "bf16", "speedup": 1.9}],
        "variants": [{"seq": 128, "relative_to_ape_learned": 1.1}, {"seq": 128, "relative_to_ape_learned": 1.3},
                     {"seq": 512, "relative_to_ape_learned": 1.2}],
        "mfu": [{"dtype": "bf16", "mfu": 0.3}],
    }
    rows = {r["target"]: r for r in targets(result)}
    assert rows["throughput vs HF, seq 128, fp32"]["met"] is True
    assert rows["throughput vs HF, seq 128, bf16"]["met"] is False
    assert rows["slowest variant vs ape-learned, seq 128"]["measured"] == 1.3
    assert rows["slowest variant vs ape-learned, seq 128"]["met"] is False
    assert rows["slowest variant vs ape-learned, seq 512"]["met"] is True
    assert rows["relative attention peak memory vs naive, seq 2048"]["met"] is None  # not measured


def test_model_flops_count_the_projections_attention_and_sparse_head():
    config = pe_model(BenchConfig(layers=1, hidden=8, heads=2, vocab=10, batch=1, seq=4), "ape-learned").config
    per_token = 2 * (4 * 64 + 2 * 8 * 32) + 4 * 4 * 8 + 0.15 * 2 * (64 + 80)
    assert model_flops_per_step(config, batch=1, seq=4) == pytest.approx(3 * per_token * 4)


def test_a_missed_target_says_by_how_much():
    rows = {r["target"]: r for r in targets({"hf": [{"seq": 128, "dtype": "bf16", "speedup": 1.9}]})}
    assert rows["throughput vs HF, seq 128, bf16"]["short by"] == pytest.approx(0.05)
    rows = {r["target"]: r for r in targets({"variants": [{"seq": 512, "relative_to_ape_learned": 1.8}]})}
    assert rows["slowest variant vs ape-learned, seq 512"]["short by"] == pytest.approx(0.2)


def test_step_matmuls_carry_the_model_flops():
    """The matmul floor times exactly the matmuls whose FLOPs the MFU counts (15% masked)."""
    cfg = BenchConfig(layers=2, hidden=32, heads=4, vocab=100, batch=4, seq=20)
    flops = sum(2 * count * m * k * n for count, m, k, n in step_matmuls(cfg))
    config = pe_model(cfg, "ape-learned").config
    assert flops == pytest.approx(model_flops_per_step(config, cfg.batch, cfg.seq), rel=0.01)  # masked count rounded


def finetune_row(kind: str, when: str, ratio: float) -> dict:
    seconds = {"model": 1.0, "features": 2.0 if when == "before" else 0.0, "collation": 0.5, "forward and backward": 10.0,
               "optimiser": 2.0, "training loop": 0.5, "evaluation": 1.0, "other": 0.1}
    return {"kind": kind, "task": FINETUNE_TASKS[kind], "when": when, "train_examples": 100, "tokens_per_s": 1000 * ratio,
            "pretraining_tokens_per_s": 1000.0, "ratio": ratio, "padding_share": 0.4 if when == "before" else 0.1,
            "wall_s": sum(seconds.values()), "seconds": seconds}


def finetune_section(ratios: dict) -> dict:
    return {"machine": {"cpu": "x", "cores": 2, "torch_threads": 2}, "created": "now", "git_commit": "0" * 40,
            "fraction": 0.25, "rounds": 10, "rows": [finetune_row(kind, when, r) for (kind, when), r in ratios.items()]}


def test_the_fine_tuning_target_takes_the_slowest_kind_after_the_change():
    ratios = {("sentence", "before"): 0.5, ("sentence", "after"): 0.9, ("word order", "after"): 0.85,
              ("span", "before"): 0.1, ("span", "after"): 0.7}
    row = next(r for r in targets({"fine-tune": finetune_section(ratios)}) if r["target"].startswith("fine-tuning"))
    assert row["measured"] == 0.7 and row["met"] is False  # "before" rows do not count
    assert row["short by"] == pytest.approx(0.125)


def test_phases_add_up_to_the_wall_time():
    tally = Tally()
    tally.seconds.update({"model": 1.0, "features": 2.0, "training": 10.0, "collation": 1.0, "forward and backward": 6.0,
                          "optimiser": 2.0, "evaluation": 3.0})
    phases = finetune_phases(tally, wall_s=16.5)
    assert list(phases) == [*FINETUNE_PHASES, "other"]
    assert phases["training loop"] == pytest.approx(1.0) and phases["other"] == pytest.approx(0.5)
    assert sum(phases.values()) == pytest.approx(16.5)


def test_update_replaces_only_the_sections_run(tmp_path):
    stored = {"machine": {"cpu": "old"}, "hf": [{"speedup": 2}], "configs": [{"seq": 128}], "fine-tune": {"rows": []}}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(stored))
    new = {"machine": {"cpu": "new"}, "configs": [{"seq": 512}], "fine-tune": {"rows": [1]}}
    assert updated(str(path), new, ["fine-tune"]) == {**stored, "fine-tune": {"rows": [1]}}
    assert updated(str(path), {**new, "hf": []}, ["hf"])["configs"] == [{"seq": 512}]  # configs are the hf section's
    assert updated(str(tmp_path / "none.json"), new, ["fine-tune"]) == new


def test_the_chapter_cites_each_kind_before_and_after_and_says_when_unmeasured():
    from pe_book.chapters import performance

    ratios = {(kind, when): 0.5 + 0.1 * i for i, (kind, when) in enumerate((k, w) for k in FINETUNE_TASKS for w in ("before", "after"))}
    cited = performance.finetune_cited(finetune_section(ratios))
    assert cited["finetune_ratio_sentence_before"] == 0.5 and cited["finetune_ratio_span_after"] == pytest.approx(1.0)
    assert cited["finetune_worst_ratio"] == pytest.approx(0.6) and cited["finetune_padding_word_order_after"] == pytest.approx(10)
    assert cited["finetune_ratio_span_v2_after"] == pytest.approx(1.2)
    missing = performance.finetune_cited({})
    assert set(cited) <= set(missing) | {"finetune_rounds"} and "--sections fine-tune" in missing["finetune_note"]
    assert performance.finetune_time(finetune_section(ratios)).shape == (8, 8)


def test_the_fine_tuning_bench_times_the_tasks_the_cpu_profile_fine_tunes():
    from pe_book.experiments.profiles import get_profile

    assert sorted(FINETUNE_TASKS.values()) == sorted(get_profile("cpu").tasks)


def test_a_dry_run_runs_the_code_of_the_tree_it_is_given(tmp_path):
    """The base commit's code, not the installed working tree's, is what a base dry run times."""
    (tmp_path / "pe_book").mkdir()
    (tmp_path / "pe_book" / "__init__.py").write_text("")
    (tmp_path / "pe_book" / "__main__.py").write_text("import sys\nprint('tree at', __file__, *sys.argv[1:5])\n")
    seconds, output = dry_run(tmp_path, "cpu")
    assert output.strip() == f"tree at {tmp_path / 'pe_book' / '__main__.py'} run --profile cpu --dry-run" and seconds > 0


def test_the_precision_rows_are_kept_per_machine_type_and_bf16_wins_only_where_it_wins_everywhere():

    def rows(ratio):
        return [{"variant": v, "dtype": d, "tokens_per_s": 1.0, "vs_fp32": 1.0 if d == "fp32" else ratio}
                for v in precision.PRECISION_VARIANTS for d in precision.PRECISION_DTYPES]

    amx = {"machine": {"cpu": "Xeon", "isa": ["amx_bf16"], "cores": 2, "torch_threads": 2, "gpu": None},
           "created": "t", "git_commit": "c"}
    section = precision.precision_measured(None, rows(1.8), amx)
    assert precision.fastest_everywhere(section) == "bf16"
    avx2 = {**amx, "machine": {**amx["machine"], "cpu": "EPYC", "isa": ["avx2"]}}
    section = precision.precision_measured(section, rows(0.05), avx2)
    assert len(section) == 2  # one entry per machine type, the earlier one kept
    assert precision.fastest_everywhere(section) == "fp32"


def test_the_decisive_cpu_profile_trains_in_the_precision_the_stored_benchmark_gives():
    import json
    from pathlib import Path

    from pe_book.experiments.profiles import CPU_DECISIVE

    section = json.loads((Path(__file__).parents[2] / "results" / "bench.json").read_text())["precision"]
    assert {row["dtype"] for entry in section.values() for row in entry["rows"]} == {"fp32", "bf16"}
    assert CPU_DECISIVE.pretrain.precision == precision.fastest_everywhere(section)
