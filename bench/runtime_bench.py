"""Runtime benchmarks: host overhead of a call (Python and C callers), C threads, fp32 add
throughput, binary lookup.

    scons ops && python bench/runtime_bench.py [--package out/opp/vendors/customize] [--quick] [--issue24]

Prints, side by side in one run (nothing is asserted; issue 11's goals in brackets):
  0. issue 11's table, 1-element fp32 AddCustomTemplate on the default stream:
       C ABI two-phase call, cache hit, from a C program (bench/capi_bench.c, compiled here)
                                                           [<= 3x numpy.add(out=)]
         the same on a created stream, one aclrtSynchronizeStream per 1,000 calls
                                                           [<= 1.5x numpy.add(out=), issue 24]
       Python two-phase, cache hit                         [<= 0.3x torch.add(out=)]
       Python one-shot ops.add_custom_template(x, y)       [<= 1.0x torch.add(x, y)]
       cache miss (first call, clear_op_cache before each) [<= 25 us]: the first call of a
         shape (of a known signature: planned in C, native/src/signature_miss.c); the same miss
         made by the Python phase 1 (a no-op phase hook registered); and the first call of a
         signature (clear_op_cache(selections=True))
       op_fallback syn_exec_aclnn per call                 [<= 5 us]
     (the Python rows, the miss, syn_exec_aclnn and their baselines interleaved: round robin)
       C ABI calls/s of 1, 2, 8 C threads                  [scales]
  1. more host-overhead rows (the Python path without the C fast path, phases alone)
  2. fp32 add of 16M elements against numpy.add                  [>= 1.0x numpy's throughput]
  3. binary lookup in a package with 100,000 binaries            [<= 2 us per lookup]
  4. cost per launch of OPBUILD_ISOLATION=process (a kept worker process) against the
     default in-process launch, interleaved: 1-element add (the launch overhead) and a
     1M-element add (the worker runs the blocks one after another); and a 1-element launch that
     needs a new worker (as after a failed launch: made, filter installed, then retired)
--issue24 prints issue 24's rows only (from section 0's measurements, one run): the created-stream
C ABI hit [<= 1.5x numpy.add(out=)], Python two-phase [<= 0.3x torch.add(out=)], one-shot
[<= 0.7x torch.add], cache miss [<= 15 us].
torch is optional (`pip install torch`); without it its column says n/a. A C compiler is needed
for the C rows (without one they say n/a). Timings are best-of-N in this run; compare the ratios,
not the absolute numbers, on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

import opbuild.runtime as rt
from opbuild.runtime import device
from opbuild.runtime.call import executor, plans
from opbuild.runtime.binaries.package import binary_index

REPO = Path(__file__).resolve().parents[1]


def per_call(fn, number: int, repeat: int) -> float:
    """Best-of-`repeat` seconds per call of fn (timeit, `number` calls per sample)."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def fmt_us(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e6:9.3f} us"


def ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None else f"{a / b:6.2f}x"


def load_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def add_calls(ops):
    """1-element fp32 AddCustomTemplate arrays and its calls: two-phase hit, one-shot hit, cache miss."""
    x = np.ones(1, np.float32)
    y = np.ones(1, np.float32)
    z = np.empty(1, np.float32)
    phase1, phase2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate

    def two_phase():
        size, ex = phase1(x, y, z)
        phase2(None, size, ex, None)

    def one_shot():
        ops.add_custom_template(x, y)

    def miss():
        rt.clear_op_cache()
        two_phase()

    return (x, y, z), two_phase, one_shot, miss


def python_miss(ops):
    """The cache miss as the Python phase 1 makes it: a no-op phase hook registered around each
    call, so the native miss of a known signature (native/src/signature_miss.c) declines (the
    hook's own cost, two calls and four clock reads, is in this row)."""
    _, two_phase, _, _ = add_calls(ops)

    def hook(*args) -> None:
        pass

    def call():
        rt.clear_op_cache()
        plans.PHASE_HOOKS.append(hook)
        try:
            two_phase()
        finally:
            plans.PHASE_HOOKS.remove(hook)

    return call


