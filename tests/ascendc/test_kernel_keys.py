"""Tiling keys read from a preprocessed kernel (opbuild/ascendc/kernel_keys.py), with the real
preprocessor and a stand-in header: the scan knows nothing of kernel_operator.h's internals."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from opbuild.ascendc.kernel_keys import PROBE, key_branches, tiling_keys

CXX = shutil.which("c++") or shutil.which("g++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler")

HEADER = "#define TILING_KEY_IS(k) (opbuild_kernel_state_.tiling_key == (uint64_t)(k))\n"


def _scan(tmp_path, kernel: str, header: str = HEADER):
    (tmp_path / "hdr.h").write_text(header)
    src = tmp_path / "k.cpp"
    src.write_text('#include "hdr.h"\n' + kernel)
    unit = tmp_path / "unit.cpp"
    unit.write_text(f'#include "{src}"\n{PROBE}')
    out = subprocess.run([CXX, "-E", "-x", "c++", str(unit)], capture_output=True, text=True, check=True).stdout
    return key_branches(out, str(src))


def test_macro_named_keys_count_as_their_values(tmp_path):
    branches = _scan(tmp_path, "#define K1 1\n#define K2 (K1 + 1)\nvoid f() {\n"
                               "  if (TILING_KEY_IS(K1)) {}\n  else if (TILING_KEY_IS(K2)) {}\n"
                               "  else if (TILING_KEY_IS(0x10u)) {}\n}\n")
    assert [(b.line, b.key) for b in branches] == [(5, 1), (6, 2), (7, 16)]
    assert tiling_keys(branches) == (1, 2, 16)


def test_a_non_constant_key_has_no_value(tmp_path):
    branches = _scan(tmp_path, "constexpr int KA = 3;\nvoid f() { if (TILING_KEY_IS(KA)) {} }\n")
    assert [(b.text, b.key) for b in branches] == [("KA", None)]


def test_no_branch_is_key_zero(tmp_path):
    assert tiling_keys(_scan(tmp_path, "void f() {}\n")) == (0,)


def test_the_header_shape_does_not_matter(tmp_path):
    other = "#define TILING_KEY_IS(k) my_ns::is_key<0>(static_cast<unsigned long>(k), 1)\n"
    branches = _scan(tmp_path, "void f() { if (TILING_KEY_IS(7)) {} }\n", other)
    assert [b.key for b in branches] == [7]


def test_an_undefined_macro_is_reported(tmp_path):
    with pytest.raises(ValueError, match="not defined"):
        _scan(tmp_path, "void f() {}\n", header="\n")
