"""`scons ops`: the op specs as an SCons dependency graph.

`declare_build(env, specs, options)` turns validated specs into targets under `out/`: generated
sources, one kernel binary per declared binary, kernel descriptor JSONs, the tiling library, the
per-SoC configs and the package metadata. Every action is a module-level function that finds its
op by name, so action signatures stay stable and cheap; the generator's own modules and
templates are declared dependencies of everything they render.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from opbuild import codegen
from opbuild.abi import package_layout as layout
from opbuild.build import steps
from opbuild.build.toolchain import Toolchain
from opbuild.runtime_paths import native_include_dir
from opbuild.spec.model import OpSpec


@dataclass
class BuildOptions:
    """What `scons ops` was asked for (from the command line / environment)."""

    root: Path
    out: Path
    vendor: str
    socs: tuple[str, ...] | None
    toolchain: Toolchain


@dataclass
class _Registry:
    """Objects the actions need, keyed by name (kept out of action signatures)."""

    specs: dict[str, OpSpec] = field(default_factory=dict)
    options: BuildOptions | None = None


_REGISTRY = _Registry()


class Progress:
    """Prints one short line per executed step: `[n/total] WHAT`."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0

    def __call__(self, text, target, source, env) -> None:  # SCons PRINT_CMD_LINE_FUNC signature
        self.done += 1
        sys.stdout.write(f"[{self.done}/{self.total}] {text}\n")
        sys.stdout.flush()


PROGRESS = Progress()


def _fail(exc: Exception) -> int:
    sys.stderr.write(f"{exc}\n")
    return 1


# ---- actions (signature: target, source, env) ---------------------------------------------------

def _render_op_sources(target, source, env):
    spec = _REGISTRY.specs[env["OPBUILD_OP"]]
    try:
        steps.render_op_sources(spec, Path(str(target[0])), Path(str(target[1])))
    except Exception as exc:  # noqa: BLE001 - reported with the op's name
        return _fail(RuntimeError(f"error: op {spec.op}: generating sources failed: {exc}"))
    return 0


def _compile(target, source, env):
    options = _REGISTRY.options
    try:
        steps.run_compiler(options.toolchain, list(env["OPBUILD_CMD"]), Path(str(target[0])), env["OPBUILD_WHAT"])
    except steps.StepError as exc:
        return _fail(exc)
    return 0


def _kernel_descriptors(target, source, env):
    spec = _REGISTRY.specs[env["OPBUILD_OP"]]
    soc = env["OPBUILD_SOC"]
    options = _REGISTRY.options
    root = options.out / "opp" / "vendors" / options.vendor
    binaries = {b.name: root / layout.kernel_binary(soc, spec.snake, b.name, options.toolchain.binary_suffix) for b in spec.binaries}
    jsons = {b.name: root / layout.kernel_json(soc, spec.snake, b.name) for b in spec.binaries}
    try:
        steps.write_kernel_descriptors(spec, soc, options.toolchain, binaries, jsons, root / layout.op_kernel_config(soc, spec.snake))
    except Exception as exc:  # noqa: BLE001
        return _fail(RuntimeError(f"error: op {spec.op}: kernel descriptors for {soc}: {exc}"))
    return 0


def _binary_info_config(target, source, env):
    options = _REGISTRY.options
    soc = env["OPBUILD_SOC"]
    specs = [_REGISTRY.specs[name] for name in env["OPBUILD_OPS"]]
    from opbuild.build.consistency import check_c_callbacks

    problems = check_c_callbacks(specs, Path(env["OPBUILD_TILING_LIB"]))
    if problems:
        return _fail(RuntimeError("error: simplified keys and binaries disagree:\n  " + "\n  ".join(problems)))
    steps.write_if_changed(Path(str(target[0])), codegen.render_binary_info_config(specs, soc, options.toolchain.binary_suffix))
    return 0


def _ops_info(target, source, env):
    specs = [_REGISTRY.specs[name] for name in env["OPBUILD_OPS"]]
    steps.write_if_changed(Path(str(target[0])), codegen.render_ops_info(specs, env["OPBUILD_SOC"]))
    return 0


def _python_api(target, source, env):
    from opbuild.codegen.python_api import keyrule_path, render_python_api

    options = _REGISTRY.options
    specs = [_REGISTRY.specs[name] for name in env["OPBUILD_OPS"]]
    python_dir = options.out / "opp" / "vendors" / options.vendor / layout.python_api_dir()
    steps.write_if_changed(Path(str(target[0])), render_python_api(specs))
    for spec in specs:
        rel_path = keyrule_path(spec)
        if rel_path is not None:
            module = spec.op_dir / f"{spec.key_rule.py_module}.py"
            steps.write_if_changed(python_dir / rel_path, module.read_text())
    return 0


def _text_file(target, source, env):
    steps.write_if_changed(Path(str(target[0])), env["OPBUILD_TEXT"])
    return 0


def _symlink(target, source, env):
    steps.make_symlink(Path(str(target[0])), env["OPBUILD_LINK_TO"])
    return 0


# ---- graph ----------------------------------------------------------------------------------------

