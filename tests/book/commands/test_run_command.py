"""``pe-book run`` on the gpu profile, as a user with an accelerator runs it, here on a CPU with tiny
overrides (``--set``) and offline: the tasks without a packaged analogue are refused in one line,
``--tasks`` restricts the dry run, and the whole recipe (gradient accumulation, activation
checkpointing, every stage) runs end to end. ``pe-book pretrain`` saves a folder that
``pipeline("fill-mask")`` loads."""
import json

import pytest

from book.commands.test_cli_errors import corpus_file, one_line, tokenizer_dir  # noqa: F401 (a fixture)
from pe_book.cli import main

#: The gpu profile shrunk to seconds: every stage and option it has, at toy sizes.
TINY_GPU = [f"--set={s}" for s in (
    "model.hidden_size=32", "model.num_hidden_layers=1", "model.num_attention_heads=2", "model.intermediate_size=64",
    "model.max_position_embeddings=64", "model.rpe_max_distance=8", "seq_len=32", "corpus_tokens=20000",
    "pretrain.steps=2", "pretrain.batch_size=4", "pretrain.warmup_steps=1", "pretrain.eval_every=1",
    "pretrain.eval_batches=1", "pretrain.checkpoint_every=1", "pretrain.log_every=1", "pretrain.accumulation_steps=2",
    "pretrain.activation_checkpointing=true", "finetune.epochs=1", "finetune.batch_size=8", "finetune.max_seq_len=32",
    "finetune.doc_stride=8", "finetune.max_question_len=16", "finetune.max_answer_len=8", "task_max_train=16",
    "task_max_eval=16", "seeds=0", "probe.length=16", "probe.n_words=10", "extrapolation_tokens=1024")]
#: The gpu profile's tasks that have a packaged analogue (qnli and rte have none).
OFFLINE = ["--tasks", "cola", "stsb", "squad_v2"]


def test_a_task_without_an_offline_analogue_is_refused_in_one_line(capsys, tmp_path):
    folders = ["--results", str(tmp_path / "results"), "--work", str(tmp_path / "work"), "--cache", str(tmp_path / "c")]
    line = one_line(capsys, ["run", "--profile", "gpu", "--dry-run", *folders])
    assert "qnli, rte have no packaged offline analogue" in line and "--tasks cola sst2 mrpc stsb squad squad_v2" in line
    assert "qnli has no packaged" in one_line(capsys, ["run", "--profile", "gpu", "--tasks", "qnli", "cola", *folders])
    assert not (tmp_path / "c").exists()  # refused before any data is read


