"""`scons ops` end to end: the package trees it builds (docs/package-format.md §1; issue 4: the custom vendor
package and the built-in one with ops_<domain> sub-packages), no-op and clean runs,
reproducibility, and the command line (OPS, SOC, unknown options, -h)."""

from __future__ import annotations

import json
import os
import platform

from build_helpers import (
    BUILTIN,
    CUSTOM,
    CUSTOM_WHERE,
    SAMPLE_AICPU_OPS,
    SAMPLE_BINARIES,
    SAMPLE_DIRS,
    SAMPLE_DOMAINS,
    SAMPLE_OPS,
    SAMPLE_PACKAGES,
    SOC,
    expected_kernel_steps,
    expected_package_files,
    mtimes,
    subpackage,
    tree,
)


def _arch() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def _ops_of(kind: str) -> list[str]:
    """The AI Core sample ops of a package (those with kernel binaries, configs, ops-info)."""
    return sorted(op for op, kinds in SAMPLE_PACKAGES.items() if kind in kinds and op in SAMPLE_BINARIES)


def _configs(pkg, kind: str, ops=SAMPLE_BINARIES) -> dict[str, dict]:
    """Each binary_info_config.json of a package (by sub-package: '' for the flat one), parsed."""
    config_dir = pkg / "op_impl/ai_core/tbe/kernel/config" / SOC
    found = {}
    for sub in sorted({subpackage(op, kind) for op in ops if kind in SAMPLE_PACKAGES[op]}):
        found[sub] = json.loads((config_dir / sub / "binary_info_config.json").read_text())
    return found


def test_clean_build_lays_out_the_whole_package(clean_build):
    p, result = clean_build
    assert (p.out / "opp" / "vendors" / "config.ini").read_text().strip() == "load_priority=customize"
    assert sorted(os.listdir(p.out / "opp")) == ["built-in", "vendors"]
    assert sorted(os.listdir(p.out / "opp" / "vendors")) == ["config.ini", "customize"]
    lib_rel = f"op_impl/ai_core/tbe/op_tiling/lib/linux/{_arch()}/libcust_opmaster_rt2.0.so"
    for kind in (CUSTOM, BUILTIN):
        pkg = p.package(kind)
        present = set(tree(pkg))
        expected = expected_package_files(kind=kind) | {lib_rel}
        assert present == expected, (f"{kind}: missing {sorted(expected - present)}, "
                                     f"unexpected {sorted(present - expected)}")

        lib = pkg / lib_rel
        assert lib.is_file() and lib.stat().st_size > 0
        link = pkg / "op_impl/ai_core/tbe/op_tiling/liboptiling.so"
        assert link.is_symlink()
        assert os.readlink(link) == f"lib/linux/{_arch()}/libcust_opmaster_rt2.0.so"
        assert link.resolve() == lib.resolve()

        # every kernel binary is an ELF shared object, its JSON names it and carries its hash
        kernel_dir = pkg / "op_impl/ai_core/tbe/kernel" / SOC
        for so in kernel_dir.rglob("*.so"):
            assert so.read_bytes()[:4] == b"\x7fELF", so
            desc = json.loads(so.with_suffix(".json").read_text())
            assert desc["binFileName"] == so.stem
            assert desc["binFileSuffix"] == ".so"
        for so in (pkg / "op_api/lib").iterdir():  # the op API libraries
            assert so.read_bytes()[:4] == b"\x7fELF", so

        # each op's aic-*-ops-info.json entry and Python wrappers are in each package it is in
        ops_info = json.loads((pkg / f"op_impl/ai_core/tbe/config/{SOC}/aic-{SOC}-ops-info.json").read_text())
        assert sorted(ops_info) == _ops_of(kind)
        module = (pkg / "op_api/python/aclnn_ops.py").read_text()
        for op in [*SAMPLE_BINARIES, *SAMPLE_AICPU_OPS]:
            assert (f"def aclnn{op}GetWorkspaceSize" in module or f'"aclnn{op}GetWorkspaceSize"' in module) \
                == (kind in SAMPLE_PACKAGES[op]), (kind, op)

        configs = _configs(pkg, kind)
        assert sorted(op for config in configs.values() for op in config) == _ops_of(kind)
        for sub, config in configs.items():
            for op, info in config.items():
                assert subpackage(op, kind) == sub  # the op's config is its domain's
                binaries = SAMPLE_BINARIES[op]
                listed = {entry["binPath"].rsplit("/", 1)[-1] for entry in info["binaryList"]}
                assert listed == {f"{b}.so" for b in binaries}
                for entry in info["binaryList"]:
                    # paths are relative to kernel/, without the sub-package (the reader inserts it)
                    snake = SAMPLE_DIRS[op]
                    assert entry["binPath"] == f"{SOC}/{snake}/{entry['binPath'].rsplit('/', 1)[-1]}"
                    assert entry["jsonPath"] == entry["binPath"][:-len(".so")] + ".json"
                    rest = entry["binPath"].split("/", 1)[1]
                    assert (pkg / "op_impl/ai_core/tbe/kernel" / SOC / sub / rest).is_file()
                    assert (pkg / "op_impl/ai_core/tbe/kernel" / SOC / sub / rest).with_suffix(".json").is_file()

    # built-in: one config per domain sub-package, no flat one
    config_dir = p.builtin / "op_impl/ai_core/tbe/kernel/config" / SOC
    assert sorted(os.listdir(config_dir)) == sorted({f"ops_{d}" for d in SAMPLE_DOMAINS.values()})
    assert sorted(os.listdir(p.builtin / "op_impl/ai_core/tbe/kernel" / SOC)) == ["ops_math", "ops_nn"]
    math = json.loads((config_dir / "ops_math/binary_info_config.json").read_text())
    nn = json.loads((config_dir / "ops_nn/binary_info_config.json").read_text())
    assert sorted(math) == ["MulCustom", "ReduceSumCustom"] and sorted(nn) == ["LeakyReluCustom"]
    assert sorted(os.listdir(p.builtin / "op_api/lib")) == ["libopapi.so", "libopapi_math.so", "libopapi_nn.so"]
    # MulCustom, in both packages, is the same kernel in both
    for b in SAMPLE_BINARIES["MulCustom"]:
        custom_so = p.pkg / "op_impl/ai_core/tbe/kernel" / SOC / "mul_custom" / f"{b}.so"
        builtin_so = p.builtin / "op_impl/ai_core/tbe/kernel" / SOC / "ops_math/mul_custom" / f"{b}.so"
        assert custom_so.read_bytes() == builtin_so.read_bytes(), b

    # nothing but the packages: no stray temporaries
    assert not [k for k in tree(p.out) if k.rsplit("/", 1)[-1].startswith(".") and k.endswith(".tmp")]


