"""Checking an op's Python key rule (`python:<module>:<function>`) without running it in opbuild's
process.

`opbuild validate`, the pre-commit hook and the build check a Python key rule by running it on
every declared call (key_problems.py). That runs the author's code: its top-level statements,
then the function. Here it runs in a child Python process (`python -m
opbuild.validate.key_rule_process`) that first limits itself (address space RULE_MEMORY_BYTES,
CPU time) and is killed, with its process group, after RULE_TIMEOUT_SECONDS of wall time. What
the rule does there (loops, exhausts memory, raises SystemExit or KeyboardInterrupt, calls
os._exit, crashes) becomes one problem of that op; opbuild's process only unpickles its own
input to the child, never anything from it: the child's answer is a JSON list of problems, read
from a file (bounded) and checked field by field.

The runtime, by contrast, imports and calls the rule in-process (it ships with the package, as
CANN's GenSimplifiedKey does); there a SystemExit or KeyboardInterrupt from the rule is a
KeyRuleError naming the op and the rule file (opbuild/keys/rules.py).
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from opbuild.spec.errors import Problem
from opbuild.spec.model import OpSpec
from opbuild.spec.yaml_marks import Marks

RULE_TIMEOUT_SECONDS = 10.0
"""Wall time one op's key-rule check may take in its process (every declared call)."""
RULE_MEMORY_BYTES = 1 << 30
"""Address space of that process (RLIMIT_AS)."""
MAX_RESULT_BYTES = 16 << 20
"""The child's answer is read this far at most."""

RuleFile = tuple[Path, str]
"""(absolute path of the rule file, the path as problems show it)."""


# ---- in the child ----------------------------------------------------------------------------

def rule_problems(spec: OpSpec, marks: Marks, rule_file: RuleFile) -> list[Problem]:
    """The located problems of the op's Python key rule, found by running it here (the child's
    work; call it in-process only where running the author's code is intended)."""
    from opbuild.keys import KeyRuleError, load_python_callback
    from opbuild.validate.key_problems import KeyProblems, cause_text, key_problems

    try:
        callback = load_python_callback(spec)
    except Exception as exc:  # noqa: BLE001 - a key rule module that fails to import
        position = KeyProblems(spec, marks, rule_file, None).rule_position(exc)
        message = f"cannot load the simplified-key callback: {cause_text(exc)}"
        if position is not None:
            return [Problem(position[0], position[1], position[2], message, "")]
        return [marks.problem(("simplified_key", "callback"), message)]

    def fragment(ctx: Any) -> Any:  # SystemExit and the like: a finding of the call, as an exception is
        try:
            return callback(ctx)
        except Exception:
            raise
        except BaseException as exc:
            raise KeyRuleError(f"{type(exc).__name__}: {exc}") from exc

    return key_problems(spec, marks, fragment, rule_file)


def _child() -> int:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (RULE_MEMORY_BYTES, RULE_MEMORY_BYTES))
    cpu = int(RULE_TIMEOUT_SECONDS) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    result_path = sys.argv[1]
    spec, marks, rule_file = pickle.loads(sys.stdin.buffer.read())  # (written by the parent)
    try:
        problems = [[p.file, p.line, p.col, p.message, p.json_path] for p in rule_problems(spec, marks, rule_file)]
    except BaseException as exc:  # noqa: BLE001 - whatever the rule did: one problem of the op
        p = marks.problem(("simplified_key", "callback"),
                          f"checking the simplified-key callback failed: {type(exc).__name__}: {exc}")
        problems = [[p.file, p.line, p.col, p.message, p.json_path]]
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(problems, f)
    os._exit(0)  # (no exit handler or finaliser of the rule's runs after the answer)


# ---- in opbuild's process ----------------------------------------------------------------------

def isolated_rule_problems(spec: OpSpec, marks: Marks, rule_file: RuleFile) -> list[Problem]:
    """`rule_problems` run in a child process limited in time and memory (see the module doc)."""
    def failed(how: str) -> list[Problem]:
        return [marks.problem(("simplified_key", "callback"),
                              f"checking the simplified-key callback {rule_file[1]} failed: {how}")]

    with tempfile.TemporaryDirectory(prefix="opbuild-keyrule-") as tmp:
        result = Path(tmp) / "problems.json"
        code_root = str(Path(__file__).resolve().parents[2])  # (this opbuild, wherever it was imported from)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [code_root, os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen([sys.executable, "-m", "opbuild.validate.key_rule_process", str(result)],
                                stdin=subprocess.PIPE, env=env, start_new_session=True)
        stdin = proc.stdin
        if stdin is None:  # (stdin=PIPE makes one)
            raise OSError("the key rule process has no stdin pipe")
        try:
            try:
                stdin.write(pickle.dumps((spec, marks, rule_file)))
                stdin.close()
            except BrokenPipeError:
                pass
            status = proc.wait(timeout=RULE_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            return failed(f"it did not finish within {RULE_TIMEOUT_SECONDS:g} s (stopped; a loop that never "
                          f"returns?)")
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        if status < 0:
            name = signal.Signals(-status).name if -status in signal.valid_signals() else str(-status)
            hint = " (over its CPU time limit)" if -status == signal.SIGXCPU else ""
            return failed(f"its process was killed by {name}{hint}")
        try:
            from opbuild import safefile

            answer = safefile.read_json(result, MAX_RESULT_BYTES, max_depth=4)
        except OSError:
            return failed(f"its process ended with exit status {status} before it answered "
                          f"(the rule called exit() or os._exit()?)")
        problems = _problems_of(answer)
        if problems is None:
            return failed("its process gave a malformed answer")
        return problems


def _problems_of(answer: Any) -> list[Problem] | None:
    """The child's JSON answer as Problems; None unless it is exactly a list of
    [file, line, col, message, json_path] with those types."""
    if not isinstance(answer, list):
        return None
    out = []
    for item in answer:
        if not (isinstance(item, list) and len(item) == 5 and isinstance(item[0], str) and isinstance(item[3], str)
                and isinstance(item[4], str) and all(type(v) is int for v in item[1:3])):
            return None
        out.append(Problem(item[0], item[1], item[2], item[3], item[4]))
    return out


if __name__ == "__main__":
    sys.exit(_child())
