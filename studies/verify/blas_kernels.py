"""How far apart OpenBLAS's dot-product kernels put the two statistics that verify-results found
1 to 5 ulp off on the machine type of the committed results (the README's verify paragraph).

    .venv/bin/python studies/verify/blas_kernels.py [KERNEL ...]   (default: SkylakeX SkylakeX Haswell)

Each kernel (an ``OPENBLAS_CORETYPE``) computes, in its own process, the STS-B metric
(``metrics.pearson``) and the probe's ``symmetry`` on the same 300 seeded random inputs of the cpu
profile's sizes (400 STS-B test predictions; 64 x 64 probe matrices); the first kernel's values
are then compared with each other's, in float64 steps (ulp). The default's second SkylakeX process
is the control: a process of the same kernel repeats every bit.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

N = 300


def statistics() -> dict:
    """This process's values of both statistics on the seeded inputs, and its BLAS kernel."""
    from pe_book.experiments.store import numpy_blas
    from pe_lib.properties import symmetry
    from pe_lib.training.metrics import pearson

    rng = np.random.default_rng(1)
    pearsons = [pearson(x, x + rng.normal(size=x.size)) for x in rng.normal(size=(N, 400))]
    symmetries = [symmetry(a + 0.3 * a.T) for a in rng.random((N, 64, 64))]
    return {"kernel": numpy_blas().split()[-1], "pearson": pearsons, "symmetry": symmetries}


def main(kernels: list[str]) -> None:
    from pe_book.commands.verify import ulps_apart

    runs = [json.loads(subprocess.run([sys.executable, __file__, "--child"], check=True, capture_output=True, text=True,
                                      env={**os.environ, "OPENBLAS_CORETYPE": kernel}).stdout) for kernel in kernels]
    first = runs[0]
    for run in runs[1:]:
        for name in ("pearson", "symmetry"):
            steps = [ulps_apart(a, b) for a, b in zip(first[name], run[name])]
            print(f"{first['kernel']} vs {run['kernel']}: {name} differs on {sum(s > 0 for s in steps)} of {N} inputs, "
                  f"by at most {max(steps)} ulp")


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        print(json.dumps(statistics()))
    else:
        main(sys.argv[1:] or ["SkylakeX", "SkylakeX", "Haswell"])
