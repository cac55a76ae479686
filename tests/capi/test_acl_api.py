"""The AscendCL API beyond aclnn: tensor descs, data buffers, op attrs, aclInit's acl.json, events,
timed stream sync, rtGetSocVersion, single ops by type (aclopCompileAndExecuteV2 / aclopExecuteV2
with aclopSetModelDir) and .om models (aclmdl*).

The first tests call the acl library in-process through ctypes (no package needed); the others
compile in-house apps written like CANN's single-op and model samples (sample_aclop.cpp,
sample_aclmdl.c) with the real compiler and run them in a clean environment against the sample
ops (the `package` fixture: slow), results checked against numpy.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

from opbuild.abi.native_libs import app_flags
from opbuild.abi.vocabulary import DEFAULT_SOC, SOC, SOCS
from opbuild.runtime.capi import acl_library
from opbuild.runtime_paths import native_include_dir

HERE = Path(__file__).resolve().parent
P = ctypes.c_void_p


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    lib = acl_library()
    lib.aclCreateTensorDesc.restype = P
    lib.aclCreateTensorDesc.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
    for name, res in (("aclGetTensorDescSize", ctypes.c_size_t), ("aclGetTensorDescElementCount", ctypes.c_size_t),
                      ("aclGetTensorDescNumDims", ctypes.c_size_t), ("aclGetTensorDescType", ctypes.c_int),
                      ("aclGetTensorDescFormat", ctypes.c_int), ("aclGetTensorDescName", ctypes.c_char_p)):
        getattr(lib, name).restype = res
        getattr(lib, name).argtypes = [P]
    lib.aclGetTensorDescDimV2.argtypes = [P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64)]
    lib.aclGetTensorDescDim.restype = ctypes.c_int64
    lib.aclGetTensorDescDim.argtypes = [P, ctypes.c_size_t]
    lib.aclSetTensorDescName.argtypes = [P, ctypes.c_char_p]
    lib.aclDestroyTensorDesc.argtypes = [P]
    lib.aclCreateDataBuffer.restype = P
    lib.aclCreateDataBuffer.argtypes = [P, ctypes.c_size_t]
    lib.aclGetDataBufferAddr.restype = P
    lib.aclGetDataBufferAddr.argtypes = [P]
    lib.aclGetDataBufferSizeV2.restype = ctypes.c_size_t
    lib.aclGetDataBufferSizeV2.argtypes = [P]
    lib.aclUpdateDataBuffer.argtypes = [P, P, ctypes.c_size_t]
    lib.aclDestroyDataBuffer.argtypes = [P]
    lib.aclopCreateAttr.restype = P
    lib.aclopSetAttrInt.argtypes = [P, ctypes.c_char_p, ctypes.c_int64]
    lib.aclopSetAttrString.argtypes = [P, ctypes.c_char_p, ctypes.c_char_p]
    lib.aclopSetAttrListFloat.argtypes = [P, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    lib.aclopDestroyAttr.argtypes = [P]
    lib.aclrtCreateStream.argtypes = [ctypes.POINTER(P)]
    lib.aclrtDestroyStream.argtypes = [P]
    lib.aclrtSynchronizeStream.argtypes = [P]
    lib.aclrtSynchronizeStreamWithTimeout.argtypes = [P, ctypes.c_int32]
    lib.aclrtCreateEvent.argtypes = [ctypes.POINTER(P)]
    lib.aclrtCreateEventWithFlag.argtypes = [ctypes.POINTER(P), ctypes.c_uint32]
    for name in ("aclrtDestroyEvent", "aclrtSynchronizeEvent"):
        getattr(lib, name).argtypes = [P]
    lib.aclrtRecordEvent.argtypes = [P, P]
    lib.aclrtResetEvent.argtypes = [P, P]
    lib.aclrtStreamWaitEvent.argtypes = [P, P]
    lib.aclrtQueryEventStatus.argtypes = [P, ctypes.POINTER(ctypes.c_int)]
    lib.aclrtEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), P, P]
    lib.aclInit.argtypes = [ctypes.c_char_p]
    lib.opbuild_acl_dump_config.restype = ctypes.c_char_p
    lib.aclrtGetSocName.restype = ctypes.c_char_p
    lib.aclrtSynchronizeEventWithTimeout.argtypes = [P, ctypes.c_int32]
    lib.rtGetSocVersion.restype = ctypes.c_int32
    lib.rtGetSocVersion.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
    return lib


def _recent(lib: ctypes.CDLL) -> str:
    msg = lib.aclGetRecentErrMsg()
    return msg.decode() if msg else ""


# ---- the SoC names ---------------------------------------------------------------------------------

def test_soc_names_are_the_vocabulary(lib, monkeypatch):
    """The acl library's SoC table is generated (vocabulary_gen.h) from vocabulary.SOCS."""
    buf = ctypes.create_string_buffer(64)
    for soc in SOCS:
        monkeypatch.setenv("OPBUILD_SOC", soc.name)
        assert lib.aclrtGetSocName().decode() == soc.soc_version
        assert lib.rtGetSocVersion(buf, 64) == 0 and buf.value.decode() == soc.soc_version
    monkeypatch.delenv("OPBUILD_SOC", raising=False)
    assert lib.rtGetSocVersion(buf, 64) == 0 and buf.value.decode() == SOC[DEFAULT_SOC].soc_version
    assert lib.aclrtGetSocName().decode() == SOC[DEFAULT_SOC].soc_version
    monkeypatch.setenv("OPBUILD_SOC", "ascend310p")
    assert lib.rtGetSocVersion(buf, 64) == 0 and buf.value == b"Ascend310P3"
    assert lib.aclrtGetSocName() == b"Ascend310P3"
    assert lib.rtGetSocVersion(buf, 4) == 107000 and "too short" in _recent(lib)
    monkeypatch.setenv("OPBUILD_SOC", "ascend999")
    assert lib.rtGetSocVersion(buf, 64) == 107000 and "ascend999" in _recent(lib)
    assert lib.aclrtGetSocName() is None


