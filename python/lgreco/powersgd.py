"""PowerSGD pieces used by the DDP hook, following torch's powerSGD_hook step by step.

Per compressible tensor (matrix view M, n×m, rank r, error feedback on):
  Q ← orthogonalise(Q)  (warm start keeps Q; the first Q is standard normal)
  P = M·Q → allreduce(P) (sum) → orthogonalise(P) → Q = Mᵀ·P → allreduce(Q) → Q /= world
  M̂ = P·Qᵀ; residual e = (g + e) − M̂.
Orthogonalisation "auto": Gram-Schmidt for r ≤ 2, else Householder QR (torch.linalg.qr).
Matrices carry a leading batch dimension of 1 so that torch.bmm is used, as torch's hook does.
"""
from __future__ import annotations

import numpy as np
import torch

from . import rng


def orthogonalize(mat: torch.Tensor, how: str = "auto") -> None:
    """In place: columns of each (1, rows, r) matrix made orthonormal."""
    r = mat.shape[2]
    if how == "gram-schmidt" or (how == "auto" and r <= 2):
        for i in range(r):
            col = mat[:, :, i: i + 1]
            norm = torch.norm(col, dim=1, keepdim=True)
            # A zero column stays zero (torch's hook would produce NaN here).
            col /= torch.where(norm > 0, norm, torch.ones_like(norm))
            if i + 1 < r:
                rest = mat[:, :, i + 1:]
                rest -= torch.sum(col * rest, dim=1, keepdim=True) * col
    else:
        mat.copy_(torch.linalg.qr(mat).Q)


def philox_q(seed: int, step: int, layer: int, m: int, r: int, first_col: int = 0) -> torch.Tensor:
    """Columns [first_col, r) of a standard normal (1, m, r) Q: element (i, j) is
    normal_at(seed, stream_of(step, layer), i·r + j), as the C++ replay draws it."""
    i = np.arange(m, dtype=np.uint64)[:, None]
    j = np.arange(first_col, r, dtype=np.uint64)[None, :]
    vals = rng.normal_at(seed, rng.stream_of(step, layer), i * np.uint64(r) + j)
    return torch.from_numpy(vals.astype(np.float32)).unsqueeze(0)


def resize_q(q: torch.Tensor, r: int, seed: int, step: int, layer: int) -> torch.Tensor:
    """Keeps the warm-started columns when a re-plan changes the rank: truncates, or appends fresh
    normal columns (orthogonalised on the next use)."""
    have = q.shape[2]
    if r <= have:
        return q[:, :, :r].clone()
    extra = philox_q(seed, step, layer, q.shape[1], r, first_col=have)
    return torch.cat([q, extra], dim=2)
