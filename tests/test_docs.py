"""Docs match code: every file a doc or docstring cites exists, every C helper the docs name is
defined, the Python key-rule `ctx` table lists exactly KeyContext's API, and the kernel macros
behave as the docs and the scaffold say."""

from __future__ import annotations

import ast
import io
import re
import shutil
import subprocess
import tokenize
from pathlib import Path

import pytest

from opbuild.codegen.kernel_src import binary_macros
from opbuild.keys.context import KeyContext
from opbuild.runtime_paths import native_include_dir
from opbuild.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
INCLUDE = native_include_dir()
TOP_DIRS = ("opbuild", "docs", "schemas", "templates", "tests", "ops", "bench", "examples", "reference", "shared", ".ci")
_PATH = re.compile(
    rf"(?<![\w./-])((?:\.\./)*(?:{'|'.join(re.escape(d) for d in TOP_DIRS)})/[\w./<>*{{}}-]*[\w>*}}]"
    r"|[\w-]+\.md\b|SConstruct\b|pyproject\.toml\b|setup\.py\b)")
NOT_IN_THE_REPO = {"opbuild/_data"}
"""Cited on purpose although no checkout has them: created by `pip install` (see setup.py)."""


_NOT_SOURCES = {".git", ".venv", "out", "build", "__pycache__", ".pytest_cache", ".hypothesis"}


def _repo_files() -> set[Path]:
    """The repository's files, relative to it: git's list (tracked and new, not ignored), or in a
    copy without .git, every file outside build products and caches."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True)
    if listed.returncode == 0:
        return {Path(p) for p in listed.stdout.split()}
    return {p.relative_to(REPO) for p in REPO.rglob("*")
            if p.is_file() and not _NOT_SOURCES & set(p.relative_to(REPO).parts)
            and not any(part.endswith(".egg-info") for part in p.parts)}


def _python_prose(text: str) -> str:
    """A Python file's docstrings and comments (what a reader takes as documentation)."""
    parts = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            parts.append(node.value.value)  # attribute docstrings
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            parts.append(tok.string)
    return "\n".join(parts)


_FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def _markdown_prose(text: str) -> str:
    """A Markdown page without its fenced blocks: those hold examples (made-up op directories),
    not citations."""
    return _FENCED.sub("", text)


def missing_citations(text: str, cited_from: Path, names: set[str]) -> list[str]:
    """Repo paths and file names cited in `text` that name nothing in the repository."""
    missing = []
    for match in _PATH.finditer(text):
        cited = match.group(1).rstrip(".")
        if any(c in cited for c in "<>*{}") or cited in NOT_IN_THE_REPO:
            continue  # a pattern (`ops/<op_snake>/op.yaml`), not a file
        if "/" not in cited:
            found = cited in names
        else:
            found = any(base.joinpath(cited).exists() for base in (REPO, cited_from.parent, INCLUDE))
        if not found:
            missing.append(cited)
    return missing


def _documents() -> list[tuple[Path, str]]:
    out = []
    for rel in sorted(_repo_files()):
        path = REPO / rel
        if not path.is_file():
            continue
        if rel.suffix == ".md" and (rel.parts[0] == "docs" or len(rel.parts) == 1 or rel.parts[0] == "bench"):
            out.append((path, _markdown_prose(path.read_text(encoding="utf-8"))))
        elif rel.suffix == ".py" and rel.parts[0] in ("opbuild", "tests", "bench", "examples"):
            out.append((path, _python_prose(path.read_text(encoding="utf-8"))))
        elif rel.suffix in (".h", ".c", ".j2") and rel.parts[0] in ("opbuild", "templates", "ops"):
            out.append((path, path.read_text(encoding="utf-8")))
    return out


def test_no_doc_or_docstring_cites_a_missing_file():
    names = {p.name for p in _repo_files()}
    problems = [f"{path.relative_to(REPO)}: {cited}" for path, text in _documents()
                for cited in missing_citations(text, path, names)]
    assert problems == []


def test_the_citation_check_can_fail():
    names = {p.name for p in _repo_files()}
    text = "See docs/spec-format.md, docs/no-such-page.md, ops/<op_snake>/op.yaml and DESIGN.md §3."
    assert missing_citations(text, REPO / "README.md", names) == ["docs/no-such-page.md", "DESIGN.md"]