# ---- aclInit's acl.json --------------------------------------------------------------------------

def test_acl_json_dump_kept_unknown_keys_ignored(lib, tmp_path):
    cfg = tmp_path / "acl.json"
    cfg.write_text('{"profiler": {"switch": "on"},\n "dump": {"dump_path": "/tmp/d", "dump_list": []},\n "x": [1, 2.5e3, null, true]}')
    assert lib.aclInit(str(cfg).encode()) == 0, _recent(lib)
    try:
        assert lib.opbuild_acl_dump_config() == b'{"dump_path": "/tmp/d", "dump_list": []}'
        assert lib.aclInit(None) == 100002  # ACL_ERROR_REPEAT_INITIALIZE
    finally:
        assert lib.aclFinalize() == 0
    for empty in (None, b""):
        assert lib.aclInit(empty) == 0
        assert lib.aclFinalize() == 0


@pytest.mark.parametrize("text, line, col", [
    ('{"dump": {"dump_path": "a",}}', 1, 28),
    ('{\n  "a": 1\n  "b": 2\n}', 3, 3),
    ('[1, 2]', 1, 1),
    ('{"a": tru}', 1, 7),
    ('{} {}', 1, 4),
    ('', 1, 1),
])
def test_malformed_acl_json_names_file_line_column(lib, tmp_path, text, line, col):
    cfg = tmp_path / "acl.json"
    cfg.write_text(text)
    assert lib.aclInit(str(cfg).encode()) == 100006  # ACL_ERROR_PARSE_FILE
    assert f"{cfg}:{line}:{col}: invalid JSON" in _recent(lib)
    assert lib.aclFinalize() == 100037  # not initialized: nothing was half set up


def test_missing_acl_json(lib, tmp_path):
    assert lib.aclInit(str(tmp_path / "none.json").encode()) == 100003
    assert "none.json cannot be read" in _recent(lib)


def test_model_dir_is_set_once_per_init(lib, tmp_path):
    lib.aclopSetModelDir.argtypes = [ctypes.c_char_p]
    assert lib.aclopSetModelDir(str(tmp_path / "none").encode()) == 100003
    assert "does not exist" in _recent(lib)
    for _ in range(2):
        assert lib.aclInit(None) == 0
        try:
            assert lib.aclopSetModelDir(str(tmp_path).encode()) == 0
            assert lib.aclopSetModelDir(str(tmp_path).encode()) == 100002 and "set already" in _recent(lib)
        finally:
            assert lib.aclFinalize() == 0  # forgets the directory


# ---- descs, buffers, attributes ------------------------------------------------------------------

@pytest.fixture
def no_leaks():
    """Every acl object a test creates is released by its end (opbuild_acl_live_objects)."""
    from opbuild.runtime import capi

    before = {k: capi.live_objects(k) for k in capi.KIND_NAMES}
    yield
    after = {k: capi.live_objects(k) for k in capi.KIND_NAMES}
    assert after == before


