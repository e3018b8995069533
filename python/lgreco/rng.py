"""Philox4x32-10 counter-based draws, bit-compatible with the C++ core (core/rng.hpp).

A draw is a pure function of (seed, stream, index). Conventions (same as the C++ side):
key = seed (64 bits); counter = (index/4 as 64 bits, stream as 64 bits); lane = index % 4;
stream_of(step, layer) = (step << 24) ^ (layer & 0xFFFFFF). Normal draws use one whole block per
element (Box-Muller in double precision, counter word 3 xor 0x80000000).
"""
from __future__ import annotations

import numpy as np

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_MASK32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def stream_of(step: int, layer: int) -> int:
    """Packs (step, layer) into one 64-bit stream id."""
    return ((int(step) << 24) ^ (int(layer) & 0xFFFFFF)) & 0xFFFFFFFFFFFFFFFF


def philox4x32_10(c0, c1, c2, c3, seed: int):
    """Vectorised Philox4x32-10 on uint64 arrays holding 32-bit words; returns the 4 output words."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) & _MASK32 for c in (c0, c1, c2, c3))
    k0 = int(seed) & 0xFFFFFFFF
    k1 = (int(seed) >> 32) & 0xFFFFFFFF
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        hi0, lo0 = p0 >> _S32, p0 & _MASK32
        hi1, lo1 = p1 >> _S32, p1 & _MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
        k0 = (k0 + _W0) & 0xFFFFFFFF
        k1 = (k1 + _W1) & 0xFFFFFFFF
    return c0, c1, c2, c3


def _unit_double(hi, lo):
    x = ((hi << np.uint64(21)) ^ (lo >> np.uint64(11))) & np.uint64((1 << 53) - 1)
    return x.astype(np.float64) * (1.0 / 9007199254740992.0)


def bits_at(seed: int, stream: int, index) -> np.ndarray:
    """The 32-bit random words of elements `index` (array) of (seed, stream)."""
    idx = np.asarray(index, dtype=np.uint64)
    block = idx >> np.uint64(2)
    s = np.uint64(stream)
    out = philox4x32_10(block & _MASK32, block >> _S32, np.full_like(idx, s & _MASK32),
                        np.full_like(idx, s >> _S32), seed)
    lane = (idx & np.uint64(3)).astype(np.int64)
    return np.choose(lane, out).astype(np.uint32)


def uniform_at(seed: int, stream: int, index) -> np.ndarray:
    """Uniform float32 in [0, 1) from the 24 high bits of each word."""
    w = bits_at(seed, stream, index)
    return (w >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def normal_at(seed: int, stream: int, index) -> np.ndarray:
    """Standard normal float64 draws for elements `index` of (seed, stream)."""
    idx = np.asarray(index, dtype=np.uint64)
    s = np.uint64(stream)
    b = philox4x32_10(idx & _MASK32, idx >> _S32, np.full_like(idx, s & _MASK32),
                      np.full_like(idx, (s >> _S32) ^ np.uint64(0x80000000)), seed)
    u1 = 1.0 - _unit_double(b[0], b[1])
    u2 = _unit_double(b[2], b[3])
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