@pytest.mark.slow
def test_the_gpu_recipe_runs_end_to_end_on_cpu_with_tiny_overrides(capsys, tmp_path):
    folders = ["--results", str(tmp_path / "results"), "--work", str(tmp_path / "work"), "--cache", str(tmp_path / "c"),
               "--no-progress"]
    argv = ["run", "--profile", "gpu", *TINY_GPU, "--pretrain-seeds", "1", "--variants", "ape-learned", "rpe-learned",
            *OFFLINE, *folders]
    assert main([*argv, "--dry-run"]) == 0  # plans the given tasks only: no qnli is read
    out = capsys.readouterr().out
    assert "not checked for orphans (no offline analogue): qnli, rte" in out and out.rstrip().endswith("to compute")
    assert main(argv) == 0
    stored = sorted(p.parent.parent.name + "/" + p.parent.name.rsplit("-", 1)[0]
                    for p in (tmp_path / "results" / "gpu").glob("*/*/manifest.json"))
    for variant in ("ape-learned", "rpe-learned"):
        assert {f"{variant}/{stage}" for stage in ("pretrain-p0", "analysis-p0", "extrapolation-p0",
                                                   "finetune-cola-p0-seed0", "finetune-stsb-p0-seed0",
                                                   "finetune-squad_v2-p0-seed0")} <= set(stored)
    (pretrained,) = (tmp_path / "results" / "gpu" / "ape-learned").glob("pretrain-p0-*/artifact.json")
    config = json.loads(pretrained.read_text())["payload"]["result"]["config"]
    assert (config["steps"], config["accumulation_steps"], config["activation_checkpointing"]) == (2, 2, True)
    capsys.readouterr()
    assert main([*argv, "--dry-run"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(" stored, 0 to compute")


def test_pretrain_saves_a_folder_that_fill_mask_loads(tmp_path, tokenizer_dir):
    from transformers import pipeline

    import pe_lib  # noqa: F401 (registers pe-bert)

    out = tmp_path / "run"
    argv = ["pretrain", "--variant", "rpe-learned", "--profile", "smoke", "--steps", "2", "--batch-size", "4",
            "--precision", "fp32", "--corpus-file", str(corpus_file(tmp_path, 40)), "--tokenizer", str(tokenizer_dir),
            "--out", str(out), "--cache", str(tmp_path / "c"), "--no-progress"]
    assert main(argv) == 0
    fill = pipeline("fill-mask", model=str(out / "model"))
    guesses = fill("the film was [MASK]")
    assert len(guesses) == 5 and all(g["sequence"].startswith("the film was") for g in guesses)


@pytest.mark.parametrize("work", [".", "smoke"], ids=["same-folder", "inside-the-store"])
def test_results_and_work_in_one_folder_are_refused_in_one_line(work, capsys, tmp_path):
    """The store would take the work folder's run (its ``model/``) for an orphaned artifact."""
    folders = ["--results", str(tmp_path), "--work", str(tmp_path / work), "--cache", str(tmp_path / "c")]
    line = one_line(capsys, ["run", "--profile", "smoke", "--dry-run", "--check", *folders])
    runs = tmp_path / work / "smoke" if work == "." else tmp_path / "smoke" / "smoke"
    assert (f"pe-book run: error: the artifact store {tmp_path / 'smoke'} and the work folder's runs {runs} "
            "overlap: use separate folders for the results and the work (--results, --work)") in line
    assert not (tmp_path / "c").exists()  # refused before any data is read


def test_a_gpu_dry_run_prices_every_model_on_a_named_card_before_reading_data(capsys, tmp_path):
    folders = ["--results", str(tmp_path / "results"), "--work", str(tmp_path / "work"), "--cache", str(tmp_path / "c")]
    assert main(["run", "--profile", "gpu", "--dry-run", "--card", "h100", *folders]) == 1  # then: qnli is offline
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("on 1 x NVIDIA H100 SXM (80 GiB") and "every model of profile gpu" in out[0]
    assert out[1].startswith("  memory per device ") and ", fits: " in out[1]
    assert out[2].startswith("  GPU-hours ") and "pretraining" in out[2] and "fine-tuning" in out[2]
    assert "35% of the card's peak, assumed" in out[3]
    assert main(["run", "--profile", "gpu", "--dry-run", "--card", "l4", "--set", "pretrain.accumulation_steps=1",
                 *folders]) == 1
    assert "does not fit: raise --set pretrain.accumulation_steps=N" in capsys.readouterr().out


def test_a_rate_measured_on_the_card_replaces_the_assumed_one(capsys, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "bench.json").write_text(json.dumps({"machine": {"gpu": "NVIDIA H100 80GB HBM3"},
                                                    "mfu": [{"profile": "gpu", "tokens_per_s": 100_000.0}]}))
    main(["run", "--profile", "gpu", "--dry-run", "--card", "h100", "--results", str(results), "--cache", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert "100,000 tokens/s measured on the card (results/bench.json)" in out
    from pe_book.experiments.profiles import GPU
    models = sum(len(GPU.pretrain_seeds_for(v)) for v in GPU.variants)
    hours = models * GPU.pretrain.steps * GPU.pretrain.batch_size * GPU.seq_len / 100_000 / 3600
    assert f"pretraining {hours:,.1f}," in out


def test_card_goes_with_a_dry_run(capsys, tmp_path):
    line = one_line(capsys, ["run", "--profile", "gpu", "--card", "h100", "--results", str(tmp_path)])
    assert line == "pe-book run: error: --card and --devices go with --dry-run (--debug shows the traceback)"


def test_a_published_profile_whose_results_are_absent_is_said_before_planning(capsys, tmp_path):
    line = one_line(capsys, ["run", "--profile", "cpu", "--results", str(tmp_path / "results"), "--cache", str(tmp_path / "c")])
    assert f"{tmp_path / 'results' / 'cpu-next'} does not exist (the published profiles' results are committed" in line
    assert f"mkdir -p {tmp_path / 'results' / 'cpu-next'}" in line
    assert not any((tmp_path / "c" / "prepared").iterdir())  # no data read


def test_pretrain_takes_set_as_run_does(tmp_path, tokenizer_dir, capsys):
    out = tmp_path / "run"
    argv = ["pretrain", "--variant", "ape-learned", "--profile", "smoke", "--set", "model.hidden_size=32",
            "--set", "model.num_attention_heads=2", "--set", "pretrain.steps=2", "--batch-size", "4",
            "--precision", "fp32", "--corpus-file", str(corpus_file(tmp_path, 40)), "--tokenizer", str(tokenizer_dir),
            "--out", str(out), "--cache", str(tmp_path / "c"), "--no-progress"]
    assert main(argv) == 0
    config = json.loads((out / "model" / "config.json").read_text())
    assert (config["hidden_size"], config["num_attention_heads"]) == (32, 2)
    line = one_line(capsys, ["pretrain", "--variant", "none", "--set", "model.hidden_size=0", "--out", str(tmp_path / "x")])
    assert line.startswith("pe-book pretrain: error: --set model.hidden_size=0: model.hidden_size is 0")