def test_tensor_desc_getters(lib, no_leaks):
    dims = (ctypes.c_int64 * 3)(2, 3, 4)
    d = lib.aclCreateTensorDesc(1, 3, dims, 2)  # ACL_FLOAT16, ND
    assert d
    assert (lib.aclGetTensorDescType(d), lib.aclGetTensorDescFormat(d), lib.aclGetTensorDescNumDims(d)) == (1, 2, 3)
    assert lib.aclGetTensorDescElementCount(d) == 24 and lib.aclGetTensorDescSize(d) == 48
    v = ctypes.c_int64()
    assert lib.aclGetTensorDescDimV2(d, 2, ctypes.byref(v)) == 0 and v.value == 4
    assert lib.aclGetTensorDescDimV2(d, 3, ctypes.byref(v)) == 100000 and "index 3 out of range" in _recent(lib)
    assert lib.aclGetTensorDescDim(d, 7) == -1
    assert lib.aclGetTensorDescName(d) == b""
    lib.aclSetTensorDescName(d, b"x")
    assert lib.aclGetTensorDescName(d) == b"x"
    lib.aclDestroyTensorDesc(d)
    unknown = (ctypes.c_int64 * 2)(-1, 8)
    u = lib.aclCreateTensorDesc(0, 2, unknown, 2)
    assert lib.aclGetTensorDescSize(u) == 0  # an unknown dim: no size
    lib.aclDestroyTensorDesc(u)
    assert not lib.aclCreateTensorDesc(0, 1, (ctypes.c_int64 * 1)(-5), 2)
    assert "dims[0] is -5" in _recent(lib)


def test_data_buffer_and_attr(lib, no_leaks):
    mem = ctypes.create_string_buffer(64)
    b = lib.aclCreateDataBuffer(ctypes.addressof(mem), 64)
    assert lib.aclGetDataBufferAddr(b) == ctypes.addressof(mem) and lib.aclGetDataBufferSizeV2(b) == 64
    assert lib.aclUpdateDataBuffer(b, ctypes.addressof(mem) + 8, 32) == 0
    assert lib.aclGetDataBufferSizeV2(b) == 32
    assert lib.aclDestroyDataBuffer(b) == 0
    a = lib.aclopCreateAttr()
    assert lib.aclopSetAttrInt(a, b"n", 3) == 0
    assert lib.aclopSetAttrInt(a, b"n", 4) == 0  # replaces
    assert lib.aclopSetAttrString(a, b"mode", b"fast") == 0
    assert lib.aclopSetAttrListFloat(a, b"w", 2, (ctypes.c_float * 2)(1.0, 2.0)) == 0
    assert lib.aclopSetAttrInt(a, b"", 1) == 100000
    lib.aclopDestroyAttr(a)


# ---- streams, events ---------------------------------------------------------------------------

class _Blocker:
    """A host task holding a stream until release() (queued through opbuild.runtime.device)."""

    def __init__(self, stream: int) -> None:
        from opbuild.runtime.device import Stream

        self.gate = threading.Event()
        Stream.from_handle(stream).enqueue_host(lambda: self.gate.wait(30))

    def release(self) -> None:
        self.gate.set()


def _stream(lib) -> int:
    s = P()
    assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
    return s.value


def _event(lib, flag: int | None = None) -> int:
    e = P()
    rc = lib.aclrtCreateEvent(ctypes.byref(e)) if flag is None else lib.aclrtCreateEventWithFlag(ctypes.byref(e), flag)
    assert rc == 0
    return e.value


def _status(lib, event: int) -> int:
    st = ctypes.c_int(-1)
    assert lib.aclrtQueryEventStatus(event, ctypes.byref(st)) == 0
    return st.value  # 1 complete, 0 not ready


def test_events_order_streams_and_time(lib, no_leaks):
    s1, s2 = _stream(lib), _stream(lib)
    start, mid, end = _event(lib), _event(lib, 0x8), _event(lib)
    blocker = _Blocker(s1)
    assert lib.aclrtRecordEvent(start, None) == 0  # the default stream: complete now
    assert lib.aclrtRecordEvent(mid, s1) == 0      # behind the blocker
    assert lib.aclrtStreamWaitEvent(s2, mid) == 0  # s2 waits for s1's recording
    assert lib.aclrtRecordEvent(end, s2) == 0
    assert (_status(lib, start), _status(lib, mid), _status(lib, end)) == (1, 0, 0)
    ms = ctypes.c_float()
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), start, end) == 100000
    assert "not completed yet" in _recent(lib)
    assert lib.aclrtSynchronizeStreamWithTimeout(s2, 50) == 507046  # ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    assert _status(lib, end) == 0  # s2 still waits: the wait is real
    assert lib.aclrtSynchronizeEventWithTimeout(end, 20) == 507047  # ACL_ERROR_RT_EVENT_SYNC_TIMEOUT
    blocker.release()
    assert lib.aclrtSynchronizeEventWithTimeout(end, 30000) == 0
    assert lib.aclrtSynchronizeEvent(end) == 0
    assert (_status(lib, mid), _status(lib, end)) == (1, 1)
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), start, end) == 0
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), mid, end) == 0 and ms.value >= 0.0
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), start, mid) == 0 and ms.value >= 0.0
    assert lib.aclrtSynchronizeStreamWithTimeout(s2, 5000) == 0
    assert lib.aclrtResetEvent(mid, s1) == 0
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), mid, end) == 100000 and "not been recorded" in _recent(lib)
    for e in (start, mid, end):
        assert lib.aclrtDestroyEvent(e) == 0
    assert lib.aclrtDestroyEvent(start) == 100000 and "not a live event" in _recent(lib)
    for s in (s1, s2):
        assert lib.aclrtDestroyStream(s) == 0


