"""The broken-spec corpus: each `broken/<case>/` is a project's `ops/` holding one op with one
realistic author mistake, and `expected.txt`, the exact lines `opbuild validate ops` prints for
it (`{case_dir}` stands for the case directory; a symlink case has files outside `ops/`).
`good/<rule>/` holds the same op unbroken, one per key-rule kind, which must validate and build.

(Imported by name from this directory's tests: `from corpus import ...`.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BROKEN = HERE / "broken"
GOOD = HERE / "good"
EXPECTED = "expected.txt"


def cases() -> list[str]:
    return sorted(p.name for p in BROKEN.iterdir() if (p / "ops").is_dir())


def good_cases() -> list[str]:
    return sorted(p.name for p in GOOD.iterdir() if (p / "ops").is_dir())


def copy_case(source: Path, dest: Path) -> Path:
    """A copy of a case directory (symlinks kept as symlinks) to run in: checking imports the
    Python key rule, which may write its bytecode beside it."""
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", EXPECTED))
    return dest


def expected_lines(case: str, case_dir: Path) -> list[str]:
    text = (BROKEN / case / EXPECTED).read_text(encoding="utf-8")
    return [line.replace("{case_dir}", str(case_dir.resolve())) for line in text.splitlines()]


def run_validate(case_dir: Path, cache: Path) -> subprocess.CompletedProcess:
    """`opbuild validate ops` in `case_dir`, as an author runs it (a subprocess)."""
    env = {**os.environ, "OPBUILD_VALIDATE_CACHE": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", "import sys; from opbuild.cli import main; sys.exit(main())",
                           "validate", "ops"], cwd=case_dir, env=env, capture_output=True, text=True, timeout=120)
