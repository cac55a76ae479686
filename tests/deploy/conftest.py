"""A small vendor package laid out like a built one (config, version.info, a tiling library
that is a real shared object of this machine, the liboptiling.so symlink), made in a second:
what the installer tests install. `make_package(root, marker)` writes root/customize."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import sys

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_package import TILING_LIB  # noqa: E402
CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


@pytest.fixture(scope="session")
def shared_object(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real .so of this machine (built by the C compiler), needing some GLIBC version."""
    if CC is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("so") / "lib.so"
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(out), "-x", "c", "-"], check=True, capture_output=True,
                   input=b"#include <stdio.h>\nint opbuild_test_f(const char *s) { return puts(s); }\n")
    return out.read_bytes()


@pytest.fixture
def make_package(shared_object: bytes) -> Callable[..., Path]:
    def make(root: Path, marker: str, so: bytes | None = None) -> Path:
        pkg = root / "customize"
        config = pkg / "op_impl/ai_core/tbe/kernel/config/ascend910b"
        config.mkdir(parents=True)
        (config / "binary_info_config.json").write_text("{}\n")
        (pkg / "version.info").write_text(f"custom_opp_compiler_version={marker}\n")
        lib = pkg / TILING_LIB
        lib.parent.mkdir(parents=True)
        lib.write_bytes(shared_object if so is None else so)
        lib.chmod(0o755)
        os.symlink("lib/linux/x86_64/libcust_opmaster_rt2.0.so", pkg / "op_impl/ai_core/tbe/op_tiling/liboptiling.so")
        return pkg
    return make
