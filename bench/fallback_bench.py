"""op_fallback overhead: syn_exec_aclnn against the generated Python wrapper and a direct call of
the dlsym'd function pointers, on a 1-element fp32 AddCustomTemplate, in one run.

    python bench/fallback_bench.py [--opp out/opp] [--quick]

The op API libraries come from `--opp` (an OPP tree built by `scons ops`, e.g. out/opp); without
it the sample ops are built in a temporary directory with `scons ops`.

Rows (nothing is asserted):
  syn_exec_aclnn                      the sync macro: search, ResetCacheThreadLocal, 3 aclTensors
                                      made and destroyed, both phases
  asyn_exec_aclnn + ctx.launch()      the async macro and its phase 2
  generated wrapper (cache hit)       ops.aclnnXGetWorkspaceSize + ops.aclnnX of import_ops
  direct ctypes (pre-made aclTensors) dlsym'd phase 1 + phase 2, prototyped, no conversion
  direct ctypes + ResetCacheThreadLocal  the same with the reset op_fallback makes every call (keeps the cache)
and a breakdown of syn_exec_aclnn: the symbol lookups, the argument conversion + release.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import opbuild.runtime as rt  # noqa: E402
from opbuild.runtime import device  # noqa: E402
from opbuild.runtime import fallback as fb  # noqa: E402

VP = ctypes.c_void_p


def per_call(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def build_opp(tmp: Path) -> Path:
    """The sample ops built into <tmp>/out/opp by `scons ops`."""
    shutil.copy(REPO / "SConstruct", tmp / "SConstruct")
    shutil.copytree(REPO / "ops", tmp / "ops")
    subprocess.run([sys.executable, "-m", "SCons", "-C", str(tmp), "-Q", "ops", "-j2"], check=True,
                   stdout=subprocess.DEVNULL)
    return tmp / "out" / "opp"


def run(opp: Path, number: int, repeat: int) -> None:
    os.environ["ASCEND_OPP_PATH"] = str(opp)
    os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
    os.environ.pop("ASCEND_HOME_PATH", None)
    address, lib_path = fb.find_op_api("aclnnAddCustomTemplate")
    package = Path(lib_path).resolve().parents[2]
    x = np.ones(1, np.float32)
    y = np.ones(1, np.float32)
    z = np.zeros(1, np.float32)
    ctx = fb.OpExecuteContext()

    # 1. the sync macro
    def syn():
        fb.syn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, z)

    assert fb.syn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, z) == 0, ctx.last_error
    assert z[0] == 2.0

    # 2. the async macro + launch
    def asyn():
        fb.asyn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, z)
        ctx.launch()

    # 3. the generated Python wrapper (cache hit)
    ops = rt.import_ops(package)
    phase1, phase2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate

    def wrapper():
        size, ex = phase1(x, y, z)
        phase2(None, size, ex, None)

    # 4. the dlsym'd pointers with pre-made aclTensors
    from opbuild.runtime.capi import acl_library

    acl = acl_library()
    create = acl["aclCreateTensor"]
    create.restype = VP
    create.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                       ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64, VP]
    destroy = acl["aclDestroyTensor"]
    destroy.argtypes = [VP]
    dims = (ctypes.c_int64 * 1)(1)
    tensors = [create(dims, 1, 0, None, 0, 2, None, 0, a.ctypes.data) for a in (x, y, z)]
    gws = fb.get_op_api_func("aclnnAddCustomTemplateGetWorkspaceSize")
    gws.argtypes = [VP, VP, VP, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(VP)]
    exe = fb.get_op_api_func("aclnnAddCustomTemplate")
    exe.argtypes = [VP, ctypes.c_uint64, VP, VP]
    reset = fb.get_op_api_func("ResetCacheThreadLocal")
    reset.restype = None
    reset.argtypes = []
    ws, ex = ctypes.c_uint64(), VP()
    pws, pex = ctypes.byref(ws), ctypes.byref(ex)
    tx, ty, tz = tensors

    def direct():
        gws(tx, ty, tz, pws, pex)
        exe(None, ws.value, ex, None)

    def direct_reset():
        reset()
        gws(tx, ty, tz, pws, pex)
        exe(None, ws.value, ex, None)

    z[0] = 0
    direct()
    assert z[0] == 2.0

    # breakdown of syn_exec_aclnn
    def lookups():
        fb._resolve("aclnnAddCustomTemplate", None)

    acl_fns = fb._get_acl()

    def convert():
        fb._release(fb._convert_args(acl_fns, (x, y, z)).owned)

    rows = {
        "syn_exec_aclnn": per_call(syn, number, repeat),
        "asyn_exec_aclnn + ctx.launch()": per_call(asyn, number, repeat),
        "generated wrapper (cache hit)": per_call(wrapper, number, repeat),
        "direct ctypes (pre-made aclTensors)": per_call(direct, number, repeat),
        "direct ctypes + ResetCacheThreadLocal": per_call(direct_reset, number, repeat),
        "  syn_exec: 3 symbol lookups": per_call(lookups, number, repeat),
        "  syn_exec: convert 3 tensors + release": per_call(convert, number, repeat),
        "  ResetCacheThreadLocal alone": per_call(reset, number, repeat),
    }
    for t in tensors:
        destroy(t)
    rt.clear_op_cache()
    base_wrapper = rows["generated wrapper (cache hit)"]
    base_direct = rows["direct ctypes (pre-made aclTensors)"]
    print("op_fallback host overhead, 1-element fp32 AddCustomTemplate, default stream")
    print(f"  {'':42s} {'us/call':>9s}  {'vs wrapper':>10s}  {'vs direct':>9s}")
    for name, t in rows.items():
        print(f"  {name:42s} {t * 1e6:9.2f}  {t / base_wrapper:9.2f}x  {t / base_direct:8.2f}x")
    print("  (ResetCacheThreadLocal keeps the op-parameter cache, as CANN's: every row is a cache hit; the\n"
          "   direct rows take the C ABI's native hit path)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--opp", help="an OPP tree (ASCEND_OPP_PATH) with libcust_opapi.so; default: build one")
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    number, repeat = (500, 3) if args.quick else (5_000, 5)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"simulator threads {device.threads()}\n")
    if args.opp:
        opp = Path(args.opp).resolve()
        if not (opp / "vendors" / "config.ini").is_file():
            print(f"{opp} is not an OPP tree (no vendors/config.ini)", file=sys.stderr)
            return 1
        run(opp, number, repeat)
        return 0
    with tempfile.TemporaryDirectory(prefix="fallback_bench") as tmp:
        run(build_opp(Path(tmp)), number, repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
