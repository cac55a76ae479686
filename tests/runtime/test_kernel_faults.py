"""Buggy kernels (issue 13). Default (in-process) mode: a crash names op, binary and block on
stderr before the process dies, Ctrl-C interrupts an endless kernel (each case in a child
process). OPBUILD_ISOLATION=process: each crash, hang (OPBUILD_KERNEL_TIMEOUT) or abort is an
AclnnError 361001 / the C ABI's status naming the block and the signal, and the caller's next call
works (Python one-shot and two-phase calls in this process, the C ABI in a program).
OPBUILD_MEMCHECK=1: each out-of-bounds access is named by buffer, offset and access size.
The buggy kernels are ProbeCustom's PROBE_MODES (conftest.py)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import opbuild.runtime as rt
import pkgbuild
from opbuild.runtime import device

HERE = Path(__file__).resolve().parent

_CHILD = """
import sys
import numpy as np
import opbuild.runtime as rt
probe = rt.import_ops(sys.argv[1])
x = np.ones(int(sys.argv[3]), np.float32)
probe.probe_custom(x, scale=float(sys.argv[2]))
print("survived")
"""


def _run_child(probe_package: Path, scale: float, n: int = 16, threads: str = "2") -> subprocess.CompletedProcess:
    env = {**__import__("os").environ, "OPBUILD_SIM_THREADS": threads, "PYTHONFAULTHANDLER": ""}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(_CHILD), str(probe_package), str(scale), str(n)],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("scale,sig,what", [
    (-10.0, signal.SIGSEGV, "SIGSEGV (invalid memory access) at address 0x0"),
    (-12.0, signal.SIGABRT, "SIGABRT (abort)"),
    (-13.0, signal.SIGSEGV, "SIGSEGV (invalid memory access) at address 0x"),
])
def test_kernel_crash_names_op_binary_and_block(probe_package, scale, sig, what):
    r = _run_child(probe_package, scale)
    assert r.returncode == -sig, (r.returncode, r.stderr)
    assert "survived" not in r.stdout
    lines = [line for line in r.stderr.splitlines() if line.startswith("opbuild: kernel crashed:")]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("opbuild: kernel crashed: op ProbeCustom, binary ProbeCustom_FP32 (")
    assert f"ProbeCustom_FP32.so), block 0 of 1: {what}" in lines[0], lines[0]


def test_kernel_crash_in_a_pool_worker(probe_package):
    """Many blocks on the thread pool: the line names the block of the thread that crashed."""
    r = _run_child(probe_package, -10.0, n=1 << 20, threads="4")
    assert r.returncode == -signal.SIGSEGV, r.stderr
    line = next(line for line in r.stderr.splitlines() if line.startswith("opbuild: kernel crashed:"))
    assert "op ProbeCustom, binary ProbeCustom_FP32" in line and " of 40: SIGSEGV" in line, line


_ENDLESS = """
import sys
import numpy as np
import opbuild.runtime as rt
probe = rt.import_ops(sys.argv[1])
x = np.ones(int(sys.argv[2]), np.float32)
mode = sys.argv[3]
print("launching", flush=True)
try:
    if mode == "stream":
        s = rt.Stream()
        y = np.empty_like(x)
        size, ex = probe.aclnnProbeCustomGetWorkspaceSize(x, -11.0, y)
        probe.aclnnProbeCustom(None, size, ex, s)
        s.synchronize()
    else:
        probe.probe_custom(x, scale=-11.0)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    raise
