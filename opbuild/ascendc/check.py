"""`check_ascendc_op`: what `opbuild validate` and the build check of an Ascend C op, and its
lowered spec (opbuild/ascendc/lower.py).

1. the kernel source defines `kernel.entry` as an Ascend C entry
   (`extern "C" __global__ __aicore__ void <entry>(...)`);
2. the host source and its generated bridge compile against opbuild's host headers, and the
   description the bridge gives (its OpDef, tiling class, SoCs) is read back -- in a child
   process, so the host code's static constructors cannot take the checking process down;
3. the kernel is preprocessed as a binary's compile sees it, for its tiling keys (kernel_keys.py);
4. op.yaml is compared with the OpDef and lowered (lower.py).

Compiles are cached by content like the C tiling sources (builder/tiling_lib.py: the same cache
directory and key rules), so a warm `opbuild validate` or build compiles nothing here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from opbuild.abi.ascendc_bridge import bridge_symbol
from opbuild.ascendc.errors import AscendcHostError
from opbuild.builder.stores import LocalStore
from opbuild.fingerprint import Key
from opbuild.runtime_paths import native_include_dir
from opbuild.spec.errors import Problem
from opbuild.spec.model import OpSpec
from opbuild.spec.yaml_marks import Marks
from opbuild.suggest import did_you_mean

FORMAT = "1"
"""Bump when the way a description or key scan is made changes."""

_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)$", re.M)
_ENTRY = re.compile(r'extern\s+"C"\s+(?:(?:__global__|__aicore__|inline|__attribute__\s*\(\([^)]*\)\))\s+)*'
                    r"void\s+(?P<name>[A-Za-z_]\w*)\s*\(")

_DESCRIBE_CHILD = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
fn = getattr(lib, sys.argv[2])
fn.restype = ctypes.c_char_p
text = fn()
sys.stdout.write((text or b"").decode("utf-8", "replace"))
"""
"""Run in a child Python: load the bridge library and print its description."""


class AscendcCheckError(Exception):
    """The sources cannot be checked (no C++ compiler); the message says what is missing."""


def ascendc_include_dirs() -> list[str]:
    """Where Ascend C sources find their headers: include/ascendc (kernel_operator.h, register/,
    exe_graph/, ...) first, then opbuild's C headers the bridge and the launch shim use."""
    base = native_include_dir()
    return [str(base / "ascendc"), str(base)]


