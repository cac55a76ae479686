"""`opbuild import ascendc DIR`: a CANN op project's Ascend C sources as opbuild ops, unchanged.

DIR holds `op_host/` and `op_kernel/` as CANN's op projects (and the samples) lay them out. Each
host source (`op_host/*.cpp`) is compiled against opbuild's host headers with a generic bridge and
its description read back (check.compile_and_describe): the OpDefs it registers. For each OpDef:

* its kernel is `op_kernel/<snake>.cpp` with entry `<snake>` (CANN's convention: the kernel
  function is the op type in snake case);
* the host source, the kernel source and the local headers they include (`#include "..."`
  found beside them, transitively) are copied byte for byte into `<out>/op_host/` and
  `<out>/op_kernel/`;
* op.yaml is written from the OpDef: inputs, outputs, attrs (types, defaults), the SoCs of its
  AddConfig list that opbuild knows, `kernel: {..., api: ascendc}`, `host: {...}`, and one
  binary per dtype/format column (as CANN's build makes them), chosen by default-mode keys.

The written op is then validated as any op is (`opbuild.validate.validate_op`, passed in): a spec that
imports is a spec that builds. Nothing is written when anything fails; an existing output
directory is refused unless `force`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from opbuild.ascendc.lower import known_socs
from opbuild.spec.naming import snake_case

_QUOTE_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


class AscendcImportError(Exception):
    """The project cannot be imported; the message names the file and what is wrong."""


@dataclass(frozen=True)
class ImportedOp:
    op: str
    directory: Path
    files: tuple[str, ...]




def _as_built(dest: Path | None, source: Path):
    """Where the build will compile `source` once imported to `dest` (check.AsBuilt), when that
    can be told before the source is described: the op named after the file (CANN's convention,
    op_host/add_custom.cpp registers AddCustom) in an `ops/` directory of a project. A wrong
    guess costs nothing: the build's command differs, so it compiles as before."""
    from opbuild.ascendc.check import AsBuilt

    if dest is None:
        return None
    dest = dest.resolve()
    target = dest if dest.name == source.stem else dest / source.stem
    if target.parent.name != "ops":
        return None
    return AsBuilt(f"ops/{target.name}/op_host/{source.name}")


def describe_project(project: Path, dest: Path | None = None) -> list[tuple[Path, dict[str, Any], dict[str, Any] | None]]:
    """(host source, OpDef, tiling class or None) of every OpDef the project's host sources
    register. `dest`: where they are imported to (the host objects are compiled as the build there
    will, and kept for it: check.AsBuilt)."""
    from opbuild.ascendc.check import describe_source
    from opbuild.builder.tiling_lib import _toolchain

    host_dir = project / "op_host"
    if not host_dir.is_dir():
        raise AscendcImportError(f"{project}: no op_host/ directory (a CANN op project has op_host/ and op_kernel/)")
    if not (project / "op_kernel").is_dir():
        raise AscendcImportError(f"{project}: no op_kernel/ directory (a CANN op project has op_host/ and op_kernel/)")
    sources = sorted(host_dir.glob("*.cpp"))
    if not sources:
        raise AscendcImportError(f"{host_dir}: no host sources (*.cpp)")
    tc = _toolchain()
    found = []
    for source in sources:
        description, failed, output = describe_source(tc, source.resolve(), _as_built(dest, source))
        if description is None:
            detail = "\n".join(output.strip().splitlines()[-12:])
            raise AscendcImportError(f"{source}: the host source {'does not compile' if failed == 'compile' else failed + ' fails'}"
                               f" against opbuild's host headers:\n{detail}")
        tilings = {t.get("op"): t for t in description.get("tiling", [])}
        for opdef in description.get("ops", []):
            found.append((source, opdef, tilings.get(opdef.get("op"))))
    if not found:
        raise AscendcImportError(f"{host_dir}: no OpDef is registered (OP_ADD) by {', '.join(s.name for s in sources)}")
    return found


def _local_closure(source: Path, limit: Path) -> list[Path]:
    """`source` and the files it includes with `#include "..."` found beside it (transitively),
    inside `limit`."""
    seen: dict[Path, None] = {}
    todo = [source]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen[path] = None
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for name in _QUOTE_INCLUDE.findall(text):
            candidate = (path.parent / name).resolve()
            if candidate.is_file() and candidate.is_relative_to(limit.resolve()):
                todo.append(candidate)
    return list(seen)


