"""Test harness for the op kernels and tiling functions, independent of opbuild's build.

It does by hand what the build and the runtime do (the kernel/tiling contract):

* reads `ops/<op>/op.yaml` with plain PyYAML (no dependency on the spec loader),
* writes the per-op `<op_snake>_tiling.h` and a launch shim exporting `opbuild_kernel_launch`
  (or, with generator="real", takes both and the macros from opbuild.spec + opbuild.codegen),
* compiles one kernel `.so` per binary with that binary's macros, and every op's `tiling.c` into
  one `libcust_opmaster_rt2.0.so`, all with `-Wall -Wextra -Werror`,
* fills a `TilingContext` with `opbuild.runtime.host.tiling_context.build_tiling_context`, runs tiling,
  then runs all blocks either on host threads (`block_runner.c`: one thread per block plus a
  barrier for `intercore_sync` kernels) or on the device simulator (`opbuild.runtime.device`).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import yaml

from opbuild.abi import ge_types
from opbuild.abi.kernel_launch import tiling_argument
from opbuild.abi.tensor_list import pack_tensor_list
from opbuild.runtime.host.tiling_context import ContextHolder, build_tiling_context, new_key_buffer

REPO = Path(__file__).resolve().parents[2]
OPS_DIR = REPO / "ops"
NATIVE_INCLUDE = REPO / "opbuild" / "runtime" / "native" / "include"
HERE = Path(__file__).resolve().parent
CC = os.environ.get("CC", "cc")
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
COMMON_FLAGS = ["-std=gnu11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", *WARNINGS]  # as the host toolchain

TILING_FIELD_C = {
    "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t",
    "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t", "float": "float", "double": "double",
}


# ---- spec ------------------------------------------------------------------------------------


@dataclass
class BinaryInfo:
    name: str
    dtypes: dict[str, str]           # tensor name -> dtype
    formats: dict[str, str]          # tensor name -> format
    attr_when: dict[str, Any]        # attr name -> pinned value
    deterministic: str = "ignore"


@dataclass
class OpInfo:
    op: str
    snake: str
    op_dir: Path
    inputs: list[tuple[str, str]]    # (name, param_type)
    outputs: list[str]
    attrs: list[tuple[str, str, Any]]  # (name, type, default)
    tiling_data: list[tuple[str, str, int]]
    kernel_source: str
    kernel_entry: str
    intercore_sync: bool
    tiling_source: str
    tiling_function: str
    key_callback: str | None
    binaries: list[BinaryInfo] = field(default_factory=list)

    def binary(self, name: str) -> BinaryInfo:
        for b in self.binaries:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def macro_prefix(self) -> str:
        return self.snake.upper()


def load_op(op_dir: Path) -> OpInfo:
    raw = yaml.safe_load((op_dir / "op.yaml").read_text())
    inputs = [(p["name"], p.get("param_type", "required")) for p in raw["inputs"]]
    outputs = [p["name"] for p in raw["outputs"]]
    attrs = [(a["name"], a["type"], a.get("default")) for a in raw.get("attrs", []) or []]
    tensor_names = [n for n, _ in inputs] + outputs
    default_formats = {}
    for p in raw["inputs"] + raw["outputs"]:
        default_formats[p["name"]] = (p.get("formats") or ["ND"])[0]
    binaries = []
    for b in raw["binaries"]:
        dtypes, formats, attr_when = {}, {}, {}
        for k, v in b["when"].items():
            if k in tensor_names:
                if isinstance(v, dict):
                    dtypes[k] = v["dtype"]
                    formats[k] = v.get("format", default_formats[k])
                else:
                    dtypes[k] = v
                    formats[k] = default_formats[k]
            else:
                attr_when[k] = v
        binaries.append(BinaryInfo(b["name"], dtypes, formats, attr_when, str(b.get("deterministic", "ignore")).lower()))
    cb = (raw.get("simplified_key") or {}).get("callback", "")
    return OpInfo(
        op=raw["op"],
        snake=op_dir.name,
        op_dir=op_dir,
        inputs=inputs,
        outputs=outputs,
        attrs=attrs,
        tiling_data=[(f["name"], f["type"], int(f.get("count", 1))) for f in raw.get("tiling_data", [])],
        kernel_source=raw["kernel"]["source"],
        kernel_entry=raw["kernel"]["entry"],
        intercore_sync=bool(raw["kernel"].get("intercore_sync", False)),
        tiling_source=raw["tiling"]["source"],
        tiling_function=raw["tiling"]["function"],
        key_callback=cb[2:] if isinstance(cb, str) and cb.startswith("c:") else None,
        binaries=binaries,
    )


# ---- generated sources (the contract, written by hand) ----------------------------------------


def render_tiling_header(info: OpInfo) -> str:
    guard = f"OPBUILD_{info.macro_prefix}_TILING_H"
    struct = f"{info.op}TilingData"
    lines = [f"#ifndef {guard}", f"#define {guard}", "#include <stdint.h>", f"typedef struct {struct} {{"]
    for name, typ, count in info.tiling_data:
        arr = f"[{count}]" if count > 1 else ""
        lines.append(f"    {TILING_FIELD_C[typ]} {name}{arr};")
    lines += [f"}} {struct};", f"#define OPBUILD_TILING_DATA_TYPE {struct}"]
    for i, (name, _) in enumerate(info.inputs):
        lines.append(f"#define {info.macro_prefix}_INPUT_{name.upper()} {i}")
    for i, name in enumerate(info.outputs):
        lines.append(f"#define {info.macro_prefix}_OUTPUT_{name.upper()} {i}")
    for i, (name, _, _) in enumerate(info.attrs):
        lines.append(f"#define {info.macro_prefix}_ATTR_{name.upper()} {i}")
    lines.append("#endif")
    return "\n".join(lines) + "\n"


def render_launch_shim(info: OpInfo) -> str:
    n = len(info.inputs) + len(info.outputs) + 2
    params = ", ".join(["GM_ADDR"] * n)
    call = ", ".join(f"(GM_ADDR)args[{i}]" for i in range(n))
    return f"""#include "opbuild/kernel.h"
