"""Device simulator (opbuild/runtime/native/src/sim.c) through its Python bindings.

Test kernels are compiled with gcc into a temporary directory, each with a hand-written launch shim
that follows opbuild/kernel.h's contract (what the build's generated shim does).
"""

from __future__ import annotations

import gc
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from concurrency import in_threads

from opbuild.runtime import device
from opbuild.runtime.device import DeviceError

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "opbuild" / "runtime" / "native" / "include"

SHIM = r"""
#include "opbuild/kernel.h"
__thread opbuild_kernel_state opbuild_kernel_state_ __attribute__((visibility("hidden")));

KERNEL_ENTRY void %(entry)s(%(params)s);

__attribute__((visibility("default")))
int32_t opbuild_kernel_launch(void *const *args, uint32_t nargs, uint32_t block_idx, uint32_t block_num,
                              opbuild_sync_all_fn sync, void *sync_ctx, char *err, uint32_t errlen) {
    if (nargs != %(nargs)d) {
        snprintf(err, errlen, "%(entry)s takes %(nargs)d arguments, got %%u", nargs);
        return 1;
    }
    opbuild_kernel_state *s = opbuild_kernel_begin(block_idx, block_num, sync, sync_ctx);
    %(entry)s(%(call)s);
    if (s->error[0]) {
        snprintf(err, errlen, "%%s", s->error);
        return 1;
    }
    return 0;
}
"""

KERNELS = {
    # z[i] = x[i] + y[i] for i < n; tiling: uint64 n
    "vadd": (4, r"""
KERNEL_ENTRY void vadd(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling) {
    uint64_t n, b, e;
    memcpy(&n, tiling, sizeof n);
    opbuild_block_range(n, &b, &e);
    const float *xf = (const float *)x, *yf = (const float *)y;
    float *zf = (float *)z;
    for (uint64_t i = b; i < e; ++i) zf[i] = xf[i] + yf[i];
}
"""),
    # out[2*idx] = idx, out[2*idx+1] = block_num (int32)
    "blockinfo": (1, r"""
KERNEL_ENTRY void blockinfo(GM_ADDR out) {
    int32_t *o = (int32_t *)out;
    o[2 * GetBlockIdx()] = (int32_t)GetBlockIdx();
    o[2 * GetBlockIdx() + 1] = (int32_t)GetBlockNum();
}
"""),
    # a[i] = a[i] * 2 + c for i < n; tiling: uint64 n, float c (in-order stream test)
    "axpc": (2, r"""
KERNEL_ENTRY void axpc(GM_ADDR a, GM_ADDR tiling) {
    uint64_t n, b, e;
    float c;
    memcpy(&n, tiling, sizeof n);
    memcpy(&c, tiling + 8, sizeof c);
    opbuild_block_range(n, &b, &e);
    float *af = (float *)a;
    for (uint64_t i = b; i < e; ++i) af[i] = af[i] * 2.0f + c;
}
"""),
    # blocks whose idx is >= first_bad fail; others write 1 to out[idx]. tiling: uint32 first_bad
    "failing": (2, r"""
KERNEL_ENTRY void failing(GM_ADDR out, GM_ADDR tiling) {
    uint32_t first_bad;
    memcpy(&first_bad, tiling, sizeof first_bad);
    if (GetBlockIdx() >= first_bad) KERNEL_FAIL("bad block %u of %u", GetBlockIdx(), GetBlockNum());
    ((int32_t *)out)[GetBlockIdx()] = 1;
}
"""),
    # rounds of: buf[idx] = idx + r; SyncAll; out[idx] += sum(buf); SyncAll.
    # tiling: uint32 rounds, uint32 bad (this block fails before the first barrier; >= block_num: none)
    "syncsum": (3, r"""
KERNEL_ENTRY void syncsum(GM_ADDR buf, GM_ADDR out, GM_ADDR tiling) {
    uint32_t rounds, bad;
    memcpy(&rounds, tiling, 4);
    memcpy(&bad, tiling + 4, 4);
    uint32_t idx = GetBlockIdx(), num = GetBlockNum();
    int64_t *bb = (int64_t *)buf, *o = (int64_t *)out;
    if (idx == bad) KERNEL_FAIL("block %u gives up before SyncAll", idx);
    o[idx] = 0;
    for (uint32_t r = 0; r < rounds; ++r) {
        bb[idx] = (int64_t)idx + r;
        SyncAll();
        int64_t s = 0;
        for (uint32_t k = 0; k < num; ++k) s += bb[k];
        o[idx] += s;
        SyncAll();
    }
}
"""),
    "nothing": (0, r"""
KERNEL_ENTRY void nothing(void) {}
"""),
    # log[0]: how many records so far; log[1 + log[0]++] = tag. tiling: uint64 tag (stream order tests)
    "record": (2, r"""
KERNEL_ENTRY void record(GM_ADDR log, GM_ADDR tiling) {
    uint64_t tag, *l = (uint64_t *)log;
    memcpy(&tag, tiling, sizeof tag);
    l[1 + l[0]++] = tag;
}
"""),
}


