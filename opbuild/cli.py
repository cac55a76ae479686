"""The `opbuild` command.

Each subcommand is one `Command`: a function that adds its arguments to an argparse subparser
and a function that runs it and returns the exit status. Register one with

    def _configure_build(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(...)

    @command("build", "build op packages", _configure_build)
    def _build(args: argparse.Namespace) -> int:
        from opbuild.builder import ...      # import the stage here, so other commands stay fast
        ...

Handlers import their stage lazily: `opbuild --help` and `opbuild validate` load only what they use.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from opbuild.abi.vocabulary import DEFAULT_SOC, IMPL_MODE_NAMES

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Configure
    run: Run


COMMANDS: dict[str, Command] = {}
"""Subcommand name -> Command, in registration order (the order `opbuild --help` lists them)."""


def command(name: str, help: str, configure: Configure | None = None) -> Callable[[Run], Run]:
    """Register the decorated function as subcommand `name`."""

    def register(run: Run) -> Run:
        if name in COMMANDS:
            raise ValueError(f"opbuild subcommand {name!r} is registered twice")
        COMMANDS[name] = Command(name, help, configure or (lambda parser: None), run)
        return run

    return register


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="opbuild",
        description="Build system and runtime for CANN-style (Ascend) operator packages.",
    )
    import opbuild

    parser.add_argument("--version", action="version", version=f"opbuild {opbuild.version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for cmd in COMMANDS.values():
        sub = subparsers.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.configure(sub)
        sub.set_defaults(_run=cmd.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `opbuild ARGS`; returns the exit status (argparse usage errors exit with status 2)."""
    from opbuild.env_vars import warn_unknown

    warn_unknown()  # a misspelt OPBUILD_* variable: one warning per process, with the nearest name
    args = build_parser().parse_args(argv)
    return args._run(args)


# ~~~ validate ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_validate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", default=["ops"],
        help="op.yaml files, or directories holding op.yaml or */op.yaml (default: ops/); another file "
             "(a kernel or tiling source, a key rule) stands for the op whose directory holds it",
    )


def _owning_spec(path: Path) -> Path | None:
    """The op.yaml of the op directory that holds `path` (a source or key rule of the op), if any:
    pre-commit passes the staged files, and an edited tiling.c or key_rule.py can break its op."""
    for parent in path.absolute().parents:
        if (parent / "op.yaml").is_file():
            return parent / "op.yaml" if path.is_absolute() else Path(os.path.relpath(parent / "op.yaml"))
    return None


@command("validate", "check op specs as `scons ops` would (no kernel compiles) and report every problem as "
                     "path:line:col", _configure_validate)
def _validate(args: argparse.Namespace) -> int:
    from opbuild.spec import SpecError, find_specs
    from opbuild.validate import validate_ops

    failed = False
    files: list[Path] = []
    for raw in args.paths:
        path = Path(raw)
        if not path.exists():
            print(f"opbuild validate: error: no such file or directory: {raw}", file=sys.stderr)
            failed = True
            continue
        if path.is_file() and path.suffix not in (".yaml", ".yml"):
            owner = _owning_spec(path)
            if owner is not None:  # (the same op twice: validate_ops keeps the first)
                files.append(owner)
            continue  # (a file of no op: nothing to check)
        found = find_specs([path])
        if not found:
            print(f"opbuild validate: error: no op specs (op.yaml or */op.yaml) in {raw}", file=sys.stderr)
            failed = True
        files.extend(found)
    try:
        specs = validate_ops(files)
    except SpecError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"opbuild validate: {len(exc.problems)} problem(s) in "
              f"{len({p.file for p in exc.problems})} file(s)", file=sys.stderr)
        return 1
    if failed:
        return 1
    print(f"ok: {len(specs)} op specs")
    return 0


# ~~~ new ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_new(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("op", metavar="OpName", help="the new op's type, CamelCase (e.g. SquareCustom)")
    parser.add_argument("--ops-dir", default="ops", help="where op directories live (default: ops/)")
    parser.add_argument("--api", choices=("c", "ascendc"), default="c",
                        help="c: opbuild's C kernel API (kernel.c, tiling.c); ascendc: Ascend C sources (op_host/, "
                             "op_kernel/, as msopgen writes them)")
    parser.add_argument("--engine", choices=("aicore", "aicpu"), default="aicore",
                        help="aicore: an AI Core op (kernel + tiling); aicpu: an AI CPU op (op.yaml, compute.c: one C "
                             "compute function, a data-dependent output)")