#include "{info.snake}_tiling.h"

__thread opbuild_kernel_state opbuild_kernel_state_ __attribute__((visibility("hidden")));
/* the tiling key follows the tiling data (at least 1 byte) at the next 8-byte boundary */
#define TILING_KEY_OFFSET (((sizeof({info.op}TilingData) > 0 ? sizeof({info.op}TilingData) : 1) + 7u) / 8u * 8u)

KERNEL_ENTRY void {info.kernel_entry}({params});

__attribute__((visibility("default"))) int32_t opbuild_kernel_launch(void *const *args, uint32_t nargs,
        uint32_t block_idx, uint32_t block_num, opbuild_sync_all_fn sync, void *sync_ctx, char *err, uint32_t errlen) {{
    if (nargs != {n}u) {{
        snprintf(err, errlen, "%s: expected {n} arguments, got %u", OPBUILD_BINARY_NAME, nargs);
        return 1;
    }}
    opbuild_kernel_state *s = opbuild_kernel_begin(block_idx, block_num, sync, sync_ctx);
    if (args[{n - 1}]) memcpy(&s->tiling_key, (const char *)args[{n - 1}] + TILING_KEY_OFFSET, sizeof(uint64_t));
    {info.kernel_entry}({call});
    if (s->error[0] != '\\0') {{
        snprintf(err, errlen, "%s", s->error);
        return 1;
    }}
    return 0;
}}
"""


def c_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise TypeError(f"no C literal for {value!r}")


def binary_macros(info: OpInfo, binary: BinaryInfo) -> list[str]:
    macros = []
    for name in [n for n, _ in info.inputs] + info.outputs:
        dt = binary.dtypes[name]
        up = name.upper()
        macros += [
            f"-DDTYPE_{up}={ge_types.DTYPE_C_TYPE[dt]}",
            f"-DORIG_DTYPE_{up}={ge_types.DTYPE_C_ENUM[dt]}",
            f"-DFORMAT_{up}={ge_types.FORMAT_C_ENUM[binary.formats[name]]}",
        ]
    macros += [
        f'-DOPBUILD_BINARY_NAME="{binary.name}"',
        f'-DOPBUILD_OP_TYPE="{info.op}"',
        f"-DOPBUILD_DETERMINISTIC={1 if binary.deterministic == 'true' else 0}",
    ]
    for attr, value in binary.attr_when.items():
        macros.append(f"-DOPBUILD_WHEN_{attr.upper()}={c_literal(value)}")
    return macros


def _cc(args: list[str]) -> None:
    proc = subprocess.run([CC, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"compile failed: {' '.join([CC, *args])}\n{proc.stdout}{proc.stderr}")


@dataclass
class BuiltOp:
    info: OpInfo
    kernels: dict[str, Path]


@dataclass
class Build:
    ops: dict[str, BuiltOp]  # by op type
    tiling_lib: Path
    gen_dir: Path
    runner_lib: Path


def _real_generator(op_dir: Path) -> tuple[str, str, dict[str, list[str]]]:
    """(header, shim, binary -> -D flags) from opbuild's own spec loader and generators."""
    from opbuild.codegen.kernel_src import binary_macros as real_macros
    from opbuild.codegen.kernel_src import render_launch_shim as real_shim
    from opbuild.codegen.tiling import render_tiling_header as real_header
    from opbuild.spec import load_spec

    spec = load_spec(op_dir / "op.yaml")
    flags = {b.name: [f"-D{k}={v}" for k, v in real_macros(spec, b).items()] for b in spec.binaries}
    return real_header(spec), real_shim(spec), flags


