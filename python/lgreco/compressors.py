"""Allgather compressors: encode a 1-D fp32 tensor into the exact wire bytes, and decode.

Every payload has exactly `methods.wire_bytes(method, shape, step)` bytes (`step` only matters for
top-k with a DGC warm-up, whose k and auto encoding follow the step's density; None = steady
state); layouts (all little endian):
- topk pairs:  k fp32 values, then k int32 indices (ascending index order);
  topk bitmap: ceil(N/8) bitmap bytes (element i is bit i%8 of byte i/8), then k fp32 values in
  ascending index order. Selection: the k largest |x|; ties broken by the lower index.
- qsgd:   N codes of ceil(log2(2s+1)) bits (code = q + s, q ∈ [−s, s]), then one fp32 norm per bucket
          (‖v‖₂ or max|v|); value = norm·q/s; stochastic rounding ℓ → ℓ+1 with prob s|v|/norm − ℓ.
- maxmin: N < 16: N fp32 values. Else N codes of `bits` bits, then per bucket (unit, min) fp32;
          level = min(⌊(x − min)/unit + u⌋, 2^b − 1), u = 0.5 (nearest) or uniform; value = min + unit·level.
- sign:   N bits (1 ⇔ x ≥ 0), then per bucket scale = mean |x| (fp32); value = ±scale.
- terngrad: N 2-bit codes (0: zero, 1: +s, 2: −s), then s = max|x| (fp32); nonzero with prob |x|/s.
- nuqsgd: N codes of 1 + ceil(log2(s+2)) bits (level index j in the low bits, sign in the top bit)
          over levels {0, 2^−s, …, 1/2, 1}, then one fp32 ‖v‖₂ per bucket; stochastic rounding between
          neighbouring levels.
A zero norm/scale/range decodes to zeros. `u` are uniforms in [0, 1) supplied by the caller.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch

from .methods import Method, nuqsgd_code_bits, qsgd_code_bits, qsgd_levels, topk_encoding, topk_k_at
from .packing import bytes_f32, bytes_i32, f32_bytes, i32_bytes, pack_bits, unpack_bits


def needs_random(method: Method, numel: int) -> bool:
    """Whether encoding draws uniforms (stochastic rounding)."""
    if method.name in ("qsgd", "terngrad", "nuqsgd"):
        return True
    return method.name == "maxmin" and method.params["rounding"] == "stochastic" and numel >= 16


def _buckets(x: torch.Tensor, d: int, fill: Optional[float] = 0.0) -> torch.Tensor:
    n = x.numel()
    nb = -(-n // d)
    pad = nb * d - n
    if pad:
        x = torch.cat([x, x.new_full((pad,), fill if fill is not None else float(x[-1]))])
    return x.view(nb, d)


def topk_select(x: torch.Tensor, k: int) -> torch.Tensor:
    """Ascending indices of the k largest |x|; among equal magnitudes the lower index wins."""
    if k == 0:
        return torch.zeros(0, dtype=torch.int64)
    a = x.abs()
    thr = torch.topk(a, k, sorted=False).values.min()
    above = torch.nonzero(a > thr).view(-1)
    ties = torch.nonzero(a == thr).view(-1)[: k - above.numel()]
    return torch.sort(torch.cat([above, ties])).values


def topk_encode(method: Method, x: torch.Tensor,
                step: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Top-k of a contiguous 1-D fp32 tensor at training step `step` (k from the step's warm-up
    density; None = target density): (payload uint8, local decoded fp32, ascending int64 indices
    of the sent entries). The indices are what DGC's momentum factor masking needs."""
    n = x.numel()
    p = method.params
    idx = topk_select(x, topk_k_at(n, p, step))
    vals = x[idx]
    dec = torch.zeros_like(x)
    dec[idx] = vals
    if topk_encoding(n, p, step) == "pairs":
        return torch.cat([f32_bytes(vals), i32_bytes(idx)]), dec, idx
    mask = torch.zeros(n, dtype=torch.int32)
    mask[idx] = 1
    return torch.cat([pack_bits(mask, 1), f32_bytes(vals)]), dec, idx