@command("new", "scaffold ops/<op_snake>/ (op.yaml, kernel.c, tiling.c) that validates and builds", _configure_new)
def _new(args: argparse.Namespace) -> int:
    from opbuild.codegen.scaffold import ENGINES, ScaffoldError, scaffold_op
    from opbuild.codegen.scaffold_project import is_empty_dir

    if args.engine == "aicpu" and args.api != "c":
        print("opbuild new: error: --engine aicpu writes a C compute function; --api ascendc is for AI Core ops",
              file=sys.stderr)
        return 1
    if args.api == "ascendc":
        from opbuild.ascendc.msopgen import MsopgenError, scaffold_ascendc

        if not isinstance(args.op, str) or not args.op[:1].isupper() or not args.op.isalnum():
            print(f"opbuild new: error: op name {args.op!r} is not CamelCase (an uppercase letter, then letters "
                  f"and digits), e.g. MyAddCustom", file=sys.stderr)
            return 1
        try:
            op_dir = scaffold_ascendc(args.op, Path(args.ops_dir))
        except (MsopgenError, OSError) as exc:
            print(f"opbuild new: error: {exc}", file=sys.stderr)
            return 1
        print(f"created {op_dir}/ (op.yaml, op_host/, op_kernel/); build it with: scons ops OPS={args.op} (or: opbuild build OPS={args.op})")
        return 0

    if args.ops_dir == "ops" and is_empty_dir(Path.cwd()):  # `opbuild new` in an empty directory: a project
        if _init_here(Path(".")):
            return 1
    try:
        op_dir = scaffold_op(args.op, Path(args.ops_dir), args.engine)
    except ScaffoldError as exc:
        print(f"opbuild new: error: {exc}", file=sys.stderr)
        return 1
    print(f"created {op_dir}/ ({', '.join(ENGINES[args.engine])}); build it with: scons ops OPS={args.op} (or: opbuild build OPS={args.op})")
    return 0


# ~~~ init ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_init(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", nargs="?", default=".", metavar="DIR",
                        help="the project directory: new, or empty (default: .)")


def _init_here(directory: Path) -> int:
    """Write the project; 1 (after one error line) when it cannot be."""
    from opbuild.codegen.scaffold_project import PROJECT_FILES, ProjectScaffoldError, init_project

    try:
        init_project(directory)
    except ProjectScaffoldError as exc:
        print(f"opbuild init: error: {exc}", file=sys.stderr)
        return 1
    print(f"created an op project in {directory}/ (ops/, {', '.join(PROJECT_FILES)}); add an op with "
          f"`opbuild new OpName`, build with `opbuild build`")
    return 0


@command("init", "write an op project (ops/, SConstruct, .gitignore, pre-commit config) that the installed "
                 "opbuild builds anywhere", _configure_init)
def _init(args: argparse.Namespace) -> int:
    return _init_here(Path(args.directory))


# ~~~ import ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_import(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="import_command", metavar="IMPORT_COMMAND", required=True)
    a = sub.add_parser("ascendc", help="a CANN op project's op_host/ and op_kernel/ (Ascend C), unchanged",
                       description="Import the Ascend C ops of a CANN op project (a directory with op_host/ and "
                                   "op_kernel/): the sources are copied byte for byte, op.yaml is written from the "
                                   "OpDef read back from the host source, and the op is validated.")
    a.add_argument("project", metavar="DIR", help="the project directory (holds op_host/ and op_kernel/)")
    a.add_argument("-o", "--output", default="ops", metavar="DIR",
                   help="the op directory (ops/<op_snake>) or the ops directory to create <op_snake>/ in (default: ops)")
    a.add_argument("--op", default=None, metavar="OP", help="only this op (default: every OpDef of the project)")
    a.add_argument("--force", action="store_true", help="replace existing op directories")
    m = sub.add_parser("msopgen", help="an op of msopgen's IR JSON as ops/<op_snake>/ (op.yaml + Ascend C skeleton)")
    m.add_argument("ir", metavar="X.json", help="msopgen's IR JSON (a list of ops)")
    m.add_argument("-o", "--output", default=None, metavar="OP_DIR",
                   help="the op directory to write (default: ops/<op_snake>; must be new or empty)")
    m.add_argument("--op", default=None, help="the op to import when the file holds several")
    m.add_argument("--soc", default=None, help=f"the SoC of the op (default: {DEFAULT_SOC})")