def test_destroying_an_event_with_work_pending(lib, no_leaks):
    s = _stream(lib)
    e = _event(lib)
    blocker = _Blocker(s)
    assert lib.aclrtRecordEvent(e, s) == 0
    assert lib.aclrtDestroyEvent(e) == 0  # its pending recording keeps it until it ran
    blocker.release()
    assert lib.aclrtSynchronizeStream(s) == 0
    assert lib.aclrtSynchronizeStreamWithTimeout(s, 0) == 100000  # 0 is neither -1 nor a time
    assert lib.aclrtDestroyStream(s) == 0


def test_run_mode_is_host(lib):
    mode = ctypes.c_int(-1)
    assert lib.aclrtGetRunMode(ctypes.byref(mode)) == 0 and mode.value == 1  # ACL_HOST


# ---- apps (slow: the sample ops) -------------------------------------------------------------------

def _clean_env(**extra: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def _compile(source: str, flags: list[str], out: Path) -> Path:
    cpp = source.endswith(".cpp")
    cc = shutil.which(os.environ.get("CXX" if cpp else "CC", "c++" if cpp else "cc")) or ("g++" if cpp else "gcc")
    exe = out / Path(source).stem
    std = "-std=c++14" if cpp else "-std=gnu11"
    subprocess.run([cc, std, "-Wall", "-Wextra", "-Werror", "-pthread", "-o", str(exe), str(HERE / source), *flags],
                   check=True)
    return exe


def _run(exe: Path, *args: str, ok: bool = True, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, env=_clean_env(**env), timeout=120)
    if ok:
        assert proc.returncode == 0, f"{exe.name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _inputs(work: Path, dtype: str, shape: tuple[int, int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    x.tofile(work / "x.bin")
    y.tofile(work / "y.bin")
    return x + y


@pytest.fixture(scope="module")
def aclop_exe(package) -> Path:
    return _compile("sample_aclop.cpp", app_flags(package.root), package.work)


@pytest.fixture(scope="module")
def op_models(package, tmp_path_factory) -> Path:
    """Single-op models of AddCustomTemplate, as `opbuild om single-op` writes them: a static
    float16 [8, 2048] and a dynamic float32 [-1, -1] one, plus a file that is no model."""
    from opbuild.om.single_op import build_single_op

    d = tmp_path_factory.mktemp("op_models")
    (d / "add_f16.om").write_bytes(build_single_op("AddCustomTemplate", ["x=float16[8,2048]", "y=float16[8,2048]"],
                                                   [], package.opp))
    (d / "add_f32_dyn.om").write_bytes(build_single_op("AddCustomTemplate", ["x=float32[-1,-1]", "y=float32[-1,-1]"],
                                                       [], package.opp))
    (d / "junk.om").write_bytes(b"not a model")
    return d


@pytest.mark.parametrize("dtype, shape", [("float16", (8, 2048)), ("float32", (3, 100))])
def test_compile_and_execute_runs_the_package_op(aclop_exe, package, tmp_path, dtype, shape):
    want = _inputs(tmp_path, dtype, shape, seed=1)
    proc = _run(aclop_exe, "compile", dtype, str(shape[0]), str(shape[1]), str(tmp_path),
                ASCEND_CUSTOM_OPP_PATH=str(package.root))
    assert "run mode: host" in proc.stdout and "ok" in proc.stdout
    assert "live objects: 0" in proc.stdout  # every desc, buffer, attr, stream and host buffer released
    assert f"elements {shape[0] * shape[1]} size {want.nbytes}" in proc.stdout
    np.testing.assert_array_equal(np.fromfile(tmp_path / "z.bin", dtype).reshape(shape), want)


def test_compile_and_execute_of_an_op_in_no_package(aclop_exe, tmp_path):
    _inputs(tmp_path, "float16", (2, 64), seed=2)
    proc = _run(aclop_exe, "compile", "float16", "2", "64", str(tmp_path), ok=False)
    assert proc.returncode == 100024 % 256
    assert "error: 100024" in proc.stdout and "op AddCustomTemplate is in no op package" in proc.stdout
    assert "[ERROR] ASCENDCL" in proc.stderr


@pytest.mark.parametrize("dtype, shape", [("float16", (8, 2048)), ("float32", (5, 77))])
def test_execute_finds_the_single_op_model_by_content(aclop_exe, op_models, tmp_path, dtype, shape):
    want = _inputs(tmp_path, dtype, shape, seed=3)
    for f in op_models.iterdir():
        shutil.copy(f, tmp_path / f.name)
    acl_json = tmp_path / "acl.json"
    acl_json.write_text("{}")
    _run(aclop_exe, "model", dtype, str(shape[0]), str(shape[1]), str(tmp_path), str(acl_json))
    np.testing.assert_array_equal(np.fromfile(tmp_path / "z.bin", dtype).reshape(shape), want)


def test_execute_without_a_matching_model(aclop_exe, op_models, tmp_path):
    _inputs(tmp_path, "float16", (8, 100), seed=4)
    for f in op_models.iterdir():
        shutil.copy(f, tmp_path / f.name)
    proc = _run(aclop_exe, "model", "float16", "8", "100", str(tmp_path), ok=False)
    assert proc.returncode == 100021 % 256  # ACL_ERROR_OP_INPUT_NOT_MATCH
    assert "no model found for op AddCustomTemplate(float16[8, 100], float16[8, 100])" in proc.stdout
    assert "add_f16.om: AddCustomTemplate(float16[8, 2048], float16[8, 2048])" in proc.stdout
    assert not (tmp_path / "z.bin").exists()


def test_bad_acl_json_stops_the_app(aclop_exe, tmp_path):
    bad = tmp_path / "acl.json"
    bad.write_text('{"dump": }')
    proc = _run(aclop_exe, "model", "float16", "8", "2048", str(tmp_path), str(bad), ok=False)
    assert proc.returncode == 100006 % 256 and f"{bad}:1:10: invalid JSON" in proc.stdout


@pytest.fixture(scope="module")
def aclmdl_exe(package) -> Path:
    return _compile("sample_aclmdl.c", app_flags(package.root), package.work)


def test_model_app_loads_describes_and_runs_a_trusted_model(aclmdl_exe, op_models, tmp_path):
    want = _inputs(tmp_path, "float16", (8, 2048), seed=5)
    proc = _run(aclmdl_exe, str(op_models / "add_f16.om"), str(tmp_path), OPBUILD_OM_TRUST="1")
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert (lines["inputs"], lines["outputs"]) == ("2", "1")
    assert lines["input0"] == "x 1 2 32768 [8 2048] x"  # name, ACL_FLOAT16, ACL_FORMAT_ND, bytes, dims
    assert lines["output0"] == "z 1 2 32768 [8 2048] z"
    assert lines["bad index"] == "100000" and lines["bad index name"] == "null"
    assert lines["bad model id"] == "100011" and lines["unload again"] == "100011"
    assert lines["output desc before"] == "null" and lines["output desc"] == "1 [8 2048]"
    assert lines["live objects"] == "0"  # the output desc the dataset made went with it
    np.testing.assert_array_equal(np.fromfile(tmp_path / "z.bin", np.float16).reshape(8, 2048), want)


def test_model_app_dynamic_shapes_through_dataset_tensor_descs(aclmdl_exe, op_models, tmp_path):
    want = _inputs(tmp_path, "float32", (6, 130), seed=12)
    proc = _run(aclmdl_exe, str(op_models / "add_f32_dyn.om"), str(tmp_path), "6", "130", OPBUILD_OM_TRUST="1")
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert lines["input0"] == "x 0 2 0 [-1 -1] x"  # open dims: no size
    assert lines["output0"] == "z 0 2 0 [-2] z"    # a dynamic model's output: unknown rank until it ran
    assert lines["output desc"] == "0 [6 130]"     # what it produced
    assert lines["live objects"] == "0"
    np.testing.assert_array_equal(np.fromfile(tmp_path / "z.bin", np.float32).reshape(6, 130), want)


def test_model_app_refuses_an_untrusted_model(aclmdl_exe, op_models, tmp_path):
    _inputs(tmp_path, "float16", (8, 2048), seed=6)
    proc = _run(aclmdl_exe, str(op_models / "add_f16.om"), str(tmp_path), ok=False)
    assert proc.returncode == 1 and "error: 200006" in proc.stdout
    assert "carries code" in proc.stdout and "OPBUILD_OM_TRUST=1" in proc.stdout
    assert not (tmp_path / "z.bin").exists()


# ---- in-process: aclopLoad, attributes, the built-in package, models from memory (slow) ----------

def _op_args(lib, arrays: list[np.ndarray]) -> tuple:
    """(descs, buffers) arrays of ctypes pointers over numpy arrays (device memory is host memory)."""
    acl_dt = {np.dtype(np.float16): 1, np.dtype(np.float32): 0}
    descs = (P * len(arrays))(*[lib.aclCreateTensorDesc(acl_dt[a.dtype], a.ndim, (ctypes.c_int64 * a.ndim)(*a.shape), 2)
                                for a in arrays])
    bufs = (P * len(arrays))(*[lib.aclCreateDataBuffer(a.ctypes.data, a.nbytes) for a in arrays])
    return descs, bufs


def _outputs(descs, bufs) -> tuple:
    """The descs and buffers from the second on (the op's one output after its one input)."""
    return tuple(ctypes.cast(ctypes.byref(a, ctypes.sizeof(P)), ctypes.POINTER(P)) for a in (descs, bufs))


def _free_op_args(lib, descs, bufs) -> None:
    for d in descs:
        lib.aclDestroyTensorDesc(d)
    for b in bufs:
        assert lib.aclDestroyDataBuffer(b) == 0


@pytest.fixture
def oplib(lib):
    from opbuild.om import aclop

    args = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(P), ctypes.POINTER(P), ctypes.c_int, ctypes.POINTER(P),
            ctypes.POINTER(P), P]
    lib.aclopExecuteV2.argtypes = [*args, P]
    lib.aclopCompileAndExecute.argtypes = [*args, ctypes.c_int, ctypes.c_int, ctypes.c_char_p, P]
    lib.aclopLoad.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.aclopSetAttrFloat.argtypes = [P, ctypes.c_char_p, ctypes.c_float]
    yield lib
    aclop.reset()


