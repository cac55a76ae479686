"""Fixtures of the runtime tests.

The five sample ops are built once per session in a temporary project (pkgbuild.py) into two
packages: `sample_opp` is the OPP root (out/opp), `package` the custom vendor package
(vendors/customize: AddCustomTemplate, AddNCustom, MulCustom) and `builtin_package` the built-in
one (MulCustom, ReduceSumCustom, LeakyReluCustom). `ops` and `builtin_ops` are their generated
Python aclnn modules; `ops_for(op)` / `package_for(op)` give the module / package of the package
holding an op (the custom one when both do). `package_copy` / `builtin_copy`: a private copy of
a built package to corrupt. `probe_package`: a small op made with `opbuild new` whose tiling
misbehaves on request (see PROBE_MODES), built once per session in its own temporary project.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pkgbuild  # noqa: E402

import opbuild.runtime as rt  # noqa: E402
from opbuild.runtime import device, settings  # noqa: E402
from opbuild.runtime.call import executor  # noqa: E402

PROBE_MODES = {
    -1.0: "tiling sets block_dim 0",
    -2.0: "tiling declares more tiling data than the buffer (and its struct) holds",
    -3.0: "tiling asks for a 4096-byte workspace",
    -4.0: "tiling gives blocks that cannot cover the tensor: the kernel fails",
    -5.0: "tiling fails with a message",
    -6.0: "tiling sets block_dim 2^31-1",
    -7.0: "tiling sets a negative workspace size ((uint64_t)-4096)",
    -8.0: "tiling sets an absurd workspace size (2^50 bytes)",
    -9.0: "tiling writes 8 bytes past its tiling data struct",
    -10.0: "the kernel writes through a NULL pointer (SIGSEGV)",
    -11.0: "the kernel loops forever",
    -12.0: "the kernel calls abort() (SIGABRT)",
    -13.0: "the kernel recurses without end (stack overflow, SIGSEGV)",
    -14.0: "the kernel writes one element past the end of its output y",
    -15.0: "the kernel reads the element before the start of its input x",
    -16.0: "tiling asks for a 4096-byte workspace; the kernel writes 8 bytes at its offset 4096",
    -17.0: "the kernel reads the byte after its tiling argument (tiling data, then the 8-byte tiling key)",
    -18.0: "the kernel calls exit(3)",
    -19.0: "the kernel calls _exit(0) (no output written)",
    -20.0: "the kernel waits until a second launch of it runs at the same time (a rendezvous in shared memory)",
    -21.0: "the kernel forks a child that sleeps forever and writes the child's pid to y[0]",
    -22.0: "the kernel starts a thread that sleeps forever (and writes no output)",
    -23.0: "the kernel writes its process id (getpid()) to y[0]",
    -24.0: "the kernel sets a SIGSEGV handler that calls _exit(0), then computes y as usual",
    -25.0: "the kernel forks a child that forks a grandchild sleeping forever and exits; the kernel waits for "
           "the child and writes the grandchild's pid to y[0]",
    -26.0: "the kernel sends its process SIGUSR1 (blocked in an isolated worker: left pending), then computes y",
}
"""ProbeCustom's `scale` attribute values that make its tiling misbehave."""

_PROBE_TILING_ANCHOR = "    tiling_set_workspace_size(ctx, 0);\n    return OPBUILD_GRAPH_SUCCESS;\n"
_PROBE_TILING_MODES = """    tiling_set_workspace_size(ctx, 0);
    if (td->scale == -1.0f) tiling_set_block_dim(ctx, 0);
    if (td->scale == -2.0f) ctx->tiling_data_size = ctx->tiling_data_capacity + 64;
    if (td->scale == -3.0f) tiling_set_workspace_size(ctx, 4096);
    if (td->scale == -4.0f) td->block_length = 1;
    if (td->scale == -5.0f) return tiling_fail(ctx, "ProbeCustom: scale -5 asks this tiling to fail");
    if (td->scale == -6.0f) tiling_set_block_dim(ctx, 0x7fffffffu);
    if (td->scale == -7.0f) tiling_set_workspace_size(ctx, (uint64_t)-4096);
    if (td->scale == -8.0f) tiling_set_workspace_size(ctx, 1ull << 50);
    if (td->scale == -16.0f) tiling_set_workspace_size(ctx, 4096);
    if (td->scale == -9.0f)
        for (unsigned i = 0; i < 8; ++i) ((volatile unsigned char *)(td + 1))[i] = 0x5a;
    return OPBUILD_GRAPH_SUCCESS;
"""

