"""opbuild's layers, declared once, and a check that every import goes down them.

`LAYERS` lists opbuild's packages and modules from the bottom up. A module may import a module of
its own layer or of a layer below it, never one above: at module level, inside a function, under
`if TYPE_CHECKING:`, `import x` or `from x import y`, absolute or relative. Importing `a.b.c`
also runs the `__init__` of `a` and `a.b`, so that counts as importing those packages too, unless
their `__init__.py` imports nothing of opbuild (opbuild/builder/ is such a package: its build
tools sit in a lower layer than its planner). docs/architecture.md shows the same table
(`python tests/test_layers.py` prints it; test_doc_table_matches keeps them equal).

A lower layer that needs something of a higher one gets it moved down, or passed in (a callable,
a value): a function-level import is an import like any other here.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("foundation", ("opbuild", "opbuild.atomic", "opbuild.safefile", "opbuild.runtime_paths",
                    "opbuild.portable", "opbuild.fingerprint", "opbuild.generated_files", "opbuild.compilers"),
     "files written atomically, read safely, opbuild's own paths, cache-key hashing, committed generated files, "
     "the host compilers' choice"),
    ("abi", ("opbuild.abi",),
     "contract data: the vocabulary, GE types, the package layout, launch layout, platform, symbol and library names"),
    ("helpers", ("opbuild.suggest", "opbuild.nonfinite", "opbuild.env_vars", "opbuild.abi.generate_c"),
     "'did you mean', JSON with non-finite floats, the OPBUILD_* table, the C vocabulary's generator"),
    ("spec", ("opbuild.spec",), "op.yaml: loader with marks, schema, semantic checks, the typed model"),
    ("keys", ("opbuild.keys",), "the simplified-key grammar, rules and their check"),
    ("codegen", ("opbuild.codegen",), "every generated artefact, rendered from the model"),
    ("runtime", ("opbuild.runtime",),
     "packages, keys, binaries, the host callbacks (tiling, key, infer), plan caches, the simulator, "
     "the aclnn C ABI, op_fallback, torch"),
    ("om", ("opbuild.om",), ".om models: build, load, run, the AscendCL model and single-op API"),
    ("build tools", ("opbuild.builder.toolchain", "opbuild.builder.stores", "opbuild.builder.cache",
                     "opbuild.builder.remote", "opbuild.builder.reuse", "opbuild.builder.tiling_lib"),
     "compilers, the local and remote build cache, object reuse, the tiling library compile"),
    ("ascendc", ("opbuild.ascendc",), "the Ascend C front end: OpDef, tiling class, kernel keys, import"),
    ("validate", ("opbuild.validate",), "`opbuild validate`: a spec checked by running its key rule and tiling"),
    ("deploy", ("opbuild.deploy",), "install, the .run installer, `opbuild env`, the toolkit"),
    ("builder", ("opbuild.builder",), "the build plan, SCons, bundles, projects"),
    ("debug", ("opbuild.debug",), "compare, prof, memcheck"),
    ("cli", ("opbuild.cli", "opbuild.__main__", "opbuild.om.fuzz"),
     "the `opbuild` command; the .om fuzzer, which drives it"),
)
"""(name, modules, what it holds) from the bottom up; a module entry covers its submodules."""


def layer_of(module: str, layers=LAYERS) -> int | None:
    """Index of the layer holding `module` (the longest matching entry), None for none.
    The entry `opbuild` (the root package's __init__) matches itself only."""
    best, best_len = None, -1
    for index, (_, entries, _) in enumerate(layers):
        for entry in entries:
            root_only = "." not in entry
            if module == entry or (not root_only and module.startswith(entry + ".")):
                if len(entry) > best_len:
                    best, best_len = index, len(entry)
    return best


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int
    importer: str
    imported: str
    from_layer: str
    to_layer: str

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: {self.importer} ({self.from_layer}) imports {self.imported} "
                f"({self.to_layer}), a higher layer")


