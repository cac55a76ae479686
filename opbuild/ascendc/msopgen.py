"""`msopgen gen` (console script `msopgen`, also `python -m opbuild.ascendc.msopgen`) and
`opbuild import msopgen X.json [-o ops/<op_snake>]`.

    msopgen gen -i X.json -c ai_core-<SoC> [-f aclnn|onnx|tf|pytorch|caffe] -lan cpp -out DIR [-op OP]

writes an op project laid out like CANN's msopgen output (docs/toolkit.md):

    DIR/CMakePresets.json          vendor_name and ASCEND_COMPUTE_UNIT (what `opbuild build` reads)
    DIR/build.sh                   `opbuild build . --package`: build_out/custom_opp_<os>_<arch>.run
    DIR/op_host/<snake>.cpp, <snake>_tiling.h, DIR/op_kernel/<snake>.cpp   (opbuild/ascendc/skeleton.py)
    DIR/framework/<fw>_plugin/...  an adapter plugin skeleton per -f (tf, onnx, caffe; not built by opbuild)

`opbuild import msopgen` writes one op directory instead: op.yaml + op_host/ + op_kernel/.
Every output is staged beside its destination and renamed into place: an error leaves nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from opbuild.abi.package_layout import DEFAULT_VENDOR
from opbuild.abi.vocabulary import DEFAULT_SOC, SOC_NAMES, SOCS, Soc, soc_for_chip
from opbuild.ascendc import skeleton
from opbuild.ascendc.ir_json import IrError, IrOp, IrTensor, load

FRAMEWORKS = ("aclnn", "onnx", "tf", "pytorch", "caffe")
DEFAULT_FRAMEWORK = "tf"
"""msopgen's -f when left out (a TensorFlow adapter plugin skeleton, as CANN's)."""
COMPUTE_UNIT_PREFIX = "ai_core-"


class MsopgenError(Exception):
    """A problem with msopgen's arguments or output directory."""


def compute_unit_soc(value: str) -> Soc:
    """The SoC of `-c ai_core-<chip>` (e.g. ai_core-Ascend910B1 -> ascend910b)."""
    if not value.startswith(COMPUTE_UNIT_PREFIX):
        raise MsopgenError(f"-c {value!r}: expected ai_core-<SoC>, e.g. ai_core-{SOCS[0].soc_version} "
                           "(opbuild generates AI Core ops only)")
    chip = value[len(COMPUTE_UNIT_PREFIX):]
    soc = soc_for_chip(chip)
    if soc is None:
        known = ", ".join(f"{s.soc_version} ({s.name})" for s in SOCS)
        raise MsopgenError(f"-c {value!r}: unknown SoC {chip!r}; opbuild knows {known}")
    return soc


def _select(ops: list[IrOp], name: str | None, where: str) -> list[IrOp]:
    if name is None:
        return ops
    hits = [o for o in ops if o.op == name]
    if not hits:
        raise MsopgenError(f"{where}: no op {name!r} (it has {', '.join(o.op for o in ops)})")
    return hits


def _plugin(ir: IrOp, framework: str) -> tuple[str, str] | None:
    """(path under framework/, text) of the adapter plugin skeleton of `framework`, if it has one."""
    s = skeleton.snake(ir)
    kinds = {"tf": ("tf_plugin", f"tensorflow_{s}_plugin.cc", "TENSORFLOW", ir.op),
             "onnx": ("onnx_plugin", f"{s}_plugin.cc", "ONNX", f"ai.onnx::11::{ir.op}"),
             "caffe": ("caffe_plugin", f"caffe_{s}_plugin.cc", "CAFFE", ir.op)}
    if framework not in kinds:
        return None
    directory, name, fw, origin = kinds[framework]
    text = ("#include \"register/register.h\"\n\n"
            "// The adapter plugin that maps the framework's op to this op (not built by opbuild: opbuild's\n"
            "// ONNX adapters come from the op spec's `framework` section, docs/spec-format.md).\n"
            "namespace domi {\n"
            f"REGISTER_CUSTOM_OP(\"{ir.op}\")\n"
            f"    .FrameworkType({fw})\n"
            f"    .OriginOpType(\"{origin}\")\n"
            "    .ParseParamsByOperatorFn(AutoMappingByOpFn);\n"
            "}  // namespace domi\n")
    return f"{directory}/{name}", text


def presets_json(soc: Soc, vendor: str = DEFAULT_VENDOR) -> str:
    """CMakePresets.json: the project's vendor and SoC, as CANN's op projects keep them."""
    home = os.environ.get("ASCEND_HOME_PATH", "/usr/local/Ascend/ascend-toolkit/latest")

    def var(kind: str, value: str) -> str:
        return f'{{"type": "{kind}", "value": "{value}"}}'

    return ("{\n"
            '  "version": 1,\n'
            '  "cmakeMinimumRequired": {"major": 3, "minor": 19, "patch": 0},\n'
            '  "configurePresets": [\n'
            "    {\n"
            '      "name": "default",\n'
            '      "displayName": "Default Config",\n'
            '      "description": "msopgen (opbuild): build with build.sh (opbuild build . --package)",\n'
            '      "generator": "Unix Makefiles",\n'
            '      "binaryDir": "${sourceDir}/build_out",\n'
            '      "cacheVariables": {\n'
            f'        "CMAKE_BUILD_TYPE": {var("STRING", "Release")},\n'
            f'        "ENABLE_SOURCE_PACKAGE": {var("BOOL", "True")},\n'
            f'        "ENABLE_BINARY_PACKAGE": {var("BOOL", "True")},\n'
            f'        "ASCEND_COMPUTE_UNIT": {var("STRING", soc.name)},\n'
            f'        "vendor_name": {var("STRING", vendor)},\n'
            f'        "ASCEND_CANN_PACKAGE_PATH": {var("PATH", home)}\n'
            "      }\n"
            "    }\n"
            "  ]\n"
            "}\n")


BUILD_SH = """#!/bin/bash
# Builds this op project with opbuild (what msopgen's build.sh does with CMake):
#   opbuild build . --package   -> build_out/custom_opp_<os>_<arch>.run
# Arguments are passed to scons (e.g. -j2). Needs opbuild on PATH: source <toolkit>/bin/setenv.bash
# (opbuild toolkit install --prefix <toolkit>, docs/toolkit.md).
set -e
cd "$(dirname "$0")"
if ! command -v opbuild >/dev/null 2>&1; then
    echo "[ERROR] opbuild not found on PATH: source <toolkit>/bin/setenv.bash first (opbuild toolkit install)" >&2
    exit 1
fi
exec opbuild build . --package -- "$@"
"""


def _op_sources(ir: IrOp, soc: Soc) -> dict[str, str]:
    s = skeleton.snake(ir)
    return {f"op_host/{s}.cpp": skeleton.host_source(ir, [soc.name]),
            f"op_host/{s}_tiling.h": skeleton.tiling_header(ir),
            f"op_kernel/{s}.cpp": skeleton.kernel_source(ir)}


def project_files(ops: list[IrOp], soc: Soc, frameworks: list[str]) -> dict[str, str]:
    """Every file of the project `msopgen gen` writes (relative path -> text)."""
    files: dict[str, str] = {"CMakePresets.json": presets_json(soc), "build.sh": BUILD_SH}
    for ir in ops:
        files.update(_op_sources(ir, soc))
        for fw in frameworks:
            plugin = _plugin(ir, fw)
            if plugin is not None:
                files[f"framework/{plugin[0]}"] = plugin[1]
    return files


def write_tree(dest: Path, files: dict[str, str], executable: frozenset[str] = frozenset({"build.sh"})) -> None:
    """Write `files` as the new directory `dest` (absent or empty), staged beside it and renamed."""
    dest = Path(os.path.abspath(dest))
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise MsopgenError(f"{dest}: exists and is not empty; remove it first (or pick another output directory)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{dest.name}.stage-", dir=dest.parent))
    try:
        for rel, text in sorted(files.items()):
            path = stage / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if rel in executable:
                path.chmod(0o755)
        stage.chmod(0o755)
        if dest.exists():
            dest.rmdir()
        os.rename(stage, dest)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def gen(ir_file: Path, compute_unit: str, out: Path, frameworks: list[str], lang: str = "cpp",
        op: str | None = None) -> list[str]:
    """`msopgen gen`: write the project; returns the ops it holds."""
    if lang != "cpp":
        raise MsopgenError(f"-lan {lang!r}: opbuild generates Ascend C projects only (-lan cpp)")
    soc = compute_unit_soc(compute_unit)
    ops = _select(load(ir_file), op, str(ir_file))
    write_tree(out, project_files(ops, soc, frameworks))
    return [o.op for o in ops]


