"""Hostile packages and buggy tiling functions (issue 13, items 4 and 5): every case is an
AclnnError 561000 naming the file or the value, raised before anything is loaded or launched."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.abi import package_layout as layout
from opbuild.abi.platform import platform
from opbuild.runtime import AclnnError, device
from opbuild.runtime.binaries.package import read_load_priority, search_roots
from opbuild.runtime.errors import ACLNN_ERR_INNER

ENV = ("ASCEND_CUSTOM_OPP_PATH", "ASCEND_OPP_PATH", "ASCEND_HOME_PATH")

_CONSTRUCTOR_SO = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(MARKER, "w");
    if (f) { fputs("constructor ran\n", f); fclose(f); }
}
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def _raises_inner(fn, *args, **kwargs) -> str:
    with pytest.raises(AclnnError) as err:
        fn(*args, **kwargs)
    assert err.value.status == ACLNN_ERR_INNER, err.value
    return err.value.message


def _planted_library(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_suffix(".c")
    src.write_text(_CONSTRUCTOR_SO)
    subprocess.run(["cc", "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(path), str(src)], check=True)


# ---- package discovery ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../../x", "../../../x", "a/b", "..", "a\\b"])
def test_config_ini_vendor_traversal_refused(tmp_path, monkeypatch, name):
    opp = tmp_path / "opp"
    marker = tmp_path / "constructor-ran"
    # what the traversal would reach: a package whose op API library has a constructor
    _planted_library(tmp_path / "x" / "op_api" / "lib" / layout.CUSTOM_OPAPI_LIB, marker)
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors/config.ini").write_text(f"load_priority=customize,{name}\n")
    msg = _raises_inner(read_load_priority, opp / "vendors/config.ini")
    assert msg == (f"{opp / 'vendors/config.ini'}: load_priority vendor {name!r} "
                   f"{layout.vendor_name_problem(name)}; a vendor is one directory name under vendors/")
    monkeypatch.setenv("ASCEND_OPP_PATH", str(opp))
    _raises_inner(search_roots)
    from opbuild.runtime import fallback

    with pytest.raises(AclnnError, match="load_priority vendor"):
        fallback.get_op_api_func("aclnnPlanted")
    assert not marker.exists()


def test_symlinked_tiling_library_refused(package_copy, tmp_path):
    marker = tmp_path / "constructor-ran"
    outside = tmp_path / "outside" / layout.TILING_LIB_NAME
    _planted_library(outside, marker)
    lib = package_copy / layout.tiling_lib()
    lib.unlink()
    lib.symlink_to(outside)
    ops = rt.import_ops(package_copy)
    x = np.ones(8, np.float32)
    msg = _raises_inner(ops.add_custom_template, x, x)
    assert msg.startswith(f"AddCustomTemplate: tiling library {str(lib)!r} points outside the package {package_copy}")
    assert f"(resolves to {outside})" in msg
    assert not marker.exists()


def test_symlinked_op_api_library_refused(package_copy, tmp_path):
    from opbuild.runtime import fallback

    marker = tmp_path / "constructor-ran"
    outside = tmp_path / "outside" / layout.CUSTOM_OPAPI_LIB
    _planted_library(outside, marker)
    lib = package_copy / "op_api" / "lib" / layout.CUSTOM_OPAPI_LIB
    lib.parent.mkdir(parents=True, exist_ok=True)
    if lib.exists() or lib.is_symlink():
        lib.unlink()
    lib.symlink_to(outside)
    with pytest.raises(AclnnError, match="op API library .* points outside the package"):
        fallback.get_op_api_func("aclnnPlanted", roots=[package_copy])
    assert not marker.exists()


def test_vendor_names_in_om_follow_the_same_rule():
    from opbuild.om.so_store import check_vendor

    assert check_vendor("vendors/customize") is None
    assert check_vendor("vendors/..") == "vendor name " + layout.vendor_name_problem("..")


# ---- tiling results ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def probe(probe_package):
    return rt.import_ops(probe_package)


@pytest.mark.parametrize("scale,expected", [
    (-6.0, "ProbeCustom: tiling function probe_custom_tiling set block_dim 2147483647, more than 65535, "
           "the most blocks of one launch on ascend910b"),
    (-7.0, "ProbeCustom: tiling function probe_custom_tiling set workspace_size 18446744073709547520 "
           "(-4096 as int64: negative)"),
    (-8.0, f"ProbeCustom: tiling function probe_custom_tiling set workspace_size 1125899906842624 bytes, more than "
           f"the {platform('ascend910b').device_memory} bytes of device memory of ascend910b"),
    (-9.0, "ProbeCustom: tiling function probe_custom_tiling: tiling function wrote past the end of its"),
])
def test_tiling_result_out_of_bounds(probe, scale, expected):
    x = np.ones(16, np.float32)
    y = np.zeros_like(x)
    msg = _raises_inner(probe.probe_custom, x, scale=scale)
    assert msg.startswith(expected), msg
    msg = _raises_inner(probe.aclnnProbeCustomGetWorkspaceSize, x, scale, y)  # phase 1: nothing launched
    assert msg.startswith(expected), msg
    assert not y.any()
    np.testing.assert_array_equal(probe.probe_custom(x, scale=2.0), 2 * x)  # the next call works


def test_block_dim_limit_is_per_soc():
    assert all(platform(s).max_block_dim == 65535 for s in ("ascend910b", "ascend310p"))
    assert device.MAX_SYNC_BLOCKS <= platform("ascend910b").max_block_dim