def build_ops(op_dirs: Sequence[Path], out_dir: Path, jobs: int = 8, generator: str = "hand") -> Build:
    """Compile every binary of the given ops and one tiling library holding all their tiling.c.

    generator "hand": the header, shim and macros of this module (the contract, independent of
    opbuild's generator); "real": opbuild.spec + opbuild.codegen.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    gen_dir = out_dir / "gen"
    gen_dir.mkdir(exist_ok=True)
    infos = [load_op(d) for d in op_dirs]
    jobs_list = []
    built: dict[str, BuiltOp] = {}
    for info in infos:
        if generator == "real":
            header, shim_src, flags = _real_generator(info.op_dir)
        else:
            header, shim_src = render_tiling_header(info), render_launch_shim(info)
            flags = {b.name: binary_macros(info, b) for b in info.binaries}
        (gen_dir / f"{info.snake}_tiling.h").write_text(header)
        shim = gen_dir / f"{info.snake}_launch.c"
        shim.write_text(shim_src)
        kdir = out_dir / "kernel" / info.snake
        kdir.mkdir(parents=True, exist_ok=True)
        built[info.op] = BuiltOp(info, {})
        for b in info.binaries:
            so = kdir / f"{b.name}.so"
            built[info.op].kernels[b.name] = so
            jobs_list.append([*COMMON_FLAGS, f"-I{NATIVE_INCLUDE}", f"-I{gen_dir}", *flags[b.name],
                              str(info.op_dir / info.kernel_source), str(shim), "-o", str(so)])
    tiling_lib = out_dir / "libcust_opmaster_rt2.0.so"
    jobs_list.append([*COMMON_FLAGS, f"-I{NATIVE_INCLUDE}", f"-I{gen_dir}",
                      *[str(i.op_dir / i.tiling_source) for i in infos], "-o", str(tiling_lib)])
    runner = out_dir / "libblock_runner.so"
    jobs_list.append(["-O2", "-fPIC", "-shared", *WARNINGS, f"-I{NATIVE_INCLUDE}", str(HERE / "block_runner.c"),
                      "-pthread", "-o", str(runner)])
    with ThreadPoolExecutor(jobs) as pool:
        for f in [pool.submit(_cc, j) for j in jobs_list]:
            f.result()
    return Build(built, tiling_lib, gen_dir, runner)


# ---- tiling context and launch ------------------------------------------------------------------


@dataclass(frozen=True)
class Desc:
    """A tensor description without data (dtype name, shape)."""

    dtype: str
    shape: tuple[int, ...]


TensorArg = Desc | np.ndarray
InputArg = TensorArg | list[TensorArg] | None


def _instance(t: TensorArg) -> tuple[str, str, tuple[int, ...], None]:
    if isinstance(t, np.ndarray):
        return (ge_types.dtype_name(t.dtype), "ND", tuple(t.shape), None)
    return (t.dtype, "ND", tuple(t.shape), None)


@dataclass
class TilingOutcome:
    status: int
    error: str
    block_dim: int
    tiling_key: int
    workspace_size: int
    data: bytes


def make_context(info: OpInfo, inputs: Sequence[InputArg], outputs: Sequence[TensorArg],
                 attrs: dict[str, Any] | None, core_num: int, deterministic: int = 0) -> ContextHolder:
    """A TilingContext (opbuild.runtime.host.tiling_context) for one call; attrs default from the spec."""
    attrs = dict(attrs or {})
    ins = [[] if a is None else [_instance(t) for t in (a if isinstance(a, list) else [a])] for a in inputs]
    outs = [[_instance(o)] for o in outputs]
    values = [(typ, attrs.pop(name, default)) for name, typ, default in info.attrs]
    if attrs:
        raise KeyError(f"unknown attrs {sorted(attrs)} for {info.op}")
    return build_tiling_context(info.op, ins, outs, values, "ascend910b", core_num, 192 * 1024,
                                deterministic=deterministic)


def sim_available() -> bool:
    try:
        from opbuild.runtime import device

        device.library_path()
    except Exception:  # noqa: BLE001 - the simulator is optional for these tests
        return False
    return True


class OpRunner:
    """Runs one op's tiling and binaries from a Build.

    backend "threads": tests/ops_c/block_runner.c (intercore_sync kernels: one thread per block;
    others: `threads` workers). backend "sim": the device simulator (opbuild.runtime.device) with
    a pool of `threads` threads.
    """

    def __init__(self, build: Build, op: str, backend: str = "threads") -> None:
        self.build = build
        self.op = build.ops[op]
        self.info = self.op.info
        self.backend = backend
        self.tiling_lib = ctypes.CDLL(str(build.tiling_lib))
        self.runner = ctypes.CDLL(str(build.runner_lib))
        self.runner.opbuild_test_run_blocks.restype = ctypes.c_int32
        self.runner.opbuild_test_run_blocks.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
            ctypes.c_int32, ctypes.c_char_p, ctypes.c_uint32,
        ]
        self._kernels: dict[str, Any] = {}

    def tiling(self, inputs: Sequence[InputArg], outputs: Sequence[TensorArg], attrs: dict[str, Any] | None = None,
               core_num: int = 48, deterministic: int = 0) -> TilingOutcome:
        holder = make_context(self.info, inputs, outputs, attrs, core_num, deterministic)
        holder.ctx.block_dim = 0xFFFFFFFF  # the tiling function must set it
        fn = getattr(self.tiling_lib, self.info.tiling_function)
        fn.restype = ctypes.c_uint32
        fn.argtypes = [ctypes.c_void_p]
        status = fn(holder.ptr)
        data = holder.tiling_data() if status == 0 else b""
        return TilingOutcome(status, holder.error, holder.block_dim, holder.tiling_key, holder.workspace_size, data)

    def gen_key(self, inputs: Sequence[InputArg], outputs: Sequence[TensorArg], attrs: dict[str, Any] | None = None,
                prefix: bytes = b"") -> tuple[int, str, str]:
        """Call the C GenSimplifiedKey callback: (status, key, error)."""
        assert self.info.key_callback
        holder = make_context(self.info, inputs, outputs, attrs, 48)
        fn = getattr(self.tiling_lib, self.info.key_callback)
        fn.restype = ctypes.c_uint32
        fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        key = new_key_buffer()
        key.value = prefix
        status = fn(holder.ptr, key)
        return status, key.value.decode(), holder.error

    def _kernel(self, binary: str) -> Any:
        if binary not in self._kernels:
            path = self.op.kernels[binary]
            if self.backend == "sim":
                from opbuild.runtime import device

                self._kernels[binary] = device.load_kernel(path)
            else:
                self._kernels[binary] = ctypes.CDLL(str(path))
        return self._kernels[binary]

    def launch(self, binary: str, args: list[int | None], block_dim: int, threads: int) -> None:
        if self.backend == "sim":
            from opbuild.runtime import device

            device.set_threads(threads)
            try:
                device.launch(self._kernel(binary), args, block_dim, intercore_sync=self.info.intercore_sync)
            except device.DeviceError as e:
                raise RuntimeError(f"{binary}: kernel failed: {e}") from None
            return
        argv = (ctypes.c_void_p * len(args))(*args)
        err = ctypes.create_string_buffer(512)
        launch = ctypes.cast(self._kernel(binary).opbuild_kernel_launch, ctypes.c_void_p)
        rc = self.runner.opbuild_test_run_blocks(launch, argv, len(args), block_dim, threads,
                                                 1 if self.info.intercore_sync else 0, err, 512)
        if rc != 0:
            raise RuntimeError(f"{binary}: kernel failed: {err.value.decode(errors='replace')}")

    def run(self, binary: str, inputs: Sequence[np.ndarray | list[np.ndarray]], out_shapes: Sequence[tuple[int, ...]],
            attrs: dict[str, Any] | None = None, core_num: int = 48, deterministic: int | None = None,
            threads: int = 3, tiling_key: int | None = None) -> tuple[list[np.ndarray], TilingOutcome]:
        """Tiling + launch of one binary; returns the outputs and the tiling outcome. `tiling_key`
        launches with that key instead of the tiling's (to test a kernel's TILING_KEY_IS branches)."""
        b = self.info.binary(binary)
        if deterministic is None:
            deterministic = 1 if b.deterministic == "true" else 0
        outs = []
        for name, shape in zip(self.info.outputs, out_shapes):
            o = np.empty(shape, dtype=ge_types.numpy_dtype(b.dtypes[name]))
            o.reshape(-1).view(np.uint8).fill(0x7E)  # garbage (a NaN pattern for floats): all must be written
            outs.append(o)
        ins = [[np.require(a, requirements="C") for a in x] if isinstance(x, list) else np.require(x, requirements="C")
               for x in inputs]
        t = self.tiling(ins, outs, attrs, core_num, deterministic)
        if t.status != 0:
            raise RuntimeError(f"{binary}: tiling failed: {t.error}")
        assert 1 <= t.block_dim <= core_num, t.block_dim
        keep: list[Any] = []
        args: list[int | None] = []
        for x in ins:
            if isinstance(x, list):
                lst = pack_tensor_list([a.ctypes.data for a in x], [a.shape for a in x])
                keep.append(lst)
                args.append(ctypes.addressof(lst))
            else:
                args.append(x.ctypes.data)
        args += [o.ctypes.data for o in outs]
        workspace = None
        if t.workspace_size:
            workspace = np.full(t.workspace_size, 0xCD, dtype=np.uint8)  # garbage: never assume zeroed
            args.append(workspace.ctypes.data)
        else:
            args.append(None)
        key = t.tiling_key if tiling_key is None else tiling_key
        argument = tiling_argument(t.data, len(t.data), key)  # TILING_DATA declares sizeof the struct
        tiling_buf = ctypes.create_string_buffer(argument, len(argument))
        args.append(ctypes.addressof(tiling_buf))
        self.launch(binary, args, t.block_dim, threads)
        del keep, workspace
        return outs, t


def rand(shape: Sequence[int], dtype: str, rng: np.random.Generator, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
    """Random test data of a dtype name (bfloat16 via ml_dtypes)."""
    dt = ge_types.numpy_dtype(dtype)
    if dtype == "int32":
        return rng.integers(-1000, 1000, size=shape, dtype=np.int32)
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(dt)
