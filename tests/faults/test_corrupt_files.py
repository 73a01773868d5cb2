"""Nothing a later run reads is used without its checksum: a damaged run folder or token-block
file is reported by name and rebuilt, never used and never a bare JSONDecodeError/SafetensorError."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

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