_PROBE_INCLUDES = """#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
"""
_PROBE_RECURSE = """static int probe_recurse(int depth) {
    volatile char pad[4096];
    pad[depth % 4096] = (char)depth;
    return probe_recurse(depth + 1) + pad[depth % 4096];
}
static _Atomic unsigned probe_arrivals;
static void probe_rendezvous(void) { /* launches meet in pairs: the 2k-1st waits for the 2k-th */
    unsigned n = atomic_fetch_add(&probe_arrivals, 1) + 1, pair_end = (n + 1) / 2 * 2;
    while (atomic_load(&probe_arrivals) < pair_end) sched_yield();
}
static void probe_quiet_exit(int sig) { _exit(sig - sig); }
static pid_t probe_grandchild(void) { /* a grandchild left by a child that ended (and was waited for) */
    int fds[2];
    pid_t grandchild = 0;
    if (pipe(fds) != 0) return 0;
    pid_t child = fork();
    if (child == 0) {
        pid_t g = fork();
        if (g == 0)
            for (;;) pause();
        _exit(write(fds[1], &g, sizeof g) == (ssize_t)sizeof g ? 0 : 1);
    }
    if (child > 0) {
        waitpid(child, NULL, 0);
        if (read(fds[0], &grandchild, sizeof grandchild) != (ssize_t)sizeof grandchild) grandchild = 0;
    }
    close(fds[0]);
    close(fds[1]);
    return grandchild;
}
static void *probe_sleeper(void *unused) {
    (void)unused;
    for (;;) pause();
    return NULL;
}
"""
_PROBE_KERNEL_ANCHOR = "    const float scale = td.scale;\n"
_PROBE_KERNEL_MODES = """    const float scale = td.scale;
    if (scale == -10.0f) {
        int *volatile nowhere = 0;
        *nowhere = 1;
    }
    if (scale == -11.0f)
        for (volatile int spin = 1; spin;) {
        }
    if (scale == -12.0f) abort();
    if (scale == -13.0f) yp[begin] = (DTYPE_Y)probe_recurse(1);
    if (scale == -14.0f && GetBlockIdx() == 0) ((volatile DTYPE_Y *)yp)[td.total_length] = yp[0];
    if (scale == -15.0f) yp[begin] = ((const volatile DTYPE_X *)xp)[-1];
    if (scale == -16.0f) ((volatile uint64_t *)workspace)[4096 / 8] = 1;
    if (scale == -17.0f) yp[begin] = ((const volatile uint8_t *)tiling)[(sizeof td + 7) / 8 * 8 + 8];
    if (scale == -18.0f) exit(3);
    if (scale == -19.0f) _exit(0);
    if (scale == -20.0f) probe_rendezvous();
    if (scale == -21.0f) {
        pid_t child = fork();
        if (child == 0)
            for (;;) pause();
        if (GetBlockIdx() == 0) yp[0] = (DTYPE_Y)child;
        return;
    }
    if (scale == -22.0f) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, probe_sleeper, NULL) == 0) pthread_detach(thread);
        return;
    }
    if (scale == -23.0f) {
        if (GetBlockIdx() == 0) yp[0] = (DTYPE_Y)getpid();
        return;
    }
    if (scale == -24.0f) signal(SIGSEGV, probe_quiet_exit);
    if (scale == -26.0f && GetBlockIdx() == 0) kill(getpid(), SIGUSR1);
    if (scale == -25.0f) {
        if (GetBlockIdx() == 0) yp[0] = (DTYPE_Y)probe_grandchild();
        return;
    }
"""


