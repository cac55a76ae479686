"""`opbuild install`: copy, load_priority, refusal without --force, atomic replacement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from opbuild.cli import main
from opbuild.deploy.install import InstallError, install, update_load_priority


def make_package(root: Path, marker: str) -> Path:
    pkg = root / "customize"
    config = pkg / "op_impl/ai_core/tbe/kernel/config/ascend910b"
    config.mkdir(parents=True)
    (config / "binary_info_config.json").write_text("{}\n")
    (pkg / "version.info").write_text(f"custom_opp_compiler_version={marker}\n")
    lib = pkg / "op_impl/ai_core/tbe/op_tiling/lib/linux/x86_64"
    lib.mkdir(parents=True)
    (lib / "libcust_opmaster_rt2.0.so").write_bytes(b"\x7fELF")
    os.symlink("lib/linux/x86_64/libcust_opmaster_rt2.0.so", pkg / "op_impl/ai_core/tbe/op_tiling/liboptiling.so")
    return pkg


def test_install_copies_and_sets_priority(tmp_path):
    pkg = make_package(tmp_path / "a", "1")
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("# vendors\nload_priority=acme,customize\n")
    install(pkg, opp)
    dest = opp / "vendors" / "customize"
    assert (dest / "version.info").read_text() == "custom_opp_compiler_version=1\n"
    assert os.readlink(dest / "op_impl/ai_core/tbe/op_tiling/liboptiling.so") == "lib/linux/x86_64/libcust_opmaster_rt2.0.so"
    assert (opp / "vendors" / "config.ini").read_text() == "# vendors\nload_priority=customize,acme\n"
    assert not [p for p in (opp / "vendors").iterdir() if p.name.startswith(".")]


def test_reinstall_identical_is_a_no_op_and_different_needs_force(tmp_path):
    opp = tmp_path / "opp"
    install(make_package(tmp_path / "a", "1"), opp)
    assert "identical" in install(make_package(tmp_path / "b", "1"), opp)
    other = make_package(tmp_path / "c", "2")
    with pytest.raises(InstallError, match="different package of vendor customize; use --force"):
        install(other, opp)
    assert (opp / "vendors/customize/version.info").read_text().endswith("=1\n")
    install(other, opp, force=True)
    assert (opp / "vendors/customize/version.info").read_text().endswith("=2\n")


def test_cli_errors_exit_1(tmp_path, capsys):
    assert main(["install", str(tmp_path / "nothing"), "--opp-path", str(tmp_path / "opp")]) == 1
    assert "is not a built op package" in capsys.readouterr().err


def test_load_priority_created_when_missing(tmp_path):
    ini = tmp_path / "config.ini"
    update_load_priority(ini, "mine")
    assert ini.read_text() == "load_priority=mine\n"
