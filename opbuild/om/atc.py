"""`atc`: CANN's model converter command line, for the part opbuild implements (docs/cli.md, "atc").

    atc --singleop=OP.json --output=DIR --soc_version=SOC        one .om per op description
    atc --model=M.onnx --framework=5 --output=NAME --soc_version=SOC [--input_shape="x:1,3;y:1,3"]
    atc --mode=1 --om=M.om --json=M.json                          MODEL_DEF as JSON
    atc --mode=6 --om=M.om                                        the model info GE prints

Options are CANN's (`--name=value` or `--name value`); any other is refused by name. Op packages
are found as CANN's atc finds them: each ASCEND_CUSTOM_OPP_PATH entry first, then the OPP tree
ASCEND_OPP_PATH (default `out/opp`, as `opbuild om`). The single-op and ONNX paths are opbuild's
`om single-op` and `om build` (single_op.py, onnx_model.py, build.py); `--soc_version` takes
CANN's full SoC names (soc_of). Every error is one line on stderr and exit status 1 (2 for a
usage error); no traceback reaches the user.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from opbuild.abi.vocabulary import DTYPE, FORMAT, SOCS, Soc
from opbuild.om.errors import OmError
from opbuild.om.model_def import FRAMEWORK_TYPES as FRAMEWORKS
from opbuild.om.model_def import ONNX_FRAMEWORK

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
JSON_DTYPES = {"float": "float32", "double": "float64", **{d: d for d in DTYPE}}
"""Single-op JSON `type` spellings -> opbuild dtype names (CANN writes `float` for float32)."""
JSON_ATTR_TYPES = {"bool": "bool", "int": "int", "float": "float", "string": "str", "str": "str",
                   "list_int": "list_int", "list_float": "list_float", "list_bool": "list_bool"}
"""Single-op JSON attr `type` -> the spec attr type."""
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


def package_roots(env: dict[str, str] | None = None) -> Roots:
    """Where the op packages are: ASCEND_OPP_PATH (default out/opp) and the ASCEND_CUSTOM_OPP_PATH
    entries (searched first)."""
    env = os.environ if env is None else env
    custom = [Path(p) for p in env.get("ASCEND_CUSTOM_OPP_PATH", "").split(":") if p]
    return Roots(Path(env.get("ASCEND_OPP_PATH") or "out/opp"), custom)


# ---- --singleop -----------------------------------------------------------------------------------

def _json_entries(path: Path) -> list[tuple[int, Any]]:
    """(line, value) of each element of the JSON array in `path`; OmError `path:line: ...`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OmError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise OmError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise OmError(f"{path}: nested too deeply") from None
    dec = json.JSONDecoder()
    ws = re.compile(r"[ \t\r\n]*")
    pos = ws.match(text, 0).end()
    if text[pos:pos + 1] != "[":
        raise OmError(f"{path}:1: expected a JSON list of op descriptions ([{{\"op\": ...}}, ...])")
    pos = ws.match(text, pos + 1).end()
    out = []
    while text[pos:pos + 1] != "]":
        value, end = dec.raw_decode(text, pos)
        out.append((text.count("\n", 0, pos) + 1, value))
        pos = ws.match(text, end).end()
        if text[pos:pos + 1] == ",":
            pos = ws.match(text, pos + 1).end()
    if not out:
        raise OmError(f"{path}:1: the list has no op descriptions")
    return out


@dataclass
class TensorDesc:
    dtype: str
    format: str
    shape: list[int]
    name: str | None


