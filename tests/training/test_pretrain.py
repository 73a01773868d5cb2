import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from pe_book.experiments.profiles import SMOKE
from pe_lib.training.mlm import MLMData, batch_rows, make_blocks, mask_tokens, text_blocks
from pe_lib.training.pretrain import pretrain
from pe_lib.training.pretrain_config import PretrainConfig

SPECIAL = (0, 1, 2, 3, 4)  # [PAD] [UNK] [CLS] [SEP] [MASK]


def synthetic_data(vocab=64, seq_len=16, rows=48, seed=0) -> MLMData:
    rng = np.random.default_rng(seed)
    stream = rng.integers(5, vocab, size=rows * (seq_len - 2) + 7)
    blocks = make_blocks(stream, seq_len, cls_id=2, sep_id=3)
    return MLMData(train=blocks[:40], validation=blocks[40:], vocab_size=vocab, mask_id=4, special_ids=SPECIAL)


def test_text_blocks_cut_the_tokens_of_lines_into_blocks(tmp_path):
    from transformers import BertTokenizer

    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]) + "\n")
    tok = BertTokenizer(vocab=str(tmp_path / "vocab.txt"))
    blocks = text_blocks(tok, ["the cat sat", "the cat", "sat the"], seq_len=4, max_tokens=6)
    assert blocks.tolist() == [[2, 5, 6, 3], [2, 7, 5, 3], [2, 6, 7, 3]]


def run_cfg(**overrides) -> PretrainConfig:
    fields = dict(steps=6, batch_size=8, lr=1e-3, warmup_steps=2, log_every=1, eval_every=3, eval_batches=2,
                  checkpoint_every=2, precision="fp32", seed=0)
    fields.update(overrides)
    return PretrainConfig(**fields)


def weights(out: Path) -> dict[str, torch.Tensor]:
    return load_file(out / "model" / "model.safetensors")


def assert_same_weights(a: Path, b: Path):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k


def test_blocks_and_batches():
    blocks = make_blocks(np.arange(5, 35), 6, cls_id=2, sep_id=3)
    assert blocks.shape == (7, 6) and (blocks[:, 0] == 2).all() and (blocks[:, -1] == 3).all()
    assert blocks[0, 1:5].tolist() == [5, 6, 7, 8]
    epoch0 = np.concatenate([batch_rows(10, 3, s, seed=1) for s in range(3)])
    assert len(set(epoch0.tolist())) == 9  # no row twice within an epoch
    assert (batch_rows(10, 3, 4, seed=1) == batch_rows(10, 3, 4, seed=1)).all()
    with pytest.raises(ValueError, match="fewer than one batch"):
        batch_rows(2, 3, 0, seed=0)


def test_masking_is_80_10_10_and_spares_special_tokens():
    data = synthetic_data(vocab=1000)
    ids = torch.randint(5, 1000, (200, 64))
    ids[:, 0], ids[:, -1] = 2, 3
    inputs, labels = mask_tokens(ids, data, 0.15, torch.Generator().manual_seed(0))
    selected = labels != -100
    assert not selected[:, 0].any() and not selected[:, -1].any()
    rate = selected[:, 1:-1].float().mean()
    assert 0.14 < rate < 0.16
    masked = (inputs == 4) & selected
    unchanged = (inputs == ids) & selected
    assert 0.77 < masked.sum() / selected.sum() < 0.83
    assert 0.08 < unchanged.sum() / selected.sum() < 0.12
    assert (labels[selected] == ids[selected]).all()


def interrupt_at_step_5(config, data, cfg, out):
    """A pretraining run into ``out`` stopped by an exception at step 5 (its last checkpoint: step 4)."""
    class Interrupt(Exception):
        pass

    def stop_at_5(step):
        if step == 5:
            raise Interrupt

    with pytest.raises(Interrupt):
        pretrain(config, data, cfg, out, progress=False, on_step=stop_at_5)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_interrupted_and_resumed_run_ends_with_identical_weights(precision, make_config, tmp_path):
    config, data = make_config("ape-sin-learned+rpe-learned"), synthetic_data()
    cfg = run_cfg(precision=precision)
    pretrain(config, data, cfg, tmp_path / "straight", progress=False)

    interrupt_at_step_5(config, data, cfg, tmp_path / "resumed")
    assert (tmp_path / "resumed" / "checkpoints" / "latest").read_text().strip() == "step-00000004"
    assert not (tmp_path / "resumed" / "model").exists()
    result = pretrain(config, data, cfg, tmp_path / "resumed", progress=False)
    assert_same_weights(tmp_path / "straight", tmp_path / "resumed")
    assert result["validation_loss"] == json.loads((tmp_path / "straight" / "result.json").read_text())["validation_loss"]
    curve = [json.loads(line) for line in (tmp_path / "resumed" / "curve.jsonl").read_text().splitlines()]
    train_steps = [r["step"] for r in curve if r["split"] == "train"]
    assert train_steps == list(range(1, 7))  # replayed steps are not duplicated
    assert [r["step"] for r in curve if r["split"] == "validation"] == [3, 6]


