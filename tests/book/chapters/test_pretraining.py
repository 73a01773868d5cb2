"""pe_book.chapters.pretraining: curves, final losses and the setup of a profile's pretraining."""
from __future__ import annotations

import math

import pytest

from pe_book.chapters import pretraining


def test_curve_frame_and_final_losses():
    curves = {"a": [{"step": 5, "split": "train", "loss": 3.0, "lr": 1e-3}, {"step": 10, "split": "validation", "loss": 2.5}],
              "b": [{"step": 10, "split": "validation", "loss": 2.0}]}
    frame = pretraining.curve_frame(curves)
    assert list(frame.columns) == ["variant", "step", "split", "loss"] and len(frame) == 3
    table = pretraining.final_losses({"a": {"validation_loss": 2.5, "tokens_per_s": 10.0, "wall_s": 1.0},
                                 "b": {"validation_loss": 2.0, "tokens_per_s": 20.0, "wall_s": 2.0}},
                                parameters={"a": 7, "b": 8})
    assert list(table.index) == ["b", "a"]
    assert table.loc["a", "perplexity"] == pytest.approx(math.exp(2.5))
    assert table.loc["b", "parameters"] == 8
    assert pretraining.standing(table, "a") == "ranks 2 of 2 (loss 2.500)"
    assert pretraining.standing(table, "none") == "was not run here"


def test_pretraining_setup_counts_tokens_and_sums_wall_time():
    config = {"model": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                        "intermediate_size": 256, "vocab_size": 100},
              "pretrain": {"steps": 40, "batch_size": 16, "lr": 1e-3, "warmup_steps": 4},
              "data": {"seq_len": 64}}
    setup = pretraining.pretraining_setup(config, {"a": {"tokens_per_s": 10.0, "wall_s": 1.5},
                                              "b": {"tokens_per_s": 30.0, "wall_s": 2.5}})
    assert setup["tokens"] == 40 * 16 * 64
    assert setup["tokens_per_s"] == 20.0 and setup["wall_s"] == 4.0 and setup["variants"] == 2


def test_the_setup_table_reads_without_e_notation():
    setup = {**dict.fromkeys(pretraining.SETUP_LABELS, 4), "lr": 1e-3, "tokens": 16_384_000,
             "tokens_per_s": 12812.4, "wall_s": 22731.9, "variants": 16}
    result = pretraining.Pretraining([], setup, None, None, math.nan, {})
    values = result.setup_table()["value"]
    assert values["peak learning rate"] == "0.001" and values["tokens seen per model"] == "16,384,000"
    assert values["tokens per second (mean)"] == "12,810" and values["pretraining wall time, all models (s)"] == "22,730"
    assert values["models"] == "16"


def test_machines_text_names_every_machine_with_its_count():
    intel = {"cpu": "Intel(R) Xeon(R) Processor", "isa": ["avx512f", "avx512_bf16", "amx_bf16"], "cores": 2, "gpu": None}
    amd = {"cpu": "AMD EPYC", "isa": ["avx512f", "avx512_bf16"], "cores": 2, "gpu": None}
    assert pretraining.machines_text([{"hardware": intel}] * 2) == "Intel(R) Xeon(R) Processor with AMX, 2 cores"
    text = pretraining.machines_text([{"hardware": amd}, {"hardware": intel}, {"hardware": intel}])
    assert text == "Intel(R) Xeon(R) Processor with AMX, 2 cores (2); AMD EPYC with AVX512-BF16, 2 cores (1)"
    gpu = pretraining.machine_name({"cpu": "x", "isa": [], "cores": 16, "gpu": "NVIDIA H200"})
    assert gpu == "x, 16 cores, GPU NVIDIA H200"