@pytest.fixture(scope="session")
def sample_opp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OPP root (out/opp of a temporary project) of the built sample ops."""
    try:
        return pkgbuild.sample_opp(tmp_path_factory.getbasetemp())
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def package(sample_opp: Path) -> Path:
    """The custom vendor package of the sample build (out/opp/vendors/customize)."""
    return sample_opp / pkgbuild.PACKAGE_DIRS[pkgbuild.CUSTOM]


@pytest.fixture(scope="session")
def builtin_package(sample_opp: Path) -> Path:
    """The built-in package of the sample build (out/opp/built-in)."""
    return sample_opp / pkgbuild.PACKAGE_DIRS[pkgbuild.BUILTIN]


@pytest.fixture(scope="session")
def ops(package: Path):
    """The generated Python aclnn module of the custom sample package."""
    return rt.import_ops(package)


@pytest.fixture(scope="session")
def builtin_ops(builtin_package: Path):
    """The generated Python aclnn module of the built-in sample package."""
    return rt.import_ops(builtin_package)


@pytest.fixture(scope="session")
def package_for(package: Path, builtin_package: Path):
    """package_for(op, kind=None): the package holding a sample op (the custom one when both do),
    or the package of the given kind (pkgbuild.CUSTOM / pkgbuild.BUILTIN)."""
    roots = {pkgbuild.CUSTOM: package, pkgbuild.BUILTIN: builtin_package}

    def get(op: str, kind: str | None = None) -> Path:
        kinds = pkgbuild.SAMPLE_OP_PACKAGES[op]
        assert kind is None or kind in kinds, f"{op} is not in the {kind} package"
        return roots[kind or kinds[0]]

    return get


@pytest.fixture(scope="session")
def ops_for(package_for):
    """ops_for(op, kind=None): the generated Python aclnn module of package_for(op, kind)."""
    return lambda op, kind=None: rt.import_ops(package_for(op, kind))


@pytest.fixture
def package_copy(package: Path, tmp_path: Path) -> Path:
    """A private copy of the built custom sample package (to corrupt), at tmp_path/customize."""
    dst = tmp_path / "customize"
    shutil.copytree(package, dst, symlinks=True)
    return dst


@pytest.fixture
def builtin_copy(builtin_package: Path, tmp_path: Path) -> Path:
    """A private copy of the built built-in sample package (to corrupt), at tmp_path/built-in."""
    dst = tmp_path / "built-in"
    shutil.copytree(builtin_package, dst, symlinks=True)
    return dst


@pytest.fixture(scope="session")
def probe_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ProbeCustom (`opbuild new ProbeCustom`, y = scale * x) with the PROBE_MODES tiling hooks."""
    return build_probe_package(tmp_path_factory.mktemp("probe_project"))


@pytest.fixture(scope="session")
def probe_builder():
    """build_probe_package, for tests that build a variant of ProbeCustom (env set around it)."""
    return build_probe_package


def build_probe_package(where: Path, tiling_edit=None) -> Path:
    """Make and build the ProbeCustom project in `where` (a new directory); its package.
    `tiling_edit(text) -> text`: a change to its tiling.c (after the PROBE_MODES hooks)."""
    from opbuild.codegen.scaffold import scaffold_op

    root = pkgbuild.new_project(where, ops=())
    op_dir = scaffold_op("ProbeCustom", root / "ops")
    tiling = op_dir / "tiling.c"
    text = tiling.read_text()
    assert _PROBE_TILING_ANCHOR in text, "the scaffold's tiling.c changed; update _PROBE_TILING_ANCHOR"
    text = text.replace(_PROBE_TILING_ANCHOR, _PROBE_TILING_MODES)
    tiling.write_text(tiling_edit(text) if tiling_edit is not None else text)
    kernel = op_dir / "kernel.c"
    text = kernel.read_text()
    assert _PROBE_KERNEL_ANCHOR in text, "the scaffold's kernel.c changed; update _PROBE_KERNEL_ANCHOR"
    kernel.write_text(_PROBE_INCLUDES + _PROBE_RECURSE + text.replace(_PROBE_KERNEL_ANCHOR, _PROBE_KERNEL_MODES))
    try:
        return pkgbuild.build_project(root)
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(autouse=True)
def _fresh_runtime_state():
    """Every test starts with default settings and an empty parameter cache on its thread."""
    settings.set_deterministic(False)
    settings.set_impl_mode("high_performance")
    rt.clear_op_cache()
    yield
    settings.set_deterministic(False)
    settings.set_impl_mode("high_performance")
    rt.clear_op_cache()


@pytest.fixture
def sim_threads():
    """Set the simulator's thread count for a test; restored to the default afterwards."""
    yield device.set_threads
    device.set_threads(0)


@pytest.fixture
def cache_capacity():
    """set(n): bound the plan tables by n plans for this test (plan_cache.set_capacity), restored after."""
    from opbuild.runtime.call import plan_cache

    old = plan_cache.capacity()
    yield plan_cache.set_capacity
    plan_cache.set_capacity(old)
