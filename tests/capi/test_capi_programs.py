"""Standalone C programs (CANN aclnn-sample style) against the built packages: they run in a clean
environment (no PYTHONPATH), so the acl library starts its own embedded interpreter.

sample_add.c calls a custom op only (app_flags of the custom package); sample_ops.c calls custom
and built-in ops, linked with each op's library (app_flags_for_libraries): libcust_opapi.so,
libopapi_math.so (ReduceSumCustom) and libopapi_nn.so (LeakyReluCustom)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from opbuild.abi.native_libs import app_flags, app_flags_for_libraries

HERE = Path(__file__).resolve().parent


def _clean_env(**extra: str) -> dict[str, str]:
    """What a user's shell would have: no PYTHONPATH, no virtualenv, no opbuild settings."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


SAMPLE_OPS_OPS = ("AddNCustom", "LeakyReluCustom", "ReduceSumCustom")
"""The ops sample_ops.c calls."""


def _build(source: str, flags: list[str], out: Path) -> Path:
    cc = shutil.which(os.environ.get("CC", "cc")) or "gcc"
    exe = out / Path(source).stem
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", str(exe), str(HERE / source),
                    *flags], check=True)
    return exe


def _needed(exe: Path) -> list[str]:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf")
    out = subprocess.run([readelf, "-d", str(exe)], capture_output=True, text=True, check=True).stdout
    return [line.rsplit("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def _run(exe: Path, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(exe)], capture_output=True, text=True, env=_clean_env(**env), timeout=60,
                          cwd=exe.parent)
    assert proc.returncode == 0, f"{exe.name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _fields(stdout: str) -> dict[str, str]:
    out = {}
    for line in stdout.splitlines():
        name, sep, value = line.partition(":")
        if sep:
            out[name.strip()] = value.strip()
    return out


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split()]


def test_add_sample(package):
    exe = _build("sample_add.c", app_flags(package.root), package.work)
    proc = _run(exe)
    values = [float(line.split("=")[1]) for line in proc.stdout.splitlines() if line.startswith("result[")]
    assert values == [i + 0.5 * i + 1.0 for i in range(8)]
    assert proc.stdout.rstrip().endswith("done")
    assert proc.stderr == ""


def test_aicpu_sample_real_shape_and_stream_order(package):
    """AI CPU ops from C: aclGetViewShape gives NonZero's real shape after the run; an AI Core add
    and an AI CPU sort of its result on one stream run in order."""
    exe = _build("sample_aicpu.c", app_flags(package.root), package.work)
    out = _fields(_run(exe).stdout)
    x = np.array([[0, 1.5, 0], [2, 0, -3]], np.float32)
    want = np.array(np.nonzero(x))
    assert out["nonzero_shape"] == f"{want.shape[0]} {want.shape[1]}"
    assert [int(v) for v in out["nonzero"].split()] == want.reshape(-1).tolist()
    z = np.array([[1, 7, 3, 5], [0, 2, 9, 4]], np.float32) + np.array([[10] * 4, [20] * 4], np.float32)
    order = np.argsort(-z, axis=-1, kind="stable")
    assert _floats(out["sorted"]) == np.take_along_axis(z, order, -1).reshape(-1).tolist()
    assert [int(v) for v in out["order"].split()] == order.reshape(-1).tolist()


def test_fp16_sample_converters_getters_and_repointed_input(package):
    """CANN's AclNNInvocationNaive style: aclFloat16 data through aclFloatToFloat16 /
    aclFloat16ToFloat, aclnnInit/aclnnFinalize, the tensor getters, aclSetInputTensorAddr."""
    exe = _build("sample_fp16.c", app_flags(package.root), package.work)
    proc = _run(exe)
    out = _fields(proc.stdout)
    assert _floats(out["result"]) == [i + 0.5 * i + 1.0 for i in range(8)]
    assert _floats(out["repointed"]) == [100 + 0.5 * i + 1.0 for i in range(8)]
    assert _floats(out["repointed_again"]) == [2.0 * i for i in range(8)]  # x + x
    assert out["view_shape"] == "2 4" and out["strides"] == "4 1" and out["storage_shape"] == "2 4"
    assert out["offset_dtype_format"] == "0 1 2"  # ACL_FLOAT16, ACL_FORMAT_ND
    assert out["raw_is_data"] == "1" and out["null_getter"] == "161001"
    assert out["int_array_size"] == "3" and out["fp16_sizes"] == "2 4"
    assert out["bad_index"] == "161002"
    assert proc.stdout.rstrip().endswith("done")