def encode(method: Method, x: torch.Tensor, u: Optional[torch.Tensor],
           step: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """(payload uint8, local decoded fp32) of a contiguous 1-D fp32 tensor; `step` as in topk_encode."""
    n = x.numel()
    p = method.params
    name = method.name
    if name == "topk":
        pl, dec, _ = topk_encode(method, x, step)
        return pl, dec
    if name == "qsgd":
        s = qsgd_levels(p)
        xb = _buckets(x, p["bucket_size"])
        norm = xb.norm(dim=1) if p["norm"] == "l2" else xb.abs().amax(dim=1)
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        r = (xb.abs() / safe.unsqueeze(1) * s).clamp(max=s)
        lvl = torch.floor(r)
        lvl = lvl + (_buckets(u, p["bucket_size"]) < (r - lvl)).to(lvl.dtype)
        q = (torch.sign(xb) * lvl.clamp(max=s)).reshape(-1)[:n]
        codes = (q + s).to(torch.int64)
        dec = (norm.unsqueeze(1) * (q.new_zeros(xb.numel()).index_copy_(0, torch.arange(n), q)
                                   .view_as(xb)) / s).reshape(-1)[:n]
        return torch.cat([pack_bits(codes, qsgd_code_bits(p)), f32_bytes(norm)]), dec
    if name == "maxmin":
        if n < 16:
            return f32_bytes(x), x.clone()
        b = p["bits"]
        top = (1 << b) - 1
        xb = _buckets(x, p["bucket_size"], fill=None)
        mn = xb.amin(dim=1)
        unit = (xb.amax(dim=1) - mn) / top
        safe = torch.where(unit > 0, unit, torch.ones_like(unit))
        rnd = 0.5 if p["rounding"] == "nearest" else _buckets(u, p["bucket_size"])
        lvl = torch.floor((xb - mn.unsqueeze(1)) / safe.unsqueeze(1) + rnd).clamp(0, top)
        lvl = torch.where(unit.unsqueeze(1) > 0, lvl, torch.zeros_like(lvl))
        dec = (mn.unsqueeze(1) + unit.unsqueeze(1) * lvl).reshape(-1)[:n]
        codes = lvl.reshape(-1)[:n].to(torch.int64)
        return torch.cat([pack_bits(codes, b), f32_bytes(torch.stack([unit, mn], dim=1))]), dec
    if name == "sign":
        d = p["bucket_size"]
        xb = _buckets(x, d)
        counts = torch.full((xb.shape[0],), float(d))
        counts[-1] = n - d * (xb.shape[0] - 1)
        scale = xb.abs().sum(dim=1) / counts
        pos = (x >= 0)
        dec = torch.where(pos, 1.0, -1.0) * scale.repeat_interleave(d)[:n]
        return torch.cat([pack_bits(pos.to(torch.int32), 1), f32_bytes(scale)]), dec
    if name == "terngrad":
        s = x.abs().max() if n else torch.zeros(())
        keep = (u < x.abs() / s) if float(s) > 0 else torch.zeros(n, dtype=torch.bool)
        codes = torch.where(keep, torch.where(x >= 0, 1, 2), 0)
        dec = torch.where(keep, torch.sign(x) * s, torch.zeros_like(x))
        return torch.cat([pack_bits(codes, 2), f32_bytes(s.reshape(1))]), dec
    if name == "nuqsgd":
        s = p["levels"]
        ladder = torch.tensor([0.0] + [2.0 ** (-j) for j in range(s, -1, -1)])
        xb = _buckets(x, p["bucket_size"])
        norm = xb.norm(dim=1)
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        r = (xb.abs() / safe.unsqueeze(1)).clamp(max=1.0).reshape(-1)[:n]
        j = (torch.searchsorted(ladder, r, right=True) - 1).clamp(0, s)
        lo, hi = ladder[j], ladder[j + 1]
        j = j + (u < (r - lo) / (hi - lo)).to(j.dtype)
        neg = (x < 0) & (j > 0)
        mag_bits = nuqsgd_code_bits(p) - 1
        codes = j | (neg.to(torch.int64) << mag_bits)
        normx = norm.repeat_interleave(p["bucket_size"])[:n]
        dec = torch.where(neg, -1.0, 1.0) * ladder[j] * normx
        return torch.cat([pack_bits(codes, mag_bits + 1), f32_bytes(norm)]), dec
    raise ValueError(f"method '{name}' is not an allgather method")


def decode(method: Method, payload: torch.Tensor, n: int, step: Optional[int] = None) -> torch.Tensor:
    """The fp32 tensor of n elements that a payload from `encode` (at the same `step`) stands for."""
    p = method.params
    name = method.name
    if name == "topk":
        k = topk_k_at(n, p, step)
        out = torch.zeros(n)
        if topk_encoding(n, p, step) == "pairs":
            vals, idx = bytes_f32(payload[: 4 * k]), bytes_i32(payload[4 * k:]).to(torch.int64)
        else:
            nb = (n + 7) // 8
            idx = torch.nonzero(unpack_bits(payload[:nb], 1, n)).view(-1)
            vals = bytes_f32(payload[nb:])
        out[idx] = vals
        return out
    if name == "qsgd":
        s, d, w = qsgd_levels(p), p["bucket_size"], qsgd_code_bits(p)
        nc = (n * w + 7) // 8
        q = unpack_bits(payload[:nc], w, n).to(torch.float32) - s
        norm = bytes_f32(payload[nc:]).repeat_interleave(d)[:n]
        return norm * q / s
    if name == "maxmin":
        if n < 16:
            return bytes_f32(payload).clone()
        b, d = p["bits"], p["bucket_size"]
        nc = (b * n + 7) // 8
        lvl = unpack_bits(payload[:nc], b, n).to(torch.float32)
        um = bytes_f32(payload[nc:]).view(-1, 2)
        return um[:, 1].repeat_interleave(d)[:n] + um[:, 0].repeat_interleave(d)[:n] * lvl
    if name == "sign":
        d = p["bucket_size"]
        nc = (n + 7) // 8
        pos = unpack_bits(payload[:nc], 1, n)
        scale = bytes_f32(payload[nc:]).repeat_interleave(d)[:n]
        return torch.where(pos == 1, 1.0, -1.0) * scale
    if name == "terngrad":
        nc = (2 * n + 7) // 8
        codes = unpack_bits(payload[:nc], 2, n)
        s = bytes_f32(payload[nc:])[0]
        return (codes == 1).to(torch.float32) * s - (codes == 2).to(torch.float32) * s
    if name == "nuqsgd":
        s, d, w = p["levels"], p["bucket_size"], nuqsgd_code_bits(p)
        ladder = torch.tensor([0.0] + [2.0 ** (-j) for j in range(s, -1, -1)])
        nc = (n * w + 7) // 8
        codes = unpack_bits(payload[:nc], w, n)
        j = codes & ((1 << (w - 1)) - 1)
        neg = (codes >> (w - 1)) & 1
        norm = bytes_f32(payload[nc:]).repeat_interleave(d)[:n]
        return torch.where(neg == 1, -1.0, 1.0) * ladder[j] * norm
    raise ValueError(f"method '{name}' is not an allgather method")