def _leaky(x: np.ndarray, slope: float) -> np.ndarray:
    return np.where(x >= 0, x, x * np.float32(slope)).astype(x.dtype)


def test_aclop_load_matches_attributes(oplib, package, no_leaks):
    from opbuild.om.single_op import build_single_op

    lib = oplib
    om = build_single_op("LeakyReluCustom", ["x=float32[4,256]"], ["negative_slope=0.2"], package.opp)
    assert lib.aclopLoad(om, len(om)) == 0, _recent(lib)
    x = np.random.default_rng(8).standard_normal((4, 256)).astype(np.float32)
    y = np.zeros_like(x)
    descs, bufs = _op_args(lib, [x, y])
    attr = lib.aclopCreateAttr()
    try:
        assert lib.aclopSetAttrFloat(attr, b"negative_slope", 0.3) == 0
        assert lib.aclopExecuteV2(b"LeakyReluCustom", 1, descs, bufs, 1, *_outputs(descs, bufs), attr, None) == 100023
        assert "with attrs {'negative_slope': 0.30000001192092896}" in _recent(lib)
        assert lib.aclopSetAttrFloat(attr, b"negative_slope", 0.2) == 0
        assert lib.aclopExecuteV2(b"LeakyReluCustom", 1, descs, bufs, 1, *_outputs(descs, bufs), attr, None) == 0, _recent(lib)
        np.testing.assert_allclose(y, _leaky(x, 0.2), rtol=1e-6)
        assert lib.aclopExecuteV2(b"NoSuchOp", 1, descs, bufs, 1, *_outputs(descs, bufs), attr, None) == 100020
        assert "no model found for op NoSuchOp" in _recent(lib)
    finally:
        lib.aclopDestroyAttr(attr)
        _free_op_args(lib, descs, bufs)


