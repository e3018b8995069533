"""DGC momentum correction for the DDP hook, the same rule as kernels/error_feedback.hpp:

    u ← m·u + g;  acc = e + u;  c = top-k(acc);  e ← acc − c;  u[i] ← 0 for every sent index i

element-wise in fp32 with one rounding per operation (no fused multiply-add), m rounded to fp32
once; the velocity u starts at zero. m = 0 is plain error feedback (acc = g + e) and keeps no
velocity. The top-k and the residual update are the hook's; these are the two velocity steps.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from .methods import Method


def momentum_factor(method: Method) -> float:
    """m of DGC momentum correction rounded to fp32 (as a Python float holding that exact value);
    0.0 unless the method is top-k with momentum ≠ 0."""
    if method.name != "topk":
        return 0.0
    return float(np.float32(method.params["momentum"]))


def momentum_accumulate(g: torch.Tensor, u: torch.Tensor, e: Optional[torch.Tensor], m: float,
                        acc: torch.Tensor) -> None:
    """u ← m·u + g (in place), then acc = e + u (e None = zero residual, acc = u). fp32 tensors of
    one length; `acc` may be `g` itself (the hook writes acc into the bucket), never u or e."""
    u.mul_(m).add_(g)
    if e is None:
        acc.copy_(u)
    else:
        torch.add(e, u, out=acc)


def momentum_mask(indices: torch.Tensor, u: torch.Tensor) -> None:
    """Momentum factor masking: u[i] = 0 for every sent index i (int64 indices)."""
    u[indices] = 0.0
