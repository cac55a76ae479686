"""An op's tiling source compiled alone into a small shared library, cached by content.

`opbuild validate` runs a C GenSimplifiedKey callback (the key/binary consistency check) and
asks which functions the tiling source really exports; both need the compiled source, but not
the package or any kernel. The library is compiled as the build compiles the tiling object (the
host toolchain's `tiling_object_command`, the generated `<op>_tiling.h` beside it) and linked
alone (`tiling_link_command`). It is cached under `$OPBUILD_VALIDATE_CACHE`, else
`$XDG_CACHE_HOME/opbuild/validate`, else `~/.cache/opbuild/validate` (a `stores.LocalStore`,
the build's cache interface), keyed by a `fingerprint.Key` of everything that goes into it: the
compile commands, the compiler's identity, the generated header, every file of the op directory
(headers it includes) and of opbuild's include directory, named relative to their directory (an
op at another path shares the entry). A warm `opbuild validate` therefore compiles nothing; an
entry is written atomically.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from opbuild.builder.stores import LocalStore
from opbuild.fingerprint import Key
from opbuild.runtime_paths import native_include_dir
from opbuild.spec.errors import Problem
from opbuild.spec.model import OpSpec

FORMAT = "1"
"""Bump when the way the library is made changes."""

_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)$", re.M)


def cache_dir() -> Path:
    """Where compiled tiling sources are kept (see the module docstring)."""
    explicit = os.environ.get("OPBUILD_VALIDATE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "opbuild" / "validate"


@dataclass(frozen=True)
class Compiled:
    """The library (None when the source does not compile) and the compiler's errors as problems."""

    library: Path | None
    problems: tuple[Problem, ...] = ()


def _files_of(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.rglob("*") if p.is_file())
    except OSError:
        return []


_TOOLCHAIN = None


def _toolchain():
    global _TOOLCHAIN
    if _TOOLCHAIN is None:
        from opbuild.builder.toolchain import HostToolchain

        _TOOLCHAIN = HostToolchain(cc=os.environ.get("CC") or None)
    return _TOOLCHAIN


def compile_tiling_source(spec: OpSpec, shown_source: str) -> Compiled:
    """The op's tiling source as a shared library (cached); compile errors as problems naming
    `shown_source` (the source as the author's path names it) at the compiler's line and column."""
    from opbuild.codegen.tiling import render_tiling_header, tiling_header_name

    tc = _toolchain()
    source = (spec.op_dir / spec.tiling_ref.source).resolve()
    header = render_tiling_header(spec).encode()
    include = native_include_dir()
    obj_cmd = tc.tiling_object_command("SOURCE", "OBJECT", [str(include), "GEN"])
    link_cmd = tc.tiling_link_command(["OBJECT"], "LIBRARY")
    key = Key("validate-tiling").text(FORMAT, *obj_cmd, *link_cmd, tc.identity()).data(header).text(spec.tiling_ref.source)
    for path in [*_files_of(spec.op_dir), *_files_of(include)]:
        key.file(str(path), spec.op_dir)
    store = LocalStore(cache_dir(), "validate")
    name = f"{spec.snake}-{key.hexdigest()[:32]}.so"
    library = Path(store.path(name))
    if library.is_file():
        return Compiled(library)
    try:
        store.directory.mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable cache (a read-only home): compile for this process only
        store = LocalStore(tempfile.mkdtemp(prefix="opbuild-validate-"), "validate")
        library = Path(store.path(name))
    where = store.directory
    work = Path(tempfile.mkdtemp(prefix=".compile.", dir=where))
    try:
        (work / tiling_header_name(spec)).write_bytes(header)
        obj, lib = work / "tiling.o", work / "tiling.so"
        result = tc.run(tc.tiling_object_command(str(source), str(obj), [str(include), str(work)]))
        if result.returncode != 0:
            return Compiled(None, tuple(_compile_problems(result.output, source, shown_source)))
        result = tc.run(tc.tiling_link_command([str(obj)], str(lib)))
        if result.returncode != 0:
            last = (result.output.strip().splitlines() or ["the linker failed"])[-1]
            return Compiled(None, (Problem(shown_source, 1, 1, f"tiling source does not link: {last}", ""),))
        store.put(name, lib.read_bytes(), mode=0o755)
        return Compiled(library)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _compile_problems(output: str, source: Path, shown_source: str) -> list[Problem]:
    """The compiler's errors in the tiling source, named as the author names the file; other
    errors (in an included header) keep the compiler's path."""
    problems = []
    for m in _DIAGNOSTIC.finditer(output):
        file = m.group("file")
        try:
            same = Path(file).resolve() == source
        except OSError:
            same = False
        problems.append(Problem(shown_source if same else file, int(m.group("line")), int(m.group("col")),
                                f"tiling source does not compile: {m.group('msg')}", ""))
    if not problems:
        last = output.strip().splitlines()[-1] if output.strip() else "the compiler failed"
        problems.append(Problem(shown_source, 1, 1, f"tiling source does not compile: {last}", ""))
    return problems
