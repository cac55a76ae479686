"""Collecting specs is linear in their number (issue 25: `load_specs` resolved every path collected
so far for each new one, 2,000 ops 48 s of CPU before anything was checked). Measured by counting
`Path.resolve` calls, not time (timings: bench/validate_scale_bench.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from opbuild.spec import find_specs, load_specs
from opbuild.spec.errors import Problem
from opbuild.spec.model import OpSpec


def _ops(root: Path, n: int) -> list[Path]:
    """n op directories under root, each with an (unchecked) op.yaml."""
    files = []
    for i in range(n):
        d = root / f"op{i:04d}"
        d.mkdir()
        (d / "op.yaml").write_text("op: X\n")
        files.append(d / "op.yaml")
    return files


def _no_check(path: Path) -> tuple[OpSpec | None, list[Problem]]:
    return None, []


def _count_resolves(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = Path.resolve

    def counting(self: Path, strict: bool = False) -> Path:
        calls[0] += 1
        return real(self, strict)

    monkeypatch.setattr(Path, "resolve", counting)
    return calls


@pytest.mark.parametrize("as_files", [False, True], ids=["one directory", "each file named"])
def test_load_specs_resolves_each_path_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_files: bool) -> None:
    n = 300
    files = _ops(tmp_path, n)
    calls = _count_resolves(monkeypatch)
    load_specs(files if as_files else [tmp_path], check=_no_check)
    assert calls[0] <= 2 * n  # (quadratic: n * (n - 1) / 2 = 44,850)


def test_find_specs_resolves_each_path_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 300
    files = _ops(tmp_path, n)
    calls = _count_resolves(monkeypatch)
    assert find_specs([*files, tmp_path]) == files  # duplicates dropped, first occurrence kept
    assert calls[0] <= 2 * 2 * n


def test_load_specs_still_drops_duplicates_and_reports_missing(tmp_path: Path) -> None:
    files = _ops(tmp_path, 3)
    seen: list[Path] = []

    def record(path: Path) -> tuple[OpSpec | None, list[Problem]]:
        seen.append(path)
        return None, []

    with pytest.raises(Exception) as info:
        load_specs([files[1], tmp_path, tmp_path / "missing", files[1]], check=record)
    assert seen == [files[1], files[0], files[2]]
    assert [p.message for p in info.value.problems] == ["no such file or directory"]
