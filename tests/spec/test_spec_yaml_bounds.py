"""YAML is read within bounds (issue 10, item 7): a "billion laughs" alias bomb or an oversized
document is refused with a position, before anything is expanded, by every YAML reader."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.spec.loader import check_spec
from opbuild.spec.yaml_marks import MAX_ALIAS_NODES, MAX_YAML_BYTES, load_yaml, safe_load


def alias_bomb(levels: int = 10, width: int = 9) -> str:
    """A ~2 KB op.yaml whose `description` expands to width**levels strings."""
    lines = ["op: Bomb", "a0: &a0 [" + ",".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    lines.append(f"description: *a{levels - 1}")
    return "\n".join(lines) + "\n" + "# " + "padding " * 150 + "\n"


def test_alias_bomb_is_refused_at_the_alias_that_crosses_the_bound():
    text = alias_bomb()
    assert 1500 < len(text) < 3000
    data, _, problems = load_yaml(text, "op.yaml")
    assert data is None
    [problem] = problems
    # a3 is 1 + 9 * 91 = 820 nodes: the 13th alias *a3 (on a4's line) passes 10 000
    assert (problem.file, problem.line) == ("op.yaml", 6)
    assert text.splitlines()[5][problem.col - 1:].startswith("*a3")
    assert f"expands the document past {MAX_ALIAS_NODES} nodes" in problem.message


def test_aliases_within_the_bound_are_expanded_as_before():
    text = "a: &x [1, 2]\nb: *x\nc: &y {k: *x}\nd: [*y, *y]\n"
    data, _, problems = load_yaml(text, "f.yaml")
    assert problems == []
    assert data["d"] == [{"k": [1, 2]}, {"k": [1, 2]}]
    # exactly at the bound is fine, one node more is not
    n = MAX_ALIAS_NODES
    ok = "a: &x [" + ", ".join(["1"] * 99) + "]\nb: [" + ", ".join(["*x"] * (n // 100)) + "]\n"
    assert load_yaml(ok, "f.yaml")[2] == []
    assert load_yaml(ok.replace("b: [", "b: [0, *x, "), "f.yaml")[2][0].line == 2


def test_oversized_spec_is_refused_without_reading_it_whole(tmp_path: Path):
    spec = tmp_path / "op.yaml"
    spec.write_text("op: Big\n" + "# " + "x" * MAX_YAML_BYTES + "\n")
    spec_, problems = check_spec(spec)
    assert spec_ is None
    [problem] = problems
    assert problem.file == str(spec) and "larger than" in problem.message
    assert str(MAX_YAML_BYTES) in problem.message


def test_safe_load_is_bounded_too():
    with pytest.raises(ValueError, match=r"^model\.yaml:6:\d+: alias \*a3"):
        safe_load(alias_bomb(), "model.yaml")
    assert safe_load("a: &x 1\nb: *x\n", "m.yaml") == {"a": 1, "b": 1}


def test_om_model_alias_bomb_is_an_om_error(tmp_path: Path):
    from opbuild.om.errors import OmError
    from opbuild.om.model import load_model

    model = tmp_path / "model.yaml"
    model.write_text(alias_bomb())
    with pytest.raises(OmError, match=r"model\.yaml:6:\d+: alias \*a3"):
        load_model(model)


ADDRESS_SPACE = 400 << 20
"""The address-space limit of the subprocess: Python with opbuild's imports fits, an expanded
bomb (or even its path-to-position table) does not."""


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_validate_refuses_the_bomb_within_bounded_memory(tmp_path: Path):
    spec = tmp_path / "bomb" / "op.yaml"
    spec.parent.mkdir()
    spec.write_text(alias_bomb())
    proc = subprocess.run([sys.executable, "-m", "opbuild.cli", "validate", str(spec)], capture_output=True, text=True,
                          preexec_fn=_limit_address_space, timeout=120)
    assert proc.returncode == 1, proc
    assert f"{spec}:6:" in proc.stderr and "alias *a3 expands the document" in proc.stderr, proc.stderr
    assert "MemoryError" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_om_single_op_attr_is_bounded_too():
    from opbuild.om.errors import OmError
    from opbuild.om.single_op import parse_attr

    assert parse_attr("slope=.inf") == ("slope", float("inf"))
    with pytest.raises(OmError, match=r"^--attr bomb:6:\d+: alias \*a3"):
        parse_attr("bomb=" + alias_bomb())