def test_same_seed_same_numbers_and_other_seed_differs(make_config, tmp_path):
    config, data = make_config("rope"), synthetic_data()
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        pretrain(config, data, run_cfg(steps=3, seed=seed), tmp_path / name, progress=False)
    assert_same_weights(tmp_path / "a", tmp_path / "b")
    assert not torch.equal(weights(tmp_path / "a")["bert.embeddings.word.weight"],
                           weights(tmp_path / "c")["bert.embeddings.word.weight"])


def test_training_lowers_the_loss(make_config, tmp_path):
    config, data = make_config("ape-learned"), synthetic_data()
    data.train[:, 1:-1] = np.tile(np.arange(5, 19), (40, 1))  # a learnable, position-dependent pattern
    data.validation[:, 1:-1] = np.tile(np.arange(5, 19), (len(data.validation), 1))
    result = pretrain(config, data, run_cfg(steps=40, lr=3e-3, eval_every=40), tmp_path, progress=False)
    curve = [json.loads(line) for line in (tmp_path / "curve.jsonl").read_text().splitlines()]
    first = next(r["loss"] for r in curve if r["split"] == "train")
    assert result["validation_loss"] < 0.6 * first


@pytest.mark.parametrize("damage", ["bit-flip", "truncate"])
def test_corrupt_checkpoint_is_reported_by_name_and_never_used(damage, make_config, tmp_path):
    config, data = make_config("alibi"), synthetic_data()
    pretrain(config, data, run_cfg(), tmp_path / "straight", progress=False)

    def stop(step):
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pretrain(config, data, run_cfg(), tmp_path / "run", progress=False, on_step=stop)
    weights_file = tmp_path / "run" / "checkpoints" / "step-00000002" / "model.safetensors"
    raw = bytearray(weights_file.read_bytes())
    if damage == "bit-flip":
        raw[len(raw) // 2] ^= 0x01
    else:
        del raw[len(raw) // 2 :]
    weights_file.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match=r"corrupt checkpoint file .*model\.safetensors.*training from step 0"):
        pretrain(config, data, run_cfg(), tmp_path / "run", progress=False)
    assert_same_weights(tmp_path / "straight", tmp_path / "run")


def test_vocab_mismatch_is_refused(make_config, tmp_path):
    from pe_lib.errors import InputError

    with pytest.raises(InputError, match=r"vocab_size 64 != tokenizer vocab size 100: .*\(vocab_size=100\)"):
        pretrain(make_config("ape-learned"), synthetic_data(vocab=100), run_cfg(), tmp_path, progress=False)


def test_a_batch_the_processes_do_not_divide_is_refused_naming_the_valid_choices(make_config):
    from pe_lib.errors import InputError
    from pe_lib.training.distributed import check_fits

    config, data = make_config("ape-learned"), synthetic_data()
    with pytest.raises(InputError, match=r"batch_size 6 is not divisible by the 4 processes: use a multiple of 4 "
                                         r"\(4 or 8\) or launch 1, 2, 3 or 6 processes$"):
        check_fits(config, data, run_cfg(batch_size=6), processes=4)
    with pytest.raises(InputError, match=r"a multiple of 8 \(8\) or launch 1, 2, 3 or 6 processes$"):
        check_fits(config, data, run_cfg(batch_size=6), processes=8)
    check_fits(config, data, run_cfg(batch_size=6), processes=3)


def test_a_run_folder_of_another_configuration_is_refused(make_config, tmp_path):
    from pe_lib.errors import InputError

    config, data = make_config("rope"), synthetic_data()
    pretrain(config, data, run_cfg(steps=2), tmp_path, progress=False)
    with pytest.raises(InputError, match="belongs to a run with another model or pretraining configuration"):
        pretrain(config, data, run_cfg(steps=3), tmp_path, progress=False)
    with pytest.raises(InputError, match="another model"):
        pretrain(make_config("alibi"), data, run_cfg(steps=2), tmp_path, progress=False)


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("variant", SMOKE.variants)
def test_two_threads_give_identical_weights(variant, make_config, tmp_path, two_threads):
    """Every variant, 2 threads, two uninterrupted runs: the same bits. Sized (batch 16, 32
    positions, 64 wide, dropout on) so that a scattered (index_put) position-table gradient would
    differ between runs, as it did for the learned APE before positions were broadcast."""
    config = make_config(variant, hidden_size=64, max_position_embeddings=40, hidden_dropout_prob=0.1,
                         attention_probs_dropout_prob=0.1)
    data = synthetic_data(seq_len=32, rows=64)
    for name in ("a", "b"):
        pretrain(config, data, run_cfg(steps=3, batch_size=16, checkpoint_every=10), tmp_path / name, progress=False)
    assert_same_weights(tmp_path / "a", tmp_path / "b")


def test_killed_and_resumed_with_two_threads_ends_with_identical_weights(make_config, tmp_path, two_threads):
    """The paper's reference variant at the default thread count: a run killed after step 5 and
    resumed from its step-4 checkpoint ends with the bits of an uninterrupted run."""
    config = make_config("ape-learned", hidden_size=64, max_position_embeddings=40, hidden_dropout_prob=0.1,
                         attention_probs_dropout_prob=0.1)
    data, cfg = synthetic_data(seq_len=32, rows=64), run_cfg(batch_size=16)
    pretrain(config, data, cfg, tmp_path / "straight", progress=False)

    def kill_at_5(step):
        if step == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pretrain(config, data, cfg, tmp_path / "resumed", progress=False, on_step=kill_at_5)
    pretrain(config, data, cfg, tmp_path / "resumed", progress=False)
    assert_same_weights(tmp_path / "straight", tmp_path / "resumed")


@pytest.mark.parametrize("schedule", ["constant", "inverse-sqrt"])
def test_a_snapshot_is_the_model_of_a_run_of_that_length(schedule, make_config, tmp_path):
    config, data = make_config("ape-learned"), synthetic_data()
    long = run_cfg(steps=8, schedule=schedule, snapshot_steps=(5, 3), checkpoint_every=4)
    assert long.snapshot_steps == (3, 5) and long.budgets == (3, 5, 8)
    first = pretrain(config, data, long, tmp_path / "long", progress=False, until=3)
    assert first["steps"] == 3 and not (tmp_path / "long" / "result.json").exists(), "stops at the snapshot"
    pretrain(config, data, long, tmp_path / "long", progress=False)  # resumes from the snapshot's checkpoint
    for steps in (3, 5):
        short = pretrain(config, data, long.at(steps), tmp_path / f"short{steps}", progress=False)
        snapshot = tmp_path / "long" / "snapshots" / f"step-{steps:08d}"
        assert_same_weights(snapshot, tmp_path / f"short{steps}")
        assert json.loads((snapshot / "result.json").read_text())["validation_loss"] == short["validation_loss"]
    assert pretrain(config, data, long, tmp_path / "long", progress=False, until=3) == first, "found, not retrained"
    pretrain(config, data, long.at(8), tmp_path / "short8", progress=False)
    assert_same_weights(tmp_path / "long", tmp_path / "short8")


def test_schedules_and_snapshots_refuse_what_they_cannot_mean():
    from pe_lib.errors import InputError

    with pytest.raises(InputError, match="schedule must be one of linear, constant, inverse-sqrt"):
        run_cfg(schedule="cosine")
    with pytest.raises(InputError, match="need an anytime schedule"):
        run_cfg(snapshot_steps=(2,))
    with pytest.raises(InputError, match="between 0 and steps"):
        run_cfg(schedule="constant", snapshot_steps=(6,))
    with pytest.raises(InputError, match="no model is kept at step 4; kept: 2, 6"):
        run_cfg(schedule="constant", snapshot_steps=(2,)).at(4)


def test_a_corrupt_snapshot_is_reported_never_read(make_config, tmp_path):
    from pe_lib.errors import CorruptFileError

    config, data = make_config("ape-learned"), synthetic_data()
    long = run_cfg(steps=8, schedule="constant", snapshot_steps=(4,), checkpoint_every=4)
    pretrain(config, data, long, tmp_path / "long", progress=False, until=4)
    weights = tmp_path / "long" / "snapshots" / "step-00000004" / "model" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + bytes(8))  # the checkpoint at step 4 is intact
    with pytest.warns(UserWarning, match="ignoring corrupt snapshot"), \
            pytest.raises(CorruptFileError, match="the snapshot at step 4 .* is missing or corrupt"):
        pretrain(config, data, long, tmp_path / "long", progress=False, until=4)


