"""Concurrent runs, a full disk and a booby-trapped checkpoint."""
import errno
import json
import pickle
import time
import warnings

import pytest
from support import StoreLockHolder

from pe_book.experiments import store as store_module
from pe_book.experiments.store import Store
from pe_lib.io import LockedError, sha256_file, write_json


def test_a_second_run_on_the_same_store_gets_a_clear_error(tmp_path):
    store = Store(tmp_path, "smoke")
    with StoreLockHolder(tmp_path) as pid:
        with pytest.raises(LockedError, match=rf"artifact store {tmp_path}/smoke is in use by another run \(pid {pid}\)"):
            with store.lock():
                pass
    time.sleep(0.1)
    with store.lock(), store.lock():  # free again, and re-entrant within a process
        pass


def test_disk_full_is_a_clear_error_and_earlier_artifacts_stay_intact(tmp_path, monkeypatch):
    store = Store(tmp_path, "smoke")
    first = store.save("ape-learned", "finetune-sst2-seed0", {"seed": 0}, {"accuracy": 0.9}, wall_s=1.0)

    def full(path, payload):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_module, "write_json", full)
    with pytest.raises(OSError, match=r"disk full while writing artifact .*finetune-sst2-seed1.*earlier files are intact"):
        store.save("ape-learned", "finetune-sst2-seed1", {"seed": 1}, {"accuracy": 0.8}, wall_s=1.0)
    monkeypatch.undo()
    assert store.load("ape-learned", "finetune-sst2-seed0", {"seed": 0}).payload == first.payload
    assert [p.name for p in (tmp_path / "smoke" / "ape-learned").iterdir()] == [first.folder.name]


class Trap:
    def __reduce__(self):
        return (eval, ("open(__import__('os').environ['TRAP'], 'w').write('pwned')",))


def test_a_checkpoint_carrying_code_is_refused_unexecuted_set_aside_and_rebuilt(make_config, tmp_path, monkeypatch):
    from training.test_pretrain import assert_same_weights, run_cfg, synthetic_data

    from pe_lib.training.pretrain import pretrain

    config, data = make_config("ape-learned"), synthetic_data()

    def stop(step):
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pretrain(config, data, run_cfg(), tmp_path / "run", progress=False, on_step=stop)
    checkpoint = tmp_path / "run" / "checkpoints" / "step-00000002"
    (checkpoint / "trainer_state.pt").write_bytes(pickle.dumps(Trap()))
    manifest = json.loads((checkpoint / "manifest.json").read_text())  # an attacker can fix the checksums too
    manifest["trainer_state.pt"] = sha256_file(checkpoint / "trainer_state.pt")
    write_json(checkpoint / "manifest.json", manifest)
    marker = tmp_path / "pwned"
    monkeypatch.setenv("TRAP", str(marker))
    with pytest.warns(UserWarning, match=r"refused checkpoint .*step-00000002: .*\(Weights only load failed\); "
                                         r"set aside as .*run/refused/step-00000002, training from step 0"):
        pretrain(config, data, run_cfg(), tmp_path / "run", progress=False)
    assert not marker.exists(), "the pickle's code must never run"
    assert (tmp_path / "run" / "refused" / "step-00000002" / "trainer_state.pt").exists(), "kept for inspection"
    pretrain(config, data, run_cfg(), tmp_path / "straight", progress=False)
    assert_same_weights(tmp_path / "straight", tmp_path / "run")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rebuilt run is finished: no warning, nothing recomputed
        pretrain(config, data, run_cfg(), tmp_path / "run", progress=False)