@pytest.fixture(scope="module")
def ops_exe(package):
    libs = package.libs_for(*SAMPLE_OPS_OPS)
    assert libs == [package.lib, package.builtin_lib("math"), package.builtin_lib("nn")]
    return _build("sample_ops.c", app_flags_for_libraries(libs), package.work)


def test_sample_ops_links_the_custom_and_the_built_in_libraries(ops_exe):
    needed = _needed(ops_exe)
    assert {"libcust_opapi.so", "libopapi_math.so", "libopapi_nn.so"} <= set(needed), needed
    assert "libopapi.so" not in needed


@pytest.fixture(scope="module")
def ops_run(ops_exe):
    proc = _run(ops_exe)
    assert proc.stdout.rstrip().endswith("done")
    return _fields(proc.stdout), proc.stderr


def test_leaky_relu_float_attr_and_python_key_rule(ops_run):
    out, _ = ops_run
    assert out["leaky_key"] == "LeakyReluCustom/d=0,p=1/leaky_fp32"
    assert _floats(out["leaky"]) == [-0.5, -0.25, 0, 1, 2, -1]
    assert out["relu_key"] == "LeakyReluCustom/d=0,p=1/relu_fp32"
    assert _floats(out["relu"]) == [0, 0, 0, 1, 2, 0]


def test_executors_repeatable_and_once(ops_run):
    out, stderr = ops_run
    assert _floats(out["repeat"]) == [-1, -0.5, 0, 1, 2, -2]
    assert out["rerun_status"] == "161002" and out["rerun_msg"] == "not live"
    assert "not a live aclOpExecutor" in stderr


def test_add_n_tensor_list(ops_run):
    out, _ = ops_run
    assert out["addn_key"] == "AddNCustom/d=0,p=1/diy,addn,0"
    assert _floats(out["addn"]) == [111, 222, 333, 444]


def test_reduce_sum_int_array_bool_deterministic(ops_run):
    out, _ = ops_run
    assert out["reduce_key"].startswith("ReduceSumCustom/d=1,")  # aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1)
    assert _floats(out["reduce"]) == [60, 92, 124]  # x = arange(24).reshape(2, 3, 4), axes [0, 2], keepDims


def test_c_threads(ops_run):
    out, _ = ops_run
    assert out["threads"] == "ok"


def test_errors_status_message_and_log(ops_run):
    out, stderr = ops_run
    assert out["null_status"] == "161001"
    assert out["null_msg"] == ("aclnnLeakyReluCustomGetWorkspaceSize failed (161001 ACLNN_ERR_PARAM_NULLPTR): "
                               "x is a null pointer")
    assert out["null_again"] == "(null)"  # reading the message clears it
    assert out["dtype_status"] == "161002" and out["dtype_msg"] == "names the dtype"
    assert out["memcpy_status"] == "100000"  # ACL_ERROR_INVALID_PARAM: destMax < count
    assert out["device_status"] == "107001"  # ACL_ERROR_RT_INVALID_DEVICEID
    lines = stderr.splitlines()
    assert any(line.startswith("[ERROR] OP(") and "x is a null pointer" in line for line in lines)
    assert any(line.startswith("[ERROR] ASCENDCL(") and "destMax 4" in line for line in lines)


def test_live_objects_back_to_zero(ops_run):
    out, _ = ops_run
    assert out["live"] == "0"  # every kind, streams and executors included


def test_log_level_silences_stderr(ops_exe):
    proc = _run(ops_exe, ASCEND_GLOBAL_LOG_LEVEL="4")
    assert proc.stderr == ""
    assert _fields(proc.stdout)["null_status"] == "161001"