"""


@pytest.mark.parametrize("n,mode,isolation", [(16, "sync", ""), (1 << 20, "sync", ""), (16, "stream", ""),
                                              (16, "sync", "process")],
                         ids=["one-block", "pool", "stream-synchronize", "isolated-worker"])
def test_ctrl_c_interrupts_an_endless_kernel(probe_package, n, mode, isolation):
    """SIGINT to a child stuck in an endless kernel: it exits with KeyboardInterrupt (no timing
    assertion beyond the subprocess timeout). In isolation mode the worker is killed."""
    env = {**os.environ, "OPBUILD_SIM_THREADS": "2", "OPBUILD_ISOLATION": isolation}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_ENDLESS), str(probe_package), str(n), mode],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline() == "launching\n"
        import time

        time.sleep(0.5)  # let it enter the kernel (not asserted: an earlier SIGINT is a KeyboardInterrupt too)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "KeyboardInterrupt" in out, (out, err)
    assert err.rstrip().endswith("KeyboardInterrupt"), err
    assert child.returncode != 0


# ---- OPBUILD_ISOLATION=process ------------------------------------------------------------------

_WORKER_DIED = r"; the isolated worker \(pid \d+\) died of it"
ISOLATED_CASES = {
    -10.0: r"block 0 of 1: SIGSEGV \(invalid memory access\) at address 0x0" + _WORKER_DIED,
    -11.0: r"block 0 of 1: still running after OPBUILD_KERNEL_TIMEOUT=1 s; the isolated worker \(pid \d+\) was killed",
    -12.0: r"block 0 of 1: SIGABRT \(abort\)" + _WORKER_DIED,
    -13.0: r"block 0 of 1: SIGSEGV \(invalid memory access\) at address 0x[0-9a-f]+ \(stack overflow\)" + _WORKER_DIED,
    -18.0: r"block 0 of 1: the kernel called exit\(3\); the isolated worker \(pid \d+\) ended without running the "
           r"caller's exit handlers",
    -19.0: r"block 0 of 1: the isolated worker \(pid \d+\) ended with status 0 before the launch finished \(_exit\(\) "
           r"or the exit system call in the kernel\)",
    -22.0: r"block 0 of 1: the kernel tried to start a thread \(clone with CLONE_THREAD\), which an isolated worker "
           r"refuses \(EPERM\): it runs a launch on its one thread",
}
"""What each crashing or endless PROBE_MODES kernel gives in isolation mode (after
'ProbeCustom: kernel ProbeCustom_FP32 failed: ', before ' [kernel <path>]')."""

_FAILED = r"ProbeCustom: kernel ProbeCustom_FP32 failed: "


@pytest.fixture
def isolated():
    """Launches of this test run in a worker process, killed after 1 s."""
    device.set_isolation("process", 1)
    yield
    device.set_isolation()


def _ok(probe, x: np.ndarray) -> None:
    """The caller's next call works."""
    np.testing.assert_array_equal(probe.probe_custom(x, scale=2.0), 2 * x)


@pytest.mark.parametrize("scale", sorted(ISOLATED_CASES, reverse=True), ids=lambda s: f"scale{s:g}")
def test_isolated_kernel_fault_is_an_aclnn_error(probe_package, isolated, scale):
    """One-shot call, then the two-phase call twice (the second a cache hit of the C fast path):
    each 361001 naming op, binary, block and signal; every next call works."""
    probe = rt.import_ops(probe_package)
    x = np.arange(16, dtype=np.float32)
    expected = _FAILED + ISOLATED_CASES[scale] + r" \[kernel .*ProbeCustom_FP32\.so\]"
    with pytest.raises(rt.AclnnError) as exc:
        probe.probe_custom(x, scale=scale)
    assert exc.value.status == 361001
    assert re.fullmatch(expected, exc.value.message), exc.value.message
    _ok(probe, x)
    for _ in range(2):
        y = np.empty_like(x)
        size, executor = probe.aclnnProbeCustomGetWorkspaceSize(x, scale, y)
        with pytest.raises(rt.AclnnError) as exc:
            probe.aclnnProbeCustom(None, size, executor, None)
        assert exc.value.status == 361001 and re.fullmatch(expected, exc.value.message), exc.value.message
        _ok(probe, x)


def test_isolated_launches_compute_in_shared_memory(probe_package, isolated, sim_threads):
    """Results written by the worker are the caller's (no copies): many blocks, a created stream."""
    sim_threads(2)
    probe = rt.import_ops(probe_package)
    x = np.linspace(-1, 1, 1 << 16, dtype=np.float32)
    np.testing.assert_array_equal(probe.probe_custom(x, scale=3.0), 3 * x)
    stream = rt.Stream()
    y = np.empty_like(x)
    size, executor = probe.aclnnProbeCustomGetWorkspaceSize(x, 0.5, y)
    probe.aclnnProbeCustom(None, size, executor, stream)
    stream.synchronize()
    np.testing.assert_array_equal(y, 0.5 * x)


def test_isolation_settings_are_checked():
    with pytest.raises(device.DeviceError, match="OPBUILD_ISOLATION='thread' is neither 'process' nor 'in-process'"):
        device.set_isolation("thread")
    with pytest.raises(device.DeviceError, match="OPBUILD_KERNEL_TIMEOUT needs OPBUILD_ISOLATION=process"):
        device.set_isolation("in-process", 2)
    with pytest.raises(device.DeviceError, match=r"OPBUILD_KERNEL_TIMEOUT='-1' is not a number of seconds"):
        device.set_isolation("process", -1)
    with pytest.raises(device.DeviceError, match="OPBUILD_MEMCHECK='yes' is neither 1 nor 0"):
        device.set_isolation(memcheck="yes")
    if not hasattr(__import__("ctypes").CDLL(None), "__asan_init"):
        with pytest.raises(device.DeviceError, match="the AddressSanitizer runtime is not loaded; run with LD_PRELOAD="):
            device.set_isolation(memcheck=1)
    device.set_isolation()


