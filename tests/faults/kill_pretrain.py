"""Run a tiny pretraining and kill -9 this process at a chosen point (used by test_kill.py).

    python kill_pretrain.py OUT_DIR {none,step,checkpoint,artifact}
"""
import os
import signal
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from support import tiny_config  # noqa: E402
from training.test_pretrain import run_cfg, synthetic_data  # noqa: E402

import pe_lib.training.checkpoints as checkpoints_module  # noqa: E402
import pe_lib.training.pretrain as pretrain_module  # noqa: E402
from pe_lib.model import PEBertForMaskedLM  # noqa: E402


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(out: str, fault: str) -> None:
    if fault == "step":  # in the middle of training step 5 (forward done, no update)
        forward, calls = PEBertForMaskedLM.forward, []

        def dying_forward(self, *args, **kwargs):
            out_ = forward(self, *args, **kwargs)
            if self.training:
                calls.append(1)
                if len(calls) == 5:
                    die()
            return out_

        PEBertForMaskedLM.forward = dying_forward
    elif fault == "checkpoint":  # while writing the weights of the step-4 checkpoint
        save, calls = checkpoints_module.save_model, []

        def dying_save(model, path):
            calls.append(1)
            if len(calls) == 2:
                Path(path).write_bytes(b"\0" * 100)  # a half-written file
                die()
            save(model, path)

        checkpoints_module.save_model = dying_save
    elif fault == "artifact":  # while writing the final model folder
        def dying_save_pretrained(self, folder, **kwargs):
            (Path(folder) / "model.safetensors").write_bytes(b"\0" * 100)
            die()

        PEBertForMaskedLM.save_pretrained = dying_save_pretrained
    pretrain_module.pretrain(tiny_config("ape-sin-learned+rpe-learned"), synthetic_data(), run_cfg(), out, progress=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