def import_msopgen(ir_file: Path, dest: Path | None, op: str | None = None, soc: str | None = None) -> Path:
    """`opbuild import msopgen`: one op of `ir_file` as an op directory (op.yaml, op_host/, op_kernel/)."""
    ops = _select(load(ir_file), op, str(ir_file))
    if len(ops) > 1:
        raise MsopgenError(f"{ir_file}: holds {len(ops)} ops ({', '.join(o.op for o in ops)}); pick one with --op")
    ir = ops[0]
    target = next((s for s in SOCS if s.name == (soc or DEFAULT_SOC)), None)
    if target is None:
        raise MsopgenError(f"--soc {soc!r}: unknown SoC; opbuild knows {', '.join(SOC_NAMES)}")
    dest = dest if dest is not None else Path("ops") / skeleton.snake(ir)
    if dest.name != skeleton.snake(ir):
        raise MsopgenError(f"{dest}: the op directory of {ir.op} must be named {skeleton.snake(ir)} "
                           f"(op.yaml lives in ops/<snake_case(op)>/)")
    files = {"op.yaml": skeleton.op_yaml(ir, target.name, ir_file.name), **_op_sources(ir, target)}
    write_tree(dest, files, frozenset())
    return dest


def scaffold_ascendc(op: str, ops_dir: Path) -> Path:
    """`opbuild new OP --api ascendc`: ops_dir/<snake>/ with op.yaml and the Ascend C skeleton of
    an op y = f(x) over float16 and float32 (msopgen's sources for that IR), for the default SoC."""
    ir = IrOp(op, (IrTensor("x", "required", ("float16", "float32"), ("ND", "ND")),),
              (IrTensor("y", "required", ("float16", "float32"), ("ND", "ND")),))
    target = next(s for s in SOCS if s.name == DEFAULT_SOC)
    dest = Path(ops_dir) / skeleton.snake(ir)
    if dest.exists() or dest.is_symlink():
        raise MsopgenError(f"{dest} already exists; not overwriting it (choose another name or remove it)")
    write_tree(dest, {"op.yaml": skeleton.op_yaml(ir, target.name), **_op_sources(ir, target)}, frozenset())
    return dest


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="msopgen", description="Generate an Ascend C op project from msopgen's IR "
                                     "JSON (opbuild's msopgen; docs/toolkit.md).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    g = sub.add_parser("gen", help="write an op project (op_host/, op_kernel/, framework/, CMakePresets.json, build.sh)")
    g.add_argument("-i", "--input", required=True, metavar="X.json", help="the IR JSON (a list of ops)")
    g.add_argument("-c", "--compute_unit", required=True, metavar="ai_core-<SoC>", help="e.g. ai_core-Ascend910B1")
    g.add_argument("-f", "--framework", default=DEFAULT_FRAMEWORK, choices=FRAMEWORKS,
                   help=f"the adapter plugin skeleton to write (default: {DEFAULT_FRAMEWORK})")
    g.add_argument("-lan", "--language", default="cpp", metavar="cpp", help="cpp (Ascend C): the only one")
    g.add_argument("-out", "--output", required=True, metavar="DIR", help="the project directory (new or empty)")
    g.add_argument("-op", "--operator", default=None, metavar="OP", help="only this op of the IR JSON")
    g.add_argument("-m", "--mode", default="0", choices=("0", "1"), help="0: a new project (1, append: not yet)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `msopgen ARGS`; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.mode == "1":
            raise MsopgenError("-m 1 (add ops to an existing project) is not supported yet: generate a new project")
        ops = gen(Path(args.input), args.compute_unit, Path(args.output), [args.framework], args.language,
                  args.operator)
    except (MsopgenError, IrError, OSError) as exc:
        print(f"msopgen: error: {exc}", file=sys.stderr)
        return 1
    print(f"msopgen: generated {', '.join(ops)} in {os.path.abspath(args.output)}; build it with: "
          f"bash {args.output}/build.sh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