def test_a_longer_run_extended_from_a_shorter_one_ends_with_the_bits_of_a_straight_run(make_config, tmp_path):
    from pe_lib.training.checkpoints import extend

    config, data = make_config("rpe-learned"), synthetic_data()
    # evaluations every 2 steps: a run also evaluates at its last step, which the straight run would not at step 4
    long = run_cfg(steps=8, schedule="inverse-sqrt", snapshot_steps=(4,), checkpoint_every=3, eval_every=2)
    pretrain(config, data, long, tmp_path / "straight", progress=False)
    pretrain(config, data, long.at(4), tmp_path / "short", progress=False)
    assert extend(tmp_path / "short", tmp_path / "long", config, long)
    assert not extend(tmp_path / "short", tmp_path / "long", config, long), "a started run is left alone"
    result = pretrain(config, data, long, tmp_path / "long", progress=False)
    assert_same_weights(tmp_path / "straight", tmp_path / "long")
    straight = json.loads((tmp_path / "straight" / "result.json").read_text())
    assert result["validation_loss"] == straight["validation_loss"]
    assert result["extended_from"] == str(tmp_path / "short") and "extended_from" not in straight, "provenance"
    curve = [json.loads(line) for line in (tmp_path / "long" / "curve.jsonl").read_text().splitlines()]
    reference = [json.loads(line) for line in (tmp_path / "straight" / "curve.jsonl").read_text().splitlines()]
    assert [(r["step"], r["split"], r["loss"]) for r in curve] == [(r["step"], r["split"], r["loss"]) for r in reference]


