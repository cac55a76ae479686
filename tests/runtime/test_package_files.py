"""Package files are read only when regular, bounded in size, UTF-8 and (JSON) of bounded nesting
(issue 25: a config.ini that is a FIFO hung op_fallback, one linked to /dev/zero raised
MemoryError, a non-UTF-8 one UnicodeDecodeError, a plugin JSON nested 100,000 deep
RecursionError). opbuild/safefile.py is the one reader; each refusal is the reader's documented
error naming the path. Readers that could hang or eat memory on today's main run in a child
process with a timeout and an address-space limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from opbuild import safefile

REPO = Path(__file__).resolve().parents[2]
_PRELUDE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
try:
{body}
except BaseException as exc:
    print("RAISED", type(exc).__name__, exc)
else:
    print("RETURNED")
"""


def _child(body: str, env: dict[str, str] | None = None) -> str:
    """Run `body` in a child Python (1 GiB, 60 s): "RAISED <type> <message>" or "RETURNED ..."."""
    code = _PRELUDE.format(body=textwrap.indent(textwrap.dedent(body), "    "))
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the reader hung")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def _vendors(tmp_path: Path, make_config) -> Path:
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    make_config(opp / "vendors" / "config.ini")
    return opp


CONFIGS = {
    "a FIFO": (lambda p: os.mkfifo(p), "a FIFO, not a regular file"),
    "a link to /dev/zero": (lambda p: os.symlink("/dev/zero", p), "a character device, not a regular file"),
    "not UTF-8": (lambda p: p.write_bytes(b"load_priority=caf\xe9\n"), "not UTF-8 text (byte 17"),
}


@pytest.mark.parametrize("kind", CONFIGS)
def test_op_fallback_refuses_a_config_ini_that_is_not_a_text_file(tmp_path: Path, kind: str) -> None:
    make, reason = CONFIGS[kind]
    opp = _vendors(tmp_path, make)
    out = _child("""
        from opbuild.runtime.fallback import search
        search.search_path()
    """, env={"ASCEND_OPP_PATH": str(opp), "ASCEND_CUSTOM_OPP_PATH": ""})
    assert out.startswith("RAISED AclnnError"), out
    assert f"{opp}/vendors/config.ini: {reason}" in out and "561000" in out, out


def test_a_missing_config_ini_is_still_no_vendors(tmp_path: Path) -> None:
    from opbuild.runtime.binaries.package import read_load_priority

    assert read_load_priority(tmp_path / "config.ini") == []
    (tmp_path / "config.ini").write_text("load_priority=a,b\n")
    assert read_load_priority(tmp_path / "config.ini") == ["a", "b"]


def test_binary_info_config_that_is_a_fifo_is_an_error_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "binary_info_config.json"
    os.mkfifo(config)
    out = _child(f"""
        from pathlib import Path
        from opbuild.runtime.binaries import package
        package._parse_config(Path({str(tmp_path)!r}), "ascend910b", Path({str(config)!r}))
    """)
    assert out.startswith("RAISED AclnnError") and f"{config}: a FIFO, not a regular file" in out, out


def test_binary_info_config_nested_deep_is_corrupt_not_a_recursion_error(tmp_path: Path) -> None:
    from opbuild.runtime.binaries import package
    from opbuild.runtime.errors import AclnnError

    config = tmp_path / "binary_info_config.json"
    config.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(AclnnError, match=rf"corrupt binary_info_config.json {config}: JSON nested more than"):
        package._parse_config(tmp_path, "ascend910b", config)


def test_aicpu_op_info_that_is_a_fifo_is_an_error_naming_it(tmp_path: Path) -> None:
    from opbuild.abi import package_layout as layout

    info = tmp_path / layout.aicpu_op_info()
    info.parent.mkdir(parents=True)
    os.mkfifo(info)
    out = _child(f"""
        from pathlib import Path
        from opbuild.runtime.call.aicpu import package_has_op
        package_has_op(Path({str(tmp_path)!r}), "Op")
    """)
    assert out.startswith("RAISED AclnnError") and f"{info}: a FIFO, not a regular file" in out, out


def test_a_plugin_json_nested_100k_deep_is_a_plugin_file_error(tmp_path: Path) -> None:
    from opbuild.codegen.framework_json import PluginFileError, read_onnx_plugins

    path = tmp_path / "opbuild_onnx_plugins.json"
    path.write_text('{"ops": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(PluginFileError, match=rf"^{path}: JSON nested more than {safefile.MAX_JSON_DEPTH} deep$"):
        read_onnx_plugins(path)


def test_a_plugin_json_that_is_a_fifo_is_a_plugin_file_error(tmp_path: Path) -> None:
    path = tmp_path / "opbuild_onnx_plugins.json"
    os.mkfifo(path)
    out = _child(f"""
        from pathlib import Path
        from opbuild.codegen.framework_json import read_onnx_plugins
        read_onnx_plugins(Path({str(path)!r}))
    """)
    assert out == f"RAISED PluginFileError {path}: a FIFO, not a regular file", out


# ---- the reader itself -------------------------------------------------------------------------

def test_safefile_reads_regular_files_and_refuses_the_rest(tmp_path: Path) -> None:
    f = tmp_path / "f.json"
    f.write_text(json.dumps({"a": [1, {"b": 2}]}))
    assert safefile.read_json(f) == {"a": [1, {"b": 2}]}
    assert safefile.read_text(f, limit=f.stat().st_size) == f.read_text()
    with pytest.raises(safefile.UnsafeFileError, match=rf"^{f}: \d+ bytes, more than the 3 allowed$"):
        safefile.read_bytes(f, limit=3)
    with pytest.raises(safefile.UnsafeFileError, match="a directory, not a regular file"):
        safefile.read_bytes(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(f)
    assert safefile.read_bytes(link) == f.read_bytes()
    with pytest.raises(safefile.UnsafeFileError, match="a symbolic link, not a regular file"):
        safefile.read_bytes(link, follow_symlinks=False)
    with pytest.raises(FileNotFoundError):
        safefile.read_bytes(tmp_path / "missing")
    deep = tmp_path / "deep.json"
    deep.write_text('["[[[[", ' + "[" * safefile.MAX_JSON_DEPTH + "]" * safefile.MAX_JSON_DEPTH + "]")
    with pytest.raises(safefile.UnsafeFileError, match="JSON nested more than"):
        safefile.read_json(deep)  # brackets inside strings do not count; the array around them does
    deep.write_text('["[[[[", ' + "[" * (safefile.MAX_JSON_DEPTH - 1) + "]" * (safefile.MAX_JSON_DEPTH - 1) + "]")
    assert isinstance(safefile.read_json(deep), list)
