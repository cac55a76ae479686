"""Files generated from a declaration and committed: their staleness check and their command line.

`python -m opbuild.spec.generate` (the op-spec schema and docs tables) and `python -m
opbuild.abi.generate_c` (the C vocabulary) both compute each generated file's expected content,
then either rewrite the stale ones or, with `--check`, name them and exit 1 (what pre-commit and
the tests run). That loop is written once, here; each generator supplies only its files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from opbuild.atomic import atomic_write


def stale_files(root: Path, files: dict[Path, str]) -> list[Path]:
    """The generated files under `root` (paths relative to it) whose content differs from `files`."""
    return [rel for rel, text in files.items()
            if not (root / rel).is_file() or (root / rel).read_text(encoding="utf-8") != text]


def generator_main(argv: list[str] | None, *, command: str, description: str, declared_by: str, default_root: Path,
                   expected_files: Callable[[Path], dict[Path, str]],
                   input_errors: tuple[type[Exception], ...]) -> int:
    """The command line of a generator: rewrite the stale files (0), or with --check name each
    stale file on stderr and return 1; an unreadable input (`input_errors`) is one line and 2.
    `declared_by` completes "it differs from what ..." (e.g. "opbuild/spec/fields.py declares")."""
    parser = argparse.ArgumentParser(prog=command, description=description)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated file is stale")
    parser.add_argument("--root", type=Path, default=default_root, help="the repository root (default: %(default)s)")
    args = parser.parse_args(argv)
    root: Path = args.root
    try:
        files = expected_files(root)
    except input_errors as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    changed = stale_files(root, files)
    if args.check:
        for rel in changed:
            print(f"{command}: {rel} is stale: it differs from what {declared_by}; run `{command}` and "
                  f"commit the result", file=sys.stderr)
        return 1 if changed else 0
    for rel in changed:
        atomic_write(root / rel, files[rel].encode("utf-8"))
        print(f"wrote {rel}")
    return 0
