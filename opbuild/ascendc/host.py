"""Build an Ascend C op_host source into a host blob, and describe what it registered.

What: an op's host blob is its op_host sources and a generated bridge TU
(`OPBUILD_ASCENDC_HOST_EXPORTS(<snake>, "<OpType>")`, opbuild_ascendc/host_bridge.h), each
compiled

    g++ -std=c++17 -O2 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -fno-gnu-unique
        -I<native include>/ascendc -I<native include> -c

then merged with `ld -r --force-group-allocation` and `objcopy --localize-hidden`: only the
bridge's `<snake>_opbuild_{tiling,infer_shape,infer_dtype,describe}` symbols stay global.
Several ops' blobs then link into one shared library (`g++ -shared`) although each op's source
defines its own `optiling::TilingData` and each blob has its own OpDef registry.

The bridge TU is compiled with -Os instead of -O2: it is glue (context set-up, describe's JSON),
and -Os halves its compile time, the larger part of an op's host build.

Why the other flags: the registries and the classes' inline functions are COMDAT members with
hidden visibility. `--force-group-allocation` dissolves the COMDAT groups in the relocatable
link (else the final link would keep one blob's copy of `op_registry()` for all blobs, and
discard sections the other blobs' localized symbols point into), and `-fno-gnu-unique` makes
the function-local statics weak instead of STB_GNU_UNIQUE, which `--localize-hidden` does not
localize.

The commands are the build's own (builder/toolchain.py: `ascendc_host_object_command`,
`host_blob_command`, `localize_command`, `tiling_link_command`), defined once there; the build
plans them as steps (builder/plan.py), `blob_commands` returns them for one op, `build_blob`
runs them.
`describe` builds a blob in a temporary directory, links it into a .so, calls its describe
function through ctypes in a child Python process (loading the library runs the user's OpDef
constructors: a crash there must not take the build down) and returns a HostDescription
(opbuild.ascendc.description). `describe_library` does the same in this process.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from opbuild.abi.ascendc_bridge import BRIDGE_PARTS, CORE_NAME, CORE_SOURCE, bridge_symbol
from opbuild.abi.ascendc_bridge import bridge_source as _bridge_source
from opbuild.ascendc.description import HostDescription, parse_description
from opbuild.ascendc.errors import AscendcHostError
from opbuild.ascendc.tiling_header import kernel_tiling_header
from opbuild.runtime_paths import native_include_dir

__all__ = ["AscendcHostError", "CORE_NAME", "CORE_SOURCE", "HostBuild", "EXPORT_SUFFIXES", "blob_commands", "bridge_source", "build_blob",
           "compile_command", "describe", "describe_library", "export_symbol", "kernel_tiling_header", "link_command",
           "link_shared"]

EXPORT_SUFFIXES = BRIDGE_PARTS
"""The bridge's exports are `<op_snake>_opbuild_<suffix>` (named once: opbuild/abi/ascendc_bridge.py)."""
export_symbol = bridge_symbol


def _toolchain():
    """The host toolchain whose Ascend C commands the build runs (builder/toolchain.py): this
    module runs the very same ones."""
    from opbuild.builder.tiling_lib import _toolchain as host_toolchain

    return host_toolchain()


def compile_command(source: Path | str, output: Path | str, include_dirs: Sequence[Path | str] = (),
                    bridge: bool = False) -> list[str]:
    """The command compiling one host-blob TU (`bridge`: the generated bridge, built for size)."""
    inc = native_include_dir()
    dirs = [*(str(d) for d in include_dirs), str(inc / "ascendc"), str(inc)]
    return _toolchain().ascendc_host_object_command(str(source), str(output), dirs, bridge=bridge)


def bridge_source(op_snake: str, op_type: str) -> str:
    """The text of the generated per-op bridge TU (abi/ascendc_bridge.py); AscendcHostError for
    names that are not C identifiers."""
    try:
        return _bridge_source(op_snake, op_type)
    except ValueError as exc:
        raise AscendcHostError(str(exc)) from None


@dataclass(frozen=True)
class HostBuild:
    """The commands that build one op's host blob: `compiles` (one per source, then the bridge
    core and the op's exports: each is (source, object, command); independent, so they may run at
    once), `link` (ld -r) and `localize` (objcopy). The texts of the generated sources must be
    written first (`generated`: path -> text)."""

    compiles: tuple[tuple[Path, Path, list[str]], ...]
    link: list[str]
    localize: list[str]
    blob: Path
    bridge: Path
    bridge_text: str
    core: Path

    @property
    def generated(self) -> dict[Path, str]:
        return {self.core: CORE_SOURCE, self.bridge: self.bridge_text}

    @property
    def commands(self) -> list[list[str]]:
        return [c for _, _, c in self.compiles] + [self.link, self.localize]


def blob_commands(host_sources: Sequence[Path | str], op_snake: str, op_type: str, work_dir: Path | str, *,
                  include_dirs: Sequence[Path | str] = ()) -> HostBuild:
    """The commands building `<work_dir>/<op_snake>_host_blob.o` from the op's host sources."""
    work = Path(work_dir)
    sources = [Path(s) for s in host_sources]
    if not sources:
        raise AscendcHostError(f"{op_type}: no op_host source given")
    bridge = work / f"{op_snake}_host_bridge.cpp"
    core = work / f"{CORE_NAME}.cpp"
    compiles = []
    for i, src in enumerate(sources):
        obj = work / f"{op_snake}_host_{i}_{src.stem}.o"
        compiles.append((src, obj, compile_command(src, obj, include_dirs)))
    for src in (core, bridge):
        obj = work / f"{src.stem}.o"
        compiles.append((src, obj, compile_command(src, obj, bridge=True)))
    joined = work / f"{op_snake}_host_joined.o"
    blob = work / f"{op_snake}_host_blob.o"
    tc = _toolchain()
    link = tc.host_blob_command([str(o) for _, o, _ in compiles], str(joined))
    localize = tc.localize_command(str(joined), str(blob))
    return HostBuild(tuple(compiles), link, localize, blob, bridge, bridge_source(op_snake, op_type), core)