def test_package_works_wherever_installed(package, tmp_path):
    moved = tmp_path / "elsewhere" / "vendors" / "mine"
    moved_builtin = tmp_path / "elsewhere" / "built-in"
    shutil.copytree(package.root, moved, symlinks=True)
    shutil.copytree(package.builtin, moved_builtin, symlinks=True)
    where = {package.root: moved, package.builtin: moved_builtin}
    libs = [where[lib.parents[2]] / lib.relative_to(lib.parents[2]) for lib in package.libs_for(*SAMPLE_OPS_OPS)]
    exe = _build("sample_ops.c", app_flags_for_libraries(libs), tmp_path)
    out = _fields(_run(exe).stdout)
    assert out["root"] == str(moved.resolve())
    assert out["builtin_root"] == str(moved_builtin.resolve())
    assert _floats(out["addn"]) == [111, 222, 333, 444]
    assert _floats(out["leaky"]) == [-0.5, -0.25, 0, 1, 2, -1]
    assert _floats(out["reduce"]) == [60, 92, 124]


def test_embedded_interpreter_without_opbuild_reports(package, tmp_path):
    """OPBUILD_PYTHON names the interpreter to embed; one without opbuild's dependencies gives
    561000 and a message that says which interpreter and why."""
    import sys

    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    exe = _build("sample_add.c", app_flags(package.root), package.work)
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                          env=_clean_env(OPBUILD_PYTHON=str(venv / "bin" / "python")))
    assert proc.returncode != 0
    assert "aclnnAddCustomTemplateGetWorkspaceSize failed. ERROR: 561000" in proc.stdout
    assert f"cannot import opbuild.runtime.capi (the embedded interpreter {venv / 'bin' / 'python'}" in proc.stderr
    assert "ModuleNotFoundError" in proc.stderr


def test_app_flags_for_libraries(package, tmp_path):
    libs = [package.lib, package.builtin_lib("math")]
    flags = app_flags_for_libraries(libs)
    for inc in (package.include, package.builtin_include):
        assert f"-I{inc.resolve()}" in flags
    for lib in libs:
        assert f"-l:{lib.name}" in flags and f"-Wl,-rpath,{lib.parent.resolve()}" in flags
    assert flags.index(f"-I{package.include.resolve()}") < flags.index(f"-I{package.builtin_include.resolve()}")
    # the custom library alone: what app_flags gives (-lcust_opapi is -l:libcust_opapi.so)
    alone = app_flags_for_libraries([package.lib])
    assert sorted(f.replace("-l:libcust_opapi.so", "-lcust_opapi") for f in alone) == sorted(app_flags(package.root))
    other = tmp_path / "vendors" / "other" / "op_api" / "lib" / "libcust_opapi.so"
    with pytest.raises(ValueError, match="libcust_opapi.so"):
        app_flags_for_libraries([package.lib, other])


def test_eight_c_threads_on_the_native_hit_path(package):
    """8 pthreads call concurrently: every result right, each thread's cache its own (two misses
    for the odd threads, which empty theirs once; one for the others), hits for the rest."""
    exe = _build("sample_threads.c", app_flags(package.root), package.work)
    out = _run(exe).stdout
    assert "threads: ok" in out and "live executors: 0" in out
    for line in out.splitlines():
        if line.startswith("thread "):
            t, rest = line[len("thread "):].split(":", 1)
            words = rest.split()
            assert words[0] == "ok", line
            hits, misses = int(words[2]), int(words[4])
            assert misses == (2 if int(t) % 2 else 1), line
            assert hits + misses == 300, line


def test_cache_hits_never_take_the_gil(package):
    """While another thread holds the GIL, 1000 cache-hit calls from C complete (a hit that
    needed the interpreter would hang; the program's alarm reports it)."""
    exe = _build("sample_nogil.c", [*app_flags(package.root), "-ldl"], package.work)
    out = _run(exe).stdout
    assert "nogil: ok 1000" in out, out
    # the control: misses need the interpreter, so with the GIL held elsewhere they block
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, cwd=exe.parent,
                          env=_clean_env(NOGIL_FORCE_MISS="1"))
    assert proc.returncode == 3 and "nogil: blocked" in proc.stdout, proc.stdout + proc.stderr
