"""Compressor payloads, bit packing, Philox draws and schedule validation (no processes)."""
import json
import math

import numpy as np
import pytest
import torch

from lgreco import Schedule, ScheduleError, make_schedule, parse_method, wire_bytes
from lgreco import compressors, gamma, rng
from lgreco.methods import wire
from lgreco.packing import pack_bits, unpack_bits
from test_py_hook import METHODS, contract_bytes

SIZES = [1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 257, 1000, 4099]
AG = [(m, p) for m, p in METHODS if m in ("topk", "qsgd", "maxmin", "sign", "terngrad", "nuqsgd")]
# Data-dependent codes, padded to their wire plan's worst case (contract_bytes does not price them).
PADDED = [("topk", {"density": 0.05, "encoding": "delta"}), ("topk", {"density": 0.1, "selection": "dgc"}),
          ("topk", {"density": 0.02, "selection": "dgc", "encoding": "delta"}),
          ("qsgd", {"levels": 3, "encoding": "elias", "bucket_size": 64}), ("qsgd", {"bits": 8, "encoding": "elias"})]


def encode(m, x, u, step=None):
    return compressors.encode(m, wire(m, (x.numel(),), step), x, u, 11, rng.stream_of(3, 2))


@pytest.mark.parametrize("method,params", AG + PADDED)
def test_payload_size_is_the_wire_plan_and_decode_matches_local(method, params):
    m = parse_method({"method": method, "params": params})
    g = torch.Generator().manual_seed(7)
    for n in SIZES:
        x = torch.randn(n, generator=g)
        w = wire(m, (n,))
        pl, dec = compressors.encode(m, w, x, torch.rand(n, generator=g), 11, rng.stream_of(3, 2))
        assert pl.dtype == torch.uint8 and pl.numel() == w["allgather_bytes"] == wire_bytes(m, (n,)), n
        if (method, params) in AG:
            assert pl.numel() == contract_bytes(method, params, (n,)), n
        assert torch.equal(compressors.decode(m, w, pl, n), dec), n


def test_dgc_keeps_at_most_k_and_the_largest_magnitudes():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(20000, generator=g)
    for k in (1, 20, 200, 2000):
        idx = compressors.dgc_select(x, k, 1, 2)
        assert idx.numel() <= k and (k < 20 or idx.numel() > 0.5 * k)  # a sampled threshold: about k
        assert torch.all(idx[1:] > idx[:-1])
        if idx.numel() == 0:
            continue
        # Every unselected entry is no larger than the smallest selected one.
        mask = torch.ones(x.numel(), dtype=torch.bool)
        mask[idx] = False
        assert x.abs()[mask].max() <= x.abs()[idx].min()


def test_gamma_codes_roundtrip_and_lengths():
    v = np.array([1, 2, 3, 7, 8, 100, 1, 5, 2 ** 20])
    assert gamma.lengths(v).tolist() == [2 * int(math.floor(math.log2(x))) + 1 for x in v]
    s = gamma.encode(v, nbytes=40)
    assert gamma.decode(s)[0].tolist() == v.tolist()
    sign = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1], dtype=np.uint8)
    s = gamma.encode(v, sign, v > 1, nbytes=40)
    got, bits = gamma.decode(s, count=v.size, extra_if_nonzero_offset=True)
    assert got.tolist() == v.tolist() and bits[v > 1].tolist() == sign[v > 1].tolist()
    with pytest.raises(ValueError):
        gamma.encode(v, nbytes=2)


@pytest.mark.parametrize("method,params", [("qsgd", {"bits": 3, "bucket_size": 64}), ("terngrad", {}),
                                           ("nuqsgd", {"levels": 3, "bucket_size": 64}),
                                           ("maxmin", {"bits": 2, "bucket_size": 64})])
def test_stochastic_rounding_is_unbiased(method, params):
    # E[C(x)] = x: the mean of 2000 draws lies within 5 standard errors of x element-wise.
    m = parse_method({"method": method, "params": params})
    g = torch.Generator().manual_seed(3)
    x = torch.randn(200, generator=g)
    decs = torch.stack([encode(m, x, torch.rand(200, generator=g))[1] for _ in range(2000)])
    se = decs.std(0) / math.sqrt(2000) + 1e-7
    assert ((decs.mean(0) - x).abs() <= 5 * se + 1e-6).float().mean() > 0.99


def test_topk_ties_go_to_lower_index_and_values_are_exact():
    x = torch.tensor([1.0, -3.0, 3.0, 2.0, -3.0, 0.5])
    assert compressors.topk_select(x, 2).tolist() == [1, 2]
    assert compressors.topk_select(x, 3).tolist() == [1, 2, 4]
    m = parse_method({"method": "topk", "params": {"density": 0.5, "encoding": "pairs"}})
    pl, dec = encode(m, x, None)
    assert dec.tolist() == [0.0, -3.0, 3.0, 0.0, -3.0, 0.0]