def _compile(workdir: Path, name: str, nargs: int, source: str) -> Path:
    params = ", ".join(f"GM_ADDR a{i}" for i in range(nargs)) or "void"
    call = ", ".join(f"(GM_ADDR)args[{i}]" for i in range(nargs))
    (workdir / f"{name}.c").write_text('#include "opbuild/kernel.h"\n' + source)
    (workdir / f"{name}_shim.c").write_text(SHIM % {"entry": name, "params": params, "call": call, "nargs": nargs})
    return workdir / f"{name}.so"


@pytest.fixture(scope="session")
def kernels(tmp_path_factory) -> dict[str, device.KernelBinary]:
    workdir = tmp_path_factory.mktemp("kernels")
    procs = {}
    for name, (nargs, source) in KERNELS.items():
        out = _compile(workdir, name, nargs, source)
        cmd = ["gcc", "-std=c11", "-Wall", "-Werror", f"-I{INCLUDE}", "-O2", "-fPIC", "-shared",
               str(workdir / f"{name}.c"), str(workdir / f"{name}_shim.c"), "-o", str(out)]
        procs[name] = (out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    loaded = {}
    for name, (out, proc) in procs.items():
        log, _ = proc.communicate()
        assert proc.returncode == 0, f"gcc failed for {name}:\n{log}"
        loaded[name] = device.load_kernel(out)
    return loaded


@pytest.fixture(autouse=True)
def _default_threads():
    yield
    device.set_threads(0)


def u64(*values: int) -> device.DeviceBuffer:
    return device.upload(np.array(values, dtype=np.uint64))


# ---- memory --------------------------------------------------------------------------------------


def test_malloc_alignment_and_accounting():
    gc.collect()
    base_bytes, base_blocks = device.mem_in_use(), device.mem_blocks()
    sizes = [0, 1, 7, 512, 513, 4096, 1 << 20]
    bufs = [device.malloc(n) for n in sizes]
    assert all(b.address % device.MEM_ALIGN == 0 for b in bufs)
    assert len({b.address for b in bufs}) == len(bufs)
    assert device.mem_in_use() == base_bytes + sum(sizes)
    assert device.mem_blocks() == base_blocks + len(sizes)
    assert device.mem_peak() >= device.mem_in_use()
    for b in bufs[:3]:
        b.free()
    del bufs[:3]
    del bufs  # the rest are freed by the garbage collector
    gc.collect()
    assert device.mem_in_use() == base_bytes
    assert device.mem_blocks() == base_blocks


def test_buffer_views_and_copies():
    buf = device.malloc(64)
    view = buf.as_array(np.float32, (4, 4))
    view[:] = np.arange(16, dtype=np.float32).reshape(4, 4)
    assert buf.to_numpy(np.float32, 16).tolist() == list(range(16))
    assert buf.as_array(np.uint8).shape == (64,)
    buf.copy_from(np.ones(8, dtype=np.float64))
    assert np.array_equal(view.ravel(), np.ones(8, dtype=np.float64).view(np.float32))
    with pytest.raises(ValueError, match="needs 128 bytes"):
        buf.as_array(np.float64, 16)
    with pytest.raises(ValueError, match="does not fit"):
        buf.copy_from(np.zeros(65, dtype=np.uint8))
    assert buf.as_array(np.float32, (0, 3)).shape == (0, 3)


def test_view_keeps_buffer_alive():
    gc.collect()
    base = device.mem_in_use()
    view = device.malloc(4096).as_array(np.int32)
    gc.collect()
    assert device.mem_in_use() == base + 4096
    view[:] = 7
    del view
    gc.collect()
    assert device.mem_in_use() == base


def test_double_free_and_bad_pointer():
    buf = device.malloc(16)
    buf.free()
    with pytest.raises(DeviceError, match="freed already"):
        buf.free()
    with pytest.raises(DeviceError, match="was freed"):
        buf.as_array(np.uint8)
    lib = device._L()
    p = lib.sim_malloc(64)
    assert lib.sim_free(p + 8) == device.SIM_EINVAL
    assert b"not a device pointer" in lib.sim_last_error()
    assert lib.sim_free(p) == 0


# ---- launch ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,block_dim", [(1, 1), (1000, 1), (1000, 7), (100_003, 40), (5, 64)])
def test_vadd_matches_numpy(kernels, n, block_dim):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy, dz, tiling = device.upload(x), device.upload(y), device.malloc(4 * n), u64(n)
    device.launch(kernels["vadd"], [dx.address, dy.address, dz.address, tiling.address], block_dim)
    np.testing.assert_array_equal(dz.as_array(np.float32), x + y)


def test_buffers_as_launch_args(kernels):
    x = np.arange(100, dtype=np.float32)
    dx, dz, t = device.upload(x), device.malloc(400), u64(100)
    device.launch(kernels["vadd"], [dx, dx, dz, t], 3)
    np.testing.assert_array_equal(dz.as_array(np.float32), 2 * x)
    device.launch(kernels["vadd"], device.make_args([dx, dz, dz, t.address]), 3)
    np.testing.assert_array_equal(dz.as_array(np.float32), 3 * x)


def test_block_idx_and_num(kernels):
    for block_dim in (1, 3, 64, 1000):
        out = device.malloc(8 * block_dim)
        out.as_array(np.int32)[:] = -1
        device.launch(kernels["blockinfo"], [out.address], block_dim)
        got = out.as_array(np.int32, (block_dim, 2))
        assert got[:, 0].tolist() == list(range(block_dim))
        assert set(got[:, 1].tolist()) == {block_dim}


def test_prebuilt_args_and_thread_counts(kernels):
    out = device.malloc(8 * 50)
    args = device.make_args([out.address])
    for n in (1, 2, 5):
        device.set_threads(n)
        assert device.threads() == n
        out.as_array(np.int32)[:] = -1
        device.launch(kernels["blockinfo"], args, 50)
        assert out.as_array(np.int32, (50, 2))[:, 0].tolist() == list(range(50))
    device.set_threads(0)
    assert device.threads() >= 1
    with pytest.raises(DeviceError, match="maximum"):
        device.set_threads(5000)


def test_default_stream_is_synchronous(kernels):
    n = 4096
    a = device.upload(np.zeros(n, dtype=np.float32))
    tiling = device.upload(np.array([n, 0], dtype=np.uint64))
    tiling.as_array(np.float32)[2] = 1.0
    for i in range(5):
        device.launch(kernels["axpc"], [a.address, tiling.address], 8, stream=device.default_stream)
        # no synchronize needed: the result is there when launch returns
        assert a.as_array(np.float32)[0] == 2 ** (i + 1) - 1
    device.default_stream.synchronize()


def test_stream_runs_in_order(kernels):
    n = 10_000
    a = device.upload(np.zeros(n, dtype=np.float32))
    tilings = []
    with device.Stream() as s:
        expect = np.zeros(n, dtype=np.float32)
        for i in range(20):
            c = float(i % 3)
            t = device.upload(np.array([n, 0], dtype=np.uint64))
            t.as_array(np.float32)[2] = c
            tilings.append(t)
            device.launch(kernels["axpc"], [a.address, t.address], 1 + i % 5, stream=s)
            expect = expect * 2 + np.float32(c)
        s.synchronize()
        np.testing.assert_array_equal(a.as_array(np.float32), expect)


def test_stream_launch_is_asynchronous_and_copies_args(kernels):
    gate = threading.Event()
    out = device.malloc(8 * 4)
    out.as_array(np.int32)[:] = -1
    with device.Stream() as s:
        s.enqueue_host(lambda: gate.wait(10))
        args = [out.address]
        device.launch(kernels["blockinfo"], args, 4, stream=s)
        args[0] = 0  # the stream copied the array at enqueue time
        assert s.pending() == 2
        assert out.as_array(np.int32)[0] == -1  # not run yet
        gate.set()
        s.synchronize()
        assert s.pending() == 0
    assert out.as_array(np.int32, (4, 2))[:, 1].tolist() == [4] * 4


def test_stream_host_functions_and_async_free(kernels):
    gc.collect()
    base = device.mem_in_use()
    order = []
    with device.Stream() as s:
        buf = device.malloc(1024)
        out = device.malloc(8)
        s.enqueue_host(lambda: order.append("first"))
        device.launch(kernels["blockinfo"], [out.address], 1, stream=s)
        s.enqueue_host(lambda: order.append(int(out.as_array(np.int32)[1])))
        buf.free(stream=s)
        s.enqueue_host(lambda: 1 / 0)
        with pytest.raises(DeviceError, match="ZeroDivisionError"):
            s.synchronize()
        s.synchronize()  # reported once
        out.free()
    assert order == ["first", 1]
    assert device.mem_in_use() == base


# ---- the stream queue (sim.c: reused task records, batches, the worker's naps) ----------------------


def records(log: device.DeviceBuffer) -> list[int]:
    a = log.as_array(np.uint64)
    return a[1:1 + int(a[0])].tolist()


def record_launches(kernels, log: device.DeviceBuffer, tags: device.DeviceBuffer, first: int, n: int, s) -> None:
    """Launch `record` n times on stream s with tags first .. first + n - 1 (tags[i] == i)."""
    for i in range(first, first + n):
        device.launch(kernels["record"], [log.address, tags.address + 8 * i], 1, stream=s)


def test_stream_many_launches_and_host_functions_in_order(kernels):
    # more tasks than a stream keeps records for (1,024) and than wake a napping worker (256)
    n = 3000
    log, tags = device.upload(np.zeros(n + 6, np.uint64)), device.upload(np.arange(n, dtype=np.uint64))
    seen = []
    with device.Stream() as s:
        for first in range(0, n, 100):
            record_launches(kernels, log, tags, first, 100, s)
            s.enqueue_host(lambda: seen.append(len(records(log))))  # runs after exactly the launches before it
        s.synchronize()
        assert s.pending() == 0
        assert records(log) == list(range(n))
        assert seen == list(range(100, n + 1, 100))
        record_launches(kernels, log, tags, 0, 5, s)  # the stream goes on after a synchronize
        s.synchronize()
    assert records(log)[n:] == list(range(5))


def test_stream_runs_without_a_synchronize(kernels):
    # the worker runs queued work on its own (a nap after a batch, or woken from sleep): a host
    # function signals this thread with no synchronize, right after work and after an idle spell
    log, tags = device.upload(np.zeros(64, np.uint64)), device.upload(np.arange(64, dtype=np.uint64))
    with device.Stream() as s:
        for round_ in range(3):
            done = threading.Event()
            record_launches(kernels, log, tags, 10 * round_, 10, s)
            s.enqueue_host(done.set)
            assert done.wait(30), f"round {round_}: the stream did not run its work without a synchronize"
            if round_ == 1:
                threading.Event().wait(0.1)  # idle past the worker's naps: it sleeps until a push wakes it
        assert records(log) == list(range(30))


def test_stream_error_in_a_batch_surfaces_at_synchronize(kernels):
    log, tags = device.upload(np.zeros(512, np.uint64)), device.upload(np.arange(512, dtype=np.uint64))
    out = device.malloc(4 * 4)
    bad = device.upload(np.array([0], dtype=np.uint32))
    with device.Stream() as s:
        record_launches(kernels, log, tags, 0, 200, s)
        device.launch(kernels["failing"], [out.address, bad.address], 4, stream=s)
        record_launches(kernels, log, tags, 200, 200, s)  # work after the failure still runs, in order
        with pytest.raises(DeviceError, match=r"failing\.so: block 0: bad block 0 of 4"):
            s.synchronize()
        assert records(log) == list(range(400))
        s.synchronize()  # reported once


def test_many_streams_from_many_threads(kernels):
    n_streams, n = 12, 400
    tags = device.upload(np.arange(n, dtype=np.uint64))
    logs = [device.upload(np.zeros(n + 1, np.uint64)) for _ in range(n_streams)]
    streams = [device.Stream() for _ in range(n_streams)]

    def work(k):
        for j in range(k, n_streams, 3):
            record_launches(kernels, logs[j], tags, 0, n, streams[j])

    errors = in_threads(work, 3)
    assert not errors, errors
    for s in streams:
        s.synchronize()
    assert all(records(log) == list(range(n)) for log in logs)
    for s in streams:
        s.destroy()


def test_destroy_runs_pending_work(kernels):
    n = 2000
    log, tags = device.upload(np.zeros(n + 1, np.uint64)), device.upload(np.arange(n, dtype=np.uint64))
    gate = threading.Event()
    s = device.Stream()
    s.enqueue_host(lambda: gate.wait(30))
    record_launches(kernels, log, tags, 0, n, s)
    assert s.pending() == n + 1
    gate.set()
    s.destroy()  # drains: every launch ran
    assert records(log) == list(range(n))


# ---- errors ----------------------------------------------------------------------------------------


def test_kernel_fail_names_lowest_block(kernels):
    for block_dim, first_bad in [(1, 0), (8, 5), (100, 37), (100, 0)]:
        out = device.malloc(4 * block_dim)
        out.as_array(np.int32)[:] = 0
        t = device.upload(np.array([first_bad], dtype=np.uint32))
        with pytest.raises(DeviceError, match=rf"^block {first_bad}: bad block {first_bad} of {block_dim}") as ei:
            device.launch(kernels["failing"], [out.address, t.address], block_dim)
        assert ei.value.code == device.SIM_EKERNEL
        # every block ran
        assert out.as_array(np.int32).tolist() == [1] * first_bad + [0] * (block_dim - first_bad)


def test_stream_error_surfaces_at_synchronize(kernels):
    out = device.malloc(4 * 16)
    bad = device.upload(np.array([3], dtype=np.uint32))
    good = device.upload(np.array([100], dtype=np.uint32))
    s = device.Stream()
    device.launch(kernels["failing"], [out.address, good.address], 16, stream=s)
    device.launch(kernels["failing"], [out.address, bad.address], 16, stream=s)
    bad2 = device.upload(np.array([1], dtype=np.uint32))
    device.launch(kernels["failing"], [out.address, bad2.address], 16, stream=s)  # second error: dropped
    with pytest.raises(DeviceError, match=r"^binary .*/failing\.so: block 3: bad block 3 of 16"):
        s.synchronize()  # the failing launch's kernel named (its label: the path by default)
    s.synchronize()  # the error was cleared
    device.launch(kernels["failing"], [out.address, bad2.address], 2, stream=s)
    with pytest.raises(DeviceError, match=r"^binary .*/failing\.so: block 1: bad block 1 of 2"):
        s.destroy()  # destroy reports what synchronize did not
    with pytest.raises(DeviceError, match="destroyed"):
        device.launch(kernels["failing"], [out.address, good.address], 2, stream=s)
    with pytest.raises(DeviceError, match="destroyed"):
        s.synchronize()


def test_launch_argument_errors(kernels):
    out = device.malloc(64)
    with pytest.raises(DeviceError, match="block_dim is 0") as ei:
        device.launch(kernels["blockinfo"], [out.address], 0)
    assert ei.value.code == device.SIM_EINVAL
    with pytest.raises(DeviceError, match="block_dim is 0"):
        with device.Stream() as s:
            device.launch(kernels["blockinfo"], [out.address], 0, stream=s)
    with pytest.raises(DeviceError, match="block_dim 1025 is more than 1024"):
        device.launch(kernels["syncsum"], [out.address] * 3, 1025, intercore_sync=True)
    with pytest.raises(DeviceError, match="out of range"):
        device.launch(kernels["blockinfo"], [out.address], -1)
    with pytest.raises(DeviceError, match="takes 1 arguments, got 2"):
        device.launch(kernels["blockinfo"], [out.address, out.address], 1)


def test_load_kernel_errors(tmp_path, kernels):
    with pytest.raises(DeviceError, match="does not exist"):
        device.load_kernel(tmp_path / "missing.so")
    junk = tmp_path / "junk.so"
    junk.write_text("not an ELF file")
    with pytest.raises(DeviceError, match=r"cannot load kernel binary .*junk\.so"):
        device.load_kernel(junk)
    with pytest.raises(DeviceError, match=r"vadd\.so does not export no_such_symbol"):
        device.load_kernel(kernels["vadd"].path, symbol="no_such_symbol")


# ---- inter-core sync -------------------------------------------------------------------------------


def _syncsum(kernels, block_dim, rounds, bad=None, stream=None):
    buf = device.malloc(8 * block_dim)
    out = device.malloc(8 * block_dim)
    t = device.upload(np.array([rounds, block_dim if bad is None else bad], dtype=np.uint32))
    device.launch(kernels["syncsum"], [buf.address, out.address, t.address], block_dim, stream=stream,
                  intercore_sync=True)
    return buf, out, t


def _syncsum_expect(block_dim, rounds):
    return sum(sum(range(block_dim)) + block_dim * r for r in range(rounds))


@pytest.mark.parametrize("block_dim", [1, 2, 48, 200])
def test_intercore_sync_more_blocks_than_threads(kernels, block_dim):
    device.set_threads(2)
    _, out, _ = _syncsum(kernels, block_dim, rounds=5)
    assert out.as_array(np.int64).tolist() == [_syncsum_expect(block_dim, 5)] * block_dim


def test_intercore_sync_block_failing_before_barrier(kernels):
    with pytest.raises(DeviceError, match=r"^block 5: block 5 gives up before SyncAll"):
        _syncsum(kernels, 16, rounds=3, bad=5)
    with pytest.raises(DeviceError, match=r"^block 0: block 0 gives up"):
        _syncsum(kernels, 16, rounds=3, bad=0)
    # the simulator is still healthy
    _, out, _ = _syncsum(kernels, 16, rounds=2)
    assert out.as_array(np.int64)[0] == _syncsum_expect(16, 2)


def test_intercore_sync_on_concurrent_streams(kernels):
    streams = [device.Stream() for _ in range(4)]
    keep = []
    for _ in range(5):
        for s in streams:
            keep.append(_syncsum(kernels, 24, rounds=3, stream=s))
    for s in streams:
        s.synchronize()
        s.destroy()
    for _, out, _ in keep:
        assert out.as_array(np.int64).tolist() == [_syncsum_expect(24, 3)] * 24


def test_syncall_without_intercore_sync_is_an_error(kernels):
    buf, out = device.malloc(8 * 4), device.malloc(8 * 4)
    t = device.upload(np.array([1, 99], dtype=np.uint32))
    with pytest.raises(DeviceError, match=r"^block 0: SyncAll\(\) called by a kernel launched without intercore_sync"):
        device.launch(kernels["syncsum"], [buf.address, out.address, t.address], 4)


# ---- concurrency -----------------------------------------------------------------------------------


def test_concurrent_launches_from_python_threads(kernels):
    n = 20_000
    x = np.arange(n, dtype=np.float32)
    errors = []

    def work(seed):
        try:
            dx, dy, dz, t = device.upload(x), device.upload(x * seed), device.malloc(4 * n), u64(n)
            for i in range(30):
                device.launch(kernels["vadd"], [dx.address, dy.address, dz.address, t.address], 1 + i % 9)
                np.testing.assert_array_equal(dz.as_array(np.float32), x + x * seed)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def test_set_threads_while_streams_run(kernels):
    n = 50_000
    a = device.upload(np.zeros(n, dtype=np.float32))
    t = device.upload(np.array([n, 0], dtype=np.uint64))
    t.as_array(np.float32)[2] = 1.0
    with device.Stream() as s:
        for i in range(40):
            device.launch(kernels["axpc"], [a.address, t.address], 16, stream=s)
            if i % 10 == 0:
                device.set_threads(1 + i // 10)
        s.synchronize()
    expect = np.float32(0)
    for _ in range(40):
        expect = expect * np.float32(2) + np.float32(1)
    assert (a.as_array(np.float32) == expect).all()


def test_missing_library_message(monkeypatch, tmp_path):
    monkeypatch.setenv("OPBUILD_SIM_LIB", str(tmp_path / "nope.so"))
    with pytest.raises(DeviceError, match="does not exist"):
        device._find_library()
    monkeypatch.delenv("OPBUILD_SIM_LIB")
    monkeypatch.setattr(device, "__file__", str(tmp_path / "device.py"))
    with pytest.raises(DeviceError, match=r"pip install -e \."):
        device._find_library()