def signature_miss(ops):
    """The first call of a signature: clear_op_cache(selections=True) before each, so the miss
    also runs GenSimplifiedKey, the full key and the index lookup."""
    x, y, z = np.ones(1, np.float32), np.ones(1, np.float32), np.empty(1, np.float32)
    phase1, phase2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate

    def call():
        rt.clear_op_cache(selections=True)
        size, ex = phase1(x, y, z)
        phase2(None, size, ex, None)

    return call


# ---- 0. issue 11's table ------------------------------------------------------------------------

def build_capi_bench(package: Path, exe: Path) -> str | None:
    """Compile bench/capi_bench.c against the package's C API into `exe`; None, or why it could not."""
    from opbuild.abi.native_libs import app_flags

    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return "no C compiler"
    build = subprocess.run([cc, "-O2", "-std=gnu11", "-pthread", "-o", str(exe), str(REPO / "bench/capi_bench.c"),
                            *app_flags(package)], capture_output=True, text=True)
    return f"capi_bench.c did not compile: {build.stderr.strip()[:500]}" if build.returncode else None


def c_rows(package: Path, number: int, repeat: int, threads: tuple[int, ...]) -> dict[str, float] | None:
    """Compile bench/capi_bench.c against the package's C API and run it; its "name: value" lines,
    or None without a C compiler (or when it fails: the reason is printed)."""
    with tempfile.TemporaryDirectory(prefix="capi_bench") as tmp:
        exe = Path(tmp) / "capi_bench"
        problem = build_capi_bench(package, exe)
        if problem:
            print(f"   ({problem}: the C rows say n/a)")
            return None
        run = subprocess.run([str(exe), str(number), str(repeat), *map(str, threads)], capture_output=True, text=True,
                             timeout=1800)
        if run.returncode:
            print(f"   (capi_bench failed: {run.stderr.strip()[:500]})")
            return None
    out = {}
    for line in run.stdout.splitlines():
        name, _, value = line.partition(":")
        out[name.strip()] = float(value)
    return out


_FALLBACK_ENV = ("ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH", "ASCEND_HOME_PATH")


def fallback_env(package: Path) -> dict[str, str | None]:
    """Set the package's OPP tree as ASCEND_OPP_PATH (as op_fallback finds libraries); returns
    what to give restore_env."""
    saved = {k: os.environ.get(k) for k in _FALLBACK_ENV}
    os.environ["ASCEND_OPP_PATH"] = str(package.resolve().parents[1])  # <opp>/vendors/<vendor>
    os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
    os.environ.pop("ASCEND_HOME_PATH", None)
    return saved


def restore_env(saved: dict[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def syn_exec_call(number: int):
    """op_fallback's syn_exec_aclnn of the 1-element add as a callable (with fallback_env set),
    or None when it fails (the reason is printed)."""
    from opbuild.runtime import fallback as fb

    x, y, z = np.ones(1, np.float32), np.ones(1, np.float32), np.zeros(1, np.float32)
    ctx = fb.OpExecuteContext()
    if fb.syn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, z) != 0 or z[0] != 2.0:
        print(f"   (syn_exec_aclnn failed: {ctx.last_error})")
        return None
    return lambda: fb.syn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, z)


