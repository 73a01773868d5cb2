"""Null distribution of the P P^T indicators for a P with no positional structure (i.i.d. Gaussian rows)."""
import numpy as np, torch
torch.set_num_threads(1)
from pe_lib.properties import indicators
rng = np.random.default_rng(0)
for n, H in ((128, 128), (64, 128)):
    m, ml = [], []
    for _ in range(40):
        P = rng.normal(size=(n, H))
        ind = indicators(P @ P.T, window=8)
        m.append(ind["monotonicity"]); ml.append(ind["monotonicity_local"])
    print(f"n={n} H={H}: mono mean {np.mean(m):+.3f} sd {np.std(m):.3f} max|.| {np.max(np.abs(m)):.3f}; "
          f"local mean {np.mean(ml):+.3f} sd {np.std(ml):.3f} max|.| {np.max(np.abs(ml)):.3f}")
# a P with a genuine diagonal: smooth random walk rows (neighbours similar)
P = np.cumsum(rng.normal(size=(128, 128)), axis=0) * 0.1 + rng.normal(size=(128, 128))
ind = indicators(P @ P.T, window=8); print("random-walk P (has a diagonal):", {k: round(ind[k], 3) for k in ("monotonicity", "monotonicity_local")})
