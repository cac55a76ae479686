"""Which specs a build works on, loaded and fully checked before anything is declared."""

from __future__ import annotations

from pathlib import Path

from opbuild.build.consistency import check_specs_without_native
from opbuild.spec import SpecError, load_specs
from opbuild.spec.model import OpSpec


class SelectionError(Exception):
    """The specs cannot be built: invalid, unknown op names, or keys that disagree with binaries."""


def select_specs(ops_dir: Path, wanted: str = "") -> list[OpSpec]:
    """Load every spec under `ops_dir`, keep those named in `wanted` (comma-separated op types or
    directory names; empty = all), and check their simplified-key rules where that needs no
    compiled code. Raises SelectionError with every problem found."""
    if not ops_dir.is_dir():
        raise SelectionError(f"error: no ops directory at {ops_dir}")
    try:
        specs = load_specs([ops_dir])
    except SpecError as exc:
        raise SelectionError(str(exc)) from None
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    if names:
        by_name = {s.op: s for s in specs} | {s.snake: s for s in specs}
        missing = [n for n in names if n not in by_name]
        if missing:
            known = ", ".join(sorted(s.op for s in specs))
            raise SelectionError(f"error: OPS names unknown op(s) {', '.join(missing)}; ops under {ops_dir}: {known}")
        chosen = {by_name[n].op for n in names}
        specs = [s for s in specs if s.op in chosen]
    if not specs:
        raise SelectionError(f"error: no op specs found under {ops_dir}")
    problems = check_specs_without_native(specs)
    if problems:
        raise SelectionError("error: simplified keys and binaries disagree:\n  " + "\n  ".join(problems))
    return specs
