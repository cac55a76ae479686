"""The `opbuild om` subcommands (registered in opbuild/cli.py)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path


def _write(path: Path, data: bytes) -> None:
    from opbuild.atomic import atomic_write

    atomic_write(path, data)


def run_om_command(args: argparse.Namespace) -> int:
    from opbuild.om.errors import OmError, one_line
    from opbuild.runtime.errors import AclnnError

    prog = f"opbuild om {args.om_command}"
    try:
        if args.om_command == "build":
            from opbuild.om.build import build_om
            from opbuild.om.model_def import ONNX_FRAMEWORK

            onnx = Path(args.model).suffix.lower() == ".onnx"
            roots = opp_roots(args)
            data = build_om(_model(args), roots.opp, framework_type=ONNX_FRAMEWORK if onnx else "",
                            custom_roots=roots.custom)
            _write(Path(args.output), data)
            print(f"wrote {args.output} ({len(data)} bytes)")
        elif args.om_command == "single-op":
            from opbuild.om.single_op import build_single_op

            roots = opp_roots(args)
            data = build_single_op(args.op, args.input, args.attr, roots.opp, roots.custom, soc=args.soc,
                                   package=args.package)
            _write(Path(args.output), data)
            print(f"wrote {args.output} ({len(data)} bytes)")
        elif args.om_command == "inspect":
            from opbuild.om.inspect import describe
            from opbuild.om.loader import parse_om

            print(describe(parse_om(_read(args.om))), end="")
        elif args.om_command == "run":
            import numpy as np

            from opbuild.om.loader import load_om
            from opbuild.om.npy_input import read_npy
            from opbuild.om.run import OmRunner

            runner = OmRunner(load_om(args.om, trust=args.trust))
            wanted = {i["name"]: i["dtype"] for i in runner.model.model_def["inputs"]}
            inputs = {name: read_npy(file, f"--input {name}", wanted.get(name))
                      for name, file in _named_files(args.input, "--input")}
            outputs = runner.run(inputs)
            out_dir = Path(args.output_dir)
            out_dir.mkdir(parents=True, exist_ok=True)
            for name, value in outputs.items():
                path = out_dir / f"{output_file_stem(name)}.npy"
                np.save(path, np.asarray(value))
                print(f"{name}: {np.asarray(value).dtype}{list(np.shape(value))} -> {path}")
    except (OmError, AclnnError, OSError) as exc:
        text = str(exc)
        if args.om_command in ONE_LINE_COMMANDS:
            text = one_line(text)
        print(f"{prog}: error: {text}", file=sys.stderr)
        return 1
    return 0


ONE_LINE_COMMANDS = frozenset({"run", "inspect"})
"""The commands that read an .om: their error is one line (a fuzzed file may produce any message)."""


def output_file_stem(name: str) -> str:
    """The file name (without .npy) `om run` writes an output to: the tensor name with every
    character but letters, digits, `_`, `-` and `.` made `_` and no leading dot, so that a name
    from an ONNX graph (`/block/Add_output_0`) or an untrusted .om never leaves --output-dir."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "_"


def _named_files(texts: list[str], option: str) -> list[tuple[str, str]]:
    """NAME=FILE pairs of a repeated option (OmError for one without '=' or a name given twice)."""
    from opbuild.om.errors import OmError

    pairs: dict[str, str] = {}
    for text in texts:
        name, sep, file = text.partition("=")
        if not sep or not name or not file:
            raise OmError(f"{option} {text!r}: expected NAME=FILE.npy")
        if name in pairs:
            raise OmError(f"{option} names {name!r} twice")
        pairs[name] = file
    return list(pairs.items())


def opp_roots(args: argparse.Namespace):
    """The OPP tree and the custom package roots a command builds against: --opp when given (that
    tree alone), else ASCEND_OPP_PATH (default out/opp) with ASCEND_CUSTOM_OPP_PATH's packages first,
    as atc and the runtime find them."""
    from opbuild.om.atc import Roots, package_roots

    return Roots(Path(args.opp), []) if args.opp else package_roots()


def _model(args: argparse.Namespace):
    """The model to build: an ONNX file (by its .onnx suffix) mapped through the OPP tree's
    plugins, else a model YAML."""
    from opbuild.om.errors import OmError

    if Path(args.model).suffix.lower() == ".onnx":
        from opbuild.om.npy_input import read_npy
        from opbuild.om.onnx_model import onnx_model, parse_input_shapes

        frozen = {name: read_npy(file, f"--freeze-input {name}") for name, file in
                  _named_files(args.freeze_input, "--freeze-input")}
        roots = opp_roots(args)
        return onnx_model(args.model, roots.opp, parse_input_shapes(args.input_shape), soc=args.soc,
                          custom_roots=roots.custom, frozen_inputs=frozen)
    for option, given in (("--input-shape", args.input_shape), ("--freeze-input", args.freeze_input)):
        if given:
            raise OmError(f"{option} is for ONNX models (a model YAML gives its shapes and weights itself)")
    from opbuild.om.model import load_model

    return load_model(args.model)


def _read(path: str) -> bytes:
    from opbuild.om.loader import read_om_file

    return read_om_file(path)
