"""validate_op beyond the corpus: the compile cache of C key rules, exports confirmed by the
compiler, the C source scanner, and `opbuild validate` given an op's source files (pre-commit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import GOOD, copy_case

from opbuild.validate import validate_op
from opbuild.spec.csource import c_functions, declared_exported, definition

SPEC = Path("ops") / "scale_custom" / "op.yaml"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("OPBUILD_VALIDATE_CACHE", str(where))
    return where


def _good(case: str, tmp_path: Path, monkeypatch) -> Path:
    root = copy_case(GOOD / case, tmp_path / case)
    monkeypatch.chdir(root)
    return root / SPEC.parent


def _entries(cache: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in cache.glob("*.so")} if cache.is_dir() else {}


def test_a_c_key_rule_is_compiled_once_per_content(tmp_path, monkeypatch, cache):
    op = _good("c", tmp_path, monkeypatch)
    spec, problems = validate_op(SPEC)
    assert problems == [] and spec is not None
    first = _entries(cache)
    assert len(first) == 1
    assert validate_op(SPEC)[1] == [] and _entries(cache) == first  # warm: nothing compiled
    tiling = op / "tiling.c"
    tiling.write_text(tiling.read_text().replace('"scale_fp32"', '"scale_f32"'))
    spec, problems = validate_op(SPEC)
    assert len(_entries(cache)) == 2
    assert [(p.file, p.line) for p in problems][0] == (str(op.relative_to(op.parents[1]) / "tiling.c"), 12)


def test_an_export_by_the_authors_own_macro_is_confirmed_by_the_compiler(tmp_path, monkeypatch, cache):
    op = _good("table", tmp_path, monkeypatch)
    tiling = op / "tiling.c"
    text = tiling.read_text().replace("OPBUILD_API uint32_t", "MY_API uint32_t")
    tiling.write_text(text.replace('#include "scale_custom_tiling.h"\n',
                                   '#include "scale_custom_tiling.h"\n#define MY_API OPBUILD_API\n'))
    assert validate_op(SPEC) [1] == []
    assert len(_entries(cache)) == 1  # (it took a compile to know)
    tiling.write_text(text.replace('#include "scale_custom_tiling.h"\n',
                                   '#include "scale_custom_tiling.h"\n#define MY_API\n'))
    problems = validate_op(SPEC)[1]
    assert [(p.line, p.message.split(",")[0]) for p in problems] == [
        (5, "tiling.function 'scale_custom_tiling' is not declared OPBUILD_API")]


def test_table_and_default_rules_compile_nothing(tmp_path, monkeypatch, cache):
    _good("table", tmp_path, monkeypatch)
    assert validate_op(SPEC)[1] == []
    _good("python", tmp_path, monkeypatch)
    assert validate_op(SPEC)[1] == []
    assert _entries(cache) == {}


def test_c_scanner():
    text = """\
#define PICK(T) _Generic((T *)0, half *: a, float *: b)(f)
/* uint32_t commented(TilingContext *ctx) { } */
OPBUILD_API uint32_t declared(TilingContext *ctx);
uint32_t declared(TilingContext *ctx)
{
    if (ctx) { return 0; }
    return 1;
}
static inline float helper(float (*fn)(float), float v) { return fn(v); }
KERNEL_ENTRY void entry(GM_ADDR x, GM_ADDR tiling) {
}
"""
    functions = c_functions(text)
    assert [(f.name, f.line, f.col, f.defined) for f in functions] == [
        ("declared", 3, 22, False), ("declared", 4, 10, True), ("helper", 9, 21, True), ("entry", 10, 19, True)]
    assert definition(functions, "commented") is None and definition(functions, "PICK") is None
    assert declared_exported(functions, "declared") and not declared_exported(functions, "helper")
    assert definition(functions, "helper").static


def _cli(args: list[str], cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPBUILD_VALIDATE_CACHE": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "opbuild", "validate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_staged_source_stands_for_its_op(tmp_path, monkeypatch, cache):
    # pre-commit passes the staged files: an edited tiling.c must be checked with its op
    op = _good("table", tmp_path, monkeypatch)
    root = op.parents[1]
    (root / "notes.py").write_text("x = 1\n")
    assert _cli(["ops/scale_custom/tiling.c", "notes.py"], root, cache).stdout == "ok: 1 op specs\n"
    assert _cli(["notes.py"], root, cache).stdout == "ok: 0 op specs\n"
    tiling = op / "tiling.c"
    tiling.write_text(tiling.read_text().replace("scale_custom_tiling(", "scale_tiling("))
    result = _cli(["ops/scale_custom/tiling.c"], root, cache)
    assert result.returncode == 1
    assert result.stderr.startswith("ops/scale_custom/op.yaml:16:38: tiling.function 'scale_custom_tiling' is not "
                                    "defined in the tiling source ops/scale_custom/tiling.c")


def test_did_you_mean():
    from opbuild.suggest import closest, did_you_mean

    assert did_you_mean("mx", ["max", "min"]) == "; did you mean 'max'?"
    assert did_you_mean("flaot32", ["float16", "float32"]) == "; did you mean 'float32'?"
    assert closest("X", ["x", "y"]) == "x"  # case only
    assert did_you_mean("alpha", ["beta_gamma", "x"]) == ""  # nothing close: no guess
    assert did_you_mean("x", ["x"]) == ""  # not misspelt
