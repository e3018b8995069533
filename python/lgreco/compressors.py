"""Allgather compressors of the DDP hook: encode a 1-D fp32 tensor into exactly the bytes its wire
plan says, and decode.

Every payload has exactly `wire["allgather_bytes"]` bytes, where `wire` is the parameter's wire plan
(kernels/wire.hpp, carried by the schedule or given by the native module): k, the top-k encoding and
the code width come from the plan, never from a formula here. Layouts (little endian):
- topk pairs:  k fp32 values, then k int32 indices; bitmap: ceil(N/8) bitmap bytes (element i is bit
  i%8 of byte i/8), then k fp32 values in ascending index order; delta: k fp32 values (ascending
  index), then the Elias-gamma codes of the index gaps (first gap = index + 1; lgreco.gamma), zero
  padded to the plan's worst case. Selection: the k largest |x|, ties → lower index; or DGC's
  sampled threshold, which keeps k' ≤ k entries: the k' come first, the remaining k − k' slots are
  zero (pairs: value 0 at index 0, which adds nothing).
- qsgd fixed: N codes of `code_bits` bits (code = q + s, q ∈ [−s, s]); elias: per element
  gamma(|q| + 1) and a sign bit when q ≠ 0, zero padded to N·code_bits bits; then one fp32 norm per
  bucket (‖v‖₂ or max|v|); value = norm·q/s; stochastic rounding ℓ → ℓ+1 with prob s|v|/norm − ℓ.
- maxmin: raw plan (N < 16): N fp32 values. Else N codes of `bits` bits, then per bucket (unit, min)
  fp32; level = min(⌊(x − min)/unit + u⌋, 2^b − 1), u = 0.5 (nearest) or uniform; value = min + unit·level.
- sign:   N bits (1 ⇔ x ≥ 0), then per bucket scale = mean |x| (fp32); value = ±scale.
- terngrad: N 2-bit codes (0: zero, 1: +s, 2: −s), then s = max|x| (fp32); nonzero with prob |x|/s.
- nuqsgd: N codes of `code_bits` bits (level index j in the low bits, sign in the top bit) over
  levels {0, 2^−s, …, 1/2, 1}, then one fp32 ‖v‖₂ per bucket; stochastic rounding between
  neighbouring levels.
A zero norm/scale/range decodes to zeros. `u` are uniforms in [0, 1) supplied by the caller.
"""
from __future__ import annotations

from typing import Mapping, Optional, Tuple

import numpy as np
import torch

from . import gamma, rng
from .methods import Method
from .packing import bytes_f32, bytes_i32, f32_bytes, i32_bytes, pack_bits, unpack_bits


def needs_random(method: Method, wire: Mapping) -> bool:
    """Whether encoding draws uniforms (stochastic rounding)."""
    if method.name in ("qsgd", "terngrad", "nuqsgd"):
        return True
    return method.name == "maxmin" and method.params["rounding"] == "stochastic" and not wire.get("raw", False)


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


def dgc_select(x: torch.Tensor, k: int, seed: int, stream: int) -> torch.Tensor:
    """DGC's sampled threshold (kernels/cpu/topk.hpp, topk_dgc): sample S = min(N, max(1024,
    ceil(0.01·N))) entries at (bits_at(seed, stream, j)·N) >> 32, threshold t = the ⌈k·S/N⌉-th
    largest sampled |x|, adjusted up to 10 times (×1.3 when more than 1.3k entries exceed it, ×0.8
    when fewer than 0.8k), then the entries above t, truncated to the k largest. At most k indices,
    ascending."""
    n = x.numel()
    if k == 0 or n == 0:
        return torch.zeros(0, dtype=torch.int64)
    S = min(n, max(1024, int(np.ceil(0.01 * n))))
    idx = (rng.bits_at(seed, stream, np.arange(S)).astype(np.uint64) * np.uint64(n)) >> np.uint64(32)
    a = x.abs().numpy()
    sample = a[idx.astype(np.int64)]
    ks = max(1, int(np.ceil(k * S / n)))
    t = np.float32(np.sort(sample)[::-1][min(ks, S) - 1])
    for _ in range(10):
        c = int((a > t).sum())
        if c > 1.3 * k:
            t = np.float32(t * np.float32(1.3))
        elif c < 0.8 * k:
            t = np.float32(t * np.float32(0.8))
        else:
            break
    sel = np.flatnonzero(a > t)
    if sel.size > k:
        order = np.lexsort((sel, -a[sel]))[:k]  # largest first, ties → lower index
        sel = np.sort(sel[order])
    return torch.from_numpy(sel.astype(np.int64))


