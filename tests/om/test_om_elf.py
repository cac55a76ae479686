"""Issue 25, finding 3: a truncated kernel ELF inside an `.om` killed the caller with SIGBUS even
under process isolation (dlopen maps the file in the caller's process). Every shared object of
a model is now checked as ELF before anything is loaded (opbuild/om/elf_check.py)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opbuild.om import elf_check
from opbuild.om.errors import OmError

SO = Path(elf_check.__file__).resolve().parents[1] / "runtime" / "libopbuild_acl.so"
"""A real shared object of this host (built with the project)."""


@pytest.fixture(scope="module")
def so_bytes() -> bytes:
    return SO.read_bytes()


def test_a_real_shared_object_passes(so_bytes):
    assert elf_check.elf_problem(so_bytes) is None


@pytest.mark.parametrize("keep", [0.0001, 0.02, 0.5, 0.9, 0.999])
def test_truncated(so_bytes, keep):
    assert elf_check.elf_problem(so_bytes[:int(len(so_bytes) * keep)]) is not None


def _patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


@pytest.mark.parametrize("offset, fmt, value, message", [
    (0, "<I", 0x464C457E, "no ELF magic"),
    (4, "<B", 1, "ELF class 1"),
    (5, "<B", 2, "ELF byte order 2"),
    (16, "<H", 2, "e_type 2, a shared object is ET_DYN"),
    (18, "<H", 40, "e_machine 40"),
    (32, "<Q", 1 << 40, "program headers at"),
    (40, "<Q", 1 << 40, "section headers at"),
    (56, "<H", 0xFFFF, "program headers at 64 do not fit"),
])
def test_header_fields(so_bytes, offset, fmt, value, message):
    problem = elf_check.elf_problem(_patched(so_bytes, offset, fmt, value))
    assert problem is not None and message in problem


def test_check_names_the_item(so_bytes):
    with pytest.raises(OmError, match=r"^TBE_KERNELS: item pkg:K: not a loadable shared object of this host: "
                                      r"no ELF magic"):
        elf_check.check_elf(b"\0" * 100, "TBE_KERNELS", "pkg:K")


@pytest.fixture(scope="module")
def truncated_om(opp) -> bytes:
    from omtools import build, edit_kernels, model_dict

    return edit_kernels(build(opp, model_dict("trunc", [16, 1024], ops=1)), lambda name, b: b[:len(b) // 2])


def test_truncated_kernel_refused_before_dlopen(truncated_om):
    from opbuild.om.loader import load_om

    with pytest.raises(OmError, match=r"TBE_KERNELS: item customize:MulCustom_FP32: not a loadable shared object "
                                      r"of this host: program header \d+ \(type 1\) maps bytes \d+\.\.\d+, past the "
                                      r"end of the file"):
        load_om(truncated_om, trust=True)


@pytest.mark.parametrize("isolation", ["in-process", "process"])
def test_truncated_kernel_cli(truncated_om, tmp_path, isolation):
    """The reproducer: before, the process died of SIGBUS (exit -7) in both modes."""
    (tmp_path / "m.om").write_bytes(truncated_om)
    np.save(tmp_path / "x.npy", np.ones((16, 1024), np.float32))
    r = subprocess.run([sys.executable, "-m", "opbuild", "om", "run", "m.om", "-i", "x=x.npy", "-i", "y=x.npy",
                        "--output-dir", "o", "--trust"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OPBUILD_ISOLATION=isolation))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and "TBE_KERNELS: item customize:MulCustom_FP32: not a loadable" in r.stderr
