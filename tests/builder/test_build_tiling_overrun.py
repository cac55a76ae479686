"""A tiling function writing past its tiling struct fails the build (issue 26): the tiling
library's check step runs each tiling function once per declared dtype combination on a small
call with a guard region after the struct, and names the tiling function's definition
(file:line:col; the guard sees that a byte changed, not which line wrote it)."""

from __future__ import annotations

import shutil

from opbuild.codegen.scaffold import scaffold_op
from opbuild.spec.csource import c_functions, definition

OVERRUN = "    ((volatile unsigned char *)td)[sizeof *td + 3] = 1; /* one struct too far */\n"


def test_a_tiling_function_writing_past_its_struct_fails_the_build(project):
    p = project()
    shutil.rmtree(p.root / "ops")
    op_dir = scaffold_op("ScaleCustom", p.root / "ops")
    tiling = op_dir / "tiling.c"
    text = tiling.read_text()
    anchor = "    td->total_length ="
    tiling.write_text(text.replace(anchor, OVERRUN + anchor, 1))
    result = p.scons("ops")
    assert result.rc != 0, str(result)
    found = definition(c_functions(tiling.read_text()), "scale_custom_tiling")
    expected = (f"ops/scale_custom/tiling.c:{found.line}:{found.col}: ScaleCustom: tiling function scale_custom_tiling wrote past the "
                f"end of its 24-byte tiling data (struct ScaleCustomTilingData, the kernel's opParaSize): byte 27 "
                f"changed, on the build's probe call (x=float16[4, 64], y=float16[4, 64]; declared combination 1 of 2)")
    assert "error: tiling functions write past their tiling data:\n  " + expected in result.stderr, str(result)
    assert not (p.pkg / "op_impl" / "ai_core" / "tbe" / "op_tiling" / "liboptiling.so").exists()

    tiling.write_text(text)  # fixed: the build goes through
    p.build()
