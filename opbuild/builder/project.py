"""`opbuild build [PROJECT_DIR] [--package] [-- SCONS_ARGS]`: build an op project anywhere, not only the checkout.

SCons runs opbuild's one SConstruct (opbuild/builder/SConstruct) with a top directory holding
`ops/*/op.yaml`; `out/` is made there. Two project layouts:

* opbuild's: `ops/<op>/op.yaml` under PROJECT_DIR (C-API ops): the top is PROJECT_DIR;
* CANN's (what `msopgen gen` writes, op_host/ + op_kernel/ at the top): the Ascend C sources are
  first imported into opbuild op directories under `PROJECT_DIR/build_out/ops/` by
  `opbuild.ascendc.importer.import_ascendc` (the Ascend C front end), and the top is `build_out/`.

A `CMakePresets.json` (msopgen's project config) names the vendor (`vendor_name`) and SoCs
(`ASCEND_COMPUTE_UNIT`, `;`-separated): they become `VENDOR=` and `SOC=` unless SCONS_ARGS set
them. `--package` then writes CANN's installer `PROJECT_DIR/build_out/custom_opp_<os>_<arch>.run`
(opbuild/deploy/pack.py, as `opbuild pack`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from opbuild.abi.package_layout import DEFAULT_VENDOR, vendor_name_problem

SCONSTRUCT = Path(__file__).resolve().with_name("SConstruct")
"""opbuild's one SConstruct (the checkout's root SConstruct reads it too)."""
PRESETS = "CMakePresets.json"
BUILD_OUT = "build_out"


class ProjectError(Exception):
    """The project cannot be built (the message names the file or directory)."""


@dataclass(frozen=True)
class ProjectConfig:
    """What a project's CMakePresets.json says: vendor and SoCs (None: not given)."""

    vendor: str | None = None
    socs: tuple[str, ...] = ()


def read_presets(path: Path) -> ProjectConfig:
    """The `vendor_name` and `ASCEND_COMPUTE_UNIT` cache variables of the first configure preset."""
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ProjectError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except OSError as exc:
        raise ProjectError(f"{path}: {exc.strerror}") from None
    presets = doc.get("configurePresets") if isinstance(doc, dict) else None
    if not isinstance(presets, list) or not presets or not isinstance(presets[0], dict):
        raise ProjectError(f"{path}: no configurePresets[0] (msopgen's project config)")
    variables = presets[0].get("cacheVariables") or {}

    def value(name: str) -> str | None:
        v = variables.get(name)
        v = v.get("value") if isinstance(v, dict) else v
        return str(v) if v not in (None, "") else None

    vendor = value("vendor_name")
    if vendor is not None and (why := vendor_name_problem(vendor)):
        raise ProjectError(f"{path}: vendor_name {vendor!r} {why}")
    socs = tuple(s.strip().lower() for s in (value("ASCEND_COMPUTE_UNIT") or "").split(";") if s.strip())
    return ProjectConfig(vendor, socs)


def build_top(project: Path) -> Path:
    """The SCons top directory of `project` (see the module docstring); imports an Ascend C project."""
    if not project.is_dir():
        raise ProjectError(f"{project}: no such project directory")
    if sorted(project.glob("ops/*/op.yaml")):
        return project
    if (project / "op_host").is_dir() and (project / "op_kernel").is_dir():
        from opbuild.ascendc.importer import AscendcImportError, import_ascendc
        from opbuild.validate import validate_op

        top = project / BUILD_OUT
        try:  # every build imports the sources again (copies, byte for byte): edits in op_host/ take effect
            import_ascendc(project, top / "ops", force=True, validate_op=validate_op)
        except (AscendcImportError, OSError) as exc:  # the importer's own errors name file and place
            raise ProjectError(f"{project}: {exc}") from None
        return top
    raise ProjectError(f"{project}: no ops/*/op.yaml and no op_host/ + op_kernel/: not an op project")


def scons_command(top: Path, config: ProjectConfig, scons_args: list[str]) -> list[str]:
    """`python -m SCons -C TOP -f <opbuild's SConstruct> ...` with the project config's VENDOR/SOC."""
    given = {a.split("=", 1)[0] for a in scons_args if "=" in a and not a.startswith("-")}
    extra = []
    if config.vendor and "VENDOR" not in given:
        extra.append(f"VENDOR={config.vendor}")
    if config.socs and "SOC" not in given:
        extra.append(f"SOC={','.join(config.socs)}")
    return [sys.executable, "-m", "SCons", "-C", str(top), "-f", str(SCONSTRUCT), *extra, *scons_args]


def build(project: Path, scons_args: list[str], package: bool = False) -> int:
    """Build `project`; with `package`, then write build_out/custom_opp_<os>_<arch>.run. The exit status."""
    project = project.resolve()
    presets = project / PRESETS
    config = read_presets(presets) if presets.is_file() else ProjectConfig()
    top = build_top(project)
    status = subprocess.run(scons_command(top, config, scons_args)).returncode
    if status or not package:
        return status
    from opbuild.deploy.pack import pack, run_file_name

    vendor = config.vendor or DEFAULT_VENDOR
    vendors = {a.split("=", 1)[1] for a in scons_args if a.startswith("VENDOR=")}
    vendor = next(iter(vendors), vendor)
    path = pack(top / "out" / "opp" / "vendors" / vendor, project / BUILD_OUT / run_file_name(), vendor)
    print(f"opbuild build: wrote {path}")
    return 0