def _param(p: dict[str, Any], columns: int, output: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": p["name"]}
    if p.get("param_type", "required") != "required":
        out["param_type"] = p["param_type"]
    dtypes = list(p.get("dtypes") or [])
    formats = list(p.get("formats") or [])
    out["dtypes"] = dtypes[:1] if len(set(dtypes)) == 1 and columns > 1 else dtypes
    if formats and set(formats) != {"ND"}:
        out["formats"] = formats[:1] if len(set(formats)) == 1 else formats
    return out


def _column(values: list[str], i: int) -> str:
    return values[0] if len(values) == 1 else values[i]


_SHORT = {"float16": "fp16", "float32": "fp32", "bfloat16": "bf16", "float64": "fp64"}


def spec_document(opdef: dict[str, Any], kernel: str, host: str) -> dict[str, Any]:
    """op.yaml's content for one OpDef (see the module docstring)."""
    params = [*opdef.get("inputs", []), *opdef.get("outputs", [])]
    columns = max([max(len(p.get("dtypes") or [""]), len(p.get("formats") or [""])) for p in params] or [1])
    op = opdef["op"]
    socs = known_socs(opdef.get("socs", []))
    if not socs:
        raise AscendcImportError(f"op {op}: none of the OpDef's SoCs ({', '.join(opdef.get('socs', [])) or 'none'}) is one "
                           f"opbuild builds for")
    binaries = []
    names: set[str] = set()
    for i in range(columns):
        when = {}
        for p in params:
            dtypes, formats = list(p.get("dtypes") or []), list(p.get("formats") or ["ND"])
            dtype, fmt = _column(dtypes, i), _column(formats, i)
            when[p["name"]] = dtype if len(set(formats)) <= 1 else {"dtype": dtype, "format": fmt}
        first = _column(list(params[0].get("dtypes") or ["x"]), i)
        name = f"{op}_{_SHORT.get(first, first)}"
        if name in names:
            name = f"{op}_{i}"
        names.add(name)
        binaries.append({"name": name, "when": when})
    attrs = []
    for a in opdef.get("attrs", []):
        item: dict[str, Any] = {"name": a["name"], "type": a["type"]}
        if a.get("param_type", "optional") != "required" and a.get("default") is not None:
            item["default"] = a["default"]
        attrs.append(item)
    doc: dict[str, Any] = {
        "op": op,
        "description": f"{op} (imported from an Ascend C project)",
        "inputs": [_param(p, columns, False) for p in opdef.get("inputs", [])],
        "outputs": [_param(p, columns, True) for p in opdef.get("outputs", [])],
    }
    if attrs:
        doc["attrs"] = attrs
    doc["kernel"] = {"source": kernel, "entry": snake_case(op), "api": "ascendc"}
    doc["host"] = {"source": host}
    doc["binaries"] = binaries
    doc["socs"] = socs
    return doc


Validator = Callable[[Path], "tuple[Any, list[Any]]"]
"""How an imported op.yaml is checked: (spec or None, problems), `opbuild.validate.validate_op`
(passed in by the callers: the validator sits above this front end, it checks Ascend C ops)."""


def import_ascendc(project: Path, dest: Path, op: str | None = None, force: bool = False, *,
                   validate_op: Validator) -> list[ImportedOp]:
    """Import the project's ops (or only `op`) into `dest`: `dest` is the op directory when one op
    is imported and `dest` ends in its snake name, else the ops directory holding `<snake>/`;
    each written op.yaml must pass `validate_op`."""
    from opbuild.spec.errors import SpecError

    project = project.resolve()
    found = describe_project(project, dest)
    if op is not None:
        found = [f for f in found if f[1].get("op") == op]
        if not found:
            from opbuild.suggest import did_you_mean

            names = [f[1].get("op", "?") for f in describe_project(project)]
            raise AscendcImportError(f"{project}: no OpDef {op} (the host sources register {', '.join(names)})"
                               f"{did_you_mean(op, names)}")
    imported: list[ImportedOp] = []
    staged: list[tuple[Path, Path]] = []
    stage_root = Path(tempfile.mkdtemp(prefix=".opbuild-import-", dir=_existing_parent(dest)))
    try:
        for host_source, opdef, _tiling in found:
            name = opdef["op"]
            snake = snake_case(name)
            target = dest if (len(found) == 1 and dest.name == snake) else dest / snake
            if target.exists() and not force:
                raise AscendcImportError(f"{target} exists (use --force to replace it)")
            kernel = project / "op_kernel" / f"{snake}.cpp"
            if not kernel.is_file():
                raise AscendcImportError(f"op {name}: no kernel source {kernel} (CANN names it after the op: "
                                   f"op_kernel/{snake}.cpp)")
            stage = stage_root / snake
            files = []
            for sub, start in (("op_host", host_source), ("op_kernel", kernel)):
                for path in _local_closure(start, project / sub):
                    rel = path.relative_to((project / sub).resolve())
                    out = stage / sub / rel
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, out)  # byte for byte
                    files.append(f"{sub}/{rel}")
            doc = spec_document(opdef, f"op_kernel/{kernel.name}", f"op_host/{host_source.name}")
            (stage / "op.yaml").write_text(_yaml_text(doc, project), encoding="utf-8")
            spec, problems = validate_op(stage / "op.yaml")
            if spec is None:
                raise AscendcImportError(f"op {name}: the imported spec does not validate:\n{SpecError(problems)}")
            staged.append((stage, target))
            imported.append(ImportedOp(name, target, tuple(sorted(files))))
        for stage, target in staged:
            if _same_tree(stage, target):
                continue  # already imported: leave the files (and their stats, which the caches read) alone
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                shutil.rmtree(target)
            stage.rename(target)
    finally:
        shutil.rmtree(stage_root, ignore_errors=True)
    return imported


def _same_tree(a: Path, b: Path) -> bool:
    """Whether directories a and b hold the same files with the same bytes."""
    if not b.is_dir():
        return False
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return files_a == files_b and all((a / f).read_bytes() == (b / f).read_bytes() for f in files_a)


def _existing_parent(path: Path) -> Path:
    path = path.resolve()
    while not path.exists():
        path = path.parent
    return path if path.is_dir() else path.parent


def _yaml_text(doc: dict[str, Any], project: Path) -> str:
    header = (f"# Imported by `opbuild import ascendc` from {project.name}/ (op_host/, op_kernel/ copied unchanged).\n"
              f"# The spec is checked against the OpDef of the host source at every build (docs/ascendc.md).\n")
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=110)
