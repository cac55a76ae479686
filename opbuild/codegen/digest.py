"""The generator's own files: the build makes them dependencies of everything they render.

They are our code as the fingerprint lists it (opbuild/fingerprint.py, the one list): an edit to
any of it re-runs the generating steps, which rewrite only the outputs whose content changed.
"""

from __future__ import annotations

from pathlib import Path

from opbuild.fingerprint import code_digest, code_files

GENERATOR_FILES: tuple[Path, ...] = tuple(sorted(Path(p) for p in code_files()))
"""Every module and template whose content may affect generated output (absolute paths, sorted):
`fingerprint.code_files()`."""


def generator_digest() -> str:
    """sha256 over GENERATOR_FILES (name and content of each), computed once per process."""
    return code_digest()
