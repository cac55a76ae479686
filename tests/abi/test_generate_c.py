"""The C vocabulary is generated (opbuild/abi/generate_c.py): the committed header and the public
headers' regions are what the generator writes now, `--check` fails on a stale one, and C compiled
against the headers sees the vocabulary's values.

These replace the tests that compared hand-copied C tables with the vocabulary: the C extensions
(built from the same headers) are the rest of the proof that the C compiles against them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild import env_vars
from opbuild.abi import generate_c
from opbuild.abi import vocabulary as v

REPO = Path(__file__).resolve().parents[2]
GENERATED = [generate_c.HEADER, generate_c.ACL_BASE, generate_c.ACL_META]


def test_the_committed_c_vocabulary_is_current():
    """What CI and pre-commit run: a stale header (a vocabulary change without a regeneration) fails."""
    proc = subprocess.run([sys.executable, "-m", "opbuild.abi.generate_c", "--check"], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the generated files, laid out as in the repository."""
    for rel in GENERATED:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    return tmp_path


def test_check_names_a_stale_file_and_the_generator_rewrites_it(root: Path, capsys):
    header = root / generate_c.HEADER
    header.write_text(header.read_text().replace("#define OPBUILD_DT_FLOAT16 1", "#define OPBUILD_DT_FLOAT16 2"))
    meta = root / generate_c.ACL_META
    meta.write_text(meta.read_text().replace("161001", "161009"))
    assert generate_c.main(["--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert str(generate_c.HEADER) in err and str(generate_c.ACL_META) in err and str(generate_c.ACL_BASE) not in err
    assert generate_c.main(["--root", str(root)]) == 0
    assert generate_c.main(["--check", "--root", str(root)]) == 0
    assert "161001" in meta.read_text()


def test_a_public_header_without_its_region_markers_is_an_error(root: Path, capsys):
    base = root / generate_c.ACL_BASE
    base.write_text(base.read_text().replace(generate_c._end("aclFormat"), ""))
    assert generate_c.main(["--check", "--root", str(root)]) == 2
    assert "aclFormat" in capsys.readouterr().err


def test_public_headers_need_no_opbuild_include():
    """acl/acl_base.h and aclnn/acl_meta.h keep CANN's names, written out: a C program of CANN's
    samples includes them with no other include directory than CANN's."""
    for rel in (generate_c.ACL_BASE, generate_c.ACL_META):
        assert "vocabulary_gen.h" not in (REPO / rel).read_text(), rel


def test_c_sees_the_vocabulary(cc):
    """Compiled against the public headers (the way kernels, tiling sources and C programs include
    them): every generated code equals the vocabulary's record."""
    lines = ['#include <stdio.h>', '#include "opbuild/tiling.h"', '#include "opbuild/aicpu.h"',
             '#include "acl/acl_base.h"', '#include "aclnn/acl_meta.h"', "int main(void) {"]
    for d in v.DTYPES:
        lines.append(f'    printf("dtype {d.name} %d %d %u %zu\\n", (int){d.c_enum}, (int){d.acl_name}, '
                     f"tiling_dtype_size({d.c_enum}), sizeof({d.c_type}));")
    lines.append('    printf("size_of_other %u\\n", tiling_dtype_size(99));')
    for name, value in {**v.ACL_DATA_TYPES, **v.ACL_FORMATS, **v.ACLNN_STATUS}.items():
        lines.append(f'    printf("code {name} %ld\\n", (long){name});')
    for f in v.FORMATS:
        lines.append(f'    printf("code {f.c_enum} %ld\\n", (long){f.c_enum});')
    for t in v.ATTR_TYPES:
        lines.append(f'    printf("code {t.c_enum} %ld\\n", (long){t.c_enum});')
        lines.append(f'    printf("code {t.key_tag_c_enum} %ld\\n", (long){t.key_tag_c_enum});')
        if t.aicpu_c_enum:
            lines.append(f'    printf("code {t.aicpu_c_enum} %ld\\n", (long){t.aicpu_c_enum});')
    for tag in v.CACHE_KEY_SLOT_TAGS:
        lines.append(f'    printf("code {tag.c_enum} %ld\\n", (long){tag.c_enum});')
    lines += ['    printf("code OPBUILD_MAX_SIMPLIFIED_KEY_LEN %ld\\n", (long)OPBUILD_MAX_SIMPLIFIED_KEY_LEN);',
              '    printf("code OPKEY_STAMP_INTERVAL_NS %lld\\n", (long long)OPKEY_STAMP_INTERVAL_NS);',
              '    printf("version %llx\\n", (unsigned long long)OPKEY_VERSION);',
              "    { const char *names[OPKEY_ENV_COUNT] = OPKEY_ENV_VAR_NAMES;",
              '      for (int i = 0; i < OPKEY_ENV_COUNT; i++) printf("keyenv %s\\n", names[i]); }']
    for e in env_vars.ENV_VARS:
        if e.read_in_c:
            lines.append(f'    printf("env %s\\n", {e.c_name});')
    lines += ["    return 0;", "}"]
    out = [line.split() for line in cc.run("\n".join(lines), "vocab").splitlines()]

    dtypes = {row[1]: tuple(map(int, row[2:])) for row in out if row[0] == "dtype"}
    assert dtypes == {d.name: (d.ge, d.acl, d.itemsize, d.itemsize) for d in v.DTYPES}
    codes = {row[1]: int(row[2]) for row in out if row[0] == "code"}
    assert codes == {
        **v.ACL_DATA_TYPES, **v.ACL_FORMATS, **v.ACLNN_STATUS,
        **{f.c_enum: f.ge for f in v.FORMATS},
        **{t.c_enum: t.tiling for t in v.ATTR_TYPES},
        **{t.key_tag_c_enum: t.key_tag for t in v.ATTR_TYPES},
        **{t.aicpu_c_enum: t.aicpu for t in v.ATTR_TYPES if t.aicpu_c_enum},
        **{tag.c_enum: tag.value for tag in v.CACHE_KEY_SLOT_TAGS},
        "OPBUILD_MAX_SIMPLIFIED_KEY_LEN": v.MAX_SIMPLIFIED_KEY_LEN,
        "OPKEY_STAMP_INTERVAL_NS": v.STAMP_INTERVAL_NS,
    }
    assert ["size_of_other", "0"] in out
    assert ["version", f"{v.CACHE_KEY_VERSION:x}"] in out
    assert [row[1] for row in out if row[0] == "keyenv"] == list(v.CACHE_KEY_ENV_VARS)
    assert [row[1] for row in out if row[0] == "env"] == [e.name for e in env_vars.ENV_VARS if e.read_in_c]


def test_the_header_compiles_as_cpp(tmp_path: Path):
    """Ascend C kernels include opbuild/types.h (and so the generated header) as C++."""
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++")
    src = tmp_path / "probe.cpp"
    src.write_text('#include "opbuild/tiling.h"\n#include "aclnn/acl_meta.h"\n'
                   "int main() { return (int)tiling_dtype_size(OPBUILD_DT_FLOAT16) - 2; }\n")
    include = REPO / "opbuild" / "runtime" / "native" / "include"
    proc = subprocess.run([cxx, "-std=c++17", "-Wall", "-Werror", f"-I{include}", "-fsyntax-only", str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_runtime_sources_use_the_generated_names():
    """No C source of the runtime spells a vocabulary code or an OPBUILD_* variable of its own:
    getenv takes the generated name, and the status codes, tags and dtype codes are not redefined."""
    native = REPO / "opbuild" / "runtime" / "native"
    for path in [*native.rglob("*.c"), *native.rglob("*.h")]:
        if path.name == "vocabulary_gen.h" or path.relative_to(REPO) in GENERATED:
            continue
        text = path.read_text(errors="replace")
        assert 'getenv("OPBUILD_' not in text, path
        for name in [*v.ACLNN_STATUS, "OPKEY_VERSION", "OPKEY_STAMP_INTERVAL_NS", "OPKEY_ENV_COUNT",
                     *(d.c_enum for d in v.DTYPES), "OPBUILD_MAX_SIMPLIFIED_KEY_LEN"]:
            assert f"#define {name} " not in text, (path, name)
