"""The kernel source agrees with `tiling.keys` (opbuild/validate/tiling_keys.py): the scan of
`TILING_KEY_IS` (csource.tiling_key_tests) on small kernel texts, and the problems it gives with
the unbroken ScaleCustom of the corpus (the case through `opbuild validate` and `scons ops` is
broken/tiling_keys_disagree_with_kernel)."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import GOOD, copy_case

from opbuild.spec.csource import int_literal, tiling_key_tests
from opbuild.spec.loader import read_spec
from opbuild.validate.tiling_keys import tiling_key_problems

OP = Path("ops") / "scale_custom"


def test_the_scan_sees_branches_not_comments_or_strings():
    text = """\
#define KEY_TAIL 1u
#define KEY_TWICE 2
#define KEY_TWICE 3
/* if (TILING_KEY_IS(4)) */ const char *s = "TILING_KEY_IS(5)";
// TILING_KEY_IS(6)
if (TILING_KEY_IS(0)) {} else if (TILING_KEY_IS( KEY_TAIL )) {} else if (TILING_KEY_IS((0x10ULL))) {}
if (TILING_KEY_IS(KEY_TWICE) || TILING_KEY_IS(k + 1) || TILING_KEY_IS(017) || TILING_KEY_IS(FROM_A_HEADER)) {}
"""
    assert [(t.argument, t.key, t.line, t.col) for t in tiling_key_tests(text)] == [
        ("0", 0, 6, 5), ("KEY_TAIL", 1, 6, 35), ("(0x10ULL)", 16, 6, 74),
        ("KEY_TWICE", None, 7, 5),  # defined twice, differently: unknown
        ("k + 1", None, 7, 33), ("017", 15, 7, 57), ("FROM_A_HEADER", None, 7, 79)]


@pytest.mark.parametrize("text, value", [("7", 7), ("0", 0), ("0b101", 5), ("0XfF", 255), ("18446744073709551615ULL", 2**64 - 1),
                                         ("12lu", 12), ("( 3 )", 3), ("08", None), ("-1", None), ("1.0", None),
                                         ("1 + 1", None), ("KEY", None), ("", None)])
def test_int_literal(text, value):
    assert int_literal(text) == value


def _problems(tmp_path: Path, monkeypatch, keys: str | None, body: str) -> list[tuple[str, int, int, str, str]]:
    """tiling_key_problems of ScaleCustom with `tiling.keys: keys` (None: left out) and a kernel
    whose entry's body is `body` (the entry's line is 4)."""
    monkeypatch.chdir(copy_case(GOOD / "table", tmp_path / "case"))
    spec_file = OP / "op.yaml"
    if keys is not None:
        text = spec_file.read_text()
        spec_file.write_text(text.replace("function: scale_custom_tiling}", f"function: scale_custom_tiling, keys: {keys}}}"))
    kernel = ('#include "opbuild/kernel.h"\n#include "scale_custom_tiling.h"\n\n'
              f"KERNEL_ENTRY void scale_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {{\n{body}\n}}\n")
    spec, problems, marks = read_spec(spec_file)
    assert spec is not None, problems
    return [(p.file, p.line, p.col, p.json_path, p.message)
            for p in tiling_key_problems(spec, marks, kernel, "kernel.c")]


@pytest.mark.parametrize("keys, body", [
    (None, ""),                                                              # the ordinary kernel
    ("[0]", ""),
    ("[3, 7]", "if (TILING_KEY_IS(7)) {} else if (TILING_KEY_IS(3)) {}"),
    ("[0, 5]", "if (TILING_KEY_IS(0)) {} else if (TILING_KEY_IS(KEY_FROM_A_HEADER)) {}"),  # may test 5
    ("[1]", "#define TAIL 1\nif (TILING_KEY_IS(TAIL)) {} /* TILING_KEY_IS(2) */"),
])
def test_agreeing_kernels(tmp_path, monkeypatch, keys, body):
    assert _problems(tmp_path, monkeypatch, keys, body) == []


def test_a_kernel_that_never_tests_the_key_declares_only_the_default(tmp_path, monkeypatch):
    problems = _problems(tmp_path, monkeypatch, "[0, 1]", "")
    assert [p[:4] for p in problems] == [(str(OP / "op.yaml"), 16, 66, "$.tiling.keys[0]"),
                                         (str(OP / "op.yaml"), 16, 69, "$.tiling.keys[1]")]
    assert problems[1][4] == ("op ScaleCustom declares tiling key 1, but its kernel kernel.c has no TILING_KEY_IS(1) "
                              "branch (it has no TILING_KEY_IS at all: every key runs the same code); branch on it "
                              "with `if (TILING_KEY_IS(1)) { ... }`, or leave tiling.keys out (the default, [0])")


def test_every_disagreement_at_once(tmp_path, monkeypatch):
    body = ("    if (TILING_KEY_IS(0)) {}\n    else if (TILING_KEY_IS(4)) {}\n"
            "    else if (TILING_KEY_IS(n)) {}\n    else if (TILING_KEY_IS(9)) {}")
    problems = _problems(tmp_path, monkeypatch, "[0, 2]", body)
    assert [p[:4] for p in problems] == [("kernel.c", 6, 14, ""), ("kernel.c", 8, 14, "")]  # 2 may be tested by `n`
    assert problems[0][4] == ("op ScaleCustom: TILING_KEY_IS(4) tests tiling key 4, which the spec does not declare "
                              "(tiling.keys: [0, 2] at ops/scale_custom/op.yaml:16:65): the kernelList has no function "
                              "for it and the runtime refuses the key, so this branch never runs (add 4 to "
                              "tiling.keys, or remove the branch)")


def test_the_default_keys_against_a_branching_kernel(tmp_path, monkeypatch):
    problems = _problems(tmp_path, monkeypatch, None, "if (TILING_KEY_IS(1)) {}")
    assert [p[:4] for p in problems] == [("kernel.c", 5, 5, ""), (str(OP / "op.yaml"), 16, 9, "$.tiling")]
    assert "(tiling.keys: default [0])" in problems[0][4]
    assert "(it tests 1: a launch with this key takes none of its key paths)" in problems[1][4]