def _run(command: list[str], what: str) -> None:
    _run_all([(command, what)])


def _run_all(jobs: Sequence[tuple[list[str], str]]) -> None:
    """Run independent commands at once (toolchain.run_all); AscendcHostError naming the first that
    failed, with its output."""
    for (_, what), result in zip(jobs, _toolchain().run_all([c for c, _ in jobs]), strict=True):
        if result.returncode != 0:
            raise AscendcHostError(f"{what} failed (exit {result.returncode}):\n{result.output.strip()}")


def build_blob(host_sources: Sequence[Path | str], op_snake: str, op_type: str, work_dir: Path | str, *,
               include_dirs: Sequence[Path | str] = ()) -> Path:
    """Run blob_commands; the blob's path. AscendcHostError with the compiler output naming the
    source that failed."""
    for s in host_sources:
        if not Path(s).is_file():
            raise AscendcHostError(f"{s}: no such op_host source")
    build = blob_commands(host_sources, op_snake, op_type, work_dir, include_dirs=include_dirs)
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    for path, text in build.generated.items():
        path.write_text(text)
    _run_all([(command, f"{src}: compiling the bridge of {op_type}" if src in build.generated else f"{src}: compiling")
              for src, _, command in build.compiles])
    _run(build.link, f"{op_type}: linking the host blob {build.blob}")
    _run(build.localize, f"{op_type}: localizing the host blob {build.blob}")
    return build.blob


def link_command(blobs: Sequence[Path | str], output: Path | str) -> list[str]:
    """The command linking host blobs (and any other objects) into one shared library."""
    return _toolchain().tiling_link_command([str(b) for b in blobs], str(output), cxx=True)


def link_shared(blobs: Sequence[Path | str], output: Path | str) -> Path:
    _run(link_command(blobs, output), f"linking {output}")
    return Path(output)


def describe_library(library: Path | str, op_snake: str, sources: Sequence[str]) -> HostDescription:
    """The HostDescription of the blob of `op_snake` linked into `library` (loaded RTLD_LOCAL)."""
    try:
        lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)
    except OSError as exc:
        raise AscendcHostError(f"{', '.join(sources)}: cannot load the host library: {exc}") from None
    try:
        fn = getattr(lib, export_symbol(op_snake, "describe"))
    except AttributeError:
        raise AscendcHostError(f"{library}: no {export_symbol(op_snake, 'describe')}") from None
    fn.restype = ctypes.c_char_p
    fn.argtypes = []
    return parse_description(fn().decode("utf-8", "replace"), tuple(sources))


_DESCRIBE_SCRIPT = """
import ctypes, sys
fn = getattr(ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL), sys.argv[2])
fn.restype = ctypes.c_char_p
sys.stdout.buffer.write(fn())
"""


def _describe_isolated(library: Path, op_snake: str, sources: Sequence[str]) -> HostDescription:
    """describe_library in a child process; AscendcHostError when loading or describing crashes."""
    where = ", ".join(sources)
    proc = subprocess.run([sys.executable, "-c", _DESCRIBE_SCRIPT, str(library), export_symbol(op_snake, "describe")],
                          capture_output=True)
    if proc.returncode != 0:
        if proc.returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-proc.returncode).name}"
            except ValueError:
                how = f"was killed by signal {-proc.returncode}"
        else:
            how = f"failed (exit {proc.returncode})"
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise AscendcHostError(f"{where}: loading the host library (its OP_ADD constructors and static "
                               f"initializers) {how}" + (f": {detail[-1]}" if detail else ""))
    return parse_description(proc.stdout.decode("utf-8", "replace"), tuple(sources))


def describe(host_sources: Sequence[Path | str], op_snake: str, op_type: str, *,
             include_dirs: Sequence[Path | str] = ()) -> HostDescription:
    """Build the op's host blob in a temporary directory and read what it registered.

    AscendcHostError when a source does not compile (with the compiler output), when the sources
    register no OpDef, more than one, or one of another type than op_type."""
    sources = tuple(str(s) for s in host_sources)
    where = ", ".join(sources)
    with tempfile.TemporaryDirectory(prefix="opbuild-ascendc-") as tmp:
        blob = build_blob(host_sources, op_snake, op_type, tmp, include_dirs=include_dirs)
        library = link_shared([blob], Path(tmp) / f"lib{op_snake}_host.so")
        desc = _describe_isolated(library, op_snake, sources)
    if not desc.ops:
        raise AscendcHostError(f"{where}: no OpDef registered (an `OP_ADD({op_type});` after the op's class)")
    if len(desc.ops) > 1:
        listed = ", ".join(f"{o.op} ({o.file}:{o.line})" for o in desc.ops)
        raise AscendcHostError(f"{where}: {len(desc.ops)} OpDefs registered ({listed}); an op's host sources "
                               f"register exactly one")
    if desc.op.op != op_type:
        raise AscendcHostError(f"{desc.op.file}:{desc.op.line}: OP_ADD({desc.op.op}) registers {desc.op.op}, "
                               f"expected {op_type}")
    return desc
