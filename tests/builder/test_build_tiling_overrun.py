"""A tiling function writing past its tiling struct fails the build (issue 26): the tiling
library's check step runs each tiling function once per declared dtype combination on a small
call with a guard region after the struct (opbuild/builder/tiling_probe.py); the write is then
located by AddressSanitizer at its line, or, without the sanitizer, at the tiling function's
definition."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from opbuild.codegen.scaffold import scaffold_op
from opbuild.spec.csource import c_functions, definition

OVERRUN = "    ((volatile unsigned char *)td)[sizeof *td + 3] = 1; /* one struct too far */\n"
ANCHOR = "    td->total_length ="


def _has_asan() -> bool:
    try:
        out = subprocess.run(["cc", "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=30)
    except OSError:
        return False
    return out.stdout.strip().startswith("/")


def _overrunning_op(p):
    shutil.rmtree(p.root / "ops")
    op_dir = scaffold_op("ScaleCustom", p.root / "ops")
    tiling = op_dir / "tiling.c"
    text = tiling.read_text()
    tiling.write_text(text.replace(ANCHOR, OVERRUN + ANCHOR, 1))
    return tiling, text


def _message(where: str) -> str:
    return (f"error: tiling functions write past their tiling data:\n  ops/scale_custom/tiling.c:{where}: ScaleCustom: "
            f"tiling function scale_custom_tiling wrote past the end of its 24-byte tiling data (struct "
            f"ScaleCustomTilingData, the kernel's opParaSize): byte 27 changed, on the build's probe call "
            f"(x=float16[4, 64], y=float16[4, 64]; declared combination 1 of 2)")


@pytest.mark.skipif(not _has_asan(), reason="the C compiler has no AddressSanitizer runtime")
def test_a_tiling_function_writing_past_its_struct_fails_the_build_at_the_line(project):
    p = project()
    tiling, text = _overrunning_op(p)
    result = p.scons("ops")
    assert result.rc != 0, str(result)
    line = tiling.read_text().splitlines().index(OVERRUN.rstrip("\n")) + 1
    assert _message(f"{line}:5") in result.stderr, str(result)
    assert not (p.pkg / "op_impl" / "ai_core" / "tbe" / "op_tiling" / "liboptiling.so").exists()

    tiling.write_text(text)  # fixed: the build goes through
    p.build()


def test_without_the_sanitizer_the_tiling_function_is_named(tmp_path, monkeypatch):
    """No AddressSanitizer runtime: the guard still finds the overrun (the probe itself), placed at
    the tiling function's definition. In-process, on the tiling source compiled alone."""
    from opbuild.builder import tiling_probe
    from opbuild.spec import load_spec
    from opbuild.builder.tiling_lib import compile_tiling_source

    monkeypatch.setenv("OPBUILD_VALIDATE_CACHE", str(tmp_path / "cache"))
    op_dir = scaffold_op("ScaleCustom", tmp_path / "ops")
    tiling = op_dir / "tiling.c"
    tiling.write_text(tiling.read_text().replace(ANCHOR, OVERRUN + ANCHOR, 1))
    spec = load_spec(op_dir / "op.yaml")
    compiled = compile_tiling_source(spec, str(tiling))
    assert compiled.library is not None, compiled.problems
    monkeypatch.setattr(tiling_probe, "_asan_runtime", lambda cc: None)
    found = definition(c_functions(tiling.read_text()), "scale_custom_tiling")
    assert tiling_probe.check_tiling_overruns([spec], compiled.library) == [
        _message(f"{found.line}:{found.col}").split("\n  ", 1)[1].replace("ops/scale_custom/tiling.c", str(tiling))]