@command("import", "turn CANN sources into opbuild ops: `import ascendc DIR` (op_host/ + op_kernel/), "
                   "`import msopgen X.json` (msopgen's IR JSON)", _configure_import)
def _import(args: argparse.Namespace) -> int:
    if args.import_command == "ascendc":
        from opbuild.ascendc.importer import AscendcImportError, import_ascendc
        from opbuild.validate import validate_op

        try:
            imported = import_ascendc(Path(args.project), Path(args.output), op=args.op, force=args.force,
                                      validate_op=validate_op)
        except (AscendcImportError, OSError) as exc:
            print(f"opbuild import ascendc: error: {exc}", file=sys.stderr)
            return 1
        for item in imported:
            print(f"imported {item.op} into {item.directory}/ ({', '.join(item.files)}); build it with: "
                  f"scons ops OPS={item.op}")
        return 0
    from opbuild.ascendc.ir_json import IrError
    from opbuild.ascendc.msopgen import MsopgenError, import_msopgen

    try:
        dest = import_msopgen(Path(args.ir), Path(args.output) if args.output else None, args.op, args.soc)
    except (IrError, MsopgenError, OSError) as exc:
        print(f"opbuild import msopgen: error: {exc}", file=sys.stderr)
        return 1
    print(f"created {dest}/ (op.yaml, op_host/, op_kernel/)")
    return 0


# ~~~ inspect ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_inspect(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("package", metavar="PACKAGE_DIR", help="a built package, e.g. out/opp/vendors/customize")
    parser.add_argument("--soc", default=None, help="only this SoC (default: every SoC in the package)")


@command("inspect", "list each op's binaries with their full simplified keys and paths", _configure_inspect)
def _inspect(args: argparse.Namespace) -> int:
    from opbuild.runtime.inspect import inspect_package

    try:
        print(inspect_package(Path(args.package), args.soc), end="")
    except Exception as exc:  # noqa: BLE001 - reported, exit 1
        print(f"opbuild inspect: error: {exc}", file=sys.stderr)
        return 1
    return 0


# ~~~ explain ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_explain(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("package", metavar="PACKAGE_DIR", help="a built package, e.g. out/opp/vendors/customize")
    parser.add_argument("op", metavar="OP", help="op type (AddCustomTemplate) or directory name")
    parser.add_argument("--input", "-i", action="append", default=[], metavar="NAME=DTYPE[dims]",
                        help="a tensor of the call, e.g. x=float16[2,3] (repeat for a tensor list; @NCHW sets the format)")
    parser.add_argument("--attr", "-a", action="append", default=[], metavar="NAME=VALUE", help="an attribute value")
    parser.add_argument("--deterministic", action="store_true", default=None, help="d=1")
    parser.add_argument("--impl-mode", default=None, help=" | ".join(IMPL_MODE_NAMES))
    parser.add_argument("--soc", default=None, help=f"SoC (default: $OPBUILD_SOC or {DEFAULT_SOC})")


@command("explain", "show the context, fragment, full key and binary the runtime selects for a call", _configure_explain)
def _explain(args: argparse.Namespace) -> int:
    import os

    from opbuild.runtime.errors import AclnnError
    from opbuild.runtime.explain import explain, parse_impl_mode

    if args.soc:
        os.environ["OPBUILD_SOC"] = args.soc
    try:
        status, report = explain(Path(args.package), args.op, args.input, args.attr, args.deterministic,
                                 parse_impl_mode(args.impl_mode))
    except (ValueError, AclnnError) as exc:
        print(f"opbuild explain: error: {exc}", file=sys.stderr)
        return 1
    print(report)
    return status


