"""The build's probe of every tiling function: does it write past its tiling struct?

Before a package's tiling library is installed (the `CHECK libcust_opmaster_rt2.0.so` step), each
AI Core op's tiling function runs once per declared dtype combination on a small call (every
input PROBE_SHAPE, outputs as the op infers them, attribute defaults) with a guard region after a
tiling data buffer of exactly the struct's size (the kernel JSON's opParaSize: what the runtime
gives it). A function that changes the guard, or declares more bytes than the struct has, fails
the build instead of the first call.

The guard shows that a byte changed, not which statement wrote it. So for an op that overruns,
its tiling source is compiled once more with AddressSanitizer (`-g`) and the same call runs in a
child process over a heap buffer of exactly the struct's size: ASan's report names the source
line of the write (the column given is that statement's first character: ASan's symbolizer gives
lines only). Without the sanitizer's runtime (or for an Ascend C op's host source), the problem
is placed at the tiling function's definition instead. A tiling function that refuses the probe
call (it needs other shapes) is not a problem here; what it wrote before refusing is checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from opbuild.spec.model import OpSpec

PROBE_SHAPE = (4, 64)
"""The shape every input of a probe call has."""
PROBE_TIMEOUT = 60
"""Seconds the AddressSanitizer run of one probe call may take."""

_ASAN_FRAME = re.compile(r"^\s*#0 0x[0-9a-f]+ in \S+ (?P<file>[^\s:]+):(?P<line>\d+)", re.M)

_CHILD = r"""
import ctypes, json, sys
from opbuild.runtime.host.tiling_context import build_tiling_context
a = json.loads(sys.argv[1])
lib = ctypes.CDLL(a["lib"])
holder = build_tiling_context(a["op"], [[tuple(t) for t in g] for g in a["inputs"]],
                              [[tuple(t) for t in g] for g in a["outputs"]], [tuple(x) for x in a["attrs"]],
                              a["soc"], a["core_num"], a["ub_size"], 0, 0, a["capacity"])
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
holder.ctx.tiling_data = libc.malloc(max(a["capacity"], 1))  # exactly the struct: ASan's redzone after it
fn = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)(ctypes.cast(getattr(lib, a["symbol"]), ctypes.c_void_p).value)
fn(holder.ptr)
"""


def check_tiling_overruns(specs: list[OpSpec], tiling_lib: Path) -> list[str]:
    """One line per op whose tiling function writes past its struct on a probe call (see the
    module docstring): `<tiling source>:line:col: Op: tiling function ... wrote past ...`."""
    from opbuild.abi.platform import platform
    from opbuild.codegen.tiling import tiling_struct_size
    from opbuild.keys.check import attr_samples
    from opbuild.runtime.host.c_callbacks import _TILING_FN, CallbackError, TilingLibrary, _attr_items
    from opbuild.runtime.host.op_proto import InferError, infer_outputs
    from opbuild.runtime.host.tiling_context import TilingContextError, build_tiling_context

    library = TilingLibrary(tiling_lib)
    problems: list[str] = []
    for spec in specs:
        if spec.tiling is None:
            continue
        soc = spec.socs[0]
        info = platform(soc)
        capacity = tiling_struct_size(spec)
        attrs = [attr_samples(spec, a)[0] for a in spec.attrs]
        fn = library.symbol(spec.tiling_ref.symbol, _TILING_FN)
        for column, choice in enumerate(spec.combinations()):
            # (dtype, format, shape, storage shape) per tensor of each parameter, as build_tiling_context takes
            inputs: list[list[tuple[str, str, tuple[int, ...], None]]] = [
                [(choice[p.name].dtype, p.format_at(column), PROBE_SHAPE, None)] for p in spec.inputs]
            try:
                shapes = [s for s, _ in infer_outputs(library, spec, inputs, attrs, soc=soc, core_num=info.core_num,
                                                      ub_size=info.ub_size, dtypes=False)]
            except (InferError, CallbackError, OSError):  # (no inference in the library: the probe shape)
                shapes = [None] * len(spec.outputs)
            outputs = [[(choice[p.name].dtype, p.format_at(column), shape or PROBE_SHAPE, None)]
                       for p, shape in zip(spec.outputs, shapes, strict=True)]
            items = _attr_items(spec, attrs)
            try:
                holder = build_tiling_context(spec.op, inputs, outputs, items, soc, info.core_num, info.ub_size, 0, 0,
                                              capacity)
            except TilingContextError:
                continue
            fn(holder.ptr)
            overrun = holder.overrun()
            size = holder.tiling_data_size
            if overrun is None and size <= capacity:
                continue
            what = (f"wrote past the end of its {capacity}-byte tiling data (struct {spec.tiling_data_struct}, the "
                    f"kernel's opParaSize): byte {capacity + overrun} changed" if overrun is not None else
                    f"declared {size} bytes of tiling data; its struct {spec.tiling_data_struct} has {capacity}")
            call = ", ".join(f"{p.name}={choice[p.name].dtype}{list(g[0][2])}" for p, g in
                             zip([*spec.inputs, *spec.outputs], [*inputs, *outputs], strict=True))
            where = None
            if overrun is not None:
                where = locate_write(spec, {"op": spec.op, "inputs": inputs, "outputs": outputs, "attrs": items,
                                            "soc": soc, "core_num": info.core_num, "ub_size": info.ub_size,
                                            "capacity": capacity, "symbol": spec.tiling_ref.symbol})
            where = where or function_position(spec)
            problems.append(f"{where}: {spec.op}: tiling function {spec.tiling_ref.symbol} {what}, on the build's probe "
                            f"call ({call}; declared combination {column + 1} of {spec.combination_count})")
            break  # (one report per op)
    return problems


def _shown(path: Path) -> str:
    """`path` as the author names it: relative to the project root (the build's working
    directory) when inside it."""
    shown = os.path.relpath(path)
    return str(path) if shown.startswith("..") else shown


def function_position(spec: OpSpec) -> str:
    """`<tiling source>:line:col` of the tiling function's definition (the source alone if not found)."""
    from opbuild.spec import csource

    source = spec.op_dir / spec.tiling_ref.source
    try:
        found = csource.definition(csource.c_functions(source.read_text(errors="replace")), spec.tiling_ref.symbol)
    except OSError:
        found = None
    return f"{_shown(source)}:{found.line}:{found.col}" if found else _shown(source)


