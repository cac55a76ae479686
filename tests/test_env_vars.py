"""opbuild/env_vars.py is the list of every OPBUILD_* environment variable: the code reads none the
list lacks, the list names none nothing reads, and docs/environment.md is what the list generates."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import io
import os
import subprocess
import sys

import pytest

from opbuild import env_vars
from opbuild.env_vars import BY_NAME, ENV_VARS, PAGE, int_setting, markdown

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "opbuild"
_C_GETENV = re.compile(r'getenv\("(OPBUILD_[A-Z0-9_]+)"\)')
_C_GETENV_NAMED = re.compile(r"getenv\(OPBUILD_ENV_([A-Z0-9_]+)\)")  # the generated name macros
_C_INT_SETTING = re.compile(r"OPBUILD_INT_SETTING\((OPBUILD_[A-Z0-9_]+)\)")  # native/src/setting.h
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
    os.environ[N], N in os.environ, raw_reader(N, ...), int_setting(N)."""
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
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("raw_reader",
                                                                                                "int_setting"):
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
            text = path.read_text(errors="replace")
            names = {*_C_GETENV.findall(text), *_C_INT_SETTING.findall(text),
                     *("OPBUILD_" + n for n in _C_GETENV_NAMED.findall(text))}
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
                      'raw_reader("OPBUILD_E", "X")\nprint("OPBUILD_F")\nint_setting("OPBUILD_I")\n'
                      'def f(environ):\n    return environ.get(G), os.environ.get(H)\n')
    assert python_reads(sample) == {"OPBUILD_A", "OPBUILD_B", "OPBUILD_C", "OPBUILD_D", "OPBUILD_E", "OPBUILD_G",
                                    "OPBUILD_H", "OPBUILD_I"}
    c_sample = 'getenv("OPBUILD_X"); getenv(OPBUILD_ENV_Y); OPBUILD_INT_SETTING(OPBUILD_Z); puts("OPBUILD_W");'
    assert {*_C_GETENV.findall(c_sample), *_C_INT_SETTING.findall(c_sample),
            *("OPBUILD_" + n for n in _C_GETENV_NAMED.findall(c_sample))} == {"OPBUILD_X", "OPBUILD_Y", "OPBUILD_Z"}


def test_the_page_is_what_the_list_generates():
    assert (REPO / PAGE).read_text() == markdown(), "run `python -m opbuild.env_vars` and commit docs/environment.md"


# ---- the settings' rules ----------------------------------------------------------------------------

def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: val for k, val in os.environ.items() if not k.startswith("OPBUILD_")}
    return {**env, **extra}


def _stderr_of(code: str, **extra: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_clean_env(**extra),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_a_misspelt_variable_warns_once_at_import_naming_the_nearest():
    err = _stderr_of("import opbuild.runtime, opbuild.runtime.api, opbuild.cli", OPBUILD_PARM_CACHE_SIZE="64")
    assert err.count("OPBUILD_PARM_CACHE_SIZE") == 1, err
    assert "did you mean 'OPBUILD_PARAM_CACHE_SIZE'?" in err and err.startswith("opbuild: warning: ")


def test_known_variables_do_not_warn():
    assert _stderr_of("import opbuild.runtime", OPBUILD_PARAM_CACHE_SIZE="64", OPBUILD_SOC="ascend910b") == ""


def test_the_cli_warns_at_start():
    proc = subprocess.run([sys.executable, "-m", "opbuild", "env", "--list"], capture_output=True, text=True,
                          env=_clean_env(OPBUILD_ISOLATOIN="process"), timeout=120)
    assert proc.returncode == 0
    assert proc.stderr.count("warning: OPBUILD_ISOLATOIN") == 1 and "'OPBUILD_ISOLATION'" in proc.stderr


def test_env_list_prints_every_variable_with_its_default():
    proc = subprocess.run([sys.executable, "-m", "opbuild", "env", "--list"], capture_output=True, text=True,
                          env=_clean_env(), timeout=120)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == env_vars.table()
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    assert list(rows) == [v.name for v in ENV_VARS]
    assert rows["OPBUILD_PARAM_CACHE_SIZE"].split()[1] == "1024"
    assert rows["OPBUILD_SOC"].split()[1] == "ascend910b"


@pytest.mark.parametrize("text, value", [
    (None, 1024), ("", 1024), ("7", 7), (" 7 ", 7), ("+7", 7), ("1", 1), ("1048576", 1048576),
    ("0", 1024), ("-3", 1024), ("1048577", 1024), ("12abc", 1024), ("abc", 1024), ("1_000", 1024),
    ("0x10", 1024), ("1.5", 1024), ("99999999999999999999999", 1024),
])
def test_the_int_rule(text, value):
    env_vars._BAD_INT_WARNED.clear()
    stream = io.StringIO()
    environ = {} if text is None else {"OPBUILD_PARAM_CACHE_SIZE": text}
    assert int_setting("OPBUILD_PARAM_CACHE_SIZE", environ, stream) == value
    warned = stream.getvalue()
    if text in (None, "") or str(value) == text.strip().lstrip("+"):
        assert warned == ""
    else:
        assert f"OPBUILD_PARAM_CACHE_SIZE={text!r} is not an integer in 1..1048576; using the default 1024" in warned


def test_a_bad_cache_size_does_not_break_import():
    """Before: int() at import raised, so `import opbuild.runtime.call.executor` failed."""
    err = _stderr_of("import opbuild.runtime.call.executor as e; assert e.capacity() == 1024",
                     OPBUILD_PARAM_CACHE_SIZE="lots")
    assert err.count("OPBUILD_PARAM_CACHE_SIZE='lots'") == 1, err


def test_the_acl_library_reads_the_cache_size_by_the_same_rule(tmp_path):
    """A C program's acl library (native/src/setting.h, the generated _DEFAULT/_MIN/_MAX) takes the
    values the Python rule takes and falls back to the same default, with the same warning, for the
    others (it used to take strtol's prefix of "12abc" and clamp "0" to 1, silently)."""
    from opbuild.abi import native_libs

    src = tmp_path / "capacity.c"
    src.write_text('#include <stdio.h>\n#include "aclnn/opbuild_acl.h"\n'
                   'int main(void) { printf("%zu\\n", opbuild_aclnn_cache_capacity(0)); return 0; }\n')
    exe = tmp_path / "capacity"
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", *native_libs.acl_cflags(), str(src), "-o", str(exe),
                    *native_libs.acl_libs()], check=True, capture_output=True, text=True)
    for text in ["7", " 7 ", "+7", "1048576", "0", "-3", "1048577", "12abc", "abc", "1_000", "0x10", ""]:
        env = _clean_env(OPBUILD_PARAM_CACHE_SIZE=text, **native_libs.environment())
        proc = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        env_vars._BAD_INT_WARNED.clear()
        python_warning = io.StringIO()
        expected = int_setting("OPBUILD_PARAM_CACHE_SIZE", {"OPBUILD_PARAM_CACHE_SIZE": text}, python_warning)
        assert int(proc.stdout) == expected, text
        assert proc.stderr == python_warning.getvalue(), text