def test_sign_and_maxmin_nearest_reconstruct_by_formula():
    x = torch.tensor([0.5, -1.5, 2.0, 0.0] * 5)  # 20 elements, one sign bucket
    s = encode(parse_method({"method": "sign", "params": {"bucket_size": 1024}}), x, None)[1]
    assert torch.allclose(s, torch.where(x >= 0, 1.0, -1.0) * x.abs().mean())
    mm = parse_method({"method": "maxmin", "params": {"bits": 2, "rounding": "nearest"}})
    dec = encode(mm, x, None)[1]
    unit = (2.0 - -1.5) / 3
    want = -1.5 + unit * torch.clamp(torch.floor((x + 1.5) / unit + 0.5), 0, 3)
    assert torch.allclose(dec, want)


def test_pack_roundtrip_all_widths():
    g = torch.Generator().manual_seed(1)
    for width in range(1, 9):
        for n in SIZES:
            c = torch.randint(0, 1 << width, (n,), generator=g)
            p = pack_bits(c, width)
            assert p.numel() == (n * width + 7) // 8
            assert torch.equal(unpack_bits(p, width, n), c)
    assert pack_bits(torch.tensor([1, 0, 3]), 2).tolist() == [0b110001]  # LSB first


def test_philox_known_answers():
    # Random123's published Philox4x32-10 test vectors.
    z = np.zeros(1)
    assert [int(v[0]) for v in rng.philox4x32_10(z, z, z, z, 0)] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    f = np.array([0xFFFFFFFF])
    assert [int(v[0]) for v in rng.philox4x32_10(f, f, f, f, (1 << 64) - 1)] == \
        [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    u = rng.uniform_at(5, rng.stream_of(3, 2), np.arange(4096))
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    z = rng.normal_at(5, rng.stream_of(3, 2), np.arange(4096))
    assert abs(z.mean()) < 0.06 and abs(z.std() - 1) < 0.05


SHAPES = {"w": (8, 4), "b": (8,)}


def _doc(**over):
    d = make_schedule([(0, None, "uniform", {"w": {"method": "powersgd", "params": {"rank": 1}},
                                             "b": {"method": "none"}})], SHAPES)
    d.update(over)
    return d


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d.update(kind="x"), "kind"),
    (lambda d: d.update(extra=1), "extra"),
    (lambda d: d["phases"][0]["layers"]["w"]["params"].update(rnk=3), "rnk"),
    (lambda d: d["phases"][0]["layers"]["w"].update(method="zip"), "zip"),
    (lambda d: d["phases"][0]["layers"]["w"]["params"].update(rank=-1), "rank"),
    (lambda d: d["phases"][0].update(end_step=0), "end_step"),
    (lambda d: d["phases"].append(dict(d["phases"][0], start_step=7)), "end_step"),
])
def test_bad_schedules_name_the_field(tmp_path, mutate, needle):
    d = _doc()
    mutate(d)
    p = tmp_path / "s.json"
    p.write_text(json.dumps(d))
    with pytest.raises(ScheduleError, match=needle):
        Schedule.load(p)


def test_malformed_json_and_missing_parameter(tmp_path):
    p = tmp_path / "s.json"
    p.write_text("{\"schema_version\": 1,")
    with pytest.raises(ScheduleError, match="malformed JSON"):
        Schedule.load(p)
    s = Schedule(_doc())
    with pytest.raises(ScheduleError, match="lacks parameter"):
        s.check_parameters(dict(SHAPES, c=(3,)))
    with pytest.raises(ScheduleError, match="unknown parameter"):
        s.check_parameters({"w": SHAPES["w"]})
    with pytest.raises(ScheduleError, match="another model"):
        s.check_parameters({"w": (4, 8), "b": (8,)})
    assert s.method_at(5, "w").params["rank"] == 1
    assert s.prediction_mismatches() == []
    d = _doc()
    d["phases"][0]["predicted"]["bytes_per_step"] += 1
    assert Schedule(d).prediction_mismatches() == [(0, d["phases"][0]["predicted"]["bytes_per_step"],
                                                    4 * 1 * (8 + 4) + 32)]


def test_philox_matches_the_cpp_core(tmp_path):
    """The Python draws are bit-identical to core/rng.hpp (compiled here when a C++ compiler exists)."""
    import shutil
    import subprocess

    from conftest import REPO

    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler to build the core/rng.hpp probe")
    src = tmp_path / "probe.cpp"
    src.write_text('#include <cstdio>\n#include "core/rng.hpp"\nint main(){using namespace lgreco::rng;'
                   'for(unsigned i=0;i<9;++i) std::printf("%u %.17g\\n", bits_at(42, stream_of(7,3), i),'
                   ' normal_at(42, stream_of(7,3), i)); }\n')
    exe = tmp_path / "probe"
    subprocess.run([cxx, "-std=c++20", "-O1", "-I", str(REPO), str(src), "-o", str(exe)], check=True)
    rows = [line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                    check=True).stdout.splitlines()]
    idx = np.arange(9)
    assert [int(r[0]) for r in rows] == rng.bits_at(42, rng.stream_of(7, 3), idx).tolist()
    np.testing.assert_allclose([float(r[1]) for r in rows], rng.normal_at(42, rng.stream_of(7, 3), idx),
                               rtol=1e-15, atol=1e-15)  # libm log/cos may differ in the last ulp
