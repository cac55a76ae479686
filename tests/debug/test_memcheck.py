"""`opbuild memcheck -- cmd`: the instrumented build beside the package (never into out/opp), the
sanitizer set up with no hand-set environment, the command run unchanged (it names the plain
package) with kernels and AI CPU code loaded from the instrumented build, and the report naming
the kernel's source line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.runtime.debug import variant

REPO = Path(__file__).resolve().parents[2]
APP = """
import sys
import numpy as np
import opbuild.runtime as rt
ops = rt.import_ops(sys.argv[1])
x = np.arange(8192, dtype=np.float32)
print("nonzero", ops.non_zero_custom(x[:4]).tolist())
try:
    ops.buggy_add(x, x, bug=int(sys.argv[2]))
    print("ok")
except rt.AclnnError as e:
    print("error", e.status, e.message)
maps = open("/proc/self/maps").read()
print("mapped", sorted({l.split()[-1] for l in maps.splitlines() if "BuggyAdd_FP32.so" in l or "libcust_aicpu" in l}))
"""


def _asan() -> None:
    cc = shutil.which(os.environ.get("CC", "cc")) or "gcc"
    path = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(path):
        pytest.skip("the C compiler has no AddressSanitizer runtime")


def _plain_files(project: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(project)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in (project / "out" / "opp").rglob("*.so")}


def test_memcheck_finds_the_out_of_bounds_write_with_its_source_line(buggy_project, buggy_package, tmp_path):
    _asan()
    before = _plain_files(buggy_project)
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "OPBUILD_MEMCHECK")}
    env["PYTHONPATH"] = str(REPO)
    r = subprocess.run([sys.executable, "-m", "opbuild", "memcheck", "--project", str(buggy_project), "--",
                        sys.executable, str(app), str(buggy_package), "3"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "opbuild memcheck: instrumented build in" in r.stderr
    out = r.stdout
    assert "nonzero [[1, 2, 3]]" in out  # the AI CPU op ran, from the instrumented library
    m = re.search(r"error 361001 BuggyAdd: kernel BuggyAdd_FP32 failed: block (\d+): memcheck: WRITE of 4 bytes at "
                  r"offset 32768 of output z \(a 32768-byte buffer: 0 bytes past its end\) at "
                  r"(ops/buggy_add/kernel\.c):(\d+) \(buggy_add\) \[AddressSanitizer: heap-buffer-overflow\] "
                  r"\[kernel (\S+)\]", out)
    assert m, out + r.stderr[-2000:]
    line = (buggy_project / m.group(2)).read_text().splitlines()[int(m.group(3)) - 1]
    assert "td.bug == 3" in line, line
    instrumented = buggy_project / variant.MEMCHECK_OUT / "opp"
    assert Path(m.group(4)).is_relative_to(instrumented)
    mapped = eval(out.splitlines()[-1][len("mapped "):])  # noqa: S307 - our own child's repr of a list
    assert mapped and all(Path(p).is_relative_to(instrumented) for p in mapped), mapped
    assert len(mapped) == 2  # the kernel and libcust_aicpu_kernels.so, both instrumented
    # the package stays plain and untouched
    assert _plain_files(buggy_project) == before
    assert all(b"libasan" not in p.read_bytes() for p in (buggy_project / "out" / "opp").rglob("*.so"))
    # and a plain run of the same command uses the plain package
    plain = subprocess.run([sys.executable, str(app), str(buggy_package), "0"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert plain.returncode == 0 and "\nok\n" in plain.stdout, plain.stdout + plain.stderr
    assert all(not Path(p).is_relative_to(instrumented) for p in eval(plain.stdout.splitlines()[-1][7:]))  # noqa: S307


def test_a_file_missing_from_the_instrumented_build_is_an_error(tmp_path, monkeypatch, capsys):
    plain, instr = tmp_path / "opp", tmp_path / "memcheck" / "opp"
    (plain / "k").mkdir(parents=True)
    (plain / "k" / "K.so").write_bytes(b"x")
    (plain / "other.so").write_bytes(b"x")
    instr.mkdir(parents=True)
    monkeypatch.setenv(variant.ENV, f"{plain}={instr}")
    with pytest.raises(ValueError, match=r"the memory checker's build has no k/K\.so .* run `opbuild memcheck` again"):
        variant.instrumented(plain / "k" / "K.so")
    (instr / "k").mkdir()
    (instr / "k" / "K.so").write_bytes(b"y")
    assert variant.instrumented(plain / "k" / "K.so") == (instr / "k" / "K.so").resolve()
    assert variant.instrumented(tmp_path / "elsewhere.so") == tmp_path / "elsewhere.so"
    from opbuild.runtime import device

    elsewhere = tmp_path / "elsewhere.so"
    assert device.instrumented_binary(elsewhere) is elsewhere
    device.instrumented_binary(elsewhere)  # said once
    assert capsys.readouterr().err == (f"opbuild memcheck: {elsewhere} is not in the checked build ({variant.ENV}): "
                                       "its memory accesses are not checked\n")
    monkeypatch.setenv(variant.ENV, "no-equals-sign")
    with pytest.raises(ValueError, match="expected PLAIN_OPP=INSTRUMENTED_OPP"):
        variant.instrumented(plain / "k" / "K.so")


def test_memcheck_usage_errors(tmp_path, capsys):
    from opbuild.cli import main

    assert main(["memcheck", "--project", str(tmp_path), "--", "true"]) == 1
    assert "has no ops/ directory" in capsys.readouterr().err
    assert main(["memcheck"]) == 1
    assert capsys.readouterr().err.startswith("opbuild memcheck: error: give the command to run after --")


def test_the_checked_build_takes_the_packages_options(tmp_path):
    """VENDOR= comes from the plain build's one vendor package (a checked build of another vendor
    would lack every kernel); --build-option adds or overrides; OUT= is the checker's own."""
    from opbuild.debug.cli import build_options

    assert build_options(tmp_path, []) == []
    (tmp_path / "out" / "opp" / "vendors" / "mine").mkdir(parents=True)
    (tmp_path / "out" / "opp" / "vendors" / "config.ini").write_text("load_priority=mine\n")
    assert build_options(tmp_path, ["SOC=ascend910b"]) == ["VENDOR=mine", "SOC=ascend910b"]
    assert build_options(tmp_path, ["VENDOR=other"]) == ["VENDOR=other"]
    (tmp_path / "out" / "opp" / "vendors" / "second").mkdir()
    assert build_options(tmp_path, []) == []  # two vendors: the user says which
    assert "expected NAME=VALUE" in build_options(tmp_path, ["SOC"])
    assert "output directory is fixed" in build_options(tmp_path, ["OUT=x"])