def test_progress_lines_and_summary(clean_build):
    _, result = clean_build
    steps = result.steps
    assert len(steps) == len(set(steps)), "a step ran twice"
    n_binaries = sum(len(b) * len(SAMPLE_PACKAGES[op]) for op, b in SAMPLE_BINARIES.items())
    # each kernel once per package of its op: `CC kernel <Binary> (<soc>, vendors/customize|built-in)`
    assert sorted(result.kernel_steps()) == expected_kernel_steps()
    assert sum(s.startswith("CC tiling ") for s in steps) == len(SAMPLE_BINARIES)  # once per op
    for where in (CUSTOM_WHERE, BUILTIN):
        assert f"LINK libcust_opmaster_rt2.0.so ({where})" in steps
        assert f"LINK liboptiling.so ({where})" in steps
        assert f"GEN aic-{SOC}-ops-info.json ({where})" in steps
        assert f"GEN op_api/python/aclnn_ops.py ({where})" in steps
    assert f"LINK libcust_opapi.so ({CUSTOM_WHERE})" in steps
    # the AI CPU ops: a compile each, then one library for the package
    assert sorted(s for s in steps if s.startswith("CC compute ")) == [f"CC compute {op}" for op in SAMPLE_AICPU_OPS]
    assert sorted(s for s in steps if "aicpu" in s) == [f"CC aicpu_kernels.c ({CUSTOM_WHERE})",
                                                        f"GEN aicpu_kernels.c ({CUSTOM_WHERE})",
                                                        f"GEN cust_aicpu_kernel.json ({CUSTOM_WHERE})",
                                                        f"LINK libcust_aicpu_kernels.so ({CUSTOM_WHERE})"]
    for lib in ("libopapi.so", "libopapi_math.so", "libopapi_nn.so"):
        assert f"LINK {lib} ({BUILTIN})" in steps
    assert f"GEN binary_info_config.json ({SOC}, {CUSTOM_WHERE})" in steps
    for domain in ("math", "nn"):
        assert f"GEN ops_{domain}/binary_info_config.json ({SOC}, {BUILTIN})" in steps
    total = int(result.stdout.split("] ", 1)[0].split("/")[1])
    assert len(steps) <= total
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith(f"opbuild: ok: {SAMPLE_OPS} ops, {n_binaries} kernel binaries, "), last
    assert f"/{total} steps run" in last


def test_second_run_changes_nothing(clean_build):
    p, _ = clean_build
    before = mtimes(p.out)
    for env in ({"OPBUILD_FULL_CHECK": "1"}, None):  # SCons checks every node; then the manifest
        result = p.build(env=env)
        assert result.steps == [], str(result)
        assert "is up to date" in result.stdout
        assert result.stdout.strip().splitlines()[-1].startswith(f"opbuild: ok: {SAMPLE_OPS} ops, 23 kernel binaries, 0/")
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
    mul = {"MulCustom": SAMPLE_BINARIES["MulCustom"]}
    assert sorted(result.kernel_steps()) == expected_kernel_steps(mul)  # in both of its packages
    for kind in (CUSTOM, BUILTIN):
        present = set(tree(p.package(kind)))
        assert expected_package_files(mul, kind, aicpu=()) <= present, kind
        assert not [k for k in present if "/add_custom_template/" in k or "/reduce_sum_custom" in k
                    or "leaky_relu" in k or "add_n" in k]
        assert [list(config) for config in _configs(p.package(kind), kind, mul).values()] == [["MulCustom"]]
    assert sorted(os.listdir(p.builtin / "op_api/lib")) == ["libopapi.so", "libopapi_math.so"]
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
    result = p.build("OPS=AddCustomTemplate", "VENDOR=acme")
    assert (p.out / "opp/vendors/config.ini").read_text().strip() == "load_priority=acme"
    assert (p.out / "opp/vendors/acme/op_impl/ai_core/tbe/kernel" / SOC / "add_custom_template"
            / "AddCustomTemplate_FP16.so").is_file()
    assert (p.out / "opp/vendors/acme/op_api/lib/libcust_opapi.so").is_file()
    assert sorted(result.kernel_steps()) == sorted((b, SOC, "vendors/acme") for b in SAMPLE_BINARIES["AddCustomTemplate"])
    assert not (p.out / "opp/built-in").exists()  # no built-in op was selected


def test_out_outside_the_project_gets_real_binaries(project):
    """OUT=../x: command lines then name outputs as ../x/...; the compile must still write the
    binary (it once renamed an empty temporary file over it)."""
    p = project()
    p.build("OPS=MulCustom", "OUT=../elsewhere")
    for kdir in (p.root.parent / "elsewhere/opp/vendors/customize/op_impl/ai_core/tbe/kernel" / SOC / "mul_custom",
                 p.root.parent / "elsewhere/opp/built-in/op_impl/ai_core/tbe/kernel" / SOC / "ops_math/mul_custom"):
        for binary in SAMPLE_BINARIES["MulCustom"]:
            data = (kdir / f"{binary}.so").read_bytes()
            assert data[:4] == b"\x7fELF" and len(data) > 1000, binary
    assert not p.out.exists()