def test_bad_isolation_setting_fails_every_launch(probe_package):
    probe = rt.import_ops(probe_package)
    with pytest.raises(device.DeviceError):
        device.set_isolation("thread")
    try:
        with pytest.raises(rt.AclnnError, match="OPBUILD_ISOLATION='thread'") as exc:
            probe.probe_custom(np.ones(4, np.float32), scale=2.0)
        assert exc.value.status == 361001
    finally:
        device.set_isolation()


def _probe_faults_program(probe_package: Path, tmp_path: Path) -> Path:
    """probe_faults.c built against the probe package's op API."""
    from opbuild.abi.native_libs import app_flags

    exe = tmp_path / "probe_faults"
    cc = shutil.which(os.environ.get("CC", "cc")) or "gcc"
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", str(exe),
                    str(HERE / "probe_faults.c"), *app_flags(probe_package)], check=True)
    return exe


def test_c_abi_isolated_kernel_faults(probe_package, tmp_path):
    """The aclnn C ABI (misses and native cache hits): each fault is status 361001 with the
    message, and the next call of the program works."""
    exe = _probe_faults_program(probe_package, tmp_path)
    scales = [str(s) for scale in sorted(ISOLATED_CASES, reverse=True) for s in (scale, 2.0)]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPBUILD_ISOLATION": "process",
           "OPBUILD_KERNEL_TIMEOUT": "1"}
    if "PYTHONPATH" in os.environ:  # the embedded runtime is the one under test (a checkout not installed)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    r = subprocess.run([str(exe), "2.0", *scales], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.endswith("done\n"), r.stdout + r.stderr
    lines = r.stdout.splitlines()[:-1]
    assert lines[0] == "scale 2.0: status 0: ok (y[0] 2)"
    for scale, line, after in zip(sorted(ISOLATED_CASES, reverse=True), lines[1::2], lines[2::2]):
        expected = (rf"scale {scale}: status 361001: aclnnProbeCustom failed \(361001 ACLNN_ERR_RUNTIME_ERROR\): "
                    + _FAILED + ISOLATED_CASES[scale] + r" \[kernel .*\] \(y\[0\] 2\)")
        assert re.fullmatch(expected, line), line
        assert after == "scale 2.0: status 0: ok (y[0] 2)", after


# ---- OPBUILD_MEMCHECK=1 -------------------------------------------------------------------------

MEMCHECK_CASES = {
    -14.0: "WRITE of 4 bytes at offset 64 of output y (a 64-byte buffer: 0 bytes past its end) "
           "[AddressSanitizer: heap-buffer-overflow]",
    -15.0: "READ of 4 bytes at offset -4 of input x (a 64-byte buffer: 4 bytes before its start) "
           "[AddressSanitizer: heap-buffer-overflow]",
    -16.0: "WRITE of 8 bytes at offset 4096 of workspace (a 4096-byte buffer: 0 bytes past its end) "
           "[AddressSanitizer: heap-buffer-overflow]",
    -17.0: "READ of 1 byte at offset 32 of tiling (a 32-byte buffer: 0 bytes past its end) "
           "[AddressSanitizer: heap-buffer-overflow]",
}
"""What each out-of-bounds PROBE_MODES kernel gives under the memory checker (after
'ProbeCustom: kernel ProbeCustom_FP32 failed: block 0: memcheck: '); the source line of the access
comes between the access and the [AddressSanitizer: ...] part (`_with_source_line`)."""

_SOURCE_LINE = r" at (ops/[a-z_]+/(?:kernel|compute)\.c):(\d+) \((\w+)\)"
"""How a memcheck report names the kernel source line of the bad access (the instrumented build
has debug info)."""


def _with_source_line(message: str, case: str, project: Path, marker: str) -> None:
    """`message` holds `case` with the source line inserted before its [AddressSanitizer: ...]
    part, and that line of the project's source is the planted access (it holds `marker`)."""
    access, _, asan = case.rpartition(" [AddressSanitizer: ")
    m = re.search(re.escape(access) + _SOURCE_LINE + re.escape(" [AddressSanitizer: " + asan), message)
    assert m, message
    line = (project / m.group(1)).read_text().splitlines()[int(m.group(2)) - 1]
    assert marker in line, (message, line)

_MEMCHECK_CHILD = """
import sys
import numpy as np
import opbuild.runtime as rt
from opbuild.runtime import device
probe = rt.import_ops(sys.argv[1])
x = np.ones(16, np.float32)
for arg in sys.argv[2:]:
    isolation, scale = arg.split(":")
    device.set_isolation(isolation, 1 if isolation == "process" else "")
    try:
        probe.probe_custom(x, scale=float(scale))
        print(arg, "ok", flush=True)
    except rt.AclnnError as exc:
        print(arg, exc.status, exc.message, flush=True)
    assert (probe.probe_custom(x, scale=2.0) == 2).all()
print("done")
"""


