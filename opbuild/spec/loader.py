"""Finding and loading op specs: file -> YAML with marks -> schema -> semantic checks -> OpSpec."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable

from .checks import SpecChecker, broken_sections
from .errors import Problem, SpecError
from .model import OpSpec
from .project_checks import project_problems
from .schema import schema_problems
from .yaml_marks import MAX_YAML_BYTES, Marks, load_yaml, size_problem

SPEC_FILE = "op.yaml"

Checker = Callable[[Path], "tuple[OpSpec | None, list[Problem]]"]
"""Checks one spec file: (the OpSpec, []) or (None, every problem)."""


def _candidates(raw: str | os.PathLike[str]) -> list[Path]:
    """The spec files one path names: a file is itself; a directory yields its own `op.yaml` and
    every `<dir>/*/op.yaml`, sorted. Raises FileNotFoundError for a path that does not exist."""
    path = Path(raw)
    if path.is_dir():
        return sorted(p for p in [path / SPEC_FILE, *path.glob(f"*/{SPEC_FILE}")] if p.is_file())
    if path.exists():
        return [path]
    raise FileNotFoundError(f"no such file or directory: {raw}")


def _add_new(candidates: Iterable[Path], found: list[Path], seen: set[Path]) -> None:
    """Append to `found` each candidate whose resolved path is not in `seen` (and record it): each
    path is resolved once, so collecting n specs costs n resolves, not n²."""
    for candidate in candidates:
        key = candidate.resolve()
        if key not in seen:
            seen.add(key)
            found.append(candidate)


def find_specs(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The spec files named by `paths`: a file is itself; a directory yields its own `op.yaml`
    and every `<dir>/*/op.yaml`, sorted. Duplicates are dropped (first occurrence kept).
    Raises FileNotFoundError for a path that does not exist."""
    found: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        _add_new(_candidates(raw), found, seen)
    return found


def read_spec(path: str | os.PathLike[str]) -> tuple[OpSpec | None, list[Problem], Marks | None]:
    """`check_spec`, plus the marks (line and column of every value) of the loaded document, for
    checks that locate later problems in it (opbuild.validate); marks are None when the file
    could not be parsed."""
    file = os.fspath(path)
    spec_path = Path(path).absolute()
    try:
        with open(spec_path, "rb") as f:  # bounded: a huge file is refused, never read whole
            raw = f.read(MAX_YAML_BYTES + 1)
            too_big = size_problem(max(os.fstat(f.fileno()).st_size, len(raw)), file)
            if too_big is not None:
                return None, [too_big], None
    except FileNotFoundError:
        return None, [Problem(file, 0, 0, "no such file")], None
    except OSError as exc:
        return None, [Problem(file, 0, 0, f"can't read the spec: {exc.strerror or exc}")], None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [Problem(file, line, col, f"the spec is not UTF-8 text ({exc.reason})")], None
    data, marks, problems = load_yaml(text, file)
    if data is None and problems:  # nothing usable (a syntax error, no document)
        return None, problems, marks
    paths = []
    for path_, problem in schema_problems(data, marks):
        paths.append(path_)
        problems.append(problem)
    if not isinstance(data, dict):
        return None, problems, marks
    spec, semantic = SpecChecker(data, marks, spec_path, broken_sections(paths)).run()
    problems.extend(semantic)
    return (None if problems else spec), problems, marks


def check_spec(path: str | os.PathLike[str]) -> tuple[OpSpec | None, list[Problem]]:
    """Load and validate one spec file: (the OpSpec, []) or (None, every problem found).
    Problems name the file as given in `path`."""
    spec, problems, _marks = read_spec(path)
    return spec, problems


def load_spec(path: str | os.PathLike[str]) -> OpSpec:
    """Load and validate one `op.yaml`; raises SpecError listing every problem."""
    spec, problems = check_spec(path)
    if problems or spec is None:
        raise SpecError(problems)
    return spec


def load_specs(paths: Iterable[str | os.PathLike[str]], check: Checker | None = None) -> list[OpSpec]:
    """Load every spec named by `paths` (files or directories, see `find_specs`). Problems of all
    files, and those between the valid ones (`project_checks.project_problems`: an op defined
    twice, names two ops give one library, ONNX plugins of one package that overlap), are
    collected before one SpecError is raised. A path that does not exist is a problem too.
    `check` checks one file (default `check_spec`; `opbuild validate` passes
    `opbuild.validate.validate_op`, which adds the build's checks)."""
    check = check or check_spec
    files: list[Path] = []
    seen: set[Path] = set()
    problems: list[Problem] = []
    for raw in paths:
        try:
            _add_new(_candidates(raw), files, seen)
        except FileNotFoundError:
            problems.append(Problem(os.fspath(raw), 0, 0, "no such file or directory"))
    specs: list[OpSpec] = []
    for file in files:
        spec, found = check(file)
        problems.extend(found)
        if spec is not None:
            specs.append(spec)
    problems.extend(project_problems(specs))
    if problems:
        raise SpecError(problems)
    return specs