def module_name(path: Path, top: Path) -> str:
    parts = path.relative_to(top).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def scan(top: Path, package: str = "opbuild") -> dict[str, tuple[Path, list[tuple[int, str]]]]:
    """module -> (file, [(line, imported module)]) for every import of `package` in every .py
    file under top/package; `from a import b` names the module a.b when that is a module."""
    files = {module_name(p, top): p for p in sorted((top / package).rglob("*.py"))}
    result: dict[str, tuple[Path, list[tuple[int, str]]]] = {}
    for module, path in files.items():
        is_pkg = path.name == "__init__.py"
        pkg = module if is_pkg else module.rpartition(".")[0]
        imports: list[tuple[int, str]] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                imports += [(node.lineno, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[:len(pkg.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    imports.append((node.lineno, sub if sub in files else target))
        result[module] = (path, [(line, m) for line, m in imports if m == package or m.startswith(package + ".")])
    return result


def check(top: Path, layers=LAYERS, package: str = "opbuild") -> tuple[list[Violation], list[str]]:
    """(imports against the layers, modules in no layer)."""
    modules = scan(top, package)
    transparent = {m for m, (p, imps) in modules.items() if p.name == "__init__.py" and not imps}
    violations: list[Violation] = []
    unplaced = sorted(m for m in modules if layer_of(m, layers) is None)
    for importer, (path, imports) in modules.items():
        mine = layer_of(importer, layers)
        if mine is None:
            continue
        for line, imported in imports:
            parts = imported.split(".")
            # the module itself and each package whose __init__ the import runs
            targets = [imported] + [".".join(parts[:i]) for i in range(2, len(parts))]
            for target in targets:
                if target != imported and target in transparent:
                    continue
                theirs = layer_of(target, layers)
                if theirs is not None and theirs > mine:
                    found = Violation(path.relative_to(top), line, importer, target, layers[mine][0], layers[theirs][0])
                    if found not in violations:  # `from m import a, b`: one line, one report
                        violations.append(found)
                    break
    return violations, unplaced


def table(layers=LAYERS) -> str:
    """The markdown table docs/architecture.md shows (top layer first)."""
    rows = ["| # | layer | modules | holds |", "|---|---|---|---|"]
    for index in range(len(layers) - 1, -1, -1):
        name, entries, holds = layers[index]
        rows.append(f"| {index} | {name} | {', '.join(f'`{e}`' for e in entries)} | {holds} |")
    return "\n".join(rows)


def test_imports_go_down_the_layers():
    violations, unplaced = check(ROOT)
    assert not unplaced, f"modules in no layer of tests/test_layers.py's LAYERS: {unplaced}"
    assert not violations, "imports against the layers:\n" + "\n".join(map(str, violations))


def test_doc_table_matches():
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert table() in doc, "docs/architecture.md's layer table differs from LAYERS: paste `python tests/test_layers.py`"


def test_every_entry_names_a_module():
    modules = set(scan(ROOT))
    missing = [e for _, entries, _ in LAYERS for e in entries if e not in modules]
    assert not missing, f"LAYERS names modules that do not exist: {missing}"


_C_MODULE_NAME = re.compile(r'"(opbuild(?:\.[A-Za-z_][A-Za-z0-9_]*)+)"')


def c_module_names(root: Path) -> list[tuple[Path, str]]:
    """Each "opbuild.x.y" string of the C sources (the modules they import by dotted name, and
    the types of the extension), with its file."""
    found = []
    for path in sorted((root / "opbuild" / "runtime" / "native" / "src").glob("*.[ch]")):
        found += [(path, m) for m in _C_MODULE_NAME.findall(path.read_text(encoding="utf-8"))]
    return found


def names_a_module(root: Path, dotted: str) -> bool:
    """Whether `dotted` is a module of the tree (a .py, a package, an extension), or an attribute
    (a type, a function) of a module that is not a package."""
    extensions = set(re.findall(r'_NAME = "(opbuild\.[A-Za-z0-9_.]+)"', (root / "setup.py").read_text(encoding="utf-8")))

    def module(parts: list[str]) -> bool:  # (an extension: setup.py builds it, whether built yet or not)
        return root.joinpath(*parts).with_suffix(".py").is_file() or ".".join(parts) in extensions
    parts = dotted.split(".")
    return module(parts) or (root.joinpath(*parts) / "__init__.py").is_file() or module(parts[:-1])


def test_c_sources_name_modules_that_exist():
    """The C library imports Python modules by dotted name (acl_bridge.c's CAPI_MODULE, acl_op.c's
    ACLOP_MODULE, ...): a moved module must take its C string along."""
    names = c_module_names(ROOT)
    assert any(name == "opbuild.runtime.capi" for _, name in names)  # the scan sees them
    missing = [f"{path.relative_to(ROOT)}: {name}" for path, name in names if not names_a_module(ROOT, name)]
    assert not missing, f"C sources name modules that do not exist: {missing}"
    assert names_a_module(ROOT, "opbuild.runtime._fastpath.Executor")
    assert not names_a_module(ROOT, "opbuild.runtime.aclop")  # (the module before issue 24 moved it)
    assert not names_a_module(ROOT, "opbuild.runtime.no_such_module.Type")


PLANTED_LAYERS = (("low", ("pkg.low",), ""), ("mid", ("pkg.mid",), ""), ("high", ("pkg.high",), ""))


@pytest.mark.parametrize("source, line", [
    ("import pkg.high.mod\n", 2),
    ("from pkg.high import mod\n", 2),
    ("from pkg.high.mod import thing, other\n", 2),
    ("from ..high import mod\n", 2),
    ("def f():\n    from pkg.high.mod import thing\n    return thing\n", 3),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.high.mod\n", 4),
])
def test_checker_finds_a_planted_upward_import(tmp_path, source, line):
    for name in ("pkg", "pkg/low", "pkg/mid", "pkg/high", "pkg/high/empty"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "pkg/high/__init__.py").write_text("from pkg.low import ok\n")
    (tmp_path / "pkg/low/ok.py").write_text("import pkg.low\n")
    (tmp_path / "pkg/high/mod.py").write_text("from pkg.mid import fine\n")
    (tmp_path / "pkg/high/empty/leaf.py").write_text("")
    (tmp_path / "pkg/mid/fine.py").write_text("from . import helper\n")
    (tmp_path / "pkg/mid/helper.py").write_text("")
    (tmp_path / "pkg/mid/bad.py").write_text("x = 1\n" + source)
    violations, unplaced = check(tmp_path, PLANTED_LAYERS, "pkg")
    assert unplaced == ["pkg"]
    assert [(str(v.path), v.importer, v.imported, v.from_layer, v.to_layer) for v in violations] == [
        ("pkg/mid/bad.py", "pkg.mid.bad", "pkg.high.mod", "mid", "high")]
    assert str(violations[0]).startswith(f"pkg/mid/bad.py:{line}: pkg.mid.bad (mid) imports pkg.high.mod (high)")


def test_checker_lets_a_transparent_package_span_layers(tmp_path):
    for name in ("pkg", "pkg/low", "pkg/tools"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "pkg/tools/low_part.py").write_text("")
    (tmp_path / "pkg/tools/high_part.py").write_text("from pkg.tools import low_part\n")
    (tmp_path / "pkg/low/user.py").write_text("from pkg.tools.low_part import x\n")
    layers = (("low", ("pkg.low", "pkg.tools.low_part"), ""), ("high", ("pkg.tools",), ""))
    assert check(tmp_path, layers, "pkg")[0] == []
    (tmp_path / "pkg/tools/__init__.py").write_text("from pkg.tools import high_part\n")
    assert [v.imported for v in check(tmp_path, layers, "pkg")[0]] == ["pkg.tools"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        found, none = check(ROOT)
        print("\n".join(map(str, found)) or "no upward import", *(f"in no layer: {m}" for m in none), sep="\n")
        sys.exit(1 if found or none else 0)
    print(textwrap.dedent(table()))