def test_only_a_finished_shorter_run_of_the_same_recipe_is_extended(make_config, tmp_path):
    from pe_lib.errors import InputError
    from pe_lib.training.checkpoints import extend

    config, data = make_config("ape-learned"), synthetic_data()
    long = run_cfg(steps=8, schedule="constant", snapshot_steps=(4,))
    pretrain(config, data, long.at(4), tmp_path / "short", progress=False)
    with pytest.raises(InputError, match="is not the first 4 steps of this run"):
        extend(tmp_path / "short", tmp_path / "other-lr", config, run_cfg(steps=8, schedule="constant", lr=2e-3))
    with pytest.raises(InputError, match="is not the first 4 steps of this run"):
        extend(tmp_path / "short", tmp_path / "other-model", make_config("none"), long)
    with pytest.raises(InputError, match="is not the first 4 steps of this run"):
        extend(tmp_path / "short", tmp_path / "as-long", config, long.at(4))
    with pytest.raises(InputError, match="anytime schedule"):
        extend(tmp_path / "short", tmp_path / "linear", config, run_cfg(steps=8))
    with pytest.raises(InputError, match="not a finished run"):
        extend(tmp_path / "missing", tmp_path / "long", config, long)
    assert not (tmp_path / "other-lr").exists() and not (tmp_path / "long").exists(), "nothing is written on refusal"


# ----------------------------------------------------------------------------- processes and threads

WORDS = "the a cat dog sat ran on under mat log and then it was big small red blue".split()