def measure_table(ops, package: Path, torch, number: int, repeat: int) -> dict[str, float | None]:
    """Section 0's timings (seconds per call), Python rows interleaved, then the C program and
    numpy.add(out=) again right after it (the C rows' baseline from the same minutes)."""
    (x, y, z), two_phase, one_shot, miss = add_calls(ops)

    two_phase()
    assert z[0] == 2.0
    saved_env = fallback_env(package)  # for syn_exec_aclnn; the same values for the other rows' keys
    fns = {"numpy_out": lambda: np.add(x, y, out=z), "two": two_phase, "one": one_shot}
    syn = syn_exec_call(number)
    if syn is not None:
        fns["syn"] = syn
    if torch is not None:
        tx, ty, tz = torch.ones(1), torch.ones(1), torch.empty(1)
        fns["torch_out"] = lambda: torch.add(tx, ty, out=tz)
        fns["torch_new"] = lambda: torch.add(tx, ty)
    # Interleaved (round robin, best of `repeat` rounds): a ratio compares runs made seconds apart
    # at most, so a load change on the shared machine moves both sides.
    # The cache miss is in the round robin too, with fewer calls per sample.
    counts = {name: number // 5 if name == "syn" else number for name in fns}
    fns["miss"], counts["miss"] = miss, max(number // 50, 20)
    fns["miss_sig"], counts["miss_sig"] = signature_miss(ops), max(number // 50, 20)
    fns["miss_py"], counts["miss_py"] = python_miss(ops), max(number // 50, 20)
    best: dict[str, float | None] = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            best[name] = min(best[name], timeit.timeit(fn, number=counts[name]) / counts[name])  # type: ignore[type-var]
    restore_env(saved_env)
    rt.clear_op_cache()
    c = c_rows(package, number, repeat, C_THREADS)
    # numpy.add(out=) again right after the C program, for the C rows' ratio (best of both)
    best["numpy_out_c"] = min(best["numpy_out"], per_call(fns["numpy_out"], number, repeat))  # type: ignore[type-var]
    for name in ("hit_us", "stream_hit_us", "native_miss_us"):
        best[f"c_{name[:-3]}"] = c[name] * 1e-6 if c and name in c else None
    for n in C_THREADS:
        best[f"cps_{n}"] = c[f"calls_per_s_{n}"] if c else None
    return best


C_THREADS = (1, 2, 8)


def row(name: str, t: float | None, base: float | None, base_name: str, goal: str) -> None:
    print(f"   {name:52s} {fmt_us(t):>12s}  {ratio(t, base):>8s} {base_name:24s} {goal}")


def print_issue11(m: dict[str, float | None]) -> None:
    numpy_out_c = m["numpy_out_c"]
    print("0. issue 11: 1-element fp32 add, cache hit unless said, default stream unless said")
    print(f"   {'':52s} {'time/call':>12s}  {'ratio':>8s} {'of':24s} goal")
    row("C ABI two-phase, from a C program (native hit)", m["c_hit"], numpy_out_c, "numpy.add(out=)",
        "<= 3x numpy.add(out=)")
    row("  the same on a created stream (sync per 1,000)", m["c_stream_hit"], numpy_out_c, "numpy.add(out=)",
        "<= 1.5x (issue 24)")
    row("Python two-phase (generated wrapper)", m["two"], m.get("torch_out"), "torch.add(out=)",
        "<= 0.3x torch.add(out=)")
    row("Python one-shot ops.add_custom_template(x, y)", m["one"], m.get("torch_new"), "torch.add(x, y)",
        "<= 1.0x torch.add")
    # The two µs goals with their ratio to the interleaved Python two-phase (a gauge of the load).
    row("cache miss (first call of a shape: infer + tile)", m["miss"], m["two"], "Python two-phase", "<= 25 us")
    row("  the same miss in Python (a phase hook on)", m["miss_py"], m["two"], "Python two-phase", "")
    row("  first call of a signature (+ select: key, lookup)", m["miss_sig"], m["two"], "Python two-phase", "")
    row("op_fallback syn_exec_aclnn", m.get("syn"), m["two"], "Python two-phase", "<= 5 us")
    row("  C ABI native miss (Python cache hit)", m["c_native_miss"], numpy_out_c, "numpy.add(out=)", "")
    row("  numpy.add(x, y, out=z)", m["numpy_out"], m["numpy_out"], "numpy.add(out=)", "")
    row("  torch.add(x, y, out=z)", m.get("torch_out"), m.get("torch_out"), "torch.add(out=)", "")
    row("  torch.add(x, y)", m.get("torch_new"), m.get("torch_new"), "torch.add(x, y)", "")
    base = m["cps_1"]
    if base:
        cells = ", ".join(f"{n}: {m[f'cps_{n}']:,.0f}/s ({m[f'cps_{n}'] / base:.2f}x)" for n in C_THREADS)  # type: ignore[operator]
        print(f"   C ABI calls/s by C threads: {cells}   (machine: {os.cpu_count()} CPUs)")
    print()


def print_issue24(m: dict[str, float | None]) -> None:
    """Issue 24's four rows, side by side from one run."""
    print("issue 24: 1-element fp32 AddCustomTemplate, cache hit unless said")
    print(f"   {'':52s} {'time/call':>12s}  {'ratio':>8s} {'of':24s} goal")
    row("C ABI two-phase, created stream, sync per 1,000", m["c_stream_hit"], m["numpy_out_c"], "numpy.add(out=)",
        "<= 1.5x numpy.add(out=)")
    row("  (the same on the default stream)", m["c_hit"], m["numpy_out_c"], "numpy.add(out=)", "")
    row("Python two-phase (generated wrapper)", m["two"], m.get("torch_out"), "torch.add(out=)",
        "<= 0.3x torch.add(out=)")
    row("Python one-shot ops.add_custom_template(x, y)", m["one"], m.get("torch_new"), "torch.add(x, y)",
        "<= 0.7x torch.add")
    row("cache miss (first call of a shape: infer + tile)", m["miss"], m["two"], "Python two-phase", "<= 15 us")
    row("  the same miss in Python (a phase hook on)", m["miss_py"], m["miss"], "the miss above", "")
    row("  numpy.add(x, y, out=z) (after the C program)", m["numpy_out_c"], m["numpy_out_c"], "numpy.add(out=)", "")
    row("  torch.add(x, y, out=z)", m.get("torch_out"), m.get("torch_out"), "torch.add(out=)", "")
    row("  torch.add(x, y)", m.get("torch_new"), m.get("torch_new"), "torch.add(x, y)", "")
    print()


def issue_table(ops, package: Path, torch, number: int, repeat: int) -> None:
    print_issue11(measure_table(ops, package, torch, number, repeat))


# ---- 1. host overhead -----------------------------------------------------------------------------

def host_overhead(ops, torch, number: int, repeat: int) -> None:
    (x, y, z), two_phase, one_shot, miss = add_calls(ops)
    phase1, phase2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate

    # The Python path of the same wrappers (the reference the C fast path wraps, when it is built).
    py1, py2 = getattr(phase1, "__wrapped__", phase1), getattr(phase2, "__wrapped__", phase2)

    def two_phase_python():
        size, ex = py1(x, y, z)
        py2(None, size, ex, None)

    two_phase()
    assert z[0] == 2.0
    results = {
        "opbuild two-phase (cache hit)": per_call(two_phase, number, repeat),
        "  ... Python path (no C fast path)": per_call(two_phase_python, number, repeat),
        "opbuild one-shot (cache hit)": per_call(one_shot, number, repeat),
        "opbuild first call (cache miss)": per_call(miss, max(number // 50, 20), repeat),
        "  phase 1 only (cache hit)": per_call(lambda: phase1(x, y, z), number, repeat),
    }
    ex = phase1(x, y, z)[1].set_repeatable()
    results["  phase 2 only (repeatable executor)"] = per_call(lambda: phase2(None, 0, ex, None), number, repeat)
    numpy_t = per_call(lambda: np.add(x, y, out=z), number, repeat)
    torch_t = None
    if torch is not None:
        tx, ty, tz = torch.ones(1), torch.ones(1), torch.empty(1)
        torch.add(tx, ty, out=tz)
        torch_t = per_call(lambda: torch.add(tx, ty, out=tz), number, repeat)
    rt.clear_op_cache()

    print("1. host overhead, 1-element fp32 add, default stream")
    print(f"   {'':38s} {'time/call':>12s}  {'vs torch':>8s}  {'vs numpy':>8s}")
    for name, t in results.items():
        print(f"   {name:38s} {fmt_us(t):>12s}  {ratio(t, torch_t):>8s}  {ratio(t, numpy_t):>8s}")
    print(f"   {'torch.add(x, y, out=z)':38s} {fmt_us(torch_t):>12s}  {ratio(torch_t, torch_t):>8s}  {ratio(torch_t, numpy_t):>8s}")
    print(f"   {'numpy.add(x, y, out=z)':38s} {fmt_us(numpy_t):>12s}  {ratio(numpy_t, torch_t):>8s}  {ratio(numpy_t, numpy_t):>8s}")
    goal = results["opbuild two-phase (cache hit)"]
    print(f"   goal: two-phase <= 1.0x torch -> {ratio(goal, torch_t).strip()} "
          f"({'met' if torch_t and goal <= torch_t else 'not met' if torch_t else 'torch not installed'})")


# ---- 2. throughput ----------------------------------------------------------------------------------

def throughput(ops, torch, n: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    z = np.empty(n, np.float32)
    phase1, phase2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate

    def ours():
        size, ex = phase1(x, y, z)
        phase2(None, size, ex, None)

    ours()
    if not np.array_equal(z, x + y):
        raise SystemExit("AddCustomTemplate gave a wrong result")
    number = 5
    t_ours = per_call(ours, number, repeat)
    t_np = per_call(lambda: np.add(x, y, out=z), number, repeat)
    t_torch = None
    if torch is not None:
        tx, ty, tz = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(z)
        t_torch = per_call(lambda: torch.add(tx, ty, out=tz), number, repeat)
    nbytes = 3 * n * 4
    _, ex = phase1(x, y, z)
    print(f"\n2. fp32 add of {n:,} elements ({nbytes / 2**20:.0f} MiB moved), simulator threads {device.threads()}, "
          f"block_dim {ex.plan.block_dim}")
    for name, t in (("opbuild AddCustomTemplate", t_ours), ("numpy.add(x, y, out=z)", t_np),
                    (f"torch.add (threads {torch.get_num_threads()})" if torch else "torch.add", t_torch)):
        gbs = "n/a" if t is None else f"{nbytes / t / 1e9:6.1f} GB/s"
        print(f"   {name:38s} {('n/a' if t is None else f'{t * 1e3:8.2f} ms'):>12s}  {gbs}")
    print(f"   goal: >= 1.0x numpy's throughput -> {t_np / t_ours:.2f}x ({'met' if t_np >= t_ours else 'not met'})")


# ---- 3. binary lookup -----------------------------------------------------------------------------

def lookup(n: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / "op_impl/ai_core/tbe/kernel/config/ascend910b/binary_info_config.json"
        config.parent.mkdir(parents=True)
        binaries = [{"coreType": 2, "simplifiedKey": [f"Synth/d=0,p=1/k{i}", f"Synth/d=1,p=1/k{i}"],
                     "binPath": f"ascend910b/synth/Synth_{i}.so", "jsonPath": f"ascend910b/synth/Synth_{i}.json"}
                    for i in range(n)]
        config.write_text(json.dumps({"Synth": {"simplifiedKeyMode": 2, "binaryList": binaries}}))
        t0 = time.perf_counter()
        index = binary_index(root, "ascend910b")
        load = time.perf_counter() - t0
        keys = [f"Synth/d=0,p=1/k{i}" for i in np.random.default_rng(0).integers(0, n, 10_000)]
        by_key = index.by_key

        def dict_lookups():
            for k in keys:
                by_key[k]

        def checked_lookups():
            for k in keys[:1000]:
                binary_index(root, "ascend910b").by_key[k]

        t_dict = per_call(dict_lookups, 1, repeat) / len(keys)
        t_checked = per_call(checked_lookups, 1, repeat) / 1000
        from opbuild.runtime.binaries.selection import nearest_keys

        t0 = time.perf_counter()
        nearest_keys("Synth/d=0,p=1/k12345x", index.keys_by_op["Synth"])
        t_miss = time.perf_counter() - t0
    print(f"\n3. binary lookup, package with {n:,} binaries ({2 * n:,} keys)")
    print(f"   load and index binary_info_config.json   {load * 1e3:9.1f} ms (once per package)")
    print(f"   full key -> binary (index lookup)        {fmt_us(t_dict)}")
    print(f"   ... with the package freshness check     {fmt_us(t_checked)}  (binary_index(): stat of config dir + file)")
    print(f"   miss message (nearest of {2 * n:,} keys)   {t_miss * 1e3:9.1f} ms")
    print(f"   goal: <= 2 us per lookup -> {t_dict * 1e6:.3f} us ({'met' if t_dict <= 2e-6 else 'not met'}); "
          f"with the freshness check {t_checked * 1e6:.2f} us")


# ---- 4. process isolation ---------------------------------------------------------------------

def isolation(ops, number: int, repeat: int) -> None:
    """Two-phase AddCustomTemplate calls (cache hits) in-process and isolated, round robin; then
    isolated calls that each need a new worker (isolation turned off and on again before each:
    that retires the worker), against the same toggling in-process."""
    rows = []
    for n, calls in ((1, number // 10), (1 << 20, max(number // 2000, 5))):
        x = np.ones(n, np.float32)
        y = np.ones(n, np.float32)
        z = np.empty(n, np.float32)
        phase1, phase2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate

        def call():
            size, ex = phase1(x, y, z)
            phase2(None, size, ex, None)

        best = {"in-process": float("inf"), "process": float("inf")}
        for _ in range(repeat):
            for mode in best:
                device.set_isolation(mode)
                call()  # warm (the plan cache, the worker)
                best[mode] = min(best[mode], timeit.timeit(call, number=calls) / calls)
        device.set_isolation()
        assert (z == 2).all()
        rows.append((n, best["in-process"], best["process"]))
        if n == 1:
            fresh = {"in-process": float("inf"), "process": float("inf")}
            for _ in range(repeat):
                for mode in fresh:
                    def fresh_call(mode=mode):
                        device.set_isolation("in-process")
                        device.set_isolation(mode)
                        call()
                    fresh[mode] = min(fresh[mode], timeit.timeit(fresh_call, number=calls // 10) / (calls // 10))
            device.set_isolation()
            new_worker = (fresh["in-process"], fresh["process"])
    print(f"\n4. process isolation (OPBUILD_ISOLATION=process): fp32 AddCustomTemplate two-phase call, cache hit, "
          f"simulator threads {device.threads()}")
    print(f"   {'elements':>10s} {'in-process':>14s} {'isolated':>14s} {'ratio':>8s} {'isolation cost/launch':>22s}")
    for n, t_in, t_iso in rows:
        print(f"   {n:>10,d} {fmt_us(t_in):>14s} {fmt_us(t_iso):>14s} {ratio(t_iso, t_in):>8s} "
              f"{fmt_us(t_iso - t_in):>22s}")
    t_in, t_iso = new_worker
    print(f"   {'1, new worker':>10s} {fmt_us(t_in):>14s} {fmt_us(t_iso):>14s} {ratio(t_iso, t_in):>8s} "
          f"{fmt_us(t_iso - t_in):>22s}  (set_isolation twice per call in both columns)")


def _fastpath_type() -> tuple[type, ...]:
    try:
        from opbuild.runtime import _fastpath
    except ImportError:
        return ()
    return (_fastpath.Phase2,)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package", default=str(REPO / "out/opp/vendors/customize"), help="a built sample package")
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--elements", type=int, default=16 * 1024 * 1024, help="elements of the throughput add")
    parser.add_argument("--binaries", type=int, default=100_000, help="binaries of the lookup package")
    parser.add_argument("--only", choices=("isolation",), help="run one section only")
    parser.add_argument("--issue24", action="store_true", help="only issue 24's rows (section 0's measurements)")
    args = parser.parse_args()
    package = Path(args.package)
    if not (package / "op_api/python/aclnn_ops.py").is_file():
        print(f"no built package at {package}: run `scons ops` first (or pass --package)", file=sys.stderr)
        return 1
    torch = load_torch()
    ops = rt.import_ops(package)
    number, repeat = (5_000, 3) if args.quick else (50_000, 7)
    print(f"python {platform.python_version()}, numpy {np.__version__}, torch {torch.__version__ if torch else 'not installed'}, "
          f"{os.cpu_count()} CPUs, simulator threads {device.threads()}, fast pointers {executor._FAST_POINTERS}, "
          f"C fast path {'on' if isinstance(ops.aclnnAddCustomTemplate, _fastpath_type()) else 'off'}\n")
    if args.issue24:
        print_issue24(measure_table(ops, package, torch, number, repeat))
        return 0
    if args.only == "isolation":
        isolation(ops, number, repeat)
        return 0
    issue_table(ops, package, torch, number, repeat)
    host_overhead(ops, torch, number, repeat)
    throughput(ops, torch, args.elements, 3 if args.quick else 7)
    lookup(args.binaries, 3 if args.quick else 5)
    isolation(ops, number, repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