# ~~~ build ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--package", action="store_true",
                        help="then write build_out/custom_opp_<os>_<arch>.run (as `opbuild pack`)")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="N parallel compiles (scons -j N; default: the CPUs)")
    parser.add_argument("project", nargs="?", default=".", metavar="PROJECT_DIR",
                        help="ops/*/op.yaml, or an msopgen project (op_host/ + op_kernel/); default: . "
                             "(a NAME=value here is a scons option: `opbuild build OPS=A SOC=ascend910b`)")
    parser.add_argument("scons_args", nargs=argparse.REMAINDER, metavar="-- SCONS_ARGS",
                        help="passed to scons (targets, OPS=, SOC=, VENDOR=, -j N, -c, ...)")


@command("build", "build an op project anywhere with opbuild's SConstruct (out/ under the project)", _configure_build)
def _build(args: argparse.Namespace) -> int:
    from opbuild.builder.project import ProjectError, build
    from opbuild.deploy.install import InstallError

    rest, package, project = list(args.scons_args), args.package, args.project
    if project.startswith("-"):  # `opbuild build -- -j2`: argparse took the first scons argument
        rest, project = [project, *rest], "."
    while rest and rest[0] in ("--package", "--"):  # argparse's remainder starts at the first unknown word
        package = package or rest[0] == "--package"
        rest = rest[1:]
    if "=" in project and not Path(project).exists():  # `opbuild build OPS=A`: an option of the build, not a directory
        rest, project = [project, *rest], "."
    if args.jobs is not None:
        if args.jobs < 1:
            print(f"opbuild build: error: -j {args.jobs}: the number of jobs must be at least 1", file=sys.stderr)
            return 1
        rest = [f"-j{args.jobs}", *rest]
    try:
        return build(Path(project), rest, package)
    except (ProjectError, InstallError, OSError) as exc:
        print(f"opbuild build: error: {exc}", file=sys.stderr)
        return 1


# ~~~ install ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_install(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("package", metavar="PACKAGE_DIR", help="a built vendor package, e.g. out/opp/vendors/customize")
    parser.add_argument("--opp-path", required=True, metavar="DIR", help="the OPP tree (ASCEND_OPP_PATH) to install into")
    parser.add_argument("--vendor", default=None, help="vendor name (default: the package directory's name)")
    parser.add_argument("--replace", action="store_true", help="replace a different package of the same vendor")
    parser.add_argument("--force", action="store_true",
                        help="skip the check of the shared libraries (ELF machine, GLIBC version), as the .run's --force")
    parser.add_argument("--install-for-all", action="store_true",
                        help="group and others may read the package (755/644 instead of 750/640)")


@command("install", "copy a vendor package into an OPP tree and put it first in load_priority", _configure_install)
def _install(args: argparse.Namespace) -> int:
    from opbuild.deploy.install import InstallError, install

    try:
        print(install(Path(args.package), Path(args.opp_path), args.vendor, args.replace, args.force,
                      args.install_for_all))
    except (InstallError, OSError) as exc:
        print(f"opbuild install: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _configure_pack(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("package", nargs="?", default="out/opp/vendors/customize", metavar="PACKAGE_DIR",
                        help="a built vendor package (default: out/opp/vendors/customize)")
    parser.add_argument("-o", "--output", default=None, metavar="FILE.run",
                        help="the installer to write (default: out/custom_opp_<os>_<arch>.run)")
    parser.add_argument("--vendor", default=None, help="vendor name (default: the package directory's name)")


@command("pack", "write CANN's self-extracting installer custom_opp_<os>_<arch>.run of a vendor package", _configure_pack)
def _pack(args: argparse.Namespace) -> int:
    from opbuild.deploy.install import InstallError
    from opbuild.deploy.pack import pack

    try:
        path = pack(Path(args.package), Path(args.output) if args.output else None, args.vendor)
    except (InstallError, OSError) as exc:
        print(f"opbuild pack: error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path} ({path.stat().st_size} bytes): run it with --install-path=ABS or ASCEND_OPP_PATH set (--help)")
    return 0


# ~~~ toolkit ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_toolkit(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="toolkit_command", metavar="TOOLKIT_COMMAND", required=True)
    i = sub.add_parser("install", help="lay out T like CANN's ascend-toolkit/latest (bin/setenv.bash, msopgen, "
                                       "include/, <arch>-linux/lib64/libascendcl.so, opp/, ...)")
    i.add_argument("--prefix", required=True, metavar="T", help="the toolkit directory to write")
    i.add_argument("--opp", default=None, metavar="DIR",
                   help="a built OPP tree whose built-in package goes to T/opp/built-in (default: none)")
    i.add_argument("--force", action="store_true", help="replace a T holding different content")
    u = sub.add_parser("uninstall", help="remove what `toolkit install` wrote at T")
    u.add_argument("--prefix", required=True, metavar="T")


@command("toolkit", "a CANN-shaped toolkit directory over this opbuild: install, uninstall", _configure_toolkit)
def _toolkit(args: argparse.Namespace) -> int:
    from opbuild.abi.native_libs import NativeLibraryMissing
    from opbuild.deploy.toolkit import ToolkitError, install, uninstall

    try:
        if args.toolkit_command == "install":
            print(install(Path(args.prefix), Path(args.opp) if args.opp else None, args.force))
        else:
            print(uninstall(Path(args.prefix)))
    except (ToolkitError, NativeLibraryMissing, OSError) as exc:
        print(f"opbuild toolkit {args.toolkit_command}: error: {exc}", file=sys.stderr)
        return 1
    return 0


# ~~~ env, config ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_env(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list", action="store_true",
                        help="print every OPBUILD_* variable opbuild reads: name, default, what it does "
                             "(docs/environment.md), and nothing else")
    parser.add_argument("--pc-dir", default=None, metavar="DIR",
                        help="where to write opbuild.pc (default: a directory under ~/.cache/opbuild/pkgconfig)")
    parser.add_argument("--package", action="append", default=[], metavar="PKG",
                        help="also put PKG/op_api/lib on LD_LIBRARY_PATH (e.g. an installed vendors/<vendor>); "
                             "repeatable; default: the packages the runtime searches (ASCEND_CUSTOM_OPP_PATH, "
                             "ASCEND_OPP_PATH's vendors by load priority, its built-in) that have op API libraries")


@command("env", "print the exports C programs need (LD_LIBRARY_PATH, PKG_CONFIG_PATH): eval \"$(opbuild env)\"",
         _configure_env)