def _asan_runtime(cc: list[str]) -> str | None:
    """The path of the compiler's AddressSanitizer runtime, None when it has none."""
    try:
        out = subprocess.run([*cc, "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = out.stdout.strip()
    return path if out.returncode == 0 and os.path.isabs(path) and os.path.exists(path) else None


def locate_write(spec: OpSpec, call: dict) -> str | None:
    """`<tiling source>:line:col` of the statement that writes past the struct on `call`, found by
    AddressSanitizer (see the module docstring); None when it cannot be found that way."""
    if spec.is_ascendc:
        return None
    from opbuild.builder.toolchain import HostToolchain, ToolchainError
    from opbuild.codegen.tiling import render_tiling_header, tiling_header_name
    from opbuild.runtime_paths import native_include_dir

    try:
        tc = HostToolchain(cc=os.environ.get("CC") or None)
    except ToolchainError:
        return None
    asan = _asan_runtime(tc.cc)
    if asan is None:
        return None
    source = (spec.op_dir / spec.tiling_ref.source).resolve()
    work = Path(tempfile.mkdtemp(prefix="opbuild-tiling-probe-"))
    try:
        (work / tiling_header_name(spec)).write_text(render_tiling_header(spec))
        lib = work / "probe.so"
        compiled = tc.run([*tc.cc, *tc.common_flags, "-g", "-fno-omit-frame-pointer", "-fsanitize=address",
                           f"-I{native_include_dir()}", f"-I{work}", "-shared", "-o", str(lib), str(source)])
        if compiled.returncode != 0:
            return None
        env = {**os.environ, "LD_PRELOAD": asan, "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
               "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                              *filter(None, [os.environ.get("PYTHONPATH")])])}
        try:
            run = subprocess.run([sys.executable, "-c", _CHILD, json.dumps({**call, "lib": str(lib)})], env=env,
                                 capture_output=True, text=True, timeout=PROBE_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            return None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m = _ASAN_FRAME.search(run.stderr)
    if m is None or Path(m.group("file")).resolve() != source:
        return None
    line = int(m.group("line"))
    try:
        text = source.read_text(errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        return None
    return f"{_shown(source)}:{line}:{len(text) - len(text.lstrip()) + 1}"