def _code_text() -> str:
    files = [*INCLUDE.rglob("*.h"), *REPO.joinpath("templates").rglob("*.j2"), *REPO.joinpath("opbuild").rglob("*.py")]
    return "\n".join(f.read_text(encoding="utf-8") for f in files)


def test_c_helpers_named_in_docs_and_the_scaffold_exist():
    code = _code_text()
    texts = [p.read_text(encoding="utf-8") for p in [*REPO.joinpath("docs").glob("*.md"), REPO / "README.md",
                                                     *REPO.joinpath("templates", "scaffold").glob("*.j2")]]
    named = {m for t in texts for m in re.findall(r"\b((?:opbuild|tiling)_[a-z0-9_]+)\(", t)}  # a call: `name(`
    assert {"opbuild_block_span", "opbuild_block_range", "tiling_fail"} <= named
    assert sorted(n for n in named if not re.search(rf"\b{n}\b\s*\(", code)) == []


def test_scaffold_kernel_helpers_are_documented():
    kernel = (REPO / "templates" / "scaffold" / "kernel.c.j2").read_text()
    runtime_doc = (REPO / "docs" / "runtime.md").read_text()
    used = set(re.findall(r"\b(opbuild_block_\w+)\s*\(", kernel))
    assert used and all(f"`{name}(" in runtime_doc for name in used)


def _ctx_table() -> set[str]:
    doc = (REPO / "docs" / "spec-format.md").read_text()
    section = doc.split("### Python key rules")[1].split("\n### ")[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `") and not line.startswith("| `ctx.`"):  # not the header row
            first_cell = line.split("|")[1]
            names |= set(re.findall(r"`(\w+)", first_cell))
    return names


def test_ctx_table_lists_exactly_the_key_context_api():
    public = {n for n in dir(KeyContext) if not n.startswith("_")}
    assert _ctx_table() == public


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_orig_dtype_macros_work_in_the_preprocessor(tmp_path):
    """The scaffold and opbuild/types.h say `#if ORIG_DTYPE_X == OPBUILD_DT_FLOAT16` works."""
    spec = load_spec(REPO / "ops" / "add_custom_template" / "op.yaml")
    binary = next(b for b in spec.binaries if dict(b.when)["x"].dtype == "float16")
    source = tmp_path / "k.c"
    source.write_text('#include "opbuild/kernel.h"\n'
                      "#if ORIG_DTYPE_X != OPBUILD_DT_FLOAT16 || ORIG_DTYPE_X == OPBUILD_DT_FLOAT\n"
                      "#error ORIG_DTYPE_X is not usable in #if\n#endif\n"
                      "int float16_selected = ORIG_DTYPE_X == OPBUILD_DT_FLOAT16;\n")
    defines = [f"-D{k}={v}" for k, v in binary_macros(spec, binary).items()]
    result = subprocess.run(["cc", "-std=gnu11", "-fsyntax-only", f"-I{INCLUDE}", *defines, str(source)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# ~~~ shown command outputs ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_the_shown_validate_result_counts_the_sample_ops():
    """docs/spec-format.md's `opbuild validate` line says what validate prints for ops/."""
    from opbuild.spec import find_specs

    shown = re.findall(r'"ok: (\d+) op specs"', (REPO / "docs" / "spec-format.md").read_text())
    assert shown and {int(n) for n in shown} == {len(find_specs([REPO / "ops"]))}


@pytest.fixture(scope="module")
def sample_opp(tmp_path_factory):
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    import pkgbuild

    return pkgbuild.sample_build_summary(tmp_path_factory.getbasetemp())


def test_the_shown_build_summaries_are_the_sample_builds(sample_opp):
    """docs/cli.md shows summary lines of `scons -j2 ops` of ops/: the clean build's is the sample
    build of this test session (the time aside), and every other one (a warm build from a cache)
    counts the same ops, binaries and steps."""
    line = re.compile(r"^(opbuild: ok: (\d+ ops, \d+ kernel binaries, \d+/\d+ steps run) \(.*\)), [\d.]+ s$")
    built = line.match(sample_opp)
    assert built, sample_opp
    shown = [m for text in (REPO / "docs" / "cli.md").read_text().splitlines() if (m := line.match(text.strip()))]
    assert [m.group(1) for m in shown if " 0 from cache" in m.group(1)] == [
        built.group(1)]
    assert {m.group(2) for m in shown} == {built.group(2)}