def _files_of(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    except OSError:
        return []


def _compile_problems(output: str, sources: dict[Path, str], what: str) -> list[Problem]:
    """The compiler's errors, each at the file the author knows (`sources`: resolved -> shown)."""
    problems = []
    for m in _DIAGNOSTIC.finditer(output):
        file = m.group("file")
        try:
            shown = sources.get(Path(file).resolve(), file)
        except OSError:
            shown = file
        problems.append(Problem(shown, int(m.group("line")), int(m.group("col")),
                                f"{what} does not compile: {m.group('msg')}", ""))
    if not problems:
        last = output.strip().splitlines()[-1] if output.strip() else "the compiler failed"
        first = next(iter(sources.values()), "?")
        problems.append(Problem(first, 1, 1, f"{what} does not compile: {last}", ""))
    return problems


class _Sources:
    """The op's files as compiled for the checks (a temporary work dir, a cache entry)."""

    def __init__(self, spec: OpSpec, marks: Marks) -> None:
        from opbuild.builder.tiling_lib import _toolchain, cache_dir

        self.spec, self.marks = spec, marks
        self.tc = _toolchain()
        if shutil.which(self.tc.cxx[0]) is None:
            raise AscendcCheckError(f"C++ compiler '{self.tc.cxx[0]}' not found on PATH (Ascend C ops are C++; "
                                    f"install g++ or set CXX=<compiler>)")
        self.store = LocalStore(cache_dir(), "validate")
        self.shown_dir = Path(marks.file).parent
        self.op_files = _files_of(spec.op_dir)
        self.include_files = _files_of(native_include_dir())

    def shown(self, source: str) -> str:
        return str(self.shown_dir / source)

    def key(self, kind: str, *texts: str) -> str:
        key = Key(f"ascendc-{kind}").text(FORMAT, self.tc.identity(), *texts)
        for path in [*self.op_files, *self.include_files]:
            key.file(str(path), self.spec.op_dir)
        return f"{self.spec.snake}-{kind}-{key.hexdigest()[:32]}"

    def cached(self, name: str) -> bytes | None:
        return self.store.get(name)

    def keep(self, name: str, data: bytes) -> None:
        try:
            self.store.put(name, data)
        except OSError:
            pass  # a read-only cache: checked again next time

    def known_sources(self) -> dict[Path, str]:
        spec = self.spec
        found = {(spec.op_dir / s.source).resolve(): self.shown(s.source) for s in (spec.kernel_ref, spec.tiling_ref)}
        for path in self.op_files:
            found.setdefault(path.resolve(), str(self.shown_dir / path.relative_to(spec.op_dir)))
        return found


@dataclass(frozen=True)
class AsBuilt:
    """Where the build will compile a host source: its path relative to the project root
    (`ops/<op>/op_host/<x>.cpp`; the file there is a byte-for-byte copy of the one described,
    and so are the files beside it). With it, compile_and_describe compiles the source and the
    bridge core with the build's own commands and records the objects for the build to take
    (builder/reuse.py)."""

    source: str


def _as_built_command(tc, build_source: str, run_source: Path, obj: str, deps: str, bridge: bool) -> list[str]:
    """The build's command for `build_source`, run on `run_source` (the same bytes elsewhere): the
    object records the build's path (-ffile-prefix-map), the compiler lists what it read (-MD)."""
    command = [run_source.as_posix() if word == build_source else word
               for word in tc.ascendc_host_object_command(build_source, obj, ascendc_include_dirs(), bridge=bridge)]
    build_dir, run_dir = os.path.dirname(build_source), str(run_source.parent)
    return [*command, f"-ffile-prefix-map={run_dir}={build_dir}", "-MD", "-MF", deps]


def _record_as_built(tc, build_source: str, run_source: Path, obj: str, deps: str, bridge: bool) -> None:
    """Record the object of one as-built compile (builder/reuse.py) when every file it read is
    opbuild's, the system's or one beside the source (which the import copies); a host source
    that reads another file of its project (`../common/x.h`) is not recorded: the build's copy
    may read another one."""
    from opbuild.builder import reuse
    from opbuild.builder.tiling_lib import cache_dir

    run_dir, build_dir = run_source.parent.resolve(), Path(os.path.dirname(build_source))
    project = None if bridge else run_dir.parent
    files: dict[str, Path] = {}
    for name in reuse.dependencies(Path(deps)):
        path = Path(name) if os.path.isabs(name) else (Path(os.getcwd()) / name)
        real = path.resolve()
        if real.parent == run_dir:
            files[(build_dir / real.name).as_posix()] = real
        elif project is not None and real.is_relative_to(project):
            return
        else:
            files[str(path)] = path
    command = tc.ascendc_host_object_command(build_source, OBJECT_WORD, ascendc_include_dirs(), bridge=bridge)
    reuse.record(cache_dir() / "objects", tc.identity(), command, OBJECT_WORD, files, Path(obj))


OBJECT_WORD = "OBJECT.o"
"""The output word of an as-built command's key (the build's own object path stands there)."""


def compile_and_describe(tc, host_source: Path, bridge: str, symbol: str,
                         as_built: AsBuilt | None = None) -> tuple[dict[str, Any] | None, str, str]:
    """Compile `host_source`, the bridge core and the bridge unit `bridge`, link them alone into
    a shared library and read the description through `symbol` in a child process:
    (description, "", ""), or (None, what failed: "compile" | "link" | "load", the tool's output).
    `as_built`: compile the source and the core as the build will, and record their objects."""
    from opbuild.abi.ascendc_bridge import CORE_SOURCE, ascendc_core_source

    work = Path(tempfile.mkdtemp(prefix="opbuild-ascendc-"))
    try:
        unit, lib = work / "bridge.cpp", work / "bridge.so"
        core_build = ascendc_core_source()
        core = work / os.path.basename(core_build)
        unit.write_text(bridge, encoding="utf-8")
        core.write_text(CORE_SOURCE, encoding="utf-8")
        objects = [str(work / f"{i}.o") for i in range(3)]
        deps = [str(work / f"{i}.d") for i in range(2)]
        if as_built is not None:
            plans = [(as_built.source, host_source, objects[0], deps[0], False),
                     (core_build, core, objects[1], deps[1], True)]
            commands = [_as_built_command(tc, *plan) for plan in plans]
        else:
            plans = []
            commands = [tc.ascendc_host_object_command(str(source), obj, ascendc_include_dirs(), bridge=source != host_source)
                        for source, obj in ((host_source, objects[0]), (core, objects[1]))]
        commands.append(tc.ascendc_host_object_command(str(unit), objects[2], ascendc_include_dirs(), bridge=True))
        for result in tc.run_all(commands):
            if result.returncode != 0:
                return None, "compile", result.output
        for plan in plans:
            try:
                _record_as_built(tc, *plan)
            except OSError:
                pass  # (a read-only cache: the build compiles them)
        result = tc.run(tc.tiling_link_command(objects, str(lib), cxx=True))
        if result.returncode != 0:
            return None, "link", (result.output.strip().splitlines() or ["the linker failed"])[-1]
        try:
            proc = subprocess.run([sys.executable, "-c", _DESCRIBE_CHILD, str(lib), symbol], capture_output=True,
                                  text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return None, "load", "its static initializers ran for 60 s"
        if proc.returncode != 0:
            why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            if proc.returncode < 0:
                why = f"killed by signal {-proc.returncode} ({why})"
            return None, "load", why
        try:
            return json.loads(proc.stdout), "", ""
        except json.JSONDecodeError as exc:
            return None, "load", f"the host bridge's description is not JSON ({exc}); an opbuild bug: please report it"
    finally:
        shutil.rmtree(work, ignore_errors=True)


GENERIC_SNAKE = "opbuild_import"
"""A host source is described through a generic bridge (`opbuild_import_opbuild_describe`): what it
registers does not depend on which op asks, so `opbuild import` and validation share one cached
description of the same source."""


def describe_source(tc, host_source: Path, as_built: AsBuilt | None = None) -> tuple[dict[str, Any] | None, str, str]:
    """compile_and_describe of `host_source` with the generic bridge, cached by content (the
    source, the files beside it -- its headers --, opbuild's headers, the commands, the compiler).
    `as_built`: on a miss, the objects are compiled as the build will and recorded for it."""
    from opbuild.ascendc.host import bridge_source
    from opbuild.builder.tiling_lib import cache_dir

    bridge = bridge_source(GENERIC_SNAKE, "OpbuildImport")
    here = host_source.parent
    key = Key("ascendc-describe").text(FORMAT, tc.identity(), bridge, host_source.name,
                                       *tc.ascendc_host_object_command("SOURCE", "OBJECT", ascendc_include_dirs()))
    for path in [*_files_of(here), *_files_of(native_include_dir())]:
        key.file(str(path), here)
    store = LocalStore(cache_dir(), "validate")
    name = f"describe-{key.hexdigest()[:40]}.json"
    cached = store.get(name)
    if cached is not None:
        return json.loads(cached), "", ""
    description, failed, output = compile_and_describe(tc, host_source, bridge, bridge_symbol(GENERIC_SNAKE, "describe"),
                                                       as_built)
    if description is not None:
        try:
            store.put(name, json.dumps(description).encode())
        except OSError:
            pass  # a read-only cache: described again next time
    return description, failed, output


def describe_host(sources: _Sources) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The host description (parsed JSON), or the problems (compile errors at the author's lines)."""
    spec = sources.spec
    description, failed, output = describe_source(sources.tc, (spec.op_dir / spec.tiling_ref.source).resolve())
    if description is None:
        if failed == "compile":
            return None, _compile_problems(output, sources.known_sources(), "the host source")
        what = "does not link" if failed == "link" else "fails to load"
        return None, [sources.marks.problem(("host", "source"), f"the compiled host source {what}: {output}")]
    return description, []


def scan_kernel_keys(sources: _Sources, header_text: str) -> tuple[tuple[int, ...] | None, list[Problem]]:
    """The kernel's tiling keys (kernel_keys.py), or the problems."""
    from opbuild.ascendc.kernel_keys import PROBE, key_branches, tiling_keys
    from opbuild.codegen.kernel_src import binary_macros

    spec, tc = sources.spec, sources.tc
    macros = binary_macros(spec, spec.binaries[0]) if spec.binaries else {}
    cmd = tc.ascendc_preprocess_command("UNIT", "OUT", macros, ascendc_include_dirs(), "HEADER")
    name = sources.key("keys", *cmd, header_text) + ".json"
    cached = sources.cached(name)
    kernel_shown = sources.shown(spec.kernel_ref.source)
    if cached is not None:
        branches = json.loads(cached)
    else:
        work = Path(tempfile.mkdtemp(prefix="opbuild-ascendc-"))
        try:
            kernel = (spec.op_dir / spec.kernel_ref.source).resolve()
            unit, out, header = work / "scan.cpp", work / "scan.ii", work / "tiling.h"
            header.write_text(header_text, encoding="utf-8")
            unit.write_text(f'#include "{kernel}"\n{PROBE}', encoding="utf-8")
            result = tc.run(tc.ascendc_preprocess_command(str(unit), str(out), macros, ascendc_include_dirs(),
                                                          str(header)))
            if result.returncode != 0:
                return None, _compile_problems(result.output, sources.known_sources(), "the kernel source")
            try:
                found = key_branches(out.read_text(encoding="utf-8", errors="replace"), str(kernel))
            except ValueError as exc:
                return None, [sources.marks.problem(("kernel", "source"), f"cannot read the kernel's tiling keys: "
                                                                          f"{exc}")]
            branches = [[b.line, b.text, b.key] for b in found]
            sources.keep(name, json.dumps(branches).encode())
        finally:
            shutil.rmtree(work, ignore_errors=True)
    problems = [Problem(kernel_shown, line or 1, 1, f"op {spec.op}: TILING_KEY_IS({text}) is not an integer constant "
                                                    f"after preprocessing, so its kernelList entry cannot be named "
                                                    f"(use a literal or a #define)", "")
                for line, text, key in branches if key is None]
    from opbuild.ascendc.kernel_keys import KeyBranch

    return (None if problems else tiling_keys([KeyBranch(*b) for b in branches])), problems


def check_entry(spec: OpSpec, marks: Marks, shown: str) -> list[Problem]:
    try:
        text = (spec.op_dir / spec.kernel_ref.source).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []  # the spec checker reported it
    entries = [m.group("name") for m in _ENTRY.finditer(text)]
    if spec.kernel_ref.symbol in entries:
        return []
    return [marks.problem(("kernel", "entry"), f"kernel.entry {spec.kernel_ref.symbol!r} is not defined in the kernel "
                                               f"source {shown} (expected `extern \"C\" __global__ __aicore__ void "
                                               f"{spec.kernel_ref.symbol}(GM_ADDR ..., GM_ADDR workspace, GM_ADDR tiling)`)"
                                               f"{did_you_mean(spec.kernel_ref.symbol, entries)}")]


def check_ascendc_op(spec: OpSpec, marks: Marks) -> tuple[OpSpec | None, list[Problem]]:
    """(the lowered spec, []) or (None, every problem); see the module docstring."""
    from opbuild.ascendc.lower import ascendc_problems
    from opbuild.codegen.ascendc import render_ascendc_tiling_header

    try:
        sources = _Sources(spec, marks)
    except AscendcCheckError as exc:
        return None, [marks.problem(("host", "source"), f"cannot compile the Ascend C sources to check them: {exc}")]
    problems = check_entry(spec, marks, sources.shown(spec.kernel_ref.source))
    description, found = describe_host(sources)
    problems += found
    if description is None:
        return None, problems
    # the keys are scanned with the kernel-side tiling header the binaries get (their compile needs
    # it, the key values do not): lower once without keys for the header, then with them
    lowered, found = ascendc_problems(spec, marks, description, sources.shown(spec.tiling_ref.source), (0,))
    problems += found
    if lowered is None:
        return None, problems
    header, found = kernel_header(spec, marks, description, sources.shown(spec.tiling_ref.source))
    problems += found
    if header is None:
        return None, problems
    lowered = replace(lowered, tiling_header=header)
    keys, found = scan_kernel_keys(sources, render_ascendc_tiling_header(lowered))
    problems += found
    if problems or keys is None:
        return None, problems
    return replace(lowered, tiling_keys=keys), []


def kernel_header(spec: OpSpec, marks: Marks, description: dict[str, Any], host_shown: str
                  ) -> tuple[str | None, list[Problem]]:
    """The kernel-side tiling header of the op (tiling_header.kernel_tiling_header over the host
    description, naming the host source as the author sees it: no build path), or the problem."""
    from opbuild.ascendc.description import parse_description
    from opbuild.ascendc.tiling_header import kernel_tiling_header

    try:
        return kernel_tiling_header(parse_description(json.dumps(description), (host_shown,)), spec.snake), []
    except AscendcHostError as exc:
        return None, [marks.problem(("host", "source"), str(exc))]
