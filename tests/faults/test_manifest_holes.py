"""An artifact is read only through a manifest that vouches for it: a manifest of ``{}`` or ``[]``,
one that leaves out ``artifact.json`` or ``arrays.npz``, or none at all (deleted) is named in one
warning and the artifact computed again, never read unchecked (the runner's stored precision too)."""
import json
import warnings

import numpy as np
import pytest

from pe_book.experiments.store import Store
from pe_lib.io import sha256_file, write_json


@pytest.fixture
def stored(tmp_path):
    store = Store(tmp_path, "smoke")
    artifact = store.save("t5-bias", "finetune-sst2-p0-seed0", {"seed": 0}, {"accuracy": 0.73}, wall_s=1.0,
                          arrays={"phi": np.eye(3)})
    return store, artifact.folder


def forge_accuracy(folder):
    document = json.loads((folder / "artifact.json").read_text())
    document["payload"]["accuracy"] = 0.99
    (folder / "artifact.json").write_text(json.dumps(document))


@pytest.mark.parametrize("manifest", [{}, [], "x", 5, None], ids=["empty-mapping", "empty-list", "string", "number", "null"])
def test_a_manifest_that_vouches_for_nothing_is_named_and_never_trusted(manifest, stored):
    store, folder = stored
    (folder / "manifest.json").write_text(json.dumps(manifest))
    forge_accuracy(folder)
    with pytest.warns(UserWarning, match=rf"ignoring corrupt artifact {folder}: {folder}/manifest.json lists no files; "
                                         "it will be recomputed"):
        assert store.load("t5-bias", "finetune-sst2-p0-seed0", {"seed": 0}) is None


@pytest.mark.parametrize("left_out", ["artifact.json", "arrays.npz"])
def test_a_manifest_leaving_out_a_file_that_is_read_is_named(left_out, stored):
    store, folder = stored
    forge_accuracy(folder)
    kept = {name: sha256_file(folder / name) for name in ("artifact.json", "arrays.npz") if name != left_out}
    write_json(folder / "manifest.json", kept)
    with pytest.warns(UserWarning, match=rf"{folder}/manifest.json does not list {left_out}; it will be recomputed"):
        assert store.load("t5-bias", "finetune-sst2-p0-seed0", {"seed": 0}) is None


def test_a_manifest_with_a_digest_that_is_not_a_string_is_named(stored):
    store, folder = stored
    write_json(folder / "manifest.json", {"artifact.json": 1, "arrays.npz": sha256_file(folder / "arrays.npz")})
    with pytest.warns(UserWarning, match="holds 1 for artifact.json, not a sha256"):
        assert store.load("t5-bias", "finetune-sst2-p0-seed0", {"seed": 0}) is None


def test_a_folder_whose_manifest_was_deleted_is_named_not_silently_recomputed(stored):
    store, folder = stored
    (folder / "manifest.json").unlink()
    with pytest.warns(UserWarning, match=rf"ignoring corrupt artifact {folder}: {folder} has no manifest.json"):
        assert store.load("t5-bias", "finetune-sst2-p0-seed0", {"seed": 0}) is None


def test_an_intact_artifact_loads_without_a_warning(stored):
    store, folder = stored
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        artifact = store.load("t5-bias", "finetune-sst2-p0-seed0", {"seed": 0})
    assert artifact.payload == {"accuracy": 0.73} and artifact.arrays["phi"].shape == (3, 3)


def test_an_absent_artifact_is_no_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Store(tmp_path, "smoke").load("t5-bias", "finetune-sst2-p0-seed0", {"seed": 0}) is None


@pytest.mark.parametrize("damage", ["truncate", "bit-flip"])
def test_stored_precision_reads_through_the_manifest(damage, runner):
    """A damaged pretraining artifact is named and left out of the store's precision (so it is
    rebuilt), never a JSONDecodeError or a refusal to continue in "bf17"."""
    r = runner()
    good = r.store.save("ape-learned", "pretrain-p0", {"seed": 0}, {"result": {"precision": "bf16"}}, wall_s=1.0).folder
    bad = r.store.save("rope", "pretrain-p0", {"seed": 0}, {"result": {"precision": "bf16"}}, wall_s=1.0).folder
    text = (bad / "artifact.json").read_text()
    (bad / "artifact.json").write_text(text[:40] if damage == "truncate" else text.replace('"bf16"', '"bf17"'))
    with pytest.warns(UserWarning, match=rf"ignoring corrupt artifact {bad}: {bad}/artifact.json fails its sha256 check"):
        assert r.stored_precision() == "bf16"
    assert r.store.read(good) is not None
