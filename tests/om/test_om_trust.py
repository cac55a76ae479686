"""Untrusted .om files (issue 13, item 5): a model carrying native code or Python runs only when
trusted, and its checksum is verified whatever the header flags say."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from omtools import build, model_dict, replace_so_bins
from opbuild.om import format as omf
from opbuild.om.errors import OmError, OmTrustError
from opbuild.om.loader import load_om, parse_om
from opbuild.om.so_store import SoBinType

_CONSTRUCTOR_SO = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(MARKER, "w");
    if (f) { fputs("constructor ran\n", f); fclose(f); }
}
"""


def _constructor_so(tmp_path: Path, marker: Path) -> bytes:
    """A real .so whose constructor writes `marker` (the hostile payload of these tests)."""
    src = tmp_path / "planted.c"
    src.write_text(_CONSTRUCTOR_SO)
    out = tmp_path / "planted.so"
    subprocess.run(["cc", "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(out), str(src)], check=True)
    return out.read_bytes()


def _with_space_registry(data: bytes, payload: bytes) -> bytes:
    """The model with every SpaceRegistry .so replaced by `payload` and its recorded digest with
    it, resealed (a valid file: a deliberate edit, which only trust stops)."""
    return replace_so_bins(data, lambda b: payload if b.type == SoBinType.SpaceRegistry else None, name="planted")


@pytest.fixture
def planted(opp, tmp_path) -> tuple[bytes, Path]:
    marker = tmp_path / "constructor-ran"
    data = build(opp, model_dict("plant", [-1, 1024], ops=1))
    return _with_space_registry(data, _constructor_so(tmp_path, marker)), marker


def test_constructor_so_refused_without_trust(planted):
    data, marker = planted
    with pytest.raises(OmTrustError) as exc:
        load_om(data)
    msg = str(exc.value)
    assert "model 'plant' carries code" in msg and "SpaceRegistry .so file(s) in SO_BINS" in msg
    assert "libcust_opmaster_rt2.0_linux_x86_64.so" in msg and "kernel binaries in TBE_KERNELS" in msg
    assert "--trust" in msg
    assert not marker.exists()  # nothing was loaded: the constructor did not run


def test_constructor_so_runs_with_trust(planted):
    data, marker = planted
    load_om(data, trust=True)
    assert marker.read_text() == "constructor ran\n"


def test_cli_refuses_without_trust(planted, tmp_path):
    data, marker = planted
    (tmp_path / "m.om").write_bytes(data)
    np.save(tmp_path / "x.npy", np.ones((2, 1024), np.float32))
    cmd = [sys.executable, "-m", "opbuild", "om", "run", "m.om", "-i", "x=x.npy", "-i", "y=x.npy", "--output-dir", "o"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 1 and "opbuild om run: error: trust: model 'plant' carries code" in r.stderr, r.stderr
    assert not marker.exists()
    r = subprocess.run(cmd + ["--trust"], cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ))
    assert marker.exists(), r.stderr  # trusted: loaded (its tiling is missing, so the run itself fails)


def test_static_model_also_needs_trust(static_om):
    """Kernels are host .so files on the simulator: a model without SO_BINS still carries code."""
    with pytest.raises(OmTrustError, match=r"3 kernel binaries in TBE_KERNELS"):
        load_om(static_om)
    assert parse_om(static_om).code_carried()  # what `om inspect` shows


def test_packed_key_rule_needs_trust(opp):
    data = build(opp, model_dict("rule", [-1, 1024], ops=2))
    m = parse_om(data)
    assert any("Python key rule source of built-in:LeakyReluCustom" in c for c in m.code_carried())


@pytest.mark.parametrize("is_checksum", [0, 1])
def test_checksum_verified_whatever_is_checksum_says(static_om, is_checksum):
    data = bytearray(static_om)
    struct.pack_into("<B", data, omf.HEADER_FIELDS["is_checksum"][1], is_checksum)
    parse_om(bytes(data))  # the flag alone changes nothing the checksum covers
    data[-1] ^= 0xFF  # a kernel byte
    with pytest.raises(OmError, match="checksum @12 .*sha256 of the model data does not match") as exc:
        parse_om(bytes(data))
    assert ("is_checksum=1 does not turn the check off" in str(exc.value)) == bool(is_checksum)


def test_writer_always_seals(static_om):
    """write_om(checksum=False) only sets GE's UNCHECK byte: the file still carries its sha256."""
    m = parse_om(static_om)
    data = omf.write_om([(p.type, bytes(p.data)) for p in m.om.partitions], name="x", checksum=False)
    assert data[omf.HEADER_FIELDS["is_checksum"][1]] == 1
    omf.read_om(data)
