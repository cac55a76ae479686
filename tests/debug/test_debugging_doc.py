"""docs/debugging.md's worked examples are real: each ```console block's commands run in a copy of
examples/debugging (in order, as a reader would type them) and every output line the doc shows
appears in the command's output, in order. Host times differ between runs: "0.4 s" and the
profile table's float columns and its slowest-block column are compared as placeholders (the
ints — calls, blocks — and everything else exactly); the checkout's path is shown as "…"."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "debugging.md"
EXAMPLE = REPO / "examples" / "debugging"
_BLOCK = re.compile(r"^```console\n(.*?)^```", re.S | re.M)

pytestmark = pytest.mark.slow  # builds the example twice (plain and instrumented)


def doc_commands() -> list[tuple[str, list[str]]]:
    """(command, shown output lines) of every console block, in order."""
    steps: list[tuple[str, list[str]]] = []
    for block in _BLOCK.findall(DOC.read_text()):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps and line.strip():
                steps[-1][1].append(line)
    return steps


def _normalize(line: str, command: str) -> str:
    line = re.sub(r"\b\d+\.\d+ s\b", "N s", line)
    if command.startswith("opbuild prof") and re.match(r"^\w+\s+\d+\s+\d", line):
        fields = line.split()
        line = " ".join([fields[0], fields[1], fields[2], "F", "F", "F", "F", fields[7], "F", "B"])
    return line


def _bin_dir(tmp: Path) -> Path:
    """`python`, `opbuild` and `scons` as the doc's reader has them, for this checkout."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name, argv in (("python", ""), ("opbuild", "-m opbuild"), ("scons", "-m SCons -Q")):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" {argv} "$@"\n')
        script.chmod(0o755)
    return bin_dir


def test_the_worked_examples_print_what_the_doc_shows(tmp_path):
    steps = doc_commands()
    assert [c.split()[0] for c, _ in steps].count("opbuild") >= 3  # compare, prof, memcheck at least
    project = tmp_path / "examples" / "debugging"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("out", "dump", "trace.json", "__pycache__"))
    shutil.copy(REPO / "SConstruct", project / "SConstruct")  # the example's reads ../../SConstruct
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{_bin_dir(tmp_path)}{os.pathsep}{os.environ['PATH']}"}
    for var in ("OPBUILD_DUMP", "OPBUILD_PROFILE", "OPBUILD_MEMCHECK", "LD_PRELOAD", "OPBUILD_CACHE_DIR"):
        env.pop(var, None)
    cwd = tmp_path
    for command, shown in steps:
        if command.startswith("cd "):
            cwd = cwd / command[3:]
            continue
        r = subprocess.run(["/bin/sh", "-c", command + " 2>&1"], cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=300)
        got = [_normalize(line.replace(str(project), "…"), command) for line in r.stdout.splitlines()]
        want = [_normalize(line, command) for line in shown]
        it = iter(got)
        missing = [line for line in want if not any(line == g for g in it)]
        assert not missing, f"$ {command}\nnot in its output (in order): {missing}\n--- output:\n{r.stdout[-4000:]}"
