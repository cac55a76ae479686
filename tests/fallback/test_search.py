"""get_op_api_func: the search order over custom and built-in op API libraries, the error that
names every library searched, the environment read on every lookup, handles opened once."""

from __future__ import annotations

import ctypes
import os
import shutil

import pytest

from opbuild.runtime import fallback as fb
from opbuild.runtime.errors import ACLNN_ERR_INNER, AclnnError


def _where(name: str, roots=None) -> str:
    return fb.find_op_api(name, roots)[1]


def test_search_path_is_custom_then_builtin_libraries(env):
    assert [os.path.realpath(p) for p in fb.search_path()] == [os.path.realpath(p) for p in env.search_order]
    # the explicit-roots variant: the same list from the same roots
    assert fb.search_path([env.custom, env.builtin]) == fb.search_path()


def test_custom_package_wins_over_builtin(env):
    # MulCustom is in the custom package AND in built-in libopapi_math.so: the custom one wins
    address, path = fb.find_op_api("aclnnMulCustom")
    assert os.path.samefile(path, env.custom_lib)
    math = ctypes.CDLL(str(env.builtin_lib("math")))
    assert ctypes.cast(math.aclnnMulCustom, ctypes.c_void_p).value not in (None, address)
    fn = fb.get_op_api_func("aclnnMulCustom")
    assert ctypes.cast(fn, ctypes.c_void_p).value == address == fb.get_op_api_addr("aclnnMulCustom")
    assert os.path.samefile(_where("aclnnMulCustomGetWorkspaceSize"), env.custom_lib)


@pytest.mark.parametrize("name, domain", [
    ("aclnnReduceSumCustom", "math"), ("aclnnReduceSumCustomGetWorkspaceSize", "math"),
    ("aclnnLeakyReluCustom", "nn"), ("aclnnLeakyReluCustomGetWorkspaceSize", "nn"),
])
def test_builtin_ops_are_found_in_their_domain_library(env, name, domain):
    assert os.path.samefile(_where(name), env.builtin_lib(domain))


def test_custom_only_ops_and_reset_cache(env):
    for name in ("aclnnAddCustomTemplate", "aclnnAddNCustomGetWorkspaceSize"):
        assert os.path.samefile(_where(name), env.custom_lib)
    # ResetCacheThreadLocal: through libcust_opapi.so's dependency, the acl library
    assert os.path.samefile(_where("ResetCacheThreadLocal"), env.custom_lib)


def test_builtin_libopapi_has_reset_cache_thread_local(env):
    """With the built-in package alone, libopapi.so must give ResetCacheThreadLocal (through its
    acl library dependency), or op_fallback cannot run any built-in op."""
    import numpy as np

    lib = env.builtin_lib()
    try:
        where = _where("ResetCacheThreadLocal", [env.builtin])
    except fb.OpApiNotFound as exc:
        pytest.fail(f"{lib} does not reach ResetCacheThreadLocal: it was linked without the acl library as a "
                    "dependency (with `-Wl,--as-needed`, the linker default on many distributions, the library is "
                    "dropped unless the source references one of its symbols, e.g. "
                    "`extern void ResetCacheThreadLocal(void); "
                    "void *anchor(void) { return (void *)&ResetCacheThreadLocal; }`, "
                    f"or link with -Wl,--no-as-needed)\n{exc}")
    assert os.path.samefile(where, lib)
    ctx = fb.OpExecuteContext()
    x = np.linspace(-1, 1, 10, dtype=np.float32)
    y = np.zeros_like(x)
    import ctypes

    assert fb.syn_exec_aclnn(ctx, "aclnnLeakyReluCustom", x, ctypes.c_double(0.5), y, roots=[env.builtin]) == 0, \
        ctx.last_error
    np.testing.assert_allclose(y, np.where(x >= 0, x, 0.5 * x), rtol=1e-6)


def test_unknown_op_names_all_eight_libraries(env):
    with pytest.raises(fb.OpApiNotFound) as info:
        fb.get_op_api_func("aclnnNoSuchOp")
    err = info.value
    assert isinstance(err, AclnnError) and err.status == ACLNN_ERR_INNER
    assert [os.path.realpath(s.path) for s in err.searched] == [os.path.realpath(p) for p in env.search_order]
    states = {os.path.basename(s.path): s.state for s in err.searched}
    assert states == {
        "libcust_opapi.so": "no symbol", "libopapi.so": "no symbol", "libopapi_math.so": "no symbol",
        "libopapi_nn.so": "no symbol", "libopapi_cv.so": "missing", "libopapi_transformer.so": "missing",
        "libopapi_oam.so": "missing", "libopapi_ras.so": "missing",
    }
    text = str(err)
    assert "aclnnNoSuchOp" in text and "8 libraries" in text
    positions = [text.index(s.path) for s in err.searched]
    assert positions == sorted(positions)  # listed in search order
    assert text.count("does not exist") == 4 and text.count("exists, no such symbol") == 4


