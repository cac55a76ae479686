"""Issue 25, finding 2: malformed `.om` input ended in a traceback or a message of several lines
instead of one OmError / one `opbuild om ...: error:` line. Each case here is one the mutation
fuzzer (opbuild/om/fuzz.py) found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from omtools import build, edit_model_def, model_dict, replace_so_bins
from opbuild.om.errors import OmError
from opbuild.om.loader import load_om
from opbuild.om.so_store import SoBinType


def _so_needing_non_utf8_library(tmp_path: Path) -> bytes:
    """A shared object whose DT_NEEDED names `lib\\xd9x.so` (absent): dlerror()'s text is not UTF-8."""
    name = b"lib\xd9x.so"
    dep, top = tmp_path / "dep.c", tmp_path / "top.c"
    dep.write_text("int f(void) { return 1; }\n")
    top.write_text("extern int f(void);\nint g(void) { return f(); }\n")
    lib = os.path.join(os.fsencode(tmp_path), name)
    subprocess.run([b"cc", b"-shared", b"-fPIC", b"-o", lib, b"-Wl,-soname," + name, os.fsencode(dep)], check=True)
    subprocess.run([b"cc", b"-shared", b"-fPIC", b"-o", os.fsencode(tmp_path / "top.so"), os.fsencode(top), lib],
                   check=True)
    os.unlink(lib)
    return (tmp_path / "top.so").read_bytes()


def test_tiling_library_whose_load_error_is_not_utf8(opp, tmp_path):
    """Before: UnicodeDecodeError from ctypes (dlerror's text decoded as UTF-8)."""
    data = build(opp, model_dict("dep", [-1, 1024], ops=1))
    payload = _so_needing_non_utf8_library(tmp_path)
    planted = replace_so_bins(data, lambda b: payload if b.type == SoBinType.SpaceRegistry else None)
    with pytest.raises(OmError, match=r"^SO_BINS: libcust_opmaster_rt2\.0_\w+\.so \(vendors/customize\): cannot load "
                                      r"tiling library /proc/self/fd/\d+: 'utf-8' codec can't decode"):
        load_om(planted, trust=True)


def test_runtime_message_of_several_lines_is_one_line(opp, tmp_path):
    """A static model whose impl_mode was edited: the runtime's "no binary for key" message lists
    the nearest keys on lines of their own; `om run` prints it on one line."""
    def impl_mode_0(model):
        model.attr["impl_mode"].i = 0

    data = edit_model_def(build(opp, model_dict("p0", [16, 1024], ops=1)), impl_mode_0)
    (tmp_path / "m.om").write_bytes(data)
    np.save(tmp_path / "x.npy", np.ones((16, 1024), np.float32))
    r = subprocess.run([sys.executable, "-m", "opbuild", "om", "run", "m.om", "-i", "x=x.npy", "-i", "y=x.npy",
                        "--output-dir", "o", "--trust"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("opbuild om run: error: [ACLNN_ERR_PARAM_INVALID 161002] no binary for key "
                               "MulCustom/d=0,p=0/")
    assert "; MulCustom/d=0,p=1/0,2/0,2/0,2" in r.stderr  # the nearest key, joined on the line


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_model_path_that_is_not_a_regular_file(tmp_path, kind):
    """Before: a FIFO blocked `om inspect`/`om run` forever, /dev/zero was read until memory ran out."""
    if kind == "fifo":
        path = tmp_path / "m.om"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero") if kind == "device" else tmp_path
    for argv in (["inspect", str(path)], ["run", str(path), "--output-dir", str(tmp_path / "o"), "--trust"]):
        r = subprocess.run([sys.executable, "-m", "opbuild", "om", *argv], capture_output=True, text=True, timeout=30,
                           preexec_fn=_limited)
        assert r.returncode == 1, (r.returncode, r.stderr[-500:])
        assert r.stderr == f"opbuild om {argv[0]}: error: cannot read {path}: not a regular file\n"
    with pytest.raises(OmError, match="not a regular file"):
        load_om(path)
    # aclmdlLoadFromFile's Python side (opbuild/om/aclmdl.py): the same refusal, as its status
    r = subprocess.run([sys.executable, "-c", "import sys\nfrom opbuild.om import aclmdl\n"
                        "print(aclmdl.load(sys.argv[1], None)[:2])", str(path)],
                       capture_output=True, text=True, timeout=30, preexec_fn=_limited)
    assert r.returncode == 0, r.stderr[-500:]
    assert "not a regular file" in r.stdout and r.stdout.startswith("(100014, "), r.stdout