def test_compile_and_execute_from_the_built_in_package_on_a_stream(oplib, package, monkeypatch):
    lib = oplib
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH", raising=False)
    monkeypatch.setenv("ASCEND_OPP_PATH", str(package.opp))
    x = np.random.default_rng(9).standard_normal((3, 1000)).astype(np.float16)
    y = np.zeros_like(x)
    descs, bufs = _op_args(lib, [x, y])
    attr = lib.aclopCreateAttr()
    stream = _stream(lib)
    try:
        assert lib.aclopSetAttrFloat(attr, b"negative_slope", 0.5) == 0
        outs = _outputs(descs, bufs)
        assert lib.aclopCompileAndExecute(b"LeakyReluCustom", 1, descs, bufs, 1, *outs, attr, 0, 0, None, stream) == 0, \
            _recent(lib)
        assert lib.aclrtSynchronizeStream(stream) == 0
        np.testing.assert_array_equal(y, _leaky(x, 0.5))
        assert lib.aclopCompileAndExecute(b"LeakyReluCustom", 1, descs, bufs, 1, *outs, attr, 0, 1, None, stream) == 200001
        assert lib.aclopSetAttrFloat(attr, b"slope", 0.5) == 0
        assert lib.aclopCompileAndExecute(b"LeakyReluCustom", 1, descs, bufs, 1, *outs, attr, 0, 0, None, stream) == 100023
        assert "no attribute(s) ['slope']" in _recent(lib)
    finally:
        lib.aclopDestroyAttr(attr)
        _free_op_args(lib, descs, bufs)
        assert lib.aclrtDestroyStream(stream) == 0


