"""`opbuild init [DIR]`: an op project outside the opbuild checkout.

The project is what the installed opbuild alone builds: `ops/` for the op directories, a
`SConstruct` that reads the installed opbuild's one SConstruct (so `scons ops` works there as in
the checkout, and `opbuild build` runs the same build), a `.gitignore` for what the build writes,
a `.pre-commit-config.yaml` running `opbuild validate`, and a short README. Rendered from
templates/scaffold/project/*.j2. DIR must be empty or not exist; the files are written under a
temporary directory and moved into place, so an interrupted run leaves no half-written project.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from opbuild.codegen.env import render

PROJECT_FILES: dict[str, str] = {
    "SConstruct": "scaffold/project/SConstruct.j2",
    ".gitignore": "scaffold/project/gitignore.j2",
    ".pre-commit-config.yaml": "scaffold/project/pre-commit-config.yaml.j2",
    "README.md": "scaffold/project/README.md.j2",
}
"""Project file -> template (under templates/); plus the empty `ops/` directory (OPS_DIR)."""
OPS_DIR = "ops"


class ProjectScaffoldError(ValueError):
    """DIR is not an empty directory (nothing is overwritten), or cannot be written."""


def is_empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def init_project(directory: Path) -> Path:
    """Write an op project at `directory` (created if missing; it must be empty); return it."""
    directory = Path(directory)
    if directory.is_symlink() or (directory.exists() and not is_empty_dir(directory)):
        raise ProjectScaffoldError(f"{directory} is not an empty directory; not writing a project into it "
                                   f"(choose a new directory, or `opbuild new OpName` to add an op to a project)")
    name = directory.resolve().name or "ops"
    rendered = {file: render(template, project=name) for file, template in PROJECT_FILES.items()}
    parent = directory.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
    except OSError as exc:
        raise ProjectScaffoldError(f"{directory}: cannot create the project: {exc.strerror or exc}") from None
    try:
        for file, text in rendered.items():
            (tmp / file).write_text(text, encoding="utf-8")
        (tmp / OPS_DIR).mkdir()
        tmp.chmod(0o755)
        if directory.exists():
            for entry in tmp.iterdir():
                os.rename(entry, directory / entry.name)
            tmp.rmdir()
        else:
            os.rename(tmp, directory)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ProjectScaffoldError(f"{directory}: cannot create the project: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory
