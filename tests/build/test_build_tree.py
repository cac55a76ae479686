"""`scons ops` end to end: the package tree it builds (DESIGN.md §3), no-op and clean runs,
reproducibility, and the command line (OPS, SOC, unknown options, -h)."""

from __future__ import annotations

import json
import os
import platform

from build_helpers import (
    SAMPLE_BINARIES,
    SOC,
    expected_package_files,
    mtimes,
    tree,
)


def _arch() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def test_clean_build_lays_out_the_whole_package(clean_build):
    p, result = clean_build
    assert (p.out / "opp" / "vendors" / "config.ini").read_text().strip() == "load_priority=customize"
    present = {k for k in tree(p.pkg)}
    missing = expected_package_files() - present
    assert not missing, f"missing: {sorted(missing)}"

    lib_rel = f"op_impl/ai_core/tbe/op_tiling/lib/linux/{_arch()}/libcust_opmaster_rt2.0.so"
    lib = p.pkg / lib_rel
    assert lib.is_file() and lib.stat().st_size > 0
    link = p.pkg / "op_impl/ai_core/tbe/op_tiling/liboptiling.so"
    assert link.is_symlink()
    assert os.readlink(link) == f"lib/linux/{_arch()}/libcust_opmaster_rt2.0.so"
    assert link.resolve() == lib.resolve()

    # every kernel binary is an ELF shared object, its JSON names it and carries its hash
    kernel_dir = p.pkg / "op_impl/ai_core/tbe/kernel" / SOC
    for so in kernel_dir.rglob("*.so"):
        assert so.read_bytes()[:4] == b"\x7fELF", so
        desc = json.loads(so.with_suffix(".json").read_text())
        assert desc["binFileName"] == so.stem
        assert desc["binFileSuffix"] == ".so"

    config = json.loads((p.pkg / f"op_impl/ai_core/tbe/kernel/config/{SOC}/binary_info_config.json").read_text())
    assert sorted(config) == sorted(SAMPLE_BINARIES)
    for op, binaries in SAMPLE_BINARIES.items():
        listed = {entry["binPath"].rsplit("/", 1)[-1] for entry in config[op]["binaryList"]}
        assert listed == {f"{b}.so" for b in binaries}
        for entry in config[op]["binaryList"]:  # paths are relative to kernel/ and exist
            assert (p.pkg / "op_impl/ai_core/tbe/kernel" / entry["binPath"]).is_file()
            assert (p.pkg / "op_impl/ai_core/tbe/kernel" / entry["jsonPath"]).is_file()

    # nothing but the package: no stray temporaries
    assert not [k for k in tree(p.out) if k.rsplit("/", 1)[-1].startswith(".") and k.endswith(".tmp")]


def test_progress_lines_and_summary(clean_build):
    _, result = clean_build
    steps = result.steps
    assert len(steps) == len(set(steps)), "a step ran twice"
    n_binaries = sum(len(b) for b in SAMPLE_BINARIES.values())
    assert sorted(s.split()[2] for s in steps if s.startswith("CC kernel ")) == sorted(
        b for bs in SAMPLE_BINARIES.values() for b in bs)
    assert sum(s.startswith("CC tiling ") for s in steps) == len(SAMPLE_BINARIES)
    assert "LINK libcust_opmaster_rt2.0.so" in steps
    total = int(result.stdout.split("] ", 1)[0].split("/")[1])
    assert len(steps) <= total
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith(f"opbuild: ok: {len(SAMPLE_BINARIES)} ops, {n_binaries} kernel binaries, "), last
    assert f"/{total} steps run" in last


def test_second_run_changes_nothing(clean_build):
    p, _ = clean_build
    before = mtimes(p.out)
    for env in ({"OPBUILD_FULL_CHECK": "1"}, None):  # SCons checks every node; then the manifest
        result = p.build(env=env)
        assert result.steps == [], str(result)
        assert "is up to date" in result.stdout
        assert result.stdout.strip().splitlines()[-1].startswith("opbuild: ok: 5 ops, 19 kernel binaries, 0/")
        assert mtimes(p.out) == before