def cli_pretrain(tmp_path: Path, processes: int, *extra: str) -> subprocess.CompletedProcess:
    """``pe-book pretrain`` of the smoke profile on a tiny corpus, 2 steps in fp32, as ``processes``
    processes (torchrun: DDP over gloo on CPUs), in ``tmp_path`` (its data cache and work folder)."""
    corpus, vocab = tmp_path / "corpus.txt", tmp_path / "tok" / "vocab.txt"
    if not corpus.exists():
        rng = np.random.default_rng(0)
        corpus.write_text("\n".join(" ".join(rng.choice(WORDS, size=12)) for _ in range(400)) + "\n")
        vocab.parent.mkdir()
        vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    launch = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)] if processes > 1 else []
    command = [sys.executable, *launch, "-m", "pe_book.cli", "pretrain", "--profile", "smoke", "--variant", "ape-learned",
               "--corpus-file", str(corpus), "--tokenizer", str(vocab.parent), "--steps", "2", "--precision", "fp32",
               "--cache", str(tmp_path / "cache"), "--no-progress", *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)


@pytest.mark.slow
def test_two_processes_are_another_run_with_its_own_key_and_a_mixed_resume_is_refused(tmp_path):
    """2 processes draw other masks and dropout than 1 at the same global batch: their run has its
    own key and folder, and a 2-process folder resumed by 1 process is refused in one line."""
    one, two = cli_pretrain(tmp_path, 1), cli_pretrain(tmp_path, 2)
    assert one.returncode == 0, one.stderr[-3000:]
    assert two.returncode == 0, two.stderr[-3000:]
    single, double = json.loads(one.stdout), json.loads(two.stdout)  # one report, by the main process
    assert (single["processes"], double["processes"]) == (1, 2) and double["ranks_agree"] is True
    assert single["threads"] == double["threads"] == [1]
    assert single["out"] != double["out"] and Path(single["out"]).parent == Path(double["out"]).parent
    assert single["validation_loss"] != double["validation_loss"], "another run, other numbers"
    run2 = Path(double["out"])
    for name in ("result.json", "manifest.json"):  # back to the run's last checkpoint: a resume, not a finished run
        (run2 / name).unlink()
    mixed = cli_pretrain(tmp_path, 1, "--out", str(run2))
    assert mixed.returncode != 0 and not (run2 / "result.json").exists()
    assert "belongs to a run of 2 process(es) and this one has 1" in mixed.stderr
    assert "Traceback" not in mixed.stderr, "one clear line"


def test_the_runner_keys_a_multi_process_run_apart_and_a_single_one_as_before(monkeypatch, tmp_path):
    """A 1-process key has no ``processes`` (every key made before the count was recorded stays
    valid); ``WORLD_SIZE`` (set by torchrun and accelerate) above 1 gives another key and run folder."""
    from transformers import BertTokenizer

    from pe_book.experiments.runner import Runner

    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tokenizer = BertTokenizer(vocab=str(tmp_path / "vocab.txt"))
    runner = Runner(SMOKE, tmp_path / "results", tmp_path / "work", tokenizer=tokenizer, data=synthetic_data())
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    single, single_dir = runner.pretrain_config("rope"), runner.run_dir("rope")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert runner.pretrain_config("rope") == single and "processes" not in single
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert runner.pretrain_config("rope") == {**single, "processes": 2}
    assert runner.run_dir("rope") != single_dir


def test_a_resume_with_another_thread_count_is_recorded_and_warned_about(make_config, tmp_path):
    config, data = make_config("ape-learned"), synthetic_data()
    before = torch.get_num_threads()

    def stop_at_3(step):
        if step == 3:
            raise KeyboardInterrupt

    try:
        torch.set_num_threads(1)
        with pytest.raises(KeyboardInterrupt):
            pretrain(config, data, run_cfg(), tmp_path, progress=False, on_step=stop_at_3)
        torch.set_num_threads(2)
        with pytest.warns(UserWarning, match="trained with 1 torch threads and this process has 2"):
            result = pretrain(config, data, run_cfg(), tmp_path, progress=False)
    finally:
        torch.set_num_threads(before)
    assert result["threads"] == [1, 2] and result["processes"] == 1


def test_a_diverged_run_stops_with_one_line_and_keeps_no_model(make_config, tmp_path):
    from pe_lib.errors import InputError

    config, data = make_config("ape-learned"), synthetic_data()
    with pytest.raises(InputError, match=r"diverged: training loss nan at step \d+.*lower the learning rate"):
        pretrain(config, data, run_cfg(steps=40, lr=1e12, log_every=5, eval_every=40), tmp_path, progress=False)
    assert not (tmp_path / "model").exists() and not (tmp_path / "result.json").exists()
