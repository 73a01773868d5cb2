"""An artifact is read only through a manifest that vouches for it: a manifest of ``{}`` or ``[]``,
one that leaves out ``artifact.json``, ``arrays.npz`` or any other file there (stored weights), or
none at all (deleted) is named in one warning and the artifact computed again, never read unchecked
(the runner's stored precision and the measured rates too); so is a kept task fingerprint."""
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


@pytest.fixture
def with_model(tmp_path):
    """A stored pretraining artifact that keeps its model (``model/``, as ``weights_in_store``)."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"trained weights")
    store = Store(tmp_path, "smoke")
    copies = {f"model/{name}": model / name for name in ("config.json", "model.safetensors")}
    artifact = store.save("rope", "pretrain-p0", {"seed": 0}, {"result": {}}, wall_s=1.0, copies=copies)
    return store, artifact.folder


def test_a_manifest_leaving_out_the_stored_weights_is_named_and_the_weights_never_read(with_model):
    store, folder = with_model
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["model/model.safetensors"]
    write_json(folder / "manifest.json", manifest)
    (folder / "model" / "model.safetensors").write_bytes(b"replaced weights")
    with pytest.warns(UserWarning, match=rf"ignoring corrupt artifact {folder}: {folder}/manifest.json "
                                         "does not list model/model.safetensors; it will be recomputed"):
        assert store.load("rope", "pretrain-p0", {"seed": 0}) is None


def test_a_file_that_the_manifest_does_not_list_is_named(with_model):
    store, folder = with_model
    (folder / "model" / "added.bin").write_bytes(b"not vouched for")
    with pytest.warns(UserWarning, match=rf"{folder}/manifest.json does not list model/added.bin; it will "):
        assert store.read(folder) is None


@pytest.mark.parametrize("damage", ["truncate", "bit-flip"])
def test_the_measured_rates_and_hours_read_through_the_manifest(damage, tmp_path):
    """What ``run --stop-after`` and ``--dry-run --estimate-from`` price with: a damaged artifact is
    named and measures nothing, never a JSONDecodeError."""
    from pe_book.experiments import costs

    store = Store(tmp_path, "smoke")
    store.save("rope", "analysis-p0", {"seed": 0}, {}, wall_s=7200.0)
    bad = store.save("rope", "analysis-p1", {"seed": 1}, {}, wall_s=3600.0).folder
    text = (bad / "artifact.json").read_text()
    (bad / "artifact.json").write_text(text[:40] if damage == "truncate" else text.replace("3600.", "3601."))
    with pytest.warns(UserWarning, match=rf"ignoring corrupt artifact {bad}: {bad}/artifact.json fails its "):
        assert costs.measured_rates(store).stage_s == {"analysis": 7200.0}
        assert costs.spent_hours(store) == 2.0


def test_a_damaged_task_fingerprint_is_named_and_computed_again_to_its_value(runner, tmp_path, monkeypatch):
    """The task fingerprint kept in the cache enters the keys of the task's artifacts: one changed
    hex digit is named in one warning and the value computed again from the examples (the same
    value, so the stored artifacts keep their keys), never read as another key."""
    from datasets import Dataset, DatasetDict

    import pe_lib.data
    from pe_book.experiments import results as results_module
    from pe_lib.data.tasks import TASKS, Task
    from pe_lib.io import write_manifest

    monkeypatch.setenv("PE_LIB_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "prepared" / "task-sst2-abc"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text("rows\n")
    write_manifest(folder)
    rows = [{"sentence1": "the film was good", "label": 1}, {"sentence1": "the film was bad", "label": 0}]
    splits = DatasetDict({split: Dataset.from_list(rows) for split in ("train", "validation", "test")})
    monkeypatch.setattr(pe_lib.data, "load_task", lambda name, *_, **__: Task(TASKS[name].meta, splits, "t",
                                                                               folder=folder))
    monkeypatch.setattr(results_module, "prepared_folder", lambda name, source, cache_dir: folder)
    value = runner().task_fingerprint("sst2")
    [kept] = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.read_text() == value]
    kept.write_text(value[:-1] + ("0" if value[-1] != "0" else "1"))
    damaged = runner()
    with pytest.warns(UserWarning, match=rf"ignoring corrupt task fingerprint: {kept} fails its sha256 "):
        assert damaged.task_fingerprint("sst2") == value and "sst2" in damaged._tasks
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rebuilt = runner()
        assert rebuilt.task_fingerprint("sst2") == value and "sst2" not in rebuilt._tasks  # kept anew, read


def test_the_machine_of_the_stored_pretrainings_is_read_through_the_manifest(tmp_path):
    """``pe-book verify`` picks the variants computed on this machine type: a truncated pretraining
    artifact is named and left out, never a JSONDecodeError."""
    from pe_book.commands.verify import variants_computed_on
    from pe_book.experiments.store import hardware

    store = Store(tmp_path, "smoke")
    store.save("rope", "pretrain-p0", {"seed": 0}, {"result": {}}, wall_s=1.0)
    bad = store.save("alibi", "pretrain-p0", {"seed": 0}, {"result": {}}, wall_s=1.0).folder
    (bad / "artifact.json").write_text((bad / "artifact.json").read_text()[:40])
    with pytest.warns(UserWarning, match=rf"ignoring corrupt artifact {bad}: {bad}/artifact.json fails its "):
        assert variants_computed_on(store, hardware()) == ["rope"]