def _tensor(d: Any, where: str) -> TensorDesc:
    if not isinstance(d, dict):
        raise OmError(f"{where}: expected an object {{\"format\", \"shape\", \"type\"}}")
    unknown = sorted(set(d) - {"name", "param_type", "format", "shape", "type", "shape_range", "dynamic_input",
                               "origin_format", "origin_shape"})
    if unknown:
        raise OmError(f"{where}: unknown field(s) {unknown}")
    missing = [k for k in ("format", "shape", "type") if k not in d]
    if missing:
        raise OmError(f"{where}: missing {', '.join(missing)}")
    dt = JSON_DTYPES.get(d["type"]) if isinstance(d["type"], str) else None
    if dt is None:
        raise OmError(f"{where}.type: {d['type']!r} is not a type opbuild's ops take ({', '.join(JSON_DTYPES)})")
    if d["format"] not in FORMAT:
        raise OmError(f"{where}.format: {d['format']!r} is not one of {', '.join(FORMAT)}")
    shape = d["shape"]
    if not isinstance(shape, list) or any(type(x) is not int or x < -1 for x in shape) or len(shape) > 8:
        raise OmError(f"{where}.shape: {shape!r} is not a list of at most 8 dims, each >= 0 or -1 (dynamic; "
                      f"-2, unknown rank, is not supported)")
    rng = d.get("shape_range")
    if rng is not None and (not isinstance(rng, list) or len(rng) != len(shape) or any(
            not isinstance(r, list) or len(r) != 2 or any(type(v) is not int for v in r) for r in rng)):
        raise OmError(f"{where}.shape_range: expected one [min, max] per dim (max -1: unbounded)")
    name = d.get("dynamic_input") or d.get("name")
    return TensorDesc(dt, d["format"], shape, name if isinstance(name, str) else None)


def file_name(index: int, op: str, inputs: Sequence[TensorDesc], outputs: Sequence[TensorDesc]) -> str:
    """CANN's default single-op model name: `<index>_<op type>`, then per input and per output
    `_<ge::DataType>_<ge::Format>` and `_<dim>` for each dim (-1 as -1); e.g.
    0_AddCustom_1_2_8_2048_1_2_8_2048_1_2_8_2048 (float16 = 1, ND = 2)."""
    parts = [str(index), op]
    for t in (*inputs, *outputs):
        parts += [str(DTYPE[t.dtype].ge), str(FORMAT[t.format].ge), *(str(d) for d in t.shape)]
    return "_".join(parts)


def _group_inputs(spec, descs: list[TensorDesc], where: str) -> dict[str, list[tuple[str, list[int]]]]:
    """The JSON input descs as the op's IR inputs: by name when every desc names an IR input (a
    dynamic input's tensors `x`, `x0`, `x1`..., or `dynamic_input: x`), else in IR order."""
    params = {p.name: p for p in spec.inputs}

    def param_of(name: str | None) -> str | None:
        if name in params:
            return name
        m = re.fullmatch(r"(.*?)(\d+)", name or "")
        return m.group(1) if m and m.group(1) in params and params[m.group(1)].param_type == "dynamic" else None

    if descs and all(param_of(d.name) for d in descs):
        pairs = [(param_of(d.name), k, d) for k, d in enumerate(descs)]
    elif len(descs) > len(spec.inputs):
        raise OmError(f"{where}: {len(descs)} entries, {spec.op} has {len(spec.inputs)} inputs "
                      f"({', '.join(params)}); name a dynamic input's tensors {spec.inputs[0].name}0, "
                      f"{spec.inputs[0].name}1, ...")
    else:
        pairs = [(p.name, k, d) for k, (p, d) in enumerate(zip(spec.inputs, descs))]
    given: dict[str, list[tuple[str, list[int]]]] = {}
    for name, k, d in pairs:
        formats = params[name].formats
        if d.format not in formats:
            raise OmError(f"{where}[{k}].format: {d.format}, but {spec.op}'s input {name} takes {', '.join(formats)}")
        given.setdefault(name, []).append((d.dtype, d.shape))
    return given


def _attrs(entry: dict[str, Any], spec, where: str) -> dict[str, Any]:
    attrs = entry.get("attr", [])
    if not isinstance(attrs, list):
        raise OmError(f"{where}attr: expected a list of {{\"name\", \"type\", \"value\"}}")
    out: dict[str, Any] = {}
    for k, a in enumerate(attrs):
        w = f"{where}attr[{k}]"
        if not isinstance(a, dict) or not {"name", "type", "value"} <= set(a):
            raise OmError(f"{w}: expected {{\"name\", \"type\", \"value\"}}")
        t = JSON_ATTR_TYPES.get(a["type"]) if isinstance(a["type"], str) else None
        if t is None:
            raise OmError(f"{w}.type: {a['type']!r} is not one of {', '.join(JSON_ATTR_TYPES)}")
        known = {x.name: x.type for x in spec.attrs}
        if a["name"] not in known:
            raise OmError(f"{w}.name: {spec.op} has no attribute {a['name']!r} (has {sorted(known)})")
        if known[a["name"]] != t:
            raise OmError(f"{w}.type: {a['type']}, but {spec.op}'s {a['name']} is {known[a['name']]}")
        out[a["name"]] = a["value"]
    return out


@dataclass
class OpEntry:
    """One checked entry of a single-op JSON file."""

    where: str  # "<file>:<line>: entry <i> (<op>)"
    index: int
    op: str
    name: str | None
    inputs: list[TensorDesc]
    outputs: list[TensorDesc]
    raw: dict[str, Any]


def read_single_op_json(json_path: Path) -> list[OpEntry]:
    """Every entry of a single-op JSON file, checked (fields, types, formats, shapes, name)
    before any op is looked up; OmError `<file>:<line>: entry <i> (<op>)...`."""
    entries = []
    for index, (line, entry) in enumerate(_json_entries(json_path)):
        where = f"{json_path}:{line}: entry {index}"
        if not isinstance(entry, dict) or not isinstance(entry.get("op"), str) or not entry["op"]:
            raise OmError(f"{where}: expected an object with \"op\" (the op type)")
        where += f" ({entry['op']})"
        unknown = sorted(set(entry) - {"op", "name", "input_desc", "output_desc", "attr", "compile_flag"})
        if unknown:
            raise OmError(f"{where}: unknown field(s) {unknown}")
        descs = {}
        for key in ("input_desc", "output_desc"):
            value = entry.get(key, [])
            if not isinstance(value, list):
                raise OmError(f"{where}.{key}: expected a list")
            descs[key] = [_tensor(d, f"{where}.{key}[{k}]") for k, d in enumerate(value)]
        name = entry.get("name")
        if name is not None and (not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name)
                                 or name.startswith(".")):
            raise OmError(f"{where}.name: {name!r} is not a file name (letters, digits, _ - .)")
        entries.append(OpEntry(where, index, entry["op"], name, descs["input_desc"], descs["output_desc"], entry))
    return entries


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
            given = _group_inputs(spec, e.inputs, "input_desc")
            model = single_op_model_from(e.op, given, _attrs(e.raw, spec, ""), packages, name=e.name)
            data = build_om(model, roots.opp, soc_version=soc_name, atc_cmdline=cmdline, custom_roots=roots.custom)
            _check_outputs(parse_om(data).model_def, e.outputs, "output_desc")
        except OmError as exc:
            raise OmError(f"{e.where}: {exc}") from None
        stem = e.name or file_name(e.index, e.op, e.inputs, e.outputs)
        built.append((out_dir / f"{stem}.om", data))
    out_dir.mkdir(parents=True, exist_ok=True)
    for path, data in built:
        atomic_write(path, data)
    return [p for p, _ in built]


def _check_outputs(md: dict[str, Any], descs: list[TensorDesc], where: str) -> None:
    node = md["nodes"][0]
    dtypes = node["output_dtypes"]
    if len(descs) != len(dtypes):
        raise OmError(f"{where}: {len(descs)} entries, {node['type']} has {len(dtypes)} output(s)")
    shapes = node.get("output_shapes") or [None] * len(dtypes)
    for k, (d, dt, shape) in enumerate(zip(descs, dtypes, shapes)):
        if d.dtype != dt:
            raise OmError(f"{where}[{k}].type: {d.dtype}, but {node['type']} gives {dt} for these inputs")
        if shape is not None and -1 not in d.shape and list(d.shape) != list(shape):
            raise OmError(f"{where}[{k}].shape: {d.shape}, but {node['type']} gives {shape} for these inputs")


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
    part = om.get(omf.MODEL_DEF)
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
        sizes = [f"modeldef_size[{size} B]"] + [f"{k}[{v} B]" for k, v in zip(OM_INFO_LIST, a["om_info_list"].list.i)]
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
