"""Regenerate, or check, the artefacts produced from the field declarations (opbuild/spec/fields.py).

    python -m opbuild.spec.generate            # rewrite schemas/op_spec.schema.json and the
                                               # field tables of docs/spec-format.md
    python -m opbuild.spec.generate --check    # exit 1, naming each stale file, if either differs

Run it after changing a field declaration and commit the results; a test runs `--check`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from opbuild import generated_files

from .field_docs import DocRegionError, fill_doc
from .fields import REPO_SCHEMA, schema_document

REPO_DOC = Path("docs") / "spec-format.md"
"""The document whose field tables are generated, relative to the repository root."""

DEFAULT_ROOT = Path(__file__).resolve().parents[2]


def schema_text() -> str:
    """The schema file's content: 2-space indented JSON, UTF-8, one trailing newline."""
    return json.dumps(schema_document(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def expected_files(root: Path) -> dict[Path, str]:
    """Each generated file (relative to `root`) and the content the declarations give it.
    The doc's prose is read from `root`; only its marked regions are generated."""
    doc = (root / REPO_DOC).read_text(encoding="utf-8")
    return {REPO_SCHEMA: schema_text(), REPO_DOC: fill_doc(doc)}


def stale_files(root: Path, files: dict[Path, str] | None = None) -> list[Path]:
    """The generated files under `root` whose committed content differs from the declarations'."""
    return generated_files.stale_files(root, expected_files(root) if files is None else files)


def main(argv: list[str] | None = None) -> int:
    return generated_files.generator_main(
        argv, command="python -m opbuild.spec.generate", description=(__doc__ or "").splitlines()[0],
        declared_by="opbuild/spec/fields.py declares", default_root=DEFAULT_ROOT, expected_files=expected_files,
        input_errors=(OSError, DocRegionError))


if __name__ == "__main__":
    sys.exit(main())
