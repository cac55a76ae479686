"""`opbuild env` and op packages: without --package it puts the packages the runtime searches
(ASCEND_CUSTOM_OPP_PATH, ASCEND_OPP_PATH's vendors by load priority, built-in) on LD_LIBRARY_PATH,
and it warns when two directories of the resulting LD_LIBRARY_PATH hold an op API library of the
same name (two vendors' libcust_opapi.so: a program loads the first, whichever it was built for)."""

from __future__ import annotations

from pathlib import Path

import pytest

from opbuild.cli import main


def _package(root: Path, lib: str, headers: int) -> Path:
    (root / "op_api" / "lib").mkdir(parents=True)
    (root / "op_api" / "lib" / lib).write_bytes(b"\x7fELF")
    (root / "op_api" / "include").mkdir()
    for k in range(headers):
        (root / "op_api" / "include" / f"aclnn_op{k}.h").write_text("")
    return root


def _ld_library_path(stdout: str) -> list[str]:
    line = next(x for x in stdout.splitlines() if x.startswith("export LD_LIBRARY_PATH="))
    value = line.split("=", 1)[1].split('"${LD_LIBRARY_PATH')[0].strip("'")
    return value.split(":")


@pytest.fixture
def opp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    opp = tmp_path / "opp"
    _package(opp / "vendors" / "alpha", "libcust_opapi.so", 2)
    _package(opp / "vendors" / "beta", "libcust_opapi.so", 1)
    _package(opp / "built-in", "libopapi.so", 0)
    (opp / "vendors" / "config.ini").write_text("load_priority=beta,alpha\n")
    for var in ("ASCEND_CUSTOM_OPP_PATH", "ASCEND_HOME_PATH", "LD_LIBRARY_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ASCEND_OPP_PATH", str(opp))
    return opp


def test_env_without_package_takes_the_searched_packages_in_order(opp, tmp_path, capsys):
    assert main(["env", "--pc-dir", str(tmp_path / "pc")]) == 0
    out, err = capsys.readouterr()
    dirs = _ld_library_path(out)
    assert dirs[:3] == [str((opp / p / "op_api" / "lib").resolve()) for p in ("vendors/beta", "vendors/alpha",
                                                                              "built-in")]
    beta, alpha = (str((opp / "vendors" / v / "op_api" / "lib").resolve()) for v in ("beta", "alpha"))
    assert err == (f"opbuild env: warning: libcust_opapi.so is in 2 directories of LD_LIBRARY_PATH: {beta} (1 aclnn "
                   f"header in {Path(beta).parent / 'include'}); {alpha} (2 aclnn headers in "
                   f"{Path(alpha).parent / 'include'}). A program linked with -lcust_opapi loads the first whatever "
                   f"package it was built against; link the other one by path with an rpath (-Wl,-rpath,DIR), or "
                   f"list only its package (--package)\n")


def test_env_with_one_package_does_not_warn(opp, tmp_path, capsys):
    assert main(["env", "--pc-dir", str(tmp_path / "pc"), "--package", str(opp / "vendors" / "alpha")]) == 0
    out, err = capsys.readouterr()
    assert _ld_library_path(out)[0] == str((opp / "vendors" / "alpha" / "op_api" / "lib").resolve()) and err == ""


def test_env_warns_about_a_vendor_already_on_the_callers_path(opp, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", str((opp / "vendors" / "beta" / "op_api" / "lib").resolve()))
    assert main(["env", "--pc-dir", str(tmp_path / "pc"), "--package", str(opp / "vendors" / "alpha")]) == 0
    assert "warning: libcust_opapi.so is in 2 directories of LD_LIBRARY_PATH" in capsys.readouterr().err


def test_env_with_a_bad_config_ini_is_one_error(opp, tmp_path, capsys):
    (opp / "vendors" / "config.ini").write_text("load_priority=../../etc\n")
    assert main(["env", "--pc-dir", str(tmp_path / "pc")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("opbuild env: error: ") and "load_priority vendor '../../etc'" in err