def _libasan() -> str:
    cc = shutil.which(os.environ.get("CC", "cc")) or "gcc"
    path = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        pytest.skip(f"no AddressSanitizer runtime ({cc} -print-file-name=libasan.so)")
    return path


@pytest.fixture(scope="module")
def memcheck_probe(tmp_path_factory: pytest.TempPathFactory, probe_builder) -> Path:
    """ProbeCustom built with OPBUILD_MEMCHECK=1 (kernels instrumented by AddressSanitizer)."""
    _libasan()
    saved = os.environ.get("OPBUILD_MEMCHECK")
    os.environ["OPBUILD_MEMCHECK"] = "1"
    try:
        return probe_builder(tmp_path_factory.mktemp("memcheck_probe"))
    finally:
        if saved is None:
            del os.environ["OPBUILD_MEMCHECK"]
        else:
            os.environ["OPBUILD_MEMCHECK"] = saved


@pytest.mark.slow
def test_memcheck_names_buffer_offset_and_size(memcheck_probe):
    """Under LD_PRELOAD=libasan + OPBUILD_MEMCHECK=1 each out-of-bounds access is a 361001 naming
    the buffer, the offset and the access size, in-process and in the isolated worker (where the
    crashing kernels are still reported as such); every next call works."""
    cases = [("in-process", scale) for scale in sorted(MEMCHECK_CASES, reverse=True)]
    cases += [("process", scale) for scale in sorted({**MEMCHECK_CASES, **ISOLATED_CASES}, reverse=True)]
    env = {**os.environ, "LD_PRELOAD": _libasan(), "ASAN_OPTIONS": "halt_on_error=0:suppress_equal_pcs=0:detect_leaks=0",
           "OPBUILD_MEMCHECK": "1", "PYTHONMALLOC": "malloc"}
    r = subprocess.run([sys.executable, "-c", _MEMCHECK_CHILD, str(memcheck_probe),
                        *(f"{isolation}:{scale}" for isolation, scale in cases)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.endswith("done\n"), r.stdout + r.stderr[-3000:]
    got = dict(line.split(" ", 1) for line in r.stdout.splitlines()[:-1])
    assert len(got) == len(cases)
    for isolation, scale in cases:
        status, message = got[f"{isolation}:{scale}"].split(" ", 1)
        assert status == "361001", (isolation, scale, status, message)
        if scale in MEMCHECK_CASES:
            assert message.startswith(_FAILED + "block 0: memcheck: "), message
            _with_source_line(message, MEMCHECK_CASES[scale], memcheck_probe.parents[len(pkgbuild.VENDOR.parts) - 1],
                              f"scale == {scale}f")
            assert " [kernel " in message, message
        else:
            assert re.fullmatch(_FAILED + ISOLATED_CASES[scale] + r" \[kernel .*\]", message), message
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in r.stderr  # its own report too


@pytest.mark.slow
def test_memcheck_kernel_needs_the_sanitizer_runtime(memcheck_probe):
    """An instrumented kernel in a process without the ASan runtime: refused (dlopen would abort)."""
    if hasattr(__import__("ctypes").CDLL(None), "__asan_init"):
        pytest.skip("this process has the AddressSanitizer runtime")
    probe = rt.import_ops(memcheck_probe)
    with pytest.raises(rt.AclnnError, match=r"built with the memory checker \(AddressSanitizer\), whose runtime is "
                                            r"not loaded: run with LD_PRELOAD="):
        probe.probe_custom(np.ones(4, np.float32), scale=2.0)


def test_memcheck_build_flags(monkeypatch):
    from opbuild.builder.toolchain import MEMCHECK_FLAGS, HostToolchain, ToolchainError

    monkeypatch.setenv("OPBUILD_MEMCHECK", "1")
    command = HostToolchain().kernel_command(["k.c"], "k.so", {}, [])
    assert all(flag in command for flag in MEMCHECK_FLAGS)
    monkeypatch.setenv("OPBUILD_MEMCHECK", "0")
    assert "-fsanitize=address" not in HostToolchain().kernel_command(["k.c"], "k.so", {}, [])
    monkeypatch.setenv("OPBUILD_MEMCHECK", "on")
    with pytest.raises(ToolchainError, match="OPBUILD_MEMCHECK='on' is neither 1 nor 0"):
        HostToolchain()


# ---- what isolation contains (issue 25) ---------------------------------------------------------

_EXIT_CHILD = """
import ctypes, os, sys
import numpy as np
import opbuild.runtime as rt
from opbuild.runtime import device
probe = rt.import_ops(sys.argv[1])
device.set_isolation("process", 5)
libc = ctypes.CDLL(None)
x = np.arange(16, dtype=np.float32)
assert (probe.probe_custom(x, scale=2.0) == 2 * x).all()  # everything loaded and set up
stdio_buffer = ctypes.create_string_buffer(1 << 16)  # C stdout fully buffered (_IOFBF), whatever PYTHONUNBUFFERED
libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), stdio_buffer, 0, len(stdio_buffer))
libc.printf(b"[in the caller's stdio buffer]")  # stays in the buffer until the caller flushes it
libc.strdup.restype = ctypes.c_void_p
libc.__cxa_thread_atexit_impl.argtypes = [ctypes.c_void_p] * 3  # a thread_local destructor of this thread:
puts = ctypes.cast(libc.puts, ctypes.c_void_p)                  # puts(marker), run when this thread exits
libc.__cxa_thread_atexit_impl(puts, libc.strdup(b"[thread_local destructor]"), puts)
try:
    probe.probe_custom(x, scale=-18.0)
    os.write(1, b"no error\\n")
except rt.AclnnError as exc:
    os.write(1, f"{exc.status} {exc.message}\\n".encode())
a = np.random.default_rng(0).random((200, 200))
np.testing.assert_allclose(a @ np.eye(200), a)
assert (probe.probe_custom(x, scale=2.0) == 2 * x).all()
os.write(1, b"survived\\n")
libc.fflush(None)
"""


def test_isolated_exit_runs_none_of_the_callers_exit_handlers(probe_package):
    """A kernel calling exit(3) in the worker: the call fails naming the status, none of the
    caller's exit handlers ran in the worker (its stdio buffer is flushed and the calling thread's
    thread_local destructor runs by the caller only, at its own exit) and the caller's numpy and
    next launch work."""
    r = subprocess.run([sys.executable, "-c", _EXIT_CHILD, str(probe_package)], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "OPBUILD_SIM_THREADS": "2"})
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    first, rest = r.stdout.split("\n", 1)
    assert re.fullmatch(r"361001 " + _FAILED + ISOLATED_CASES[-18.0] + r" \[kernel .*\]", first), r.stdout
    assert rest == "survived\n[in the caller's stdio buffer][thread_local destructor]\n", r.stdout


@pytest.mark.parametrize("call", ["one-shot", "two-phase"])
def test_isolated_launches_wait_without_the_gil(probe_package, call):
    """Two threads launch the rendezvous kernel (-20: each launch waits until a second one runs at
    the same time). They meet only if a waiting launch lets the other thread call Python and
    launch: the GIL is released while an isolated launch waits, even for one small block."""
    probe = rt.import_ops(probe_package)
    x = np.arange(16, dtype=np.float32)
    device.set_isolation("process", 20)
    ready = __import__("threading").Barrier(2)
    results: list = [None, None]

    def run(i: int) -> None:
        try:
            if call == "one-shot":
                ready.wait()
                results[i] = probe.probe_custom(x, scale=-20.0)
            else:
                y = np.empty_like(x)
                size, executor = probe.aclnnProbeCustomGetWorkspaceSize(x, -20.0, y)
                ready.wait()
                probe.aclnnProbeCustom(None, size, executor, None)
                results[i] = y
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[i] = exc

    threads = [__import__("threading").Thread(target=run, args=(i,)) for i in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        device.set_isolation()
    for r in results:
        assert isinstance(r, np.ndarray), r
        np.testing.assert_array_equal(r, -20.0 * x)


def _wait_gone(pid: int) -> bool:
    """Has process `pid` ended (exited or zombie)? Waits for it through a pidfd (bounded)."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], 60)[0])
    finally:
        os.close(fd)


def test_isolated_kernel_children_end_with_the_worker(probe_package, isolated):
    """A kernel that forks a child sleeping forever (-21, the child's pid in y[0]): the launch
    works and the child is killed with the worker (it runs in the worker's process group, which
    it cannot leave); the caller's numpy (its BLAS threads: fork handlers ran in the worker) works."""
    probe = rt.import_ops(probe_package)
    a = np.random.default_rng(0).random((300, 300))
    np.testing.assert_allclose(a @ np.eye(300), a)
    y = probe.probe_custom(np.arange(16, dtype=np.float32), scale=-21.0)
    child = int(y[0])
    assert child > 0, y
    try:
        assert _wait_gone(child), f"the kernel's child {child} still runs"
    finally:
        if not _wait_gone_now(child):
            os.kill(child, signal.SIGKILL)
    np.testing.assert_allclose(a @ np.eye(300), a)
    _ok(probe, np.arange(16, dtype=np.float32))


def _wait_gone_now(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.parametrize("isolation,scale,what", [
    ("in-process", -4.0, r"block 0: ProbeCustom_FP32: 1 blocks of 1 elements cannot cover 16 elements"),
    ("process", -10.0, ISOLATED_CASES[-10.0]),
])
def test_stream_failure_names_op_binary_and_block(probe_package, isolation, scale, what):
    """A launch on a created stream fails: synchronize() raises a DeviceError naming the op, the
    binary (its path) and the block of the failing launch, not the simulator's message alone."""
    probe = rt.import_ops(probe_package)
    x = np.ones(16, np.float32)
    device.set_isolation(isolation, 2 if isolation == "process" else None)
    try:
        with rt.Stream() as stream:
            y = np.empty_like(x)
            size, executor = probe.aclnnProbeCustomGetWorkspaceSize(x, scale, y)
            probe.aclnnProbeCustom(None, size, executor, stream)
            with pytest.raises(device.DeviceError) as exc:
                stream.synchronize()
            assert exc.value.code == device.SIM_EKERNEL
            assert re.fullmatch(r"op ProbeCustom, binary ProbeCustom_FP32 \(.*/ProbeCustom_FP32\.so\): " + what,
                                str(exc.value)), str(exc.value)
            stream.synchronize()  # reported once
    finally:
        device.set_isolation()


def test_c_abi_stream_failure_names_op_binary_and_block(probe_package, tmp_path):
    """The C ABI on a created stream: the crash of an isolated launch is aclrtSynchronizeStream's
    507015 (ACL_ERROR_RT_AICORE_EXCEPTION) with a message naming the op, the binary and the block;
    the stream's next call works."""
    exe = _probe_faults_program(probe_package, tmp_path)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPBUILD_ISOLATION": "process",
           "OPBUILD_KERNEL_TIMEOUT": "2"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    r = subprocess.run([str(exe), "--stream", "2.0", "-10.0", "2.0"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.endswith("done\n"), r.stdout + r.stderr
    ok, failed, after = r.stdout.splitlines()[:3]
    assert ok == after == "scale 2.0: status 0: ok (y[0] 2)", r.stdout
    assert re.fullmatch(r"scale -10.0: status 507015: aclrtSynchronizeStream: op ProbeCustom, binary ProbeCustom_FP32 "
                        r"\(.*/ProbeCustom_FP32\.so\): " + ISOLATED_CASES[-10.0] + r" \[error 507015\] \(y\[0\] 2\)",
                        failed), failed


# ---- OPBUILD_MEMCHECK=1 on the AI CPU -----------------------------------------------------------

_AICPU_PROBE_YAML = """\
op: AicpuProbeCustom
description: y = x on the AI CPU; x[0] = -1 writes one element past y, -2 reads one before x
engine: aicpu
inputs:
  - {name: x, dtypes: [float32]}
outputs:
  - {name: y, dtypes: [float32], shape: {same_as: x}}
compute: {source: compute.c, entry: aicpu_probe_custom_compute}
"""
_AICPU_PROBE_C = """\
#include "opbuild/aicpu.h"

uint32_t aicpu_probe_custom_compute(AicpuContext *ctx) {
    const AicpuTensor *x = aicpu_input(ctx, 0);
    AicpuTensor *y = aicpu_output(ctx, 0);
    const float *in = x->data;
    float *out = y->data;
    int64_t n = aicpu_elements(x);
    for (int64_t i = 0; i < n; i++) out[i] = in[i];
    if (in[0] == -1.0f) ((volatile float *)out)[n] = 1.0f;
    if (in[0] == -2.0f) out[0] = ((const volatile float *)in)[-1];
    return AICPU_OK;
}
"""
AICPU_MEMCHECK_CASES = {
    -1.0: "WRITE of 4 bytes at offset 64 of output 0 of AicpuProbeCustom (a 64-byte buffer: 0 bytes past its end) "
          "[AddressSanitizer: heap-buffer-overflow]",
    -2.0: "READ of 4 bytes at offset -4 of input 0 of AicpuProbeCustom (a 64-byte buffer: 4 bytes before its start) "
          "[AddressSanitizer: heap-buffer-overflow]",
}
_AICPU_MEMCHECK_CHILD = """
import sys
import numpy as np
import opbuild.runtime as rt
from opbuild.runtime import device
ops = rt.import_ops(sys.argv[1])
for arg in sys.argv[2:]:
    isolation, first = arg.split(":")
    device.set_isolation(isolation, 1 if isolation == "process" else "")
    x = np.ones(16, np.float32)
    x[0] = float(first)
    try:
        ops.aicpu_probe_custom(x)
        print(arg, "ok", flush=True)
    except rt.AclnnError as exc:
        print(arg, exc.status, exc.message, flush=True)
    assert (ops.aicpu_probe_custom(np.full(16, 2.0, np.float32)) == 2).all()
print("done")
"""


@pytest.mark.slow
def test_memcheck_instruments_ai_cpu_code(tmp_path):
    """AI CPU compute code is built instrumented too, and an out-of-bounds access of a task is its
    failure naming the tensor, the offset and the access size, in-process and isolated (before, AI
    CPU code was built without the checker: the bad accesses went unseen)."""
    libasan = _libasan()
    root = pkgbuild.new_project(tmp_path / "project", ops=())
    op_dir = root / "ops" / "aicpu_probe_custom"
    op_dir.mkdir()
    (op_dir / "op.yaml").write_text(_AICPU_PROBE_YAML)
    (op_dir / "compute.c").write_text(_AICPU_PROBE_C)
    env_build = {**os.environ, "OPBUILD_MEMCHECK": "1"}
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-j2", "ops"], cwd=root, capture_output=True, text=True,
                       env={k: v for k, v in env_build.items() if k != "OPBUILD_CACHE_DIR"}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    package = root / pkgbuild.VENDOR
    cases = [f"{isolation}:{first}" for isolation in ("in-process", "process") for first in sorted(AICPU_MEMCHECK_CASES)]
    env = {**os.environ, "LD_PRELOAD": libasan, "ASAN_OPTIONS": "halt_on_error=0:suppress_equal_pcs=0:detect_leaks=0",
           "OPBUILD_MEMCHECK": "1", "PYTHONMALLOC": "malloc"}
    r = subprocess.run([sys.executable, "-c", _AICPU_MEMCHECK_CHILD, str(package), *cases], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.endswith("done\n"), r.stdout + r.stderr[-3000:]
    got = dict(line.split(" ", 1) for line in r.stdout.splitlines()[:-1])
    for case in cases:
        status, message = got[case].split(" ", 1)
        first = float(case.split(":")[1])
        assert status == "361001", (case, got[case])
        assert message.startswith("AicpuProbeCustom: AI CPU kernel failed: AI CPU task: memcheck: "), (case, message)
        assert message.endswith(" [libcust_aicpu_kernels.so:RunCpuKernel]"), (case, message)
        _with_source_line(message, AICPU_MEMCHECK_CASES[first], root, f"in[0] == {first}f")
    # and without the sanitizer's runtime the instrumented library is refused, not loaded
    r = subprocess.run([sys.executable, "-c", "import sys, numpy as np, opbuild.runtime as rt\n"
                        "try:\n    rt.import_ops(sys.argv[1]).aicpu_probe_custom(np.ones(4, np.float32))\n"
                        "except rt.AclnnError as e:\n    print(e.status, e.message)\n", str(package)],
                       capture_output=True, text=True, timeout=120)
    assert "AI CPU kernel library" in r.stdout and "whose runtime is not loaded" in r.stdout, r.stdout + r.stderr


# ---- the worker serves launch after launch (issue 24) -----------------------------------------

def _worker_pid(probe) -> int:
    """The process id the -23 kernel reports: the isolated worker that ran the launch."""
    pid = int(probe.probe_custom(np.zeros(16, np.float32), scale=-23.0)[0])
    assert pid > 0
    return pid


def _two_phase_worker_pid(probe) -> int:
    x = np.zeros(16, np.float32)
    y = np.empty_like(x)
    size, executor = probe.aclnnProbeCustomGetWorkspaceSize(x, -23.0, y)
    probe.aclnnProbeCustom(None, size, executor, None)
    return int(y[0])


def test_isolated_worker_serves_launch_after_launch(probe_package, isolated):
    """One worker process (not the caller) runs the launches one after another, whichever path
    (one-shot, two-phase, the C fast path's hits) and computes in the shared memory each time."""
    probe = rt.import_ops(probe_package)
    first = _worker_pid(probe)
    assert first != os.getpid()
    for _ in range(3):
        assert _worker_pid(probe) == first
        assert _two_phase_worker_pid(probe) == first
        _ok(probe, np.arange(16, dtype=np.float32))
    assert _worker_pid(probe) == first


@pytest.mark.parametrize("scale", [-10.0, -12.0, -18.0, -19.0, -22.0, -4.0], ids=lambda s: f"scale{s:g}")
def test_failed_launch_retires_the_worker(probe_package, isolated, scale):
    """A launch that crashes, exits, starts a thread or fails: its worker (the one that served the
    launches before, named in the message when it ended) is reaped, and the next launch runs
    correctly in a new worker."""
    probe = rt.import_ops(probe_package)
    before = _worker_pid(probe)
    with pytest.raises(rt.AclnnError) as exc:
        probe.probe_custom(np.arange(16, dtype=np.float32), scale=scale)
    assert exc.value.status == 361001
    if scale in ISOLATED_CASES and "(pid" in ISOLATED_CASES[scale]:
        assert f"(pid {before})" in exc.value.message, exc.value.message
    assert not Path(f"/proc/{before}").exists(), f"the failed worker {before} was not reaped"
    _ok(probe, np.arange(16, dtype=np.float32))
    after = _worker_pid(probe)
    assert after != before
    assert _worker_pid(probe) == after


def test_timed_out_worker_is_replaced(probe_package, isolated):
    """The endless kernel's worker is killed after OPBUILD_KERNEL_TIMEOUT; the next launch has a new one."""
    probe = rt.import_ops(probe_package)
    before = _worker_pid(probe)
    with pytest.raises(rt.AclnnError, match=rf"OPBUILD_KERNEL_TIMEOUT=1 s; the isolated worker \(pid {before}\) was"):
        probe.probe_custom(np.arange(16, dtype=np.float32), scale=-11.0)
    assert not Path(f"/proc/{before}").exists()
    assert _worker_pid(probe) not in (before, os.getpid())
    _ok(probe, np.arange(16, dtype=np.float32))


@pytest.mark.parametrize("scale", [-21.0, -25.0], ids=["child", "grandchild"])
def test_processes_a_kernel_started_end_with_its_launch(probe_package, isolated, scale):
    """A process a kernel leaves behind (its child, or a grandchild whose parent it waited for)
    is killed when the launch ends, not when the worker would have ended: the worker that had it
    is retired and the next launch has a new one."""
    probe = rt.import_ops(probe_package)
    before = _worker_pid(probe)
    left = int(probe.probe_custom(np.zeros(16, np.float32), scale=scale)[0])
    assert left > 0
    try:
        assert _wait_gone(left), f"the kernel's process {left} still runs"
    finally:
        if not _wait_gone_now(left):
            os.kill(left, signal.SIGKILL)
    assert _worker_pid(probe) != before
    _ok(probe, np.arange(16, dtype=np.float32))


def test_signal_action_set_by_a_kernel_does_not_reach_the_next_launch(probe_package, isolated):
    """A kernel that replaces the worker's SIGSEGV action (-24: a handler calling _exit(0)) runs
    correctly; the next launch that crashes is still reported as the SIGSEGV it is (its worker is
    a new one, with the worker's own actions), not as an _exit of the kernel."""
    probe = rt.import_ops(probe_package)
    before = _worker_pid(probe)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(probe.probe_custom(x, scale=-24.0), -24.0 * x)
    with pytest.raises(rt.AclnnError) as exc:
        probe.probe_custom(x, scale=-10.0)
    assert re.fullmatch(_FAILED + ISOLATED_CASES[-10.0] + r" \[kernel .*\]", exc.value.message), exc.value.message
    assert f"(pid {before})" not in exc.value.message
    _ok(probe, x)


def test_signal_left_pending_by_a_kernel_does_not_reach_the_next_launch(probe_package, isolated):
    """A kernel that sends its worker a signal the worker blocks (-26: SIGUSR1, whose default
    action would end the worker when a later kernel unblocks it) runs correctly; its worker is
    retired, the next launch has a new one."""
    probe = rt.import_ops(probe_package)
    before = _worker_pid(probe)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(probe.probe_custom(x, scale=-26.0), -26.0 * x)
    assert _worker_pid(probe) != before
    _ok(probe, x)


def test_worker_outlives_the_thread_that_first_launched(probe_package, isolated):
    """A worker made for a launch of a thread that then ends keeps serving (it is not that
    thread's child: its parent-death signal is not sent when the thread ends)."""
    import threading

    probe = rt.import_ops(probe_package)
    pids: list[int] = []
    t = threading.Thread(target=lambda: pids.append(_worker_pid(probe)))
    t.start()
    t.join()
    assert len(pids) == 1
    assert _worker_pid(probe) == pids[0]
    _ok(probe, np.arange(16, dtype=np.float32))


def test_no_worker_is_left_when_isolation_is_turned_off(probe_package):
    """set_isolation("in-process") ends the idle workers and reaps them (no zombie)."""
    probe = rt.import_ops(probe_package)
    device.set_isolation("process", 5)
    try:
        pid = _worker_pid(probe)
        assert Path(f"/proc/{pid}").exists()
    finally:
        device.set_isolation("in-process")
    assert not Path(f"/proc/{pid}").exists(), f"worker {pid} is left: {_proc_state(pid)}"
    assert _worker_pid(probe) == os.getpid()  # in-process now
    device.set_isolation()


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


_EXIT_WITH_WORKER = """
import os, sys
import numpy as np
import opbuild.runtime as rt
from opbuild.runtime import device
probe = rt.import_ops(sys.argv[1])
device.set_isolation("process", 5)
print(int(probe.probe_custom(np.zeros(16, np.float32), scale=-23.0)[0]), flush=True)
if sys.argv[2] == "_exit":
    os._exit(0)
"""


@pytest.mark.parametrize("how", ["exit", "_exit"])
def test_workers_end_with_the_process(probe_package, how):
    """A process that ends (normally: its idle workers are reaped; os._exit: their parent-death
    signal) leaves no worker running."""
    r = subprocess.run([sys.executable, "-c", _EXIT_WITH_WORKER, str(probe_package), how], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout)
    assert _wait_gone(pid), f"worker {pid} of an ended process still runs"
