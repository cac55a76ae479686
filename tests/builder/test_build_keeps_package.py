"""A failed build leaves the previous good package intact and usable (issue 10, item 6): no file
a running app reads is deleted or half-written by a failing step; the build ends non-zero and
names the files it left stale; the op still runs from the package afterwards."""

from __future__ import annotations

import subprocess
import sys

from build_helpers import SOC, edit, tree

RUN_MUL = """\
import sys
import numpy as np
import opbuild.runtime as rt
ops = rt.import_ops(sys.argv[1])
x = np.arange(6, dtype=np.float32).reshape(2, 3)
y = np.full((2, 3), 3.0, dtype=np.float32)
z = np.asarray(ops.mul_custom(x, y))
assert np.array_equal(z, x * y), z
print("MulCustom ok")
"""

CONFIG = f"op_impl/ai_core/tbe/kernel/config/{SOC}/binary_info_config.json"


def run_mul(p, package) -> subprocess.CompletedProcess:
    """MulCustom run from `package` by the runtime, in a fresh process (the project's code)."""
    return subprocess.run([sys.executable, "-c", RUN_MUL, str(package)], env=p.env(), cwd=p.root,
                          capture_output=True, text=True, timeout=300)


def _built(project):
    p = project()
    p.build("OPS=MulCustom")
    assert run_mul(p, p.pkg).returncode == 0
    return p, {k: v for k, v in tree(p.out / "opp").items()}


def _package_files(p) -> dict:
    return {k: v for k, v in tree(p.out / "opp").items()}


def _assert_kept_and_runs(p, before: dict, result) -> None:
    after = _package_files(p)
    assert not set(before) - set(after), f"deleted by the failed build: {sorted(set(before) - set(after))}"
    changed = sorted(k for k in before if after[k] != before[k])
    assert not changed, f"rewritten by the failed build: {changed}\n{result}"
    for package in (p.pkg, p.builtin):
        run = run_mul(p, package)
        assert run.returncode == 0 and "MulCustom ok" in run.stdout, f"{package}:\n{run.stderr}\n{result}"


def test_failed_tiling_link_keeps_the_package_runnable(project):
    p, before = _built(project)
    tiling = p.op_dir("MulCustom") / "tiling.c"
    # a helper declared but defined in no source: it compiles, the libraries fail to link
    edit(tiling, "\n__attribute__((visibility(\"hidden\"))) uint32_t mul_custom_helper(void);\n"
                 "OPBUILD_API uint32_t mul_custom_uses_helper(void) { return mul_custom_helper(); }\n")
    result = p.scons("ops", "OPS=MulCustom")
    assert result.rc != 0, str(result)
    assert "mul_custom_helper" in result.stderr, str(result)
    assert "LINK libcust_opmaster_rt2.0.so (vendors/customize): " in result.stderr, result.stderr
    lib = "op_impl/ai_core/tbe/op_tiling/lib/linux/"
    assert "stale (not rebuilt from the current sources)" in result.stderr, result.stderr
    stale = [line for line in result.stderr.splitlines() if line.startswith("  out/opp/")]
    assert any(lib in line and "libcust_opmaster_rt2.0.so" in line for line in stale), result.stderr
    _assert_kept_and_runs(p, before, result)


def test_failed_tiling_check_keeps_the_package_runnable(project):
    """The library links, but lacks the spec's tiling function: it is not installed."""
    p, before = _built(project)
    tiling = p.op_dir("MulCustom") / "tiling.c"
    good = tiling.read_text()
    # renamed by the preprocessor: the source still reads as defining mul_custom_tiling (so no
    # check before the build sees it), only the linked library lacks it
    tiling.write_text("#define mul_custom_tiling mul_custom_tiling_v2\n" + good)
    edit(tiling, "")
    result = p.scons("ops", "OPS=MulCustom")
    assert result.rc != 0, str(result)
    assert "'mul_custom_tiling'" in result.stderr and "is not exported" in result.stderr, result.stderr
    # (SCons stops at the first failure: one of the two packages' checks)
    failed = [f"CHECK libcust_opmaster_rt2.0.so ({where})" for where in ("vendors/customize", "built-in")]
    assert any(f"\n  {label}: " in result.stderr for label in failed), result.stderr
    stale = [line for line in result.stderr.splitlines() if line.startswith("  out/opp/")]
    assert any("libcust_opmaster_rt2.0.so (its step failed)" in line for line in stale), result.stderr
    assert any("binary_info_config.json (depends on a failed step)" in line for line in stale), result.stderr
    _assert_kept_and_runs(p, before, result)

    # fixed: the next build runs the failed steps again and the package is current
    tiling.write_text(good)
    edit(tiling, "\n")
    p.build("OPS=MulCustom")  # (the library links as before: the installed one is current)
    assert _package_files(p) == before
    assert run_mul(p, p.pkg).returncode == 0
    assert p.build("OPS=MulCustom").steps == []


def test_failed_kernel_compile_keeps_the_old_binary(project):
    p, before = _built(project)
    kernel = p.op_dir("MulCustom") / "kernel.c"
    edit(kernel, "int broken( {\n")
    result = p.scons("ops", "OPS=MulCustom")
    assert result.rc != 0, str(result)
    stale = [line for line in result.stderr.splitlines() if line.startswith("  out/opp/")]
    # (the failed step compiles the kernel object under out/build; the binary depends on it)
    assert any("/mul_custom/MulCustom_" in line and ".so (depends on a failed step)" in line for line in stale), \
        result.stderr
    _assert_kept_and_runs(p, before, result)
    # and a second failing build (the op now unfinished) deletes nothing either
    again = p.scons("ops", "OPS=MulCustom")
    assert again.rc != 0, str(again)
    _assert_kept_and_runs(p, before, again)


def test_failed_build_of_an_op_restored_from_its_bundle_keeps_its_files(project, tmp_path):
    """Outputs SCons did not write (restored from a bundle) are rebuilt by every step of the op,
    not deleted first: a failure keeps them."""
    cache = {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    project().build("OPS=MulCustom", env=cache)
    p = project()
    assert "MulCustom" in p.build("OPS=MulCustom", env=cache).bundles()
    before = _package_files(p)
    edit(p.op_dir("MulCustom") / "kernel.c", "int broken( {\n")
    result = p.scons("ops", "OPS=MulCustom", env=cache)
    assert result.rc != 0, str(result)
    _assert_kept_and_runs(p, before, result)
