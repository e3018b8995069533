"""Bit packing of small unsigned codes into bytes (LSB first) and fp32 ↔ byte views.

Layout: code i occupies bits [i·w, (i+1)·w) of the stream; bit j of the stream is bit (j mod 8) of
byte ⌊j/8⌋. The packed size of N codes of width w is ceil(N·w/8) bytes; trailing bits are zero.
"""
from __future__ import annotations

import torch


def pack_bits(codes: torch.Tensor, width: int) -> torch.Tensor:
    """Packs a 1-D integer tensor of codes in [0, 2^width) into ceil(N·width/8) uint8 bytes."""
    n = codes.numel()
    nbytes = (n * width + 7) // 8
    if width == 8:
        return codes.to(torch.uint8).reshape(-1)
    c = codes.to(torch.int32).reshape(-1)
    if 8 % width == 0:  # 1, 2, 4 bits: several whole codes per byte
        per = 8 // width
        pad = (-n) % per
        if pad:
            c = torch.cat([c, c.new_zeros(pad)])
        shifts = torch.arange(per, dtype=torch.int32) * width
        return (c.view(-1, per) << shifts).sum(1, dtype=torch.int32).to(torch.uint8)
    bits = (c.unsqueeze(1) >> torch.arange(width, dtype=torch.int32)) & 1
    bits = bits.reshape(-1)
    pad = nbytes * 8 - bits.numel()
    if pad:
        bits = torch.cat([bits, bits.new_zeros(pad)])
    return (bits.view(-1, 8) << torch.arange(8, dtype=torch.int32)).sum(1, dtype=torch.int32).to(torch.uint8)


def unpack_bits(data: torch.Tensor, width: int, count: int) -> torch.Tensor:
    """Inverse of pack_bits: the first `count` codes (int64) of a packed byte tensor."""
    d = data.to(torch.int32).reshape(-1)
    if width == 8:
        return d[:count].to(torch.int64)
    if 8 % width == 0:
        per = 8 // width
        shifts = torch.arange(per, dtype=torch.int32) * width
        codes = (d.unsqueeze(1) >> shifts) & ((1 << width) - 1)
        return codes.reshape(-1)[:count].to(torch.int64)
    bits = ((d.unsqueeze(1) >> torch.arange(8, dtype=torch.int32)) & 1).reshape(-1)[: count * width]
    return (bits.view(count, width).to(torch.int64) << torch.arange(width)).sum(1)


def f32_bytes(x: torch.Tensor) -> torch.Tensor:
    """The little-endian bytes of a float32 tensor, as uint8 (4 per value)."""
    return x.to(torch.float32).contiguous().reshape(-1).view(torch.uint8)


def _aligned(b: torch.Tensor) -> torch.Tensor:
    b = b.contiguous()
    return b.clone() if b.storage_offset() % 4 else b


def bytes_f32(b: torch.Tensor) -> torch.Tensor:
    """Inverse of f32_bytes."""
    return _aligned(b).view(torch.float32)


def i32_bytes(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.int32).contiguous().reshape(-1).view(torch.uint8)


def bytes_i32(b: torch.Tensor) -> torch.Tensor:
    return _aligned(b).view(torch.int32)
