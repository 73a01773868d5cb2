"""Nothing a later run reads is used without its checksum: a damaged run folder or token-block
file is reported by name and rebuilt, never used and never a bare JSONDecodeError/SafetensorError."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from pe_lib.errors import InputError
from pe_lib.training.pretrain import pretrain


def flip_sign_bit(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x80  # the last float32 of the last tensor, little-endian: its sign bit
    path.write_bytes(bytes(raw))


def flip_digit(path: Path) -> None:
    text = path.read_text()
    at = text.index('"validation_loss": ') + len('"validation_loss": ') + 3  # a digit after "x.y"
    path.write_text(text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1:])


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGE = {
    "sign bit of a weight": ("model/model.safetensors", flip_sign_bit),
    "truncated weights": ("model/model.safetensors", truncate),
    "digit of the result": ("result.json", flip_digit),
    "truncated result": ("result.json", truncate),
    "truncated curve": ("curve.jsonl", truncate),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_run_folder_is_reported_by_name_and_finished_again(damage, make_config, tmp_path):
    from training.test_pretrain import run_cfg, synthetic_data, weights

    config, data, out = make_config("ape-learned"), synthetic_data(), tmp_path / "run"
    first = pretrain(config, data, run_cfg(), out, progress=False)
    first_weights = {k: v.clone() for k, v in weights(out).items()}  # load_file maps the file: copy before damaging it
    name, damage_file = DAMAGE[damage]
    damage_file(out / name)
    with pytest.warns(UserWarning, match=rf"ignoring the final model and result of {out}: {out / name} fails its sha256 "
                                         r"check .*finishing the run again from its last checkpoint"):
        again = pretrain(config, data, run_cfg(), out, progress=False)
    assert again["validation_loss"] == first["validation_loss"]
    assert json.loads((out / "result.json").read_text())["validation_loss"] == first["validation_loss"]
    assert all(torch.equal(first_weights[k], v) for k, v in weights(out).items())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pretrain(config, data, run_cfg(), out, progress=False)


def test_a_run_folder_without_manifest_is_finished_again_not_trusted(make_config, tmp_path):
    """A folder written before manifests existed (or killed between result and manifest)."""
    from training.test_pretrain import run_cfg, synthetic_data

    config, data, out = make_config("alibi"), synthetic_data(), tmp_path / "run"
    first = pretrain(config, data, run_cfg(), out, progress=False)
    (out / "manifest.json").unlink()
    with pytest.warns(UserWarning, match=rf"{out} has no manifest.json"):
        assert pretrain(config, data, run_cfg(), out, progress=False)["validation_loss"] == first["validation_loss"]
    assert (out / "manifest.json").exists()


def test_damaged_token_blocks_are_reported_and_rebuilt(runner, tmp_path):
    first = runner().mlm_data()
    (folder,) = (tmp_path / "work" / "blocks").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["blocks.npz", "manifest.json"]
    truncate(folder / "blocks.npz")
    with pytest.warns(UserWarning, match=rf"ignoring corrupt token blocks: {folder / 'blocks.npz'} fails its sha256 check"):
        again = runner().mlm_data()
    assert np.array_equal(again.train, first.train) and np.array_equal(again.validation, first.validation)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner().mlm_data()


@pytest.mark.parametrize("in_store", [False, True], ids=["work folder", "store"])
def test_trained_model_never_reads_damaged_weights(runner, in_store):
    first = runner(weights_in_store=in_store)
    pretrained = first.ensure_pretrained("ape-learned")
    expected = {k: v.clone() for k, v in first.trained_model("ape-learned").state_dict().items()}  # the file is mapped
    home = pretrained.folder if in_store else first.run_dir("ape-learned")  # where the weights are read from
    flip_sign_bit(home / "model" / "model.safetensors")
    with pytest.warns(UserWarning, match=r"model\.safetensors fails its sha256 check"):
        model = runner(weights_in_store=in_store).trained_model("ape-learned")
    assert all(torch.equal(expected[k], v) for k, v in model.state_dict().items())


def test_a_damaged_checkpoint_pointer_is_named_and_the_intact_checkpoint_resumed(make_config, tmp_path):
    """One flipped digit in ``checkpoints/latest``: one warning naming it, training resumes from
    the intact checkpoint (not step 0, whose next save would delete it) and ends as a straight run."""
    from training.test_pretrain import assert_same_weights, interrupt_at_step_5, run_cfg, synthetic_data

    config, data, out = make_config("ape-learned"), synthetic_data(), tmp_path / "run"
    pretrain(config, data, run_cfg(), tmp_path / "straight", progress=False)

    interrupt_at_step_5(config, data, run_cfg(), out)
    pointer = out / "checkpoints" / "latest"
    pointer.write_text("step-00000005\n")  # the 4 of step-00000004, one bit flipped
    trained = []
    warned = (rf"damaged checkpoint pointer {pointer}: it names 'step-00000005', which is no checkpoint "
              rf"folder; resuming from the newest intact checkpoint {out / 'checkpoints' / 'step-00000004'}")
    with pytest.warns(UserWarning, match=warned) as caught:
        pretrain(config, data, run_cfg(), out, progress=False, on_step=trained.append)
    assert len([w for w in caught if "checkpoint pointer" in str(w.message)]) == 1
    assert trained == [5, 6]
    assert_same_weights(tmp_path / "straight", out)


def test_a_folder_that_is_no_run_folder_is_refused_and_left_untouched(make_config, tmp_path):
    """``--out`` of a folder of the user's: nothing in it is deleted (its manifest, a ``.draft.part``)."""
    from training.test_pretrain import run_cfg, synthetic_data

    out = tmp_path / "mine"
    (out / "notes").mkdir(parents=True)
    files = {"manifest.json": "{}", "my": "keep", "notes/.draft.part": "draft"}
    for name, text in files.items():
        (out / name).write_text(text)
    refused = rf"^{out} is not a pretraining run folder: it holds my, notes, which no run writes, and was"
    with pytest.raises(InputError, match=refused + r" left untouched; give a new or empty folder"):
        pretrain(make_config("ape-learned"), synthetic_data(), run_cfg(), out, progress=False)
    assert {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} == set(files)
    assert all((out / name).read_text() == text for name, text in files.items())


def test_an_out_path_that_is_a_file_is_refused(make_config, tmp_path):
    from training.test_pretrain import run_cfg, synthetic_data

    (tmp_path / "file").write_text("mine")
    with pytest.raises(InputError, match=rf"^{tmp_path / 'file'} is a file, not a run folder"):
        pretrain(make_config("ape-learned"), synthetic_data(), run_cfg(), tmp_path / "file", progress=False)
    assert (tmp_path / "file").read_text() == "mine"


def test_only_the_run_s_own_temporaries_are_removed(make_config, tmp_path):
    """A killed run's temporaries are removed at the next run; a ``.part`` file of the user's in a
    run folder's subfolder is not."""
    from training.test_pretrain import run_cfg, synthetic_data

    out = tmp_path / "run"
    own = [out / ".result.json.x1y2.part", out / "checkpoints" / ".step-00000002.a1b2.part" / "state.json"]
    mine = out / "checkpoints" / ".draft.part"
    for path in (*own, mine):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    pretrain(make_config("ape-learned"), synthetic_data(), run_cfg(), out, progress=False)
    assert not any(path.exists() for path in own) and mine.read_text() == "x"
