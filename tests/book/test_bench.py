import pytest

from pe_book.bench import BenchConfig, model_flops_per_step, pe_model, step_matmuls, targets


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
