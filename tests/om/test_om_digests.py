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
