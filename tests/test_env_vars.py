"""opbuild/env_vars.py is the list of every OPBUILD_* environment variable: the code reads none the
list lacks, the list names none nothing reads, and docs/environment.md is what the list generates."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from opbuild.env_vars import BY_NAME, PAGE, markdown

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "opbuild"
_C_GETENV = re.compile(r'getenv\("(OPBUILD_[A-Z0-9_]+)"\)')
_SHELL_READ = re.compile(r"\$\{?(OPBUILD_[A-Z0-9_]+)")
_ENV_CALLS = {("os", "getenv"), ("environ", "get"), ("environ", "pop"), ("environ", "setdefault")}


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level NAME = "OPBUILD_..." constants (how a module may spell a variable once)."""
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = [(target, node.value)]
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):  # A, B = "X", "Y"
                pairs = list(zip(target.elts, node.value.elts))
            for name, value in pairs:
                if isinstance(name, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
                    out[name.id] = value.value
    return out


def _all_constants() -> dict[str, set[str]]:
    """Every module's OPBUILD_* constants by name (`remote.URL_ENV` is read through another module)."""
    out: dict[str, set[str]] = {}
    for path in SOURCES.rglob("*.py"):
        for name, value in _constants(ast.parse(path.read_text())).items():
            if value.startswith("OPBUILD_"):
                out.setdefault(name, set()).add(value)
    return out


_MODULE_CONSTANTS = _all_constants()


def _name(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Attribute) and len(_MODULE_CONSTANTS.get(node.attr, ())) == 1:
        return next(iter(_MODULE_CONSTANTS[node.attr]))  # (module.CONSTANT)
    return None


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (isinstance(node, ast.Name)
                                                                           and node.id == "environ")


def python_reads(path: Path) -> set[str]:
    """OPBUILD_* names read from the environment in a Python file: os.getenv(N), os.environ.get(N),
    os.environ[N], N in os.environ, raw_reader(N, ...)."""
    tree = ast.parse(path.read_text(), str(path))
    constants = _constants(tree)
    names: set[str] = set()
    for node in ast.walk(tree):
        args: list[ast.AST] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            key = ("os" if isinstance(owner, ast.Name) and owner.id == "os" else
                   "environ" if _is_environ(owner) else "", node.func.attr)
            if key in _ENV_CALLS and node.args:
                args = [node.args[0]]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "raw_reader":
            args = list(node.args)
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            args = [node.slice]
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            args = [node.left]
        names |= {n for n in (_name(a, constants) for a in args) if n and n.startswith("OPBUILD_")}
    return names


def read_anywhere() -> dict[str, set[str]]:
    """Variable -> the files of opbuild/ that read it (Python, C, the installer's shell scripts)."""
    found: dict[str, set[str]] = {}
    for path in SOURCES.rglob("*"):
        if path.suffix == ".py":
            names = python_reads(path)
        elif path.suffix in (".c", ".h", ".cpp"):
            names = set(_C_GETENV.findall(path.read_text(errors="replace")))
        elif path.suffix == ".sh":
            names = set(_SHELL_READ.findall(path.read_text()))
        else:
            continue
        for name in names:
            found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_variable_the_code_reads_is_listed():
    unlisted = {name: sorted(files) for name, files in read_anywhere().items() if name not in BY_NAME}
    assert unlisted == {}, "add these to opbuild/env_vars.py (and run python -m opbuild.env_vars)"


def test_every_listed_variable_is_read_somewhere():
    read = read_anywhere()
    tests = {v.name for v in BY_NAME.values() if v.reader == "tests"}
    test_sources = "\n".join(p.read_text() for p in (REPO / "tests").rglob("*.py"))
    assert sorted(n for n in BY_NAME if n not in read and n not in tests) == []
    assert sorted(n for n in tests if n not in test_sources) == []


def test_the_scan_finds_each_way_of_reading(tmp_path):
    """The scanner this test relies on sees os.getenv, os.environ.get/[]/in, raw_reader and constants."""
    sample = tmp_path / "sample.py"
    sample.write_text('import os\nNAME = "OPBUILD_A"\nG, H = "OPBUILD_G", "OPBUILD_H"\nos.getenv(NAME)\n'
                      'os.environ.get("OPBUILD_B")\nos.environ["OPBUILD_C"]\n"OPBUILD_D" in os.environ\n'
                      'raw_reader("OPBUILD_E", "X")\nprint("OPBUILD_F")\n'
                      'def f(environ):\n    return environ.get(G), os.environ.get(H)\n')
    assert python_reads(sample) == {"OPBUILD_A", "OPBUILD_B", "OPBUILD_C", "OPBUILD_D", "OPBUILD_E", "OPBUILD_G",
                                    "OPBUILD_H"}


def test_the_page_is_what_the_list_generates():
    assert (REPO / PAGE).read_text() == markdown(), "run `python -m opbuild.env_vars` and commit docs/environment.md"