def test_model_from_memory_async_on_a_stream(lib, package, monkeypatch, no_leaks):
    from opbuild.om.single_op import build_single_op

    lib.aclmdlLoadFromMem.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint32)]
    lib.aclmdlCreateDataset.restype = P
    lib.aclmdlAddDatasetBuffer.argtypes = [P, P]
    lib.aclmdlDestroyDataset.argtypes = [P]
    lib.aclmdlExecuteAsync.argtypes = [ctypes.c_uint32, P, P, P]
    om = build_single_op("AddCustomTemplate", ["x=float32[2,300]", "y=float32[2,300]"], [], package.opp)
    model = ctypes.c_uint32()
    monkeypatch.delenv("OPBUILD_OM_TRUST", raising=False)
    assert lib.aclmdlLoadFromMem(om, len(om), ctypes.byref(model)) == 200006
    monkeypatch.setenv("OPBUILD_OM_TRUST", "1")
    assert lib.aclmdlLoadFromMem(om, len(om), ctypes.byref(model)) == 0, _recent(lib)
    assert lib.aclmdlLoadFromMem(b"junk", 4, ctypes.byref(model)) == 100013
    rng = np.random.default_rng(10)
    x, y = rng.standard_normal((2, 2, 300)).astype(np.float32)
    z = np.zeros_like(x)
    stream = _stream(lib)
    blocker = _Blocker(stream)
    sets = [lib.aclmdlCreateDataset(), lib.aclmdlCreateDataset()]
    bufs = [lib.aclCreateDataBuffer(a.ctypes.data, a.nbytes) for a in (x, y, z)]
    for k, b in enumerate(bufs):
        assert lib.aclmdlAddDatasetBuffer(sets[k // 2], b) == 0
    lib.aclmdlExecute.argtypes = [ctypes.c_uint32, P, P]
    assert lib.aclmdlExecute(model.value, sets[1], sets[1]) == 100000  # one input buffer for two inputs
    assert "takes 2 inputs (['x', 'y']), the input dataset has 1 buffers" in _recent(lib)
    done = threading.Thread(target=lambda: lib.aclmdlExecuteAsync(model.value, sets[0], sets[1], stream))
    done.start()
    done.join(0.2)
    assert done.is_alive() and not z.any()  # ordered after the stream's earlier work
    blocker.release()
    done.join(30)
    np.testing.assert_array_equal(z, x + y)
    for b in bufs:
        assert lib.aclDestroyDataBuffer(b) == 0
    for s in sets:
        assert lib.aclmdlDestroyDataset(s) == 0
    assert lib.aclmdlUnload(model.value) == 0
    assert lib.aclrtDestroyStream(stream) == 0


# ---- opt-in: CANN's own apps, unchanged (slow: an AddCustom package is built) ---------------------

SAMPLES = os.environ.get("OPBUILD_ASCENDC_SAMPLES")
FRAMEWORK_LAUNCH = Path(SAMPLES or ".") / "0_introduction" / "1_add_frameworklaunch"
REPO = HERE.parents[1]


@pytest.fixture(scope="module")
def add_custom_opp(tmp_path_factory) -> Path:
    """The samples' op AddCustom (z = x + y): the in-house AddCustomTemplate under that name, built
    by `scons ops` in a throw-away project."""
    import sys

    proj = tmp_path_factory.mktemp("add_custom_project")
    shutil.copy(REPO / "SConstruct", proj / "SConstruct")
    op_dir = proj / "ops" / "add_custom"
    op_dir.mkdir(parents=True)
    for f in (REPO / "ops" / "add_custom_template").iterdir():
        text = f.read_text()
        for old, new in (("AddCustomTemplate", "AddCustom"), ("add_custom_template", "add_custom"),
                         ("ADD_CUSTOM_TEMPLATE", "ADD_CUSTOM")):
            text = text.replace(old, new)
        (op_dir / f.name).write_text(text)
    proc = subprocess.run([sys.executable, "-m", "SCons", "-C", str(proj), "-Q", "ops", "-j2"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proj / "out" / "opp"


SAMPLE_APPS = {
    # name: (sources, model inputs of its op_models/ (None: no models), arguments)
    "AclOfflineModel": ("AclOfflineModel/src/*.cpp", "float16[8,2048]", []),
    "AclOfflineModel-dynamic": ("AclOfflineModel/src/*.cpp", "float16[-1,-1]", ["1", "2048"]),
    "AclOnlineModel": ("AclOnlineModel/src/*.cpp", None, []),
    "AclNNInvocation": ("AclNNInvocation/src/*.cpp", None, []),
}


@pytest.mark.slow
@pytest.mark.skipif(not SAMPLES, reason="set OPBUILD_ASCENDC_SAMPLES to a checkout of the Ascend C samples")
@pytest.mark.parametrize("app", sorted(SAMPLE_APPS))
def test_the_samples_apps_run_unchanged(app, add_custom_opp, tmp_path):
    """The samples' apps, compiled from their sources as they are, run on the simulator like
    run.sh runs them (from output/, reading ../input, writing ../output/output_z.bin): single-op
    models of `opbuild om single-op` found by aclopSetModelDir, the op package found by
    aclopCompileAndExecuteV2, the aclnn API; the result is x + y."""
    from opbuild.om.single_op import build_single_op

    sources, model, args = SAMPLE_APPS[app]
    src_dir = FRAMEWORK_LAUNCH / sources.split("/")[0]
    if not src_dir.is_dir():
        pytest.skip(f"{src_dir} is not there")
    root = add_custom_opp / "vendors" / "customize"
    work = tmp_path / app
    for sub in ("input", "output", "scripts", "op_models"):
        (work / sub).mkdir(parents=True)
    (work / "scripts" / "acl.json").write_text("{}")
    rng = np.random.default_rng(11)
    x, y = rng.standard_normal((2, 8, 2048)).astype(np.float16)
    x.tofile(work / "input" / "input_x.bin")
    y.tofile(work / "input" / "input_y.bin")
    if model is not None:
        om = build_single_op("AddCustom", [f"x={model}", f"y={model}"], [], add_custom_opp)
        (work / "op_models" / "add_custom.om").write_bytes(om)
    cxx = shutil.which(os.environ.get("CXX", "c++")) or "g++"
    exe = work / "output" / "execute_add_op"
    subprocess.run([cxx, "-std=c++11", "-o", str(exe), *map(str, sorted(FRAMEWORK_LAUNCH.glob(sources))),
                    f"-I{src_dir / 'inc'}", *app_flags(root)], check=True)
    proc = subprocess.run([str(exe), *args], cwd=work / "output", capture_output=True, text=True, timeout=120,
                          env=_clean_env(ASCEND_CUSTOM_OPP_PATH=str(root)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_array_equal(np.fromfile(work / "output" / "output_z.bin", np.float16).reshape(8, 2048), x + y)


def test_model_app_runs_a_graph_of_om_build(aclmdl_exe, package, tmp_path):
    """A three-node model of `opbuild om build` (x*y -> LeakyReluCustom(0.2) -> ReduceSumCustom
    over axis 1), described and run through the model API."""
    import sys

    import yaml

    model = {"name": "graph3", "inputs": [{"name": "x", "dtype": "float32", "shape": [4, 256]},
                                          {"name": "y", "dtype": "float32", "shape": [4, 256]}],
             "nodes": [{"name": "mul0", "op": "MulCustom", "inputs": ["x", "y"], "outputs": ["t0"]},
                       {"name": "act0", "op": "LeakyReluCustom", "inputs": ["t0"], "outputs": ["t1"],
                        "attrs": {"negative_slope": 0.2}},
                       {"name": "sum0", "op": "ReduceSumCustom", "inputs": ["t1"], "outputs": ["t2"],
                        "attrs": {"axes": [1]}}],
             "outputs": ["t2"]}
    (tmp_path / "graph3.yaml").write_text(yaml.safe_dump(model))
    subprocess.run([sys.executable, "-m", "opbuild", "om", "build", str(tmp_path / "graph3.yaml"), "--opp",
                    str(package.opp), "-o", str(tmp_path / "graph3.om")], check=True, capture_output=True)
    rng = np.random.default_rng(13)
    x, y = rng.standard_normal((2, 4, 256)).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    y.tofile(tmp_path / "y.bin")
    proc = _run(aclmdl_exe, str(tmp_path / "graph3.om"), str(tmp_path), OPBUILD_OM_TRUST="1")
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert lines["input1"] == "y 0 2 4096 [4 256] y" and lines["output0"] == "t2 0 2 16 [4] t2"
    t = x * y
    want = np.where(t > 0, t, np.float32(0.2) * t).sum(axis=1)
    np.testing.assert_allclose(np.fromfile(tmp_path / "z.bin", np.float32), want, rtol=1e-5, atol=1e-5)
