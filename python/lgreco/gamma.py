"""Elias-gamma codes as the kernels write them (kernels/wire.hpp): a value g ≥ 1 is floor(log2 g)
zero bits followed by the binary digits of g, most significant first (2·floor(log2 g) + 1 bits).
Codes are concatenated into one bit stream (bit j of the stream is bit j % 8 of byte j // 8, as
lgreco.packing lays out fixed-width codes), optionally each followed by one extra bit; the stream
is zero-padded to the fixed wire length, which a decoder recognises: no code starts with a run of
zeros that reaches the end.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np


def lengths(values: np.ndarray) -> np.ndarray:
    """Code lengths 2·floor(log2 g) + 1 of values g ≥ 1 (int64 array)."""
    v = np.asarray(values, dtype=np.int64)
    return 2 * (np.floor(np.log2(v.astype(np.float64))).astype(np.int64)) + 1


def _floor_log2(v: np.ndarray) -> np.ndarray:
    out = np.zeros(v.shape, dtype=np.int64)
    x = v.copy()
    while np.any(x > 1):
        more = x > 1
        out[more] += 1
        x[more] >>= 1
    return out


def encode(values: np.ndarray, extra: Optional[np.ndarray] = None, has_extra: Optional[np.ndarray] = None,
           nbytes: Optional[int] = None) -> np.ndarray:
    """The packed bit stream (uint8) of the gamma codes of `values` (int64, ≥ 1), each followed by
    extra[i] when has_extra[i]; zero-padded to `nbytes` bytes when given (error if longer)."""
    v = np.asarray(values, dtype=np.int64)
    if v.size and v.min() < 1:
        raise ValueError("gamma codes need values >= 1")
    L = _floor_log2(v)
    tail = np.zeros(v.shape, dtype=np.int64) if has_extra is None else np.asarray(has_extra, dtype=np.int64)
    size = 2 * L + 1 + tail
    off = np.concatenate([[0], np.cumsum(size)[:-1]]) if v.size else np.zeros(0, dtype=np.int64)
    total = int(size.sum()) if v.size else 0
    bits = np.zeros(max(total, 1), dtype=np.uint8)
    if v.size:
        digits = L + 1
        elem = np.repeat(np.arange(v.size), digits)
        j = np.arange(int(digits.sum())) - np.repeat(np.concatenate([[0], np.cumsum(digits)[:-1]]), digits)
        bits[off[elem] + L[elem] + j] = ((v[elem] >> (L[elem] - j)) & 1).astype(np.uint8)
        if has_extra is not None:
            sel = tail.astype(bool)
            bits[(off + 2 * L + 1)[sel]] = np.asarray(extra, dtype=np.uint8)[sel]
    packed = np.packbits(bits[:total], bitorder="little")
    if nbytes is not None:
        if packed.size > nbytes:
            raise ValueError(f"gamma stream of {packed.size} bytes exceeds its wire length {nbytes}")
        packed = np.concatenate([packed, np.zeros(nbytes - packed.size, dtype=np.uint8)])
    return packed


def decode(stream: np.ndarray, count: Optional[int] = None, extra_if_nonzero_offset: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Reads gamma codes from a packed stream: `count` of them, or until the zero padding. With
    `extra_if_nonzero_offset`, a code g > 1 is followed by one extra bit (QSGD's sign after level
    g − 1 ≠ 0). Returns (values int64, extra bits uint8; 0 where absent)."""
    bits = np.unpackbits(np.asarray(stream, dtype=np.uint8), bitorder="little")
    ones = np.flatnonzero(bits)
    vals, extras = [], []
    p = 0
    while count is None or len(vals) < count:
        i = np.searchsorted(ones, p)
        if i >= ones.size:
            if count is not None:
                raise ValueError(f"gamma stream ends after {len(vals)} of {count} codes")
            break
        q = int(ones[i])
        z = q - p
        word = bits[q: q + z + 1]
        g = int(np.dot(word.astype(np.int64), 1 << np.arange(z, -1, -1, dtype=np.int64))) if z < 62 else int("".join(map(str, word)), 2)
        p = q + z + 1
        e = 0
        if extra_if_nonzero_offset and g > 1:
            e = int(bits[p])
            p += 1
        vals.append(g)
        extras.append(e)
    return np.asarray(vals, dtype=np.int64), np.asarray(extras, dtype=np.uint8)
