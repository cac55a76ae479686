"""Fixtures of the Ascend C tests.

Kernel tests: ackit.py (importable from here) builds kernel .so files from Ascend C sources with
kernel_operator.h and a hand-written launch shim (what the build's generated shim does), and runs
them on the device simulator. Host tests: the in-house lookalike op_host sources (host_sources/)
and one tiling library built from them, each op's host blob built the way the build builds it
and the blobs linked together."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from opbuild.ascendc import host

SOURCES = Path(__file__).parent / "host_sources"

OPS = {
    # op type: (snake name, host sources)
    "VecAddCustom": ("vec_add_custom", ["vec_add.cpp"]),
    "LeakyCustom": ("leaky_custom", ["leaky.cpp"]),
    "SumListCustom": ("sum_list_custom", ["sum_list.cpp"]),
    "ReduceSumCustom": ("reduce_sum_custom", ["reduce_sum.cpp"]),
    "PlainStructCustom": ("plain_struct_custom", ["plain_struct.cpp"]),
    "NoShapeCustom": ("no_shape_custom", ["no_shape.cpp"]),
}


def sources(op: str) -> list[Path]:
    return [SOURCES / s for s in OPS[op][1]]


@pytest.fixture(scope="session")
def host_blobs(tmp_path_factory) -> dict[str, Path]:
    """op type -> its host blob (host.build_blob)."""
    work = tmp_path_factory.mktemp("ascendc_host")
    return {op: host.build_blob(sources(op), snake, op, work / snake) for op, (snake, _) in OPS.items()}


@pytest.fixture(scope="session")
def host_library(host_blobs) -> Path:
    """libhost.so: the lookalike ops' blobs in one shared library (VecAddCustom and
    LeakyCustom both define optiling::TilingData, with different layouts)."""
    first = next(iter(host_blobs.values()))
    return host.link_shared(list(host_blobs.values()), first.parent.parent / "libhost.so")


@pytest.fixture(scope="session")
def host_lib(host_library) -> ctypes.CDLL:
    return ctypes.CDLL(str(host_library), mode=ctypes.RTLD_LOCAL)


@pytest.fixture(scope="session")
def descriptions(host_library):
    """op type -> HostDescription, read from the shared library."""
    return {op: host.describe_library(host_library, snake, [str(s) for s in sources(op)])
            for op, (snake, _) in OPS.items()}
