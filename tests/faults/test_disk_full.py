"""A full disk: one DiskFullError saying what was being written and where, no temporary left
behind, earlier files intact, and the rerun (with space) ends as an uninterrupted run."""
import errno
import shutil
from pathlib import Path

import pytest
from support import tmpfs
from safetensors import SafetensorError

import pe_lib.training.checkpoints as checkpoints_module
import pe_lib.training.pretrain as pretrain_module
from pe_lib.errors import DiskFullError
from pe_lib.io import verify_manifest

#: what safetensors (Rust) raises when the device is full: no errno, only words
SAFETENSORS_FULL = 'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.part*"))


def assert_checkpoint_two_is_intact(run: Path) -> None:
    assert (run / "checkpoints" / "latest").read_text().strip() == "step-00000002"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest", "step-00000002"]
    verify_manifest(run / "checkpoints" / "step-00000002")
    assert leftovers(run) == [] and not (run / "model").exists()


def test_a_full_disk_while_checkpointing_is_one_clear_error(make_config, tmp_path, monkeypatch):
    from training.test_pretrain import assert_same_weights, run_cfg, synthetic_data

    config, data, run = make_config("ape-learned"), synthetic_data(), tmp_path / "run"
    save, calls = checkpoints_module.save_model, []

    def full_on_second_checkpoint(model, path):
        calls.append(path)
        if len(calls) == 2:
            Path(path).write_bytes(b"\0" * 100)  # what a writer leaves when the space runs out
            raise SafetensorError(SAFETENSORS_FULL)
        save(model, path)

    monkeypatch.setattr(checkpoints_module, "save_model", full_on_second_checkpoint)
    with pytest.raises(DiskFullError, match=rf"^disk full while writing checkpoint {run}/checkpoints/step-00000004; "
                                            "nothing half-written was kept and earlier files are intact"):
        pretrain_module.pretrain(config, data, run_cfg(), run, progress=False)
    assert_checkpoint_two_is_intact(run)
    monkeypatch.undo()
    pretrain_module.pretrain(config, data, run_cfg(), run, progress=False)
    pretrain_module.pretrain(config, data, run_cfg(), tmp_path / "straight", progress=False)
    assert_same_weights(tmp_path / "straight", run)


def test_a_full_disk_while_writing_the_final_model(make_config, tmp_path, monkeypatch):
    from training.test_pretrain import run_cfg, synthetic_data

    from pe_lib.model import PEBertForMaskedLM

    def full(self, folder, **kwargs):
        (Path(folder) / "model.safetensors").write_bytes(b"\0" * 100)
        raise SafetensorError(SAFETENSORS_FULL)

    monkeypatch.setattr(PEBertForMaskedLM, "save_pretrained", full)
    run = tmp_path / "run"
    with pytest.raises(DiskFullError, match=rf"^disk full while writing final model {run}/model; "):
        pretrain_module.pretrain(make_config("alibi"), synthetic_data(), run_cfg(), run, progress=False)
    assert leftovers(run) == [] and not (run / "model").exists() and not (run / "result.json").exists()
    verify_manifest(run / "checkpoints" / "step-00000006")


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 3 MB tmpfs (needs root and mount; skipped elsewhere, where the patched tests above run)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    yield from tmpfs(mount, "size=3m")


def test_a_real_full_disk_during_pretraining(make_config, tmp_path, small_tmpfs):
    """Room for one checkpoint but not for the second beside it: the run stops at the second with
    one clear error, the first stays valid, and with space again the run ends as a straight one."""
    from training.test_pretrain import assert_same_weights, run_cfg, synthetic_data

    config, data = make_config("ape-learned"), synthetic_data()
    pretrain_module.pretrain(config, data, run_cfg(), tmp_path / "straight", progress=False)
    checkpoint = sum(p.stat().st_size for p in (tmp_path / "straight" / "checkpoints" / "step-00000006").iterdir())
    free = shutil.disk_usage(small_tmpfs).free
    filler = small_tmpfs / "filler"
    filler.write_bytes(b"\0" * (free - int(1.5 * checkpoint)))
    run = small_tmpfs / "run"
    with pytest.raises(DiskFullError, match=rf"^disk full while writing checkpoint {run}/checkpoints/step-00000004; "):
        pretrain_module.pretrain(config, data, run_cfg(), run, progress=False)
    assert_checkpoint_two_is_intact(run)
    filler.unlink()
    pretrain_module.pretrain(config, data, run_cfg(), run, progress=False)
    assert_same_weights(tmp_path / "straight", run)


def test_a_full_disk_while_writing_token_blocks(runner, tmp_path, monkeypatch):
    from pe_book.experiments import runner as runner_module

    def full(path, **arrays):
        Path(path).write_bytes(b"PK\0")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runner_module.np, "savez", full)
    with pytest.raises(DiskFullError, match=rf"^disk full while writing token blocks {tmp_path}/work/blocks/\w+; "):
        runner().mlm_data()
    assert list((tmp_path / "work" / "blocks").iterdir()) == []


def test_a_full_disk_while_downloading_a_source_is_named_not_a_registry_failure(tmp_path, monkeypatch):
    """pip (and apt-get) say a full disk only in words, on stderr: it is the house's disk-full
    line, not 'could not get ... by pip' with the advice to go online."""
    import sys

    from pe_lib.data import sources

    source = sources.Source("toy", "corpus", "toy words", "MIT", "pip", package="toy", version="1.0",
                            filename="toy-1.0-py3-none-any.whl", sha256="0" * 64, members=("toy/*.txt",))
    monkeypatch.setitem(sources.SOURCES, "toy", source)
    monkeypatch.setattr(sources, "_fetch_command", lambda src, dest: [  # as pip: writes, disk full
        sys.executable, "-c", f"open({str(dest / src.filename)!r}, 'wb').write(b'half'); "
                              "open('/dev/full', 'wb', buffering=0).write(b'x')"])
    cache = tmp_path / "cache"
    with pytest.raises(DiskFullError, match=rf"^disk full while writing the download of source 'toy' "
                                            rf"{cache}/downloads/toy-1.0-py3-none-any.whl; nothing half"):
        sources.source_dir("toy", cache)
    assert list((cache / "tmp").iterdir()) == [] and list((cache / "downloads").iterdir()) == []
    assert not (cache / "sources" / "toy").exists()