def _pad(t: torch.Tensor, size: int) -> torch.Tensor:
    return torch.cat([t, t.new_zeros(size - t.numel())]) if t.numel() < size else t


def topk_encode(method: Method, wire: Mapping, x: torch.Tensor, seed: int = 0,
                stream: int = 0) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Top-k of a contiguous 1-D fp32 tensor under its wire plan (k, encoding): (payload uint8,
    local decoded fp32, ascending int64 indices of the sent entries). DGC selection draws its sample
    from (seed, stream). The indices are what DGC's momentum factor masking needs."""
    n = x.numel()
    k, enc = int(wire["k"]), wire["encoding"]
    idx = dgc_select(x, k, seed, stream) if method.params["selection"] == "dgc" else topk_select(x, k)
    vals = x[idx]
    dec = torch.zeros_like(x)
    dec[idx] = vals
    values = f32_bytes(_pad(vals, k))
    if enc == "pairs":
        payload = torch.cat([values, i32_bytes(_pad(idx, k))])
    elif enc == "bitmap":
        mask = torch.zeros(n, dtype=torch.int32)
        mask[idx] = 1
        payload = torch.cat([pack_bits(mask, 1), values])
    else:  # delta: gaps of ascending indices, Elias-gamma coded after the values
        gaps = np.diff(np.concatenate([[-1], idx.numpy()]))
        stream_bytes = gamma.encode(gaps, nbytes=int(wire["allgather_bytes"]) - 4 * k)
        payload = torch.cat([values, torch.from_numpy(stream_bytes)])
    return payload, dec, idx


