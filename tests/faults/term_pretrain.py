"""Run ``pe-book pretrain`` on a tiny corpus and send this process SIGTERM at training step 25 (the
smoke profile checkpoints at step 20), as docker, systemd and SLURM would (used by test_sigterm.py).

    python term_pretrain.py ARGS...   (the arguments of ``pe-book pretrain``; TERM_AT=0 never signals)
"""
import os
import signal
import sys

from pe_book.cli import main
from pe_lib.model import PEBertForMaskedLM

TERM_AT = int(os.environ.get("TERM_AT", "25"))

forward, calls = PEBertForMaskedLM.forward, []


def signalling_forward(self, *args, **kwargs):
    if self.training:
        calls.append(1)
        if len(calls) == TERM_AT:
            os.kill(os.getpid(), signal.SIGTERM)
    return forward(self, *args, **kwargs)


PEBertForMaskedLM.forward = signalling_forward

if __name__ == "__main__":
    sys.exit(main(["pretrain", *sys.argv[1:]]))
