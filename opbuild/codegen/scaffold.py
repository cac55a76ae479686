"""`opbuild new <Op>`: create `ops/<op_snake>/` with a spec and sources that build at once.

The op is a complete example rendered from templates/scaffold/*.j2, so a new package validates,
builds and runs before the author changes anything: for an AI Core op (the default) an
elementwise y = scale * x for float16 and float32 (kernel.c, tiling.c, default-mode simplified
keys); for an AI CPU op (`engine="aicpu"`) a filter with a data-dependent output (compute.c). The directory is written under a temporary name and
renamed into place, so an interrupted run leaves no half-written op behind.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from opbuild.codegen.env import render
from opbuild.spec.checks import C_KEYWORDS
from opbuild.spec.field_types import Str
from opbuild.spec.fields import OP_SPEC
from opbuild.spec.naming import snake_case

__all__ = ["ScaffoldError", "scaffold_op", "SCAFFOLD_FILES", "AICPU_SCAFFOLD_FILES", "ENGINES"]



def _op_pattern() -> str:
    op_type = OP_SPEC.field("op").type
    if not isinstance(op_type, Str) or op_type.pattern is None:
        raise TypeError("opbuild/spec/fields.py: `op` must be a string field with a pattern")
    return op_type.pattern


OP_NAME = re.compile(_op_pattern())
"""The spec's rule for `op` (declared in opbuild/spec/fields.py)."""

SCAFFOLD_FILES: dict[str, str] = {
    "op.yaml": "scaffold/op.yaml.j2",
    "kernel.c": "scaffold/kernel.c.j2",
    "tiling.c": "scaffold/tiling.c.j2",
}
"""Output file -> template (under templates/) of an AI Core op."""
AICPU_SCAFFOLD_FILES: dict[str, str] = {
    "op.yaml": "scaffold/aicpu_op.yaml.j2",
    "compute.c": "scaffold/compute.c.j2",
}
"""Output file -> template of an AI CPU op (`engine: aicpu`)."""
ENGINES: dict[str, dict[str, str]] = {"aicore": SCAFFOLD_FILES, "aicpu": AICPU_SCAFFOLD_FILES}


class ScaffoldError(ValueError):
    """A name that is not CamelCase, or an op directory that already exists."""


def scaffold_op(op_name: str, ops_dir: Path, engine: str = "aicore") -> Path:
    """Create `ops_dir/<snake_case(op_name)>/` with the files of `engine` (ENGINES: op.yaml,
    kernel.c and tiling.c; or op.yaml and compute.c); return it.

    Raises ScaffoldError for a name that is not CamelCase (an uppercase letter, then letters and
    digits) and for an existing target (never overwritten).
    """
    if not isinstance(op_name, str) or not OP_NAME.match(op_name):
        raise ScaffoldError(
            f"op name {op_name!r} is not CamelCase (an uppercase letter, then letters and digits), "
            f"e.g. MyAddCustom"
        )
    snake = snake_case(op_name)
    ops_dir = Path(ops_dir)
    target = ops_dir / snake
    if target.exists() or target.is_symlink():
        raise ScaffoldError(f"{target} already exists; not overwriting it (choose another name or remove it)")
    context = {
        "op": op_name,
        "snake": snake,
        "prefix": snake.upper(),
        # the kernel entry is a C function named after the op, unless that is a C keyword (op `Int`)
        "entry": f"{snake}_compute" if engine == "aicpu" else f"{snake}_kernel" if snake in C_KEYWORDS else snake,
    }
    rendered = {name: render(template, **context) for name, template in ENGINES[engine].items()}

    ops_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{snake}.", dir=ops_dir))
    try:
        for name, text in rendered.items():
            (tmp / name).write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
        if target.exists() or target.is_symlink():  # created meanwhile
            raise ScaffoldError(f"{target} already exists; not overwriting it")
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