def declare_build(env, specs: list[OpSpec], options: BuildOptions):
    """Declare every target of the package; returns the list of top-level target nodes."""
    from SCons.Action import Action
    from SCons.Scanner.C import CScanner

    _REGISTRY.specs = {s.op: s for s in specs}
    _REGISTRY.options = options
    env["PRINT_CMD_LINE_FUNC"] = PROGRESS

    tc = options.toolchain
    root = options.root
    rel = lambda p: os.path.relpath(p, root)  # noqa: E731 - paths on command lines stay relative
    out = options.out
    pkg = out / "opp" / "vendors" / options.vendor
    work = out / "build" / options.vendor
    generator_deps = [str(p) for p in codegen.GENERATOR_FILES]
    native_inc = native_include_dir()
    scanner = CScanner()
    all_targets = []
    steps_count = 0

    def command(targets, sources, action, text, scan_includes=None, **overrides):
        nonlocal steps_count
        steps_count += 1
        extra = {}
        if scan_includes is not None:  # a compile step: scan its sources for #include dependencies
            extra = {"source_scanner": scanner, "CPPPATH": scan_includes}
        nodes = env.Command([str(t) for t in targets], [str(s) for s in sources],
                            Action(action, text, varlist=sorted(overrides)), **overrides, **extra)
        all_targets.extend(nodes)
        return nodes

    tiling_objects = []
    socs_used: set[str] = set()
    for spec in specs:
        socs = [s for s in spec.socs if options.socs is None or s in options.socs]
        socs_used.update(socs)
        gen_dir = work / "gen" / spec.snake
        header, shim = gen_dir / f"{spec.snake}_tiling.h", gen_dir / f"{spec.snake}_launch.c"
        gen_nodes = command([header, shim], [spec.spec_path], _render_op_sources, f"GEN {spec.op} sources", OPBUILD_OP=spec.op)
        env.Depends(gen_nodes, generator_deps)
        env.Precious(gen_nodes)
        includes = [str(native_inc), rel(gen_dir)]

        obj = work / "obj" / f"{spec.snake}_tiling.o"
        tiling_src = spec.op_dir / spec.tiling.source
        cmd = tc.tiling_object_command(rel(tiling_src), rel(obj), includes)
        nodes = command([obj], [tiling_src], _compile, f"CC tiling {spec.op}", OPBUILD_CMD=tuple(cmd),
                        OPBUILD_WHAT=f"op {spec.op}: compiling tiling source {rel(tiling_src)}", scan_includes=includes)
        env.Depends(nodes, str(header))
        tiling_objects.extend(nodes)

        for soc in socs:
            kernel_src = spec.op_dir / spec.kernel.source
            bins = []
            for binary in spec.binaries:
                target = pkg / layout.kernel_binary(soc, spec.snake, binary.name, tc.binary_suffix)
                cmd = tc.kernel_command([rel(kernel_src), rel(shim)], rel(target), codegen.binary_macros(spec, binary), includes)
                nodes = command([target], [kernel_src, shim], _compile, f"CC kernel {binary.name} ({soc})",
                                OPBUILD_CMD=tuple(cmd),
                                OPBUILD_WHAT=f"op {spec.op}, binary {binary.name}: compiling kernel {rel(kernel_src)}",
                                scan_includes=includes)
                env.Depends(nodes, str(header))
                bins.extend(nodes)
            jsons = [pkg / layout.kernel_json(soc, spec.snake, b.name) for b in spec.binaries]
            nodes = command([*jsons, pkg / layout.op_kernel_config(soc, spec.snake)], [spec.spec_path, *bins],
                            _kernel_descriptors, f"GEN {spec.op} kernel JSONs ({soc})", OPBUILD_OP=spec.op, OPBUILD_SOC=soc)
            env.Depends(nodes, generator_deps)

    tiling_lib = pkg / layout.tiling_lib()
    cmd = tc.tiling_link_command([rel(o) for o in map(str, tiling_objects)], rel(tiling_lib))
    lib_nodes = command([tiling_lib], [str(o) for o in tiling_objects], _compile, "LINK libcust_opmaster_rt2.0.so",
                        OPBUILD_CMD=tuple(cmd), OPBUILD_WHAT="linking the tiling library")
    link = pkg / layout.optiling_link()
    command([link], [str(tiling_lib)], _symlink, "LINK liboptiling.so",
            OPBUILD_LINK_TO=os.path.relpath(tiling_lib, link.parent))

    spec_files = [s.spec_path for s in specs]
    for soc in sorted(socs_used):
        soc_specs = tuple(s.op for s in specs if soc in s.socs)
        nodes = command([pkg / layout.binary_info_config(soc)], [*spec_files, *lib_nodes], _binary_info_config,
                        f"GEN binary_info_config.json ({soc})", OPBUILD_OPS=soc_specs, OPBUILD_SOC=soc,
                        OPBUILD_TILING_LIB=str(tiling_lib))
        env.Depends(nodes, generator_deps)
        nodes = command([pkg / layout.ops_info(soc)], spec_files, _ops_info, f"GEN aic-{soc}-ops-info.json",
                        OPBUILD_OPS=soc_specs, OPBUILD_SOC=soc)
        env.Depends(nodes, generator_deps)

    from opbuild.codegen.python_api import PYTHON_MODULE, keyrule_path

    python_dir = pkg / layout.python_api_dir()
    py_targets = [python_dir / PYTHON_MODULE]
    py_sources = list(spec_files)
    for spec in specs:
        if keyrule_path(spec) is not None:
            py_targets.append(python_dir / keyrule_path(spec))
            py_sources.append(spec.op_dir / f"{spec.key_rule.py_module}.py")
    nodes = command(py_targets, py_sources, _python_api, "GEN op_api/python/aclnn_ops.py", OPBUILD_OPS=tuple(s.op for s in specs))
    env.Depends(nodes, generator_deps)

    command([pkg / layout.VERSION_INFO], [], _text_file, "GEN version.info",
            OPBUILD_TEXT=codegen.render_version_info(tc.version()))
    command([out / "opp" / "vendors" / "config.ini"], [], _text_file, "GEN vendors/config.ini",
            OPBUILD_TEXT=codegen.render_vendors_config([options.vendor]))

    PROGRESS.total = steps_count
    return all_targets
