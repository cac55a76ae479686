"""`opbuild install`: the .run's install.sh run on a package directory (one implementation):
copy, load_priority, refusal without --replace, identical re-install a no-op, permissions."""

from __future__ import annotations

import os
import stat

import pytest

from opbuild.cli import main
from opbuild.deploy.install import InstallError, install


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_install_copies_and_sets_priority(tmp_path, make_package):
    pkg = make_package(tmp_path / "a", "1")
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("# vendors\nload_priority=acme,customize\n")
    report = install(pkg, opp)
    assert report == f"installed {opp}/vendors/customize; load_priority has customize first"
    dest = opp / "vendors" / "customize"
    assert (dest / "version.info").read_text() == "custom_opp_compiler_version=1\n"
    assert os.readlink(dest / "op_impl/ai_core/tbe/op_tiling/liboptiling.so") == "lib/linux/x86_64/libcust_opmaster_rt2.0.so"
    assert (opp / "vendors" / "config.ini").read_text() == "# vendors\nload_priority=customize,acme\n"
    assert (dest / "scripts" / "uninstall.sh").is_file() and not (dest / "bin").exists()
    assert dest.is_symlink() and os.readlink(dest).startswith(".customize.pkg-")  # (replaced by one rename)
    assert [p.name for p in (opp / "vendors").iterdir() if p.name.startswith(".")] == [os.readlink(dest)]
    assert (_mode(dest.resolve()), _mode(dest / "version.info"), _mode(dest / "scripts/uninstall.sh")) == (0o750, 0o640, 0o550)
    assert _mode(opp / "vendors" / "config.ini") == 0o640


def test_reinstall_identical_is_a_no_op_and_different_needs_replace(tmp_path, make_package):
    opp = tmp_path / "opp"
    install(make_package(tmp_path / "a", "1"), opp)
    inode = os.stat(opp / "vendors/customize").st_ino
    assert "identical" in install(make_package(tmp_path / "b", "1"), opp)
    assert os.stat(opp / "vendors/customize").st_ino == inode
    other = make_package(tmp_path / "c", "2")
    with pytest.raises(InstallError, match="different package of vendor customize; use --replace"):
        install(other, opp)
    assert (opp / "vendors/customize/version.info").read_text().endswith("=1\n")
    install(other, opp, replace=True)
    assert (opp / "vendors/customize/version.info").read_text().endswith("=2\n")
    install(other, opp, replace=True, for_all=True)  # the same package, other modes: reinstalled
    assert _mode(opp / "vendors/customize/version.info") == 0o644


def test_cli_errors_exit_1(tmp_path, capsys, make_package):
    assert main(["install", str(tmp_path / "nothing"), "--opp-path", str(tmp_path / "opp")]) == 1
    assert "is not a built op package" in capsys.readouterr().err
    pkg = make_package(tmp_path / "a", "1")
    assert main(["install", str(pkg), "--opp-path", str(tmp_path / "opp")]) == 0
    assert main(["install", str(make_package(tmp_path / "b", "2")), "--opp-path", str(tmp_path / "opp")]) == 1
    assert capsys.readouterr().err.endswith("holds a different package of vendor customize; use --replace to replace it\n")


def test_load_priority_created_when_missing(tmp_path, make_package):
    install(make_package(tmp_path / "a", "1"), tmp_path / "opp", vendor="mine")
    assert (tmp_path / "opp/vendors/config.ini").read_text() == "load_priority=mine\n"
    assert (tmp_path / "opp/vendors/mine/version.info").is_file()
