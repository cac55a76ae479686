"""Generated aclnn headers and wrappers: CANN naming rules, C and C++ compilation, exports."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from opapi_libs import OPAPI_LIBS

from opbuild.abi.native_libs import include_dirs
from opbuild.codegen.aclnn_c import (
    AclnnNameError,
    aclnn_params,
    header_guard,
    header_name,
    render_aclnn_header,
    render_aclnn_source,
    source_name,
)
from opbuild.spec import load_specs
from opbuild.spec.model import Attr, Param

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def specs():
    return {s.op: s for s in load_specs([str(REPO / "ops")])}


def _decl(header: str, fn: str) -> str:
    m = re.search(r"aclnnStatus " + fn + r"\((.*?)\);", header, re.S)
    assert m, f"{fn} not declared"
    return " ".join(m.group(1).split())


def test_names_and_guard(specs):
    spec = specs["AddCustomTemplate"]
    assert header_name(spec) == "aclnn_add_custom_template.h"
    assert source_name(spec) == "aclnn_add_custom_template.c"
    header = render_aclnn_header(spec)
    assert header_guard(spec) == "ACLNN_ADD_CUSTOM_TEMPLATE_H_"
    assert "#ifndef ACLNN_ADD_CUSTOM_TEMPLATE_H_\n#define ACLNN_ADD_CUSTOM_TEMPLATE_H_" in header
    # the include sits inside the extern "C" block
    ext = header.index('extern "C" {')
    assert ext < header.index('#include "aclnn/acl_meta.h"') < header.index("#ifdef __cplusplus\n}")
    assert header.count('__attribute__((visibility("default")))') == 2
    assert _decl(header, "aclnnAddCustomTemplateGetWorkspaceSize") == (
        "const aclTensor *x, const aclTensor *y, const aclTensor *out, uint64_t *workspaceSize, "
        "aclOpExecutor **executor")
    assert _decl(header, "aclnnAddCustomTemplate") == (
        "void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream")


def test_attr_and_list_types(specs):
    leaky = render_aclnn_header(specs["LeakyReluCustom"])
    assert _decl(leaky, "aclnnLeakyReluCustomGetWorkspaceSize").startswith(
        "const aclTensor *x, double negativeSlope, const aclTensor *out,")
    addn = render_aclnn_header(specs["AddNCustom"])
    assert _decl(addn, "aclnnAddNCustomGetWorkspaceSize").startswith("const aclTensorList *x, const aclTensor *out,")
    reduce = render_aclnn_header(specs["ReduceSumCustom"])
    assert _decl(reduce, "aclnnReduceSumCustomGetWorkspaceSize").startswith(
        "const aclTensor *x, const aclIntArray *axes, bool keepDims, const aclTensor *out,")


def _variant(spec):
    """AddCustomTemplate with an optional input, two outputs and one attribute of every type."""
    x, y = spec.inputs
    z = spec.outputs[0]
    attrs = tuple(Attr(name, i, t, d) for i, (name, t, d) in enumerate([
        ("axis_num", "int", None), ("scale_value", "float", 1.5), ("use_fast", "bool", True),
        ("mode_name", "str", "sum"), ("dims", "list_int", None), ("weights", "list_float", (1.0,)),
        ("flags", "list_bool", (True, False)),
    ]))
    return dataclasses.replace(
        spec, inputs=(x, dataclasses.replace(y, param_type="optional")),
        outputs=(z, Param("z_max", 1, z.dtypes, z.formats, "required", True, z.shape)), attrs=attrs)


def test_optional_multi_output_and_every_attr_type(specs, tmp_path):
    spec = _variant(specs["AddCustomTemplate"])
    header = render_aclnn_header(spec)
    assert _decl(header, "aclnnAddCustomTemplateGetWorkspaceSize") == (
        "const aclTensor *x, const aclTensor *yOptional, int64_t axisNum, double scaleValue, bool useFast, "
        "char *modeName, const aclIntArray *dims, const aclFloatArray *weights, const aclBoolArray *flags, "
        "const aclTensor *zOut, const aclTensor *zMaxOut, uint64_t *workspaceSize, aclOpExecutor **executor")
    source = render_aclnn_source(spec)
    checks = re.findall(r"if \((\w+) == NULL\) return opbuild_aclnn_null_param", source)
    # optional inputs, scalar attrs and attrs with defaults may be absent; required pointers may not
    # (the last "executor" is phase 2's)
    assert checks == ["x", "dims", "zOut", "zMaxOut", "workspaceSize", "executor", "executor"]
    (tmp_path / header_name(spec)).write_text(header)
    src = tmp_path / source_name(spec)
    src.write_text(source)
    cc = shutil.which("cc") or "gcc"
    inc = [f"-I{d}" for d in include_dirs()] + [f"-I{tmp_path}"]
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", *inc, str(src)],
                   check=True)


def test_name_collisions_are_errors(specs):
    spec = specs["AddCustomTemplate"]
    clash = dataclasses.replace(spec, attrs=(Attr("workspace_size", 0, "int", 1),))
    with pytest.raises(AclnnNameError, match="workspaceSize"):
        aclnn_params(clash)
    twice = dataclasses.replace(spec, attrs=(Attr("x", 0, "int", 1),))
    with pytest.raises(AclnnNameError, match="'x'"):
        aclnn_params(twice)


def test_rendering_is_deterministic(specs):
    spec = specs["ReduceSumCustom"]
    assert render_aclnn_header(spec) == render_aclnn_header(spec)
    assert render_aclnn_source(spec) == render_aclnn_source(spec, "../..")
    assert '"../.."' in render_aclnn_source(spec)
    assert '"../../x"' in render_aclnn_source(spec, "../../x")


def test_package_headers(package):
    """Each package has the aclnn header of each of its ops, and only those; MulCustom's (in both
    packages) is the same file in both."""
    custom = sorted(p.name for p in package.include.glob("*.h"))
    builtin = sorted(p.name for p in package.builtin_include.glob("*.h"))
    assert custom == ["aclnn_add_custom_template.h", "aclnn_add_n_custom.h", "aclnn_mul_custom.h",
                      "aclnn_non_zero_custom.h", "aclnn_sort_custom.h"]
    assert builtin == ["aclnn_leaky_relu_custom.h", "aclnn_mul_custom.h", "aclnn_reduce_sum_custom.h"]
    assert (package.include / "aclnn_mul_custom.h").read_bytes() == \
        (package.builtin_include / "aclnn_mul_custom.h").read_bytes()


def test_headers_compile_as_cpp(package, tmp_path):
    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no C++ compiler")
    headers = sorted({p.name for inc in (package.include, package.builtin_include) for p in inc.glob("aclnn_*.h")})
    assert len(headers) == 7  # every sample op, AI Core and AI CPU
    unit = tmp_path / "all.cpp"
    unit.write_text("".join(f'#include "{h}"\n' for h in ["acl/acl.h", "aclnn/opbuild_acl.h", *headers])
                    + "int main() { aclTensor *t = nullptr; (void)t; return aclnnAddCustomTemplate(nullptr, 0, "
                      "nullptr, nullptr) == ACLNN_SUCCESS; }\n")
    inc = [f"-I{d}" for d in include_dirs()] + [f"-I{package.include}", f"-I{package.builtin_include}"]
    subprocess.run([gxx, "-std=c++11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", *inc, str(unit)], check=True)


def _exports(lib: Path) -> list[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    out = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True)
    return [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]


def test_each_package_has_exactly_its_op_api_libraries(package):
    for pkg_dir in ("vendors/customize", "built-in"):
        made = sorted(p.name for p in (package.opp / pkg_dir / "op_api" / "lib").iterdir())
        assert made == sorted(name for d, name in OPAPI_LIBS if d == pkg_dir), pkg_dir


@pytest.mark.parametrize("pkg_dir, name", list(OPAPI_LIBS), ids=[f"{d}/{n}" for d, n in OPAPI_LIBS])
def test_op_api_library_exports_exactly_its_ops_aclnn_functions(package, pkg_dir, name):
    """libcust_opapi.so of the custom package, libopapi.so and libopapi_<domain>.so of the built-in
    one: each exports the two aclnn functions of each of its ops and nothing else."""
    lib = package.opp / pkg_dir / "op_api" / "lib" / name
    names = _exports(lib)
    ops = OPAPI_LIBS[pkg_dir, name]
    assert all(n.startswith("aclnn") for n in names), names
    assert sorted(names) == sorted([f"aclnn{op}" for op in ops] + [f"aclnn{op}GetWorkspaceSize" for op in ops])


@pytest.mark.parametrize("pkg_dir, name", list(OPAPI_LIBS), ids=[f"{d}/{n}" for d, n in OPAPI_LIBS])
def test_op_api_library_needs_the_acl_library(package, pkg_dir, name):
    """Every op API library, libopapi.so with no op of its own included, depends on the acl
    library by its fixed name (op_fallback finds ResetCacheThreadLocal through it), with no rpath:
    no path of the build machine; the acl library carries that name as its SONAME."""
    from opbuild.abi.native_libs import ACL_SONAME, acl_library

    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf")
    lib = package.opp / pkg_dir / "op_api" / "lib" / name
    out = subprocess.run([readelf, "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    needed = [line.rsplit("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]
    assert ACL_SONAME in needed, needed
    assert "RPATH" not in out and "RUNPATH" not in out, out
    acl = subprocess.run([readelf, "-d", str(acl_library())], capture_output=True, text=True, check=True).stdout
    assert f"Library soname: [{ACL_SONAME}]" in acl
