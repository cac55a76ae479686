"""Fixtures: every sample op compiled once per session (all with -Wall -Wextra -Werror).

`build` compiles the five ops under ops/ with the harness's hand-written header, launch shim and
macros (the contract, independent of opbuild's generator); `runner(op)` runs an op's tiling and
binaries on the backend of the test: "threads" (tests/ops_c/block_runner.c) and, when the native
simulator is built, "sim" (opbuild.runtime.device).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .harness import OPS_DIR, Build, OpRunner, build_ops, sim_available

SAMPLE_OPS = ("add_custom_template", "mul_custom", "leaky_relu_custom", "add_n_custom", "reduce_sum_custom")
BACKENDS = ["threads", pytest.param("sim", marks=pytest.mark.skipif(not sim_available(),
                                                                   reason="device simulator not built"))]


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    return build_ops([OPS_DIR / op for op in SAMPLE_OPS], tmp_path_factory.mktemp("ops_c_build"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def runner(build: Build, backend: str) -> Callable[[str], OpRunner]:
    cache: dict[str, OpRunner] = {}

    def get(op: str) -> OpRunner:
        if op not in cache:
            cache[op] = OpRunner(build, op, backend)
        return cache[op]

    return get


@pytest.fixture
def tiling(build: Build) -> Callable[[str], OpRunner]:
    """For tiling-only tests (no launch): one backend is enough."""
    return lambda op: OpRunner(build, op)