def test_two_clean_builds_are_byte_identical(clean_build, project):
    p, _ = clean_build
    other = project()
    other.build(jobs=1)  # another directory, another job count
    assert tree(other.out) == tree(p.out)


def test_scons_clean_removes_the_outputs(project):
    p = project()
    p.build("OPS=MulCustom")
    assert p.pkg.is_dir()
    result = p.scons("-c", "ops", "OPS=MulCustom")
    assert result.rc == 0, str(result)
    left = [k for k in tree(p.out, skip=())]
    assert left == [], left
    assert not (p.out / "opp").exists() and not (p.out / "build").exists()


def test_ops_option_builds_only_those_ops(project):
    p = project()
    result = p.build("OPS=MulCustom")
    others = [op for op in SAMPLE_BINARIES if op != "MulCustom"]
    assert not [s for s in result.steps if any(op in s for op in others)], result.steps
    assert sorted(result.kernels()) == sorted(SAMPLE_BINARIES["MulCustom"])
    present = set(tree(p.pkg))
    assert expected_package_files({"MulCustom": SAMPLE_BINARIES["MulCustom"]}) <= present
    assert not [k for k in present if "/add_custom_template/" in k or "/reduce_sum_custom" in k]
    config = json.loads((p.pkg / f"op_impl/ai_core/tbe/kernel/config/{SOC}/binary_info_config.json").read_text())
    assert list(config) == ["MulCustom"]
    # directory names work too
    assert p.build("OPS=mul_custom").steps == []


def test_unknown_op_in_ops_is_an_error(project):
    p = project()
    result = p.scons("ops", "OPS=NoSuchOp")
    assert result.rc != 0
    assert "NoSuchOp" in result.stderr and "MulCustom" in result.stderr
    assert not p.out.exists()


def test_unknown_soc_is_an_error(project):
    p = project()
    result = p.scons("ops", "SOC=ascend999")
    assert result.rc != 0, str(result)
    assert "ascend999" in result.stderr and "ascend910b" in result.stderr
    assert not p.out.exists()


def test_soc_no_op_supports_is_an_error(project):
    p = project()
    result = p.scons("ops", "SOC=ascend310p")
    assert result.rc != 0, str(result)
    assert "ascend310p" in result.stderr
    assert not p.out.exists()


def test_unknown_option_is_an_error(project):
    p = project()
    result = p.scons("ops", "FOO=1")
    assert result.rc != 0
    assert "FOO" in result.stderr
    assert not p.out.exists()


def test_help_lists_the_options(project):
    p = project()
    result = p.scons("-h")
    assert result.rc == 0, str(result)
    for name in ("OPS", "SOC", "VENDOR", "TOOLCHAIN", "OPBUILD_CACHE_DIR"):
        assert name in result.stdout, name
    assert not p.out.exists()


def test_vendor_option_names_the_vendor_directory(project):
    p = project()
    p.build("OPS=AddCustomTemplate", "VENDOR=acme")
    assert (p.out / "opp/vendors/config.ini").read_text().strip() == "load_priority=acme"
    assert (p.out / "opp/vendors/acme/op_impl/ai_core/tbe/kernel" / SOC / "add_custom_template"
            / "AddCustomTemplate_FP16.so").is_file()


def test_out_outside_the_project_gets_real_binaries(project):
    """OUT=../x: command lines then name outputs as ../x/...; the compile must still write the
    binary (it once renamed an empty temporary file over it)."""
    p = project()
    p.build("OPS=MulCustom", "OUT=../elsewhere")
    kdir = p.root.parent / "elsewhere/opp/vendors/customize/op_impl/ai_core/tbe/kernel" / SOC / "mul_custom"
    for binary in SAMPLE_BINARIES["MulCustom"]:
        data = (kdir / f"{binary}.so").read_bytes()
        assert data[:4] == b"\x7fELF" and len(data) > 1000, binary
    assert not p.out.exists()
