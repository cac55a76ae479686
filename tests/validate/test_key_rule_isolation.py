"""`opbuild validate` (and so the pre-commit hook and the build) checks a Python key rule without
running the author's code in its own process (issue 25: it imported `key_rule.py`, so its
top-level code ran, a looping rule hung validate and `SystemExit(7)` ended it silently). The rule
runs in a child process limited in time and memory (opbuild/validate/key_rule_process.py); what
it does there is one problem of the op. At run time (in-process by design) SystemExit and
KeyboardInterrupt from a rule are a KeyRuleError naming the op and the rule file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.keys import KeyRuleError, context_for_choices, load_python_callback, make_fragment_fn
from opbuild.spec.model import TensorChoice
from opbuild.validate import validate_op
from opbuild.validate.key_rule_process import RULE_TIMEOUT_SECONDS

from corpus import GOOD

REPO = Path(__file__).resolve().parents[2]
GOOD_RULE = """def gen_simplified_key(ctx) -> str:
    suffix = {"float16": "fp16", "float32": "fp32"}[ctx.input_dtype(0)]
    return ("zero_" if ctx.attr("scale") == 0.0 else "scale_") + suffix
"""


def _op(tmp_path: Path, rule: str) -> Path:
    """The corpus's good Python-rule op (ScaleCustom) with `rule` as its key_rule.py; its op.yaml."""
    [source] = (GOOD / "python" / "ops").iterdir()
    op_dir = tmp_path / "ops" / source.name
    shutil.copytree(source, op_dir, ignore=shutil.ignore_patterns("__pycache__"))
    (op_dir / "key_rule.py").write_text(rule)
    return op_dir / "op.yaml"


def _validate_cli(tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1",
           "OPBUILD_VALIDATE_CACHE": str(tmp_path / "vcache")}
    return subprocess.run([sys.executable, "-m", "opbuild.cli", "validate", "ops"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_good_rule_still_validates(tmp_path: Path) -> None:
    spec, problems = validate_op(_op(tmp_path, GOOD_RULE))
    assert problems == [] and spec is not None


def test_the_rules_top_level_code_does_not_run_in_opbuilds_process(tmp_path: Path) -> None:
    marker = "OPBUILD_TEST_KEY_RULE_RAN_HERE"
    os.environ.pop(marker, None)
    rule = f"import os\nos.environ[{marker!r}] = str(os.getpid())\n" + GOOD_RULE
    spec, problems = validate_op(_op(tmp_path, rule))
    assert problems == [] and spec is not None  # it ran (and answered), elsewhere
    assert marker not in os.environ


def test_system_exit_at_the_rules_top_level_is_a_problem_at_its_line(tmp_path: Path) -> None:
    _op(tmp_path, "import sys\nsys.exit(7)\n" + GOOD_RULE)
    proc = _validate_cli(tmp_path)
    assert proc.returncode == 1, proc
    assert "ops/scale_custom/key_rule.py:2:1: cannot load the simplified-key callback: " in proc.stderr
    assert "SystemExit: 7" in proc.stderr and "1 problem(s) in 1 file(s)" in proc.stderr


def test_system_exit_and_keyboard_interrupt_in_the_rule_are_problems_of_the_call(tmp_path: Path) -> None:
    rule = GOOD_RULE.replace("    suffix =", "    if ctx.attr('scale') == 0.0:\n        raise SystemExit(7)\n"
                                           "    if ctx.input_dtype(0) == 'float32':\n        raise KeyboardInterrupt\n"
                                           "    suffix =")
    _op(tmp_path, rule)
    proc = _validate_cli(tmp_path)
    assert proc.returncode == 1, proc
    assert "key_rule.py:3:9: GenSimplifiedKey gen_simplified_key raised SystemExit: 7" in proc.stderr, proc.stderr
    assert "key_rule.py:5:9: GenSimplifiedKey gen_simplified_key raised KeyboardInterrupt" in proc.stderr, proc.stderr


def test_a_rule_that_never_returns_is_stopped_and_reported(tmp_path: Path) -> None:
    _op(tmp_path, "def gen_simplified_key(ctx):\n    while True:\n        pass\n")
    proc = _validate_cli(tmp_path, timeout=RULE_TIMEOUT_SECONDS + 120)
    assert proc.returncode == 1, proc
    assert (f"op.yaml:19:13: checking the simplified-key callback ops/scale_custom/key_rule.py failed: it did not "
            f"finish within {RULE_TIMEOUT_SECONDS:g} s") in proc.stderr, proc.stderr


def test_a_rule_that_exhausts_memory_is_a_problem_not_opbuilds_memory(tmp_path: Path) -> None:
    rule = GOOD_RULE.replace("    suffix =", "    hog = bytearray(3 << 30)\n    suffix =")
    spec, problems = validate_op(_op(tmp_path, rule))
    assert spec is None
    assert any("raised MemoryError" in p.message and p.file.endswith("key_rule.py") and p.line == 2
               for p in problems), problems


def test_a_rule_that_ends_its_process_is_reported(tmp_path: Path) -> None:
    _op(tmp_path, "import os\n" + GOOD_RULE.replace("    suffix =", "    os._exit(3)\n    suffix ="))
    proc = _validate_cli(tmp_path)
    assert proc.returncode == 1, proc
    assert "failed: its process ended with exit status 3 before it answered" in proc.stderr, proc.stderr


# ---- run time: in-process, but SystemExit / KeyboardInterrupt never escape the API ----------------

def _spec(tmp_path: Path, rule: str):
    from opbuild.spec import load_spec

    return load_spec(_op(tmp_path, rule))


def _ctx(spec):
    return context_for_choices(spec, {"x": TensorChoice("float16"), "y": TensorChoice("float16")})


@pytest.mark.parametrize("raised", ["SystemExit(7)", "KeyboardInterrupt()"])
def test_at_run_time_system_exit_and_keyboard_interrupt_are_a_key_rule_error(tmp_path: Path, raised: str) -> None:
    spec = _spec(tmp_path, GOOD_RULE.replace("    suffix =", f"    raise {raised}\n    suffix ="))
    fn = make_fragment_fn(spec)
    with pytest.raises(KeyRuleError, match=r"ScaleCustom: GenSimplifiedKey callback key_rule\.py:gen_simplified_key "
                                           rf"raised {raised.split('(')[0]}"):
        fn(_ctx(spec))


def test_at_run_time_system_exit_on_import_is_a_key_rule_error(tmp_path: Path) -> None:
    spec = _spec(tmp_path, GOOD_RULE)
    (spec.op_dir / "key_rule.py").write_text("raise SystemExit(7)\n" + GOOD_RULE)
    with pytest.raises(KeyRuleError, match=r"ScaleCustom: .*key_rule\.py.*importing .*key_rule\.py failed: SystemExit: 7"):
        load_python_callback(spec)