def _env(args: argparse.Namespace) -> int:
    if args.list:
        from opbuild.env_vars import table

        sys.stdout.write(table())
        return 0
    from opbuild.abi.native_libs import NativeLibraryMissing
    from opbuild.deploy.setenv import env_script
    from opbuild.runtime.errors import AclnnError

    try:
        packages = [Path(p) for p in args.package] or _searched_packages()
        script, warnings = env_script(Path(args.pc_dir) if args.pc_dir else None, packages)
    except (NativeLibraryMissing, OSError, AclnnError) as exc:
        print(f"opbuild env: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(script)
    for warning in warnings:
        print(f"opbuild env: {warning}", file=sys.stderr)
    return 0


def _searched_packages() -> list[Path]:
    """The packages the runtime searches (ASCEND_CUSTOM_OPP_PATH's, then ASCEND_OPP_PATH's vendors by
    load priority, then built-in) that have op API libraries: `opbuild env` without --package puts
    them on LD_LIBRARY_PATH in that order, as CANN's set_env.sh and the vendors' installers do."""
    from opbuild.abi.package_layout import opapi_lib_dir
    from opbuild.runtime.binaries.package import search_roots

    return [root for root in search_roots() if (root / opapi_lib_dir()).is_dir()]


def _configure_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cflags", action="store_true", help="compile flags (acl/acl.h, aclnn/*.h)")
    parser.add_argument("--libs", action="store_true", help="link flags (the acl library, libopbuild_acl.so)")
    parser.add_argument("--package", action="append", default=[], metavar="PKG",
                        help="repeatable: also a package's op_api headers and op API libraries (libcust_opapi.so of out/opp/vendors/<v>; "
                             "libopapi.so and libopapi_<domain>.so of out/opp/built-in)")
    parser.add_argument("--pc", action="store_true", help="print opbuild.pc (pkg-config) instead")


@command("config", "print compile/link flags of C programs using the aclnn API (like pkg-config)", _configure_config)
def _config(args: argparse.Namespace) -> int:
    from opbuild.abi.native_libs import NativeLibraryMissing, package_opapi_libs, pkg_config_text
    from opbuild.abi.package_layout import opapi_lib_names
    from opbuild.deploy.setenv import config_flags

    try:
        if args.pc:
            sys.stdout.write(pkg_config_text())
            return 0
        if not (args.cflags or args.libs):
            print("opbuild config: error: give --cflags and/or --libs (or --pc)", file=sys.stderr)
            return 2
        packages = [Path(p) for p in args.package]
        for package in packages:
            if not package_opapi_libs(package):
                print(f"opbuild config: error: {package} has no op API library in op_api/lib/ (none of "
                      f"{', '.join(opapi_lib_names())}): not a built op package", file=sys.stderr)
                return 1
        print(" ".join(config_flags(args.cflags, args.libs, packages)))
    except NativeLibraryMissing as exc:
        print(f"opbuild config: error: {exc}", file=sys.stderr)
        return 1
    return 0


# ~~~ om ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_om(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="om_command", metavar="OM_COMMAND", required=True)
    b = sub.add_parser("build", help="compile a model (YAML, or ONNX through the packages' plugins) against an OPP "
                                     "tree into a self-contained .om")
    b.add_argument("model", metavar="MODEL.yaml|MODEL.onnx")
    b.add_argument("--opp", default=None, metavar="DIR", help=OPP_HELP)
    b.add_argument("--input-shape", default=None, metavar="NAME:D1,D2;...",
                   help="ONNX only: fix the inputs' dynamic dims, as ATC's --input_shape (e.g. \"x:1,3;y:1,3\")")
    b.add_argument("--freeze-input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="ONNX only: make graph input NAME a constant of the array in FILE.npy (it may then "
                        "give an op's attribute, e.g. ReduceSum's axes, and be folded); repeatable")
    b.add_argument("--soc", default=DEFAULT_SOC, help=f"ONNX only: the SoC to build for (default: {DEFAULT_SOC})")
    b.add_argument("-o", "--output", required=True, metavar="MODEL.om", help="the .om to write")
    r = sub.add_parser("run", help="execute an .om (no op package needed)")
    r.add_argument("om", metavar="MODEL.om")
    r.add_argument("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy",
                   help="the value of model input NAME, saved with numpy.save (bfloat16 as ml_dtypes writes "
                        "it); repeatable, one per input")
    r.add_argument("--output-dir", required=True, metavar="DIR", help="writes <output name>.npy here")
    r.add_argument("--trust", action="store_true",
                   help="run the native code (kernels, .so files) and Python key rules the model carries; "
                        "without it such a model is refused (docs/om-format.md, Trust)")
    i = sub.add_parser("inspect", help="print the header, partitions, flags and packed .so files of an .om")
    i.add_argument("om", metavar="MODEL.om")
    s = sub.add_parser("single-op", help="compile one op into an .om",
                       description="compile one op of the OPP tree into a one-node .om (as atc --singleop does "
                                   "for each entry of a single-op JSON)")
    s.add_argument("op", metavar="OP", help="the op type, e.g. AddCustomTemplate")
    s.add_argument("--input", "-i", action="append", default=[], metavar="NAME=DTYPE[dims]",
                   help="an input tensor, e.g. x=float16[8,2048] (-1: a dynamic dim); repeat the name for each "
                        "tensor of a dynamic input; an optional input may be left out")
    s.add_argument("--attr", "-a", action="append", default=[], metavar="NAME=VALUE",
                   help="an attribute value, read as YAML (e.g. negative_slope=0.2, axes=[1], keep_dims=true); "
                        "attrs left out take the op's defaults")
    s.add_argument("--opp", default=None, metavar="DIR", help=OPP_HELP)
    s.add_argument("--package", default=None,
                   help="take the op from this package: built-in or vendors/<name> (default: the first in "
                        "search order that has it)")
    s.add_argument("--soc", default=DEFAULT_SOC, help=f"the SoC to build for (default: {DEFAULT_SOC})")
    s.add_argument("-o", "--output", required=True, metavar="OP.om", help="the .om to write")


OPP_HELP = ("the OPP tree the ops come from (default: $ASCEND_OPP_PATH, else out/opp; without --opp the "
            "packages of $ASCEND_CUSTOM_OPP_PATH are searched first, as atc and the runtime do)")


@command("om", "SO in OM: build, run, inspect self-contained offline models (.om)", _configure_om)
def _om(args: argparse.Namespace) -> int:
    from opbuild.om.cli import run_om_command

    return run_om_command(args)


# ~~~ cache ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_cache(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="cache_command", metavar="CACHE_COMMAND", required=True)
    for name, help_ in (("stats", "entries, bytes, and hits/misses/pushes/corrupt entries from the event log"),
                        ("verify", "re-hash every entry; remove the corrupt ones (exit 1 if any)"),
                        ("prune", "remove entries by age, then the oldest until under a size")):
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--dir", default=None, help="the cache directory (default: $OPBUILD_CACHE_DIR)")
        if name == "stats":
            p.add_argument("--json", action="store_true", help="print the numbers as JSON")
        if name == "prune":
            p.add_argument("--max-size", default=None, metavar="SIZE", help="keep at most this much (500M, 2G, bytes)")
            p.add_argument("--max-age", default=None, metavar="AGE",
                           help="remove entries not written or used for this long (30d, 12h, 90m, seconds)")


@command("cache", "the shared build cache (OPBUILD_CACHE_DIR): stats, verify, prune", _configure_cache)
def _cache(args: argparse.Namespace) -> int:
    import json

    from opbuild.builder import cache

    try:
        root = cache.cache_dir(args.dir)
        if args.cache_command == "stats":
            s = cache.stats(root)
            if args.json:
                print(json.dumps(s, sort_keys=True, allow_nan=False))
                return 0
            rate = f" ({100 * s['hit_rate']:.1f}% hits)" if s["hit_rate"] is not None else ""
            print(f"cache:   {s['dir']}\nentries: {s['entries']} ({s['bundles']} op bundles, {s['specs']} checked specs)\n"
                  f"bytes:   {s['bytes']} ({cache.human(s['bytes'])}; op bundles {cache.human(s['bundle_bytes'])})\n"
                  f"hits:    {s['hits']}\nmisses:  {s['misses']}{rate}\npushes:  {s['pushes']}\n"
                  f"corrupt: {s['corrupt']}")
            r = s["remote"]  # the remote tier (OPBUILD_CACHE_URL), from the same event log
            if any(r.values()):
                print(f"remote:  {r['hits']} hits ({cache.human(r['read_bytes'])}), {r['misses']} misses, "
                      f"{r['pushes']} pushes ({cache.human(r['pushed_bytes'])}), {r['corrupt']} rejected, "
                      f"{r['failed']} failed reads/writes")
            return 0
        if args.cache_command == "verify":
            total = len(cache.entries(root))
            from opbuild.builder.bundles import verify_cache

            bad = verify_cache(root)
            for path, problem in bad:
                print(f"corrupt: {path.relative_to(root)}: {problem} (removed)")
            print(f"{total} entries checked, {len(bad)} corrupt")
            return 1 if bad else 0
        if args.max_size is None and args.max_age is None:
            print("opbuild cache prune: error: give --max-size and/or --max-age", file=sys.stderr)
            return 2
        max_size = cache.parse_size(args.max_size) if args.max_size is not None else None
        max_age = cache.parse_age(args.max_age) if args.max_age is not None else None
        removed = cache.prune(root, max_size=max_size, max_age=max_age)
        left = cache.entries(root)
        print(f"removed {len(removed)} entries ({cache.human(sum(e.size for e in removed))}); "
              f"{len(left)} left ({cache.human(sum(e.size for e in left))})")
        return 0
    except (cache.CacheError, ValueError, OSError) as exc:
        print(f"opbuild cache: error: {exc}", file=sys.stderr)
        return 1


# ~~~ debugging: compare, prof, memcheck (their own module) ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

from opbuild.debug.cli import SUBCOMMANDS as _DEBUG_SUBCOMMANDS  # noqa: E402 - after COMMANDS and command

for _name, _help, _configure, _run in _DEBUG_SUBCOMMANDS:
    command(_name, _help, _configure)(_run)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
