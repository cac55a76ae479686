"""Regenerate, or check, the artefacts produced from the field declarations (opbuild/spec/fields.py).

    python -m opbuild.spec.generate            # rewrite schemas/op_spec.schema.json and the
                                               # field tables of docs/spec-format.md
    python -m opbuild.spec.generate --check    # exit 1, naming each stale file, if either differs

Run it after changing a field declaration and commit the results; a test runs `--check`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from opbuild.atomic import atomic_write

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
    files = expected_files(root) if files is None else files
    return [rel for rel, text in files.items()
            if not (root / rel).is_file() or (root / rel).read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opbuild.spec.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated file is stale")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the repository root (default: %(default)s)")
    args = parser.parse_args(argv)
    root: Path = args.root
    try:
        files = expected_files(root)
    except (OSError, DocRegionError) as exc:
        print(f"opbuild.spec.generate: {exc}", file=sys.stderr)
        return 2
    changed = stale_files(root, files)
    if args.check:
        for rel in changed:
            print(f"opbuild.spec.generate: {rel} is stale: it differs from what opbuild/spec/fields.py declares; "
                  f"run `python -m opbuild.spec.generate` and commit the result", file=sys.stderr)
        return 1 if changed else 0
    for rel in changed:
        atomic_write(root / rel, files[rel].encode("utf-8"))
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
