"""Build and run Ascend C kernels for the tests, the way the build and the launch shim will.

`build(workdir, specs)` compiles every KernelSpec (in parallel) with the kernel compile line of the
Ascend C contract: g++ -std=c++17 -O2 -fPIC -fvisibility=hidden -Wall -DASCENDC_CPU_DEBUG=1
<macros> -DOPBUILD_SOC_UB_SIZE -DOPBUILD_SOC_CORE_NUM -include <tiling header> -I<include>/ascendc
-I<include>, links it with a shim that calls opbuild::ascendc::run_block, and loads the .so with
opbuild.runtime.device. `run(...)` launches it with numpy inputs and returns the output arrays.
"""

from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from opbuild.abi.kernel_launch import tiling_argument
from opbuild.runtime import device

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "opbuild" / "runtime" / "native" / "include"
UB_SIZE = 196608  # ascendc910b's UB bytes per core
CORE_NUM = 8  # a small SoC, so that the block-dim check is cheap to trigger

SHIM = r"""
#include "opbuild_ascendc/launch.h"

extern "C" void %(entry)s(%(params)s);
static void invoke(void *const *a) { %(entry)s(%(call)s); }

extern "C" __attribute__((visibility("default"))) int32_t opbuild_kernel_launch(
        void *const *args, uint32_t nargs, uint32_t block_idx, uint32_t block_num, opbuild_sync_all_fn sync,
        void *sync_ctx, char *err, uint32_t errlen) {
    if (args == nullptr || nargs != %(nargs)d) {
        snprintf(err, errlen, "%(entry)s takes %(nargs)d arguments, got %%u", nargs);
        return 2;
    }
    uint64_t key = 0;
    if (args[%(nargs)d - 1] != nullptr) memcpy(&key, (const uint8_t *)args[%(nargs)d - 1] + %(key_offset)d, sizeof key);
    return opbuild::ascendc::run_block(invoke, args, block_idx, block_num, sync, sync_ctx, key, err, errlen);
}
"""


@dataclass
class KernelSpec:
    """One kernel binary: source text, entry, argument count, tiling struct and macros."""

    name: str  # binary name (OPBUILD_BINARY_NAME) and file stem
    source: str
    entry: str
    nargs: int  # GM arguments, the last being the tiling
    tiling_fields: Sequence[tuple[str, str]]  # (C type, name) of the kernel-side tiling struct
    macros: dict[str, str] = field(default_factory=dict)
    ub_size: int = UB_SIZE
    core_num: int = CORE_NUM
    include_dirs: Sequence[Path] = ()  # the source's own directory, for its local headers

    @property
    def tiling_size(self) -> int:
        return struct.calcsize("@" + "".join(_FMT[t] for t, _ in self.tiling_fields)) if self.tiling_fields else 0


_FMT = {"uint32_t": "I", "int32_t": "i", "float": "f", "uint64_t": "Q", "int64_t": "q"}


@dataclass
class Kernel:
    spec: KernelSpec
    binary: device.KernelBinary

    def tiling(self, key: int = 0, **values: float) -> bytes:
        """The tiling argument: the struct's fields (native alignment, as the C struct), then the key."""
        fmt = "@" + "".join(_FMT[t] for t, _ in self.spec.tiling_fields)
        missing = {n for _, n in self.spec.tiling_fields} - values.keys()
        assert not missing, f"tiling fields without a value: {missing}"
        data = struct.pack(fmt, *(values[n] for _, n in self.spec.tiling_fields)) if self.spec.tiling_fields else b""
        return tiling_argument(data, len(data), key)

    def run(self, inputs: Sequence[np.ndarray | None], outputs: Sequence[np.ndarray], block_dim: int, tiling: bytes,
            workspace: int = 0, intercore_sync: bool = False, raw: Sequence[device.DeviceBuffer] = ()) -> list[np.ndarray]:
        """Launch with device copies of inputs (None: a null pointer; `raw` buffers are passed
        as they are, first) and outputs (their initial contents); returns the outputs after."""
        bufs = list(raw) + [None if a is None else device.upload(np.ascontiguousarray(a)) for a in inputs]
        outs = [device.upload(np.ascontiguousarray(o)) for o in outputs]
        ws = device.malloc(workspace) if workspace else None
        tb = device.upload(np.frombuffer(tiling, dtype=np.uint8))
        args = [None if b is None else b.address for b in bufs] + [o.address for o in outs]
        args += [ws.address if ws else None, tb.address]
        assert len(args) == self.spec.nargs, f"{self.spec.entry} takes {self.spec.nargs} arguments, given {len(args)}"
        device.launch(self.binary, args, block_dim, intercore_sync=intercore_sync)
        return [o.to_numpy(out.dtype, out.size).reshape(out.shape) for o, out in zip(outs, outputs)]


def _header(spec: KernelSpec) -> str:
    fields = "".join(f"    {t} {n};\n" for t, n in spec.tiling_fields)
    return (f"/* kernel-side tiling of {spec.name} (written by hand, as the build's generated one) */\n"
            "#include <stdint.h>\n"
            f"struct {spec.name}_tiling {{\n{fields}}};\n"
            f"#define OPBUILD_ASCENDC_TILING_TYPE {spec.name}_tiling\n")


def compile_flags(spec: KernelSpec, workdir: Path) -> list[str]:
    macros = [f"-D{k}={v}" for k, v in spec.macros.items()]
    return ["g++", "-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall", "-DASCENDC_CPU_DEBUG=1", *macros,
            f'-DOPBUILD_BINARY_NAME="{spec.name}"', f"-DOPBUILD_SOC_UB_SIZE={spec.ub_size}",
            f"-DOPBUILD_SOC_CORE_NUM={spec.core_num}", "-include", str(workdir / f"{spec.name}_ascendc_tiling.h"),
            *(f"-I{d}" for d in spec.include_dirs), f"-I{INCLUDE / 'ascendc'}", f"-I{INCLUDE}"]


def build(workdir: Path, specs: Sequence[KernelSpec]) -> dict[str, Kernel]:
    """Compile and load every spec (one g++ per binary, run in parallel)."""
    procs = []
    for spec in specs:
        (workdir / f"{spec.name}_ascendc_tiling.h").write_text(_header(spec))
        (workdir / f"{spec.name}.cpp").write_text(spec.source)
        key_offset = len(tiling_argument(b"\0" * spec.tiling_size, spec.tiling_size, 0)) - 8
        params = ", ".join(["GM_ADDR"] * spec.nargs)
        call = ", ".join(f"(GM_ADDR)a[{i}]" for i in range(spec.nargs))
        (workdir / f"{spec.name}_shim.cpp").write_text(
            SHIM % {"entry": spec.entry, "params": params, "call": call, "nargs": spec.nargs, "key_offset": key_offset})
        out = workdir / f"{spec.name}.so"
        cmd = compile_flags(spec, workdir) + ["-shared", str(workdir / f"{spec.name}.cpp"),
                                              str(workdir / f"{spec.name}_shim.cpp"), "-o", str(out)]
        procs.append((spec, out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    kernels = {}
    for spec, out, proc in procs:
        log, _ = proc.communicate()
        assert proc.returncode == 0, f"g++ failed for {spec.name}:\n{log}"
        kernels[spec.name] = Kernel(spec, device.load_kernel(out, label=f"binary {spec.name}"))
    return kernels
