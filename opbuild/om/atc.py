"""`atc`: CANN's model converter command line, for the part opbuild implements (docs/cli.md, "atc").

    atc --singleop=OP.json --output=DIR --soc_version=SOC        one .om per op description
    atc --model=M.onnx --framework=5 --output=NAME --soc_version=SOC [--input_shape="x:1,3;y:1,3"]
    atc --mode=1 --om=M.om --json=M.json                          MODEL_DEF as JSON
    atc --mode=6 --om=M.om                                        the model info GE prints

Options are CANN's (`--name=value` or `--name value`); any other is refused by name. Op packages
are found as CANN's atc finds them: each ASCEND_CUSTOM_OPP_PATH entry first, then the OPP tree
ASCEND_OPP_PATH (default `out/opp`, as `opbuild om`). The single-op and ONNX paths are opbuild's
`om single-op` and `om build` (singleop_json.py reads the JSON; single_op.py, onnx_model.py,
build.py build); `--soc_version` takes
CANN's full SoC names (soc_of). Every error is one line on stderr and exit status 1 (2 for a
usage error); no traceback reaches the user.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from opbuild.abi.vocabulary import SOCS, Soc
from opbuild.om.errors import OmError
from opbuild.om.model_def import FRAMEWORK_TYPES as FRAMEWORKS
from opbuild.om.model_def import ONNX_FRAMEWORK
from opbuild.om.singleop_json import attr_values, check_outputs, file_name, inputs_by_param, read_single_op_json

PROG = "atc"
OPTIONS: dict[str, str] = {
    "singleop": "a single-op description file (JSON): one .om per entry, written into --output",
    "model": "a model file to convert (ONNX, with --framework=5)",
    "framework": "the framework of --model: 5 (ONNX) is the one supported",
    "output": "with --singleop the output directory; with --model the output path, .om appended",
    "soc_version": "the SoC, as CANN names it (e.g. Ascend910B1)",
    "input_shape": "with --model: fixed input shapes, \"x:1,3;y:1,3\"",
    "mode": "0 generate a model (default), 1 write --om's MODEL_DEF as JSON to --json, 6 print --om's model info",
    "om": "with --mode=1 or --mode=6: the .om file",
    "json": "with --mode=1: the JSON file to write",
    "help": "print this help",
}
"""The options opbuild's atc takes (each is CANN's option of the same name)."""
SUCCESS = "ATC run success, welcome to the next use."


class AtcUsageError(Exception):
    """A bad command line (exit 2)."""


def soc_of(name: str) -> tuple[Soc, str]:
    """(opbuild SoC, the full name as given) for a CANN SoC name: a family's chips all map to it
    (`Ascend910B1`..`Ascend910B4` -> ascend910b: the lower-case name starts with the SoC's short
    name and goes on with letters and digits only); the short names are accepted too."""
    low = name.lower()
    for soc in SOCS:
        if low == soc.soc_version.lower() or (low.startswith(soc.name) and low[len(soc.name):].isalnum()) \
                or low == soc.name:
            return soc, (soc.soc_version if low == soc.name else name)
    raise AtcUsageError(f"--soc_version={name}: unknown SoC; known: {known_socs()}")


def known_socs() -> str:
    """The SoC names soc_of takes, for messages: each SoC's chip and its family pattern."""
    return ", ".join(f"{s.soc_version} (any {s.soc_version[:len(s.name)]}*)" for s in SOCS)


# ---- command line ---------------------------------------------------------------------------------

def parse_args(argv: Sequence[str]) -> dict[str, str]:
    """CANN-style options: `--name=value`, `--name value`, `-name=value`; a repeated option's last
    value wins (as gflags). AtcUsageError naming anything else."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help", "-help"):
            opts["help"] = ""
            i += 1
            continue
        if not arg.startswith("-") or arg in ("-", "--"):
            raise AtcUsageError(f"unexpected argument {arg!r} (options are --name=value)")
        name, sep, value = arg.lstrip("-").partition("=")
        if name not in OPTIONS or name == "help":
            raise AtcUsageError(f"--{name} is not supported by opbuild's atc (see atc --help)")
        if not sep:
            if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                raise AtcUsageError(f"--{name} needs a value (--{name}=VALUE)")
            value = argv[i + 1]
            i += 1
        opts[name] = value
        i += 1
    return opts


def usage() -> str:
    lines = ["usage: atc --singleop=OP.json --output=DIR --soc_version=SOC",
             "       atc --model=M.onnx --framework=5 --output=NAME --soc_version=SOC [--input_shape=\"x:1,3\"]",
             "       atc --mode=1 --om=M.om --json=M.json",
             "       atc --mode=6 --om=M.om", "",
             "opbuild's atc: CANN's model converter for the CPU simulator (the options below; any other is refused).",
             "Op packages: ASCEND_CUSTOM_OPP_PATH entries, then ASCEND_OPP_PATH (default out/opp).", "",
             "options:"]
    lines += [f"  --{name:<12} {text}" for name, text in OPTIONS.items()]
    lines += ["", f"--soc_version: {known_socs()}"]
    return "\n".join(lines) + "\n"


def _require(opts: dict[str, str], *names: str, why: str) -> None:
    missing = [n for n in names if not opts.get(n)]
    if missing:
        raise AtcUsageError(f"{why} needs {', '.join('--' + n for n in missing)}")


def _refuse(opts: dict[str, str], allowed: set[str], why: str) -> None:
    extra = sorted(set(opts) - allowed)
    if extra:
        raise AtcUsageError(f"{', '.join('--' + n for n in extra)}: not used {why}")


@dataclass
class Roots:
    opp: Path
    custom: list[Path]


def package_roots(env: Mapping[str, str] | None = None) -> Roots:
    """Where the op packages are: ASCEND_OPP_PATH (default out/opp) and the ASCEND_CUSTOM_OPP_PATH
    entries (searched first)."""
    env = os.environ if env is None else env
    from opbuild.runtime.binaries.package import custom_roots

    return Roots(Path(env.get("ASCEND_OPP_PATH") or "out/opp"), custom_roots(env))


def single_op(json_path: Path, out_dir: Path, soc: Soc, soc_name: str, roots: Roots, cmdline: str) -> list[Path]:
    """Build every entry of a single-op JSON file into `out_dir`: all are built before any is
    written (an error leaves the directory as it was)."""
    from opbuild.atomic import atomic_write
    from opbuild.om.build import _Packages, build_om
    from opbuild.om.loader import parse_om
    from opbuild.om.single_op import op_spec, single_op_model_from

    packages = _Packages(roots.opp, soc.name, roots.custom)
    built: list[tuple[Path, bytes]] = []
    for e in read_single_op_json(json_path):
        try:
            _, spec = op_spec(packages, e.op)
            given = inputs_by_param(spec, e.inputs, "input_desc")
            model = single_op_model_from(e.op, given, attr_values(e.raw, spec, ""), packages, name=e.name)
            data = build_om(model, roots.opp, soc_version=soc_name, atc_cmdline=cmdline, custom_roots=roots.custom)
            check_outputs(parse_om(data).model_def, e.outputs, "output_desc")
        except OmError as exc:
            raise OmError(f"{e.where}: {exc}") from None
        stem = e.name or file_name(e.index, e.op, e.inputs, e.outputs)
        built.append((out_dir / f"{stem}.om", data))
    out_dir.mkdir(parents=True, exist_ok=True)
    for path, data in built:
        atomic_write(path, data)
    return [p for p, _ in built]


# ---- --model (ONNX) -------------------------------------------------------------------------------

def convert_onnx(opts: dict[str, str], soc: Soc, soc_name: str, roots: Roots, cmdline: str) -> Path:
    from opbuild.om.build import build_om
    from opbuild.om.onnx_model import onnx_model, parse_input_shapes

    framework = opts.get("framework")
    if framework != ONNX_FRAMEWORK:
        what = f"{framework} ({FRAMEWORKS[framework]})" if framework in FRAMEWORKS else repr(framework)
        raise AtcUsageError(f"--framework={what}: opbuild's atc converts ONNX models only (--framework=5)")
    model = onnx_model(opts["model"], roots.opp, parse_input_shapes(opts.get("input_shape")), soc=soc.name,
                       custom_roots=roots.custom)
    data = build_om(model, roots.opp, soc_version=soc_name, atc_cmdline=cmdline, framework_type=ONNX_FRAMEWORK,
                    custom_roots=roots.custom)
    out = opts["output"]
    path = Path(out if out.endswith(".om") else out + ".om")
    from opbuild.atomic import atomic_write

    if path.parent != Path("."):
        path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
    return path


# ---- --mode=1 / --mode=6 --------------------------------------------------------------------------

def _model_def(om_path: str):
    """The ge.proto.ModelDef of an .om, checked as `atc --mode=1/6` checks it: the container
    (header, partition table) and MODEL_DEF parsing as the schema (any opbuild format 2+ or GE's)."""
    from google.protobuf.message import DecodeError

    from opbuild.om import format as omf
    from opbuild.om import ge_ir

    try:
        data = Path(om_path).read_bytes()
    except OSError as exc:
        raise OmError(f"cannot read {om_path}: {exc.strerror}") from None
    om = omf.read_om(data)
    part = om.require(omf.MODEL_DEF)
    if bytes(part.data[:1]) == b"{":
        raise OmError(f"{om_path}: MODEL_DEF is JSON (an opbuild format-1 file), not a ge.proto.ModelDef: "
                      f"rebuild it, or read it with `opbuild om inspect`")
    try:
        return ge_ir.ModelDef.FromString(bytes(part.data)), part.size
    except (DecodeError, RecursionError) as exc:
        raise OmError(f"{om_path}: MODEL_DEF is not a ge.proto.ModelDef: {exc}") from None


def model_json(om_path: str) -> str:
    """MODEL_DEF as JSON: protobuf's JSON mapping with the proto's field names."""
    from google.protobuf import json_format

    model, _ = _model_def(om_path)
    return json_format.MessageToJson(model, preserving_proto_field_name=True, indent=2, sort_keys=True)


def model_info(om_path: str) -> str:
    """What GE's `atc --mode=6` prints of a model (its attributes; -1 / empty when absent)."""
    from opbuild.om.model_def import MODEL_INFO_INTS, OM_INFO_LIST

    model, size = _model_def(om_path)
    a = model.attr

    def s(key: str) -> str:
        return a[key].s.decode("utf-8", "replace") if key in a else ""

    def i(key: str) -> int:
        return a[key].i if key in a else -1

    lines = ["============ Display Model Info start ============",
             f"Original Atc command line: {s('atc_cmdline')}",
             f"system   info: atc_version[{s('atc_version')}], soc_version[{s('soc_version')}], "
             f"framework_type[{s('framework_type')}].",
             "resource info: " + ", ".join(f"{k}[{i(k)}{' B' if k.endswith('size') else ''}]"
                                           for k in MODEL_INFO_INTS) + "."]
    if "om_info_list" not in a:
        lines.append('Display Model Info failed, attr "om_info_list" is not found in om, check the version is matched.')
    elif len(a["om_info_list"].list.i) != len(OM_INFO_LIST):
        lines.append("Display Model Info error, please check!")
    else:
        sizes = [f"modeldef_size[{size} B]"] + [f"{k}[{v} B]" for k, v in zip(OM_INFO_LIST, a["om_info_list"].list.i, strict=False)]
        lines.append("om       info: " + ", ".join(sizes) + ".")
    lines.append("============ Display Model Info end   ============")
    return "\n".join(lines) + "\n"


# ---- main -----------------------------------------------------------------------------------------

def run(opts: dict[str, str], cmdline: str) -> None:
    mode = opts.get("mode", "0")
    if mode in ("1", "6"):
        _require(opts, "om", *(("json",) if mode == "1" else ()), why=f"--mode={mode}")
        _refuse(opts, {"mode", "om", "json", "soc_version"} if mode == "1" else {"mode", "om", "soc_version"},
                f"with --mode={mode}")
        if mode == "1":
            text = model_json(opts["om"])
            from opbuild.atomic import atomic_write

            atomic_write(Path(opts["json"]), text.encode())
        else:
            sys.stdout.write(model_info(opts["om"]))
        return
    if mode != "0":
        raise AtcUsageError(f"--mode={mode}: opbuild's atc supports 0 (generate a model), 1 (.om to JSON) "
                            f"and 6 (display model info)")
    if opts.get("singleop") and opts.get("model"):
        raise AtcUsageError("give --singleop or --model, not both")
    if not (opts.get("singleop") or opts.get("model")):
        raise AtcUsageError("nothing to do: give --singleop=OP.json or --model=M.onnx (see atc --help)")
    _require(opts, "output", "soc_version", why="--singleop" if opts.get("singleop") else "--model")
    soc, soc_name = soc_of(opts["soc_version"])
    roots = package_roots()
    if opts.get("singleop"):
        _refuse(opts, {"singleop", "output", "soc_version", "mode"}, "with --singleop")
        for path in single_op(Path(opts["singleop"]), Path(opts["output"]), soc, soc_name, roots, cmdline):
            print(f"wrote {path}")
    else:
        _refuse(opts, {"model", "framework", "output", "soc_version", "input_shape", "mode"}, "with --model")
        print(f"wrote {convert_onnx(opts, soc, soc_name, roots, cmdline)}")


def main(argv: Sequence[str] | None = None) -> int:
    from opbuild.runtime.errors import AclnnError

    argv = list(sys.argv[1:] if argv is None else argv)
    cmdline = shlex.join([PROG, *argv])
    try:
        opts = parse_args(argv)
        if "help" in opts:
            sys.stdout.write(usage())
            return 0
        run(opts, cmdline)
    except AtcUsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (OmError, AclnnError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        print("ATC run failed", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug: still one line for the user, not a traceback
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("ATC run failed", file=sys.stderr)
        return 1
    print(SUCCESS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
