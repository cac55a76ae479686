"""Issue 25: what a static node hands its kernel unread — its tiling bytes and the kernel binary
itself — is checked against the digests the build recorded (`_opbuild_selected.tiling_sha256`,
the kernel descriptor's `sha256`), so a resealed or zero-checksum file with altered bytes is one
OmError instead of a kernel running on them (the fuzz's `tiling` crashes and hangs: an
intercore_sync kernel, which isolation does not cover, looping or writing on altered tiling)."""

from __future__ import annotations

import pytest

from omtools import build, edit_kernels, model_dict
from opbuild.om import format as omf
from opbuild.om import fuzz
from opbuild.om.errors import OmError
from opbuild.om.loader import load_om, parse_om


@pytest.fixture(scope="module")
def static3(opp) -> bytes:
    return build(opp, model_dict("static3", [16, 1024]))


@pytest.mark.parametrize("zero_checksum", [False, True])
def test_altered_tiling_bytes(static3, tmp_path, zero_checksum):
    _, tiling = fuzz._ranges(static3)
    lo, hi = tiling[-1]  # sum0's (ReduceSumCustom, an intercore_sync kernel)
    data = bytearray(static3)
    data[lo + 8] ^= 0x40
    data = bytearray(omf.reseal(data))
    if zero_checksum:
        data[12:76] = omf.NO_CHECKSUM
    with pytest.raises(OmError, match=r"^TILING_DATA @\d+ \(0x[0-9a-f]+\): node sum0: its 296 tiling bytes do not "
                                      r"match _opbuild_selected\.tiling_sha256 \(altered after the build\)"):
        parse_om(bytes(data))


def test_altered_kernel_bytes(static3):
    """A byte of a kernel's code changed (the ELF headers intact): refused before dlopen."""
    data = edit_kernels(static3, lambda name, b: b if "ReduceSum" not in name else b[:-1] + bytes([b[-1] ^ 1]))
    with pytest.raises(OmError, match=r"^TBE_KERNELS: item built-in:ReduceSumCustom_FP32: its \d+ bytes do not "
                                      r"match its kernel descriptor's sha256 \(altered after the build\)"):
        load_om(data, trust=True)


def test_recorded(static3):
    sel = [n["selected"] for n in parse_om(static3).model_def["nodes"]]
    assert all(len(s["tiling_sha256"]) == 64 for s in sel)


def test_altered_packed_so_bytes(opp):
    """A byte of a SO_BINS .so changed (resealed, ELF headers intact): refused before dlopen (the
    consistent edit, digests updated too, is test_om_trust's planted model: only trust stops it)."""
    data = build(opp, model_dict("dyn", [-1, 1024], ops=1))

    def flip_last(b):
        raw = bytearray(b.data)
        raw[-1] ^= 1
        return bytes(raw)

    altered = _replace_only(data, flip_last)
    with pytest.raises(OmError, match=r"^SO_BINS: item libcust_opmaster_rt2\.0_\w+\.so \(vendors/customize, "
                                      r"SpaceRegistry\): its \d+ bytes match none of the sha256 MODEL_DEF records "
                                      r"for SO_BINS \(altered after the build\)"):
        load_om(altered, trust=True)


def _replace_only(data: bytes, payload_of) -> bytes:
    """SO_BINS binaries replaced, MODEL_DEF untouched (its digests now stale), resealed."""
    from opbuild.om import so_store
    from opbuild.om.loader import parse_om as parse

    m = parse(data)
    bins = [so_store.OpSoBin(b.name, b.vendor, payload_of(b), b.type) for b in m.so_bins]
    parts = [(p.type, so_store.build(bins) if p.type == omf.SO_BINS else bytes(p.data)) for p in m.om.partitions]
    h = m.om.header
    return omf.write_om(parts, name=h.text("name"), ops=h.ops, need_check_os_cpu_info=True, is_unknow_model=True)