def test_no_libraries_at_all(monkeypatch):
    for var in ("ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH", "ASCEND_HOME_PATH"):
        monkeypatch.delenv(var, raising=False)
    assert fb.search_path() == ()
    with pytest.raises(fb.OpApiNotFound, match="no library to search"):
        fb.get_op_api_func("aclnnMulCustom")


def test_environment_change_is_honoured_by_next_lookup(env, fakes, monkeypatch):
    assert os.path.samefile(_where("aclnnMulCustom"), env.custom_lib)
    with pytest.raises(fb.OpApiNotFound):
        fb.get_op_api_func("aclnnFakeEcho")
    # a custom package in ASCEND_CUSTOM_OPP_PATH comes first
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(fakes.full))
    assert os.path.samefile(_where("aclnnFakeEcho"), fakes.full / "op_api" / "lib" / "libcust_opapi.so")
    assert fb.search_path()[0] == str(fakes.full / "op_api" / "lib" / "libcust_opapi.so")
    assert os.path.samefile(_where("aclnnMulCustom"), env.custom_lib)
    # no OPP any more: the built-in ops are gone
    monkeypatch.delenv("ASCEND_OPP_PATH")
    with pytest.raises(fb.OpApiNotFound) as info:
        fb.get_op_api_func("aclnnReduceSumCustom")
    assert len(info.value.searched) == 1
    # ASCEND_HOME_PATH/opp_latest/built-in replaces $ASCEND_OPP_PATH/built-in
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH")
    home = fakes.work / "home"
    (home / "opp_latest").mkdir(parents=True, exist_ok=True)
    link = home / "opp_latest" / "built-in"
    if not link.exists():
        link.symlink_to(env.builtin)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    assert fb.search_path()[0] == str(link / "op_api" / "lib" / "libopapi.so")
    assert _where("aclnnLeakyReluCustom").startswith(str(link))


def test_config_ini_priority_change_is_honoured(fakes, monkeypatch, tmp_path):
    # two vendors exporting the same symbol; vendors/config.ini decides, re-read when it changes
    vendors = tmp_path / "opp" / "vendors"
    for vendor in ("alpha", "beta"):
        shutil.copytree(fakes.full, vendors / vendor)
    ini = vendors / "config.ini"
    ini.write_text("load_priority=alpha,beta\n")
    monkeypatch.setenv("ASCEND_OPP_PATH", str(tmp_path / "opp"))
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH", raising=False)
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    assert "/alpha/" in _where("aclnnFakeEcho")
    ini.write_text("load_priority=beta,alpha\n")
    os.utime(ini, ns=(1, 1))  # a different stat whatever the clock's resolution
    assert "/beta/" in _where("aclnnFakeEcho")
    assert [p.split("/vendors/")[1].split("/")[0] for p in fb.search_path()[:2]] == ["beta", "alpha"]


def test_handles_are_opened_once_per_path(env):
    names = ["aclnnMulCustom", "aclnnReduceSumCustom", "aclnnLeakyReluCustom", "ResetCacheThreadLocal",
             "aclnnAddNCustomGetWorkspaceSize"]
    for _ in range(3):
        for name in names:
            fb.get_op_api_func(name)
        fb.clear_caches()  # forget the symbols: the next round searches again, handles stay
        with pytest.raises(fb.OpApiNotFound):
            fb.get_op_api_func("aclnnNoSuchOp")
    opens = fb.library_opens()
    for path in fb.search_path():
        if os.path.exists(path):
            assert opens[path] == 1, path
        else:
            assert path not in opens
    assert all(count == 1 for count in opens.values())


def test_symbol_cache_is_per_search_path(env, fakes):
    full = fakes.full / "op_api" / "lib" / "libcust_opapi.so"
    a = fb.find_op_api("ResetCacheThreadLocal", [fakes.full])
    b = fb.find_op_api("ResetCacheThreadLocal", [env.custom])
    assert a[1] == str(full) and os.path.samefile(b[1], env.custom_lib)
    assert a[0] == b[0]  # one acl library in the process
    with pytest.raises(fb.OpApiNotFound) as info:
        fb.find_op_api("ResetCacheThreadLocal", [fakes.no_acl])
    assert [s.state for s in info.value.searched] == ["no symbol"]


def test_a_library_that_fails_to_load_is_reported(tmp_path):
    root = tmp_path / "broken"
    (root / "op_api" / "lib").mkdir(parents=True)
    (root / "op_api" / "lib" / "libcust_opapi.so").write_text("not an ELF file")
    with pytest.raises(fb.OpApiNotFound) as info:
        fb.get_op_api_func("aclnnMulCustom", [root])
    assert info.value.searched[0].state.startswith("load failed")
    assert "load failed" in str(info.value)