def encode(method: Method, wire: Mapping, x: torch.Tensor, u: Optional[torch.Tensor], seed: int = 0,
           stream: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
    """(payload uint8 of wire["allgather_bytes"] bytes, local decoded fp32) of a contiguous 1-D fp32
    tensor under its wire plan."""
    n = x.numel()
    p = method.params
    name = method.name
    if name == "topk":
        pl, dec, _ = topk_encode(method, wire, x, seed, stream)
        return pl, dec
    if name == "qsgd":
        s = p["levels"]
        xb = _buckets(x, p["bucket_size"])
        norm = xb.norm(dim=1) if p["norm"] == "l2" else xb.abs().amax(dim=1)
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        r = (xb.abs() / safe.unsqueeze(1) * s).clamp(max=s)
        lvl = torch.floor(r)
        lvl = lvl + (_buckets(u, p["bucket_size"]) < (r - lvl)).to(lvl.dtype)
        q = (torch.sign(xb) * lvl.clamp(max=s)).reshape(-1)[:n]
        dec = (norm.unsqueeze(1) * (q.new_zeros(xb.numel()).index_copy_(0, torch.arange(n), q)
                                   .view_as(xb)) / s).reshape(-1)[:n]
        code_bytes = (n * int(wire["code_bits"]) + 7) // 8
        if p["encoding"] == "elias":
            mag = q.abs().to(torch.int64).numpy()
            codes = torch.from_numpy(gamma.encode(mag + 1, (q < 0).numpy().astype(np.uint8), mag > 0, nbytes=code_bytes))
        else:
            codes = pack_bits((q + s).to(torch.int64), int(wire["code_bits"]))
        return torch.cat([codes, f32_bytes(norm)]), dec
    if name == "maxmin":
        if wire.get("raw", False):
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
        return torch.cat([pack_bits(codes, int(wire["code_bits"])), f32_bytes(torch.stack([unit, mn], dim=1))]), dec
    if name == "sign":
        d = p["bucket_size"]
        xb = _buckets(x, d)
        counts = torch.full((xb.shape[0],), float(d))
        counts[-1] = n - d * (xb.shape[0] - 1)
        scale = xb.abs().sum(dim=1) / counts
        pos = (x >= 0)
        dec = torch.where(pos, 1.0, -1.0) * scale.repeat_interleave(d)[:n]
        return torch.cat([pack_bits(pos.to(torch.int32), int(wire["code_bits"])), f32_bytes(scale)]), dec
    if name == "terngrad":
        s = x.abs().max() if n else torch.zeros(())
        keep = (u < x.abs() / s) if float(s) > 0 else torch.zeros(n, dtype=torch.bool)
        codes = torch.where(keep, torch.where(x >= 0, 1, 2), 0)
        dec = torch.where(keep, torch.sign(x) * s, torch.zeros_like(x))
        return torch.cat([pack_bits(codes, int(wire["code_bits"])), f32_bytes(s.reshape(1))]), dec
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
        width = int(wire["code_bits"])
        codes = j | (neg.to(torch.int64) << (width - 1))
        normx = norm.repeat_interleave(p["bucket_size"])[:n]
        dec = torch.where(neg, -1.0, 1.0) * ladder[j] * normx
        return torch.cat([pack_bits(codes, width), f32_bytes(norm)]), dec
    raise ValueError(f"method '{name}' is not an allgather method")


def decode(method: Method, wire: Mapping, payload: torch.Tensor, n: int) -> torch.Tensor:
    """The fp32 tensor of n elements that a payload from `encode` (under the same wire plan) stands for."""
    p = method.params
    name = method.name
    if name == "topk":
        k, enc = int(wire["k"]), wire["encoding"]
        out = torch.zeros(n)
        if enc == "pairs":
            vals, idx = bytes_f32(payload[: 4 * k]), bytes_i32(payload[4 * k:]).to(torch.int64)
        elif enc == "bitmap":
            nb = (n + 7) // 8
            idx = torch.nonzero(unpack_bits(payload[:nb], 1, n)).view(-1)
            vals = bytes_f32(payload[nb: nb + 4 * k])[: idx.numel()]
        else:
            gaps, _ = gamma.decode(payload[4 * k:].numpy())
            idx = torch.from_numpy(np.cumsum(gaps) - 1)
            vals = bytes_f32(payload[: 4 * k])[: idx.numel()]
        out.index_add_(0, idx, vals)
        return out
    if name == "qsgd":
        s, d, w = p["levels"], p["bucket_size"], int(wire["code_bits"])
        nc = (n * w + 7) // 8
        if p["encoding"] == "elias":
            g, sign = gamma.decode(payload[:nc].numpy(), count=n, extra_if_nonzero_offset=True)
            q = torch.from_numpy(((g - 1) * np.where(sign == 1, -1, 1)).astype(np.float32))
        else:
            q = unpack_bits(payload[:nc], w, n).to(torch.float32) - s
        norm = bytes_f32(payload[nc:]).repeat_interleave(d)[:n]
        return norm * q / s
    if name == "maxmin":
        if wire.get("raw", False):
            return bytes_f32(payload).clone()
        b, d = int(wire["code_bits"]), p["bucket_size"]
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
        s, d, w = p["levels"], p["bucket_size"], int(wire["code_bits"])
        ladder = torch.tensor([0.0] + [2.0 ** (-j) for j in range(s, -1, -1)])
        nc = (n * w + 7) // 8
        codes = unpack_bits(payload[:nc], w, n)
        j = codes & ((1 << (w - 1)) - 1)
        neg = (codes >> (w - 1)) & 1
        norm = bytes_f32(payload[nc:]).repeat_interleave(d)[:n]
        return torch.where(neg == 1, -1.0, 1.0) * ladder[j] * norm
    raise ValueError(f"method '{name}' is not an allgather method")
