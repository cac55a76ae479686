"""`scons ops`: the op specs as an SCons dependency graph.

`declare_build(env, specs, options)` turns validated specs into targets under `out/`: generated
sources, one kernel binary per declared binary, kernel descriptor JSONs, the tiling library, the
per-SoC configs and the package metadata. Every action is a module-level function that finds its
op by name, so action signatures stay stable and cheap (one shared Action object per kind of
step; the per-step values that affect the output are its `varlist`, the label is not).

The generator's own modules and templates (`codegen.GENERATOR_FILES`) are dependencies of one
stamp file, `out/build/<vendor>/generator.stamp`, which lists their content hashes; every
generating step depends on the stamp. An edited template or generator module therefore re-runs
the generating steps (which rewrite only outputs whose content changed), while a no-op build
checks the generator's files once instead of once per step.

Only compile and link outputs go to the shared cache (`OPBUILD_CACHE_DIR`); generating steps
are cheap and always run locally.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

import opbuild
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
    distcc: Any = None
    """opbuild.build.distcc.Distcc when DISTCC_HOSTS is set: runs the `-c` compiles."""


@dataclass
class _Registry:
    """Objects the actions need, keyed by name (kept out of action signatures)."""

    specs: dict[str, OpSpec] = field(default_factory=dict)
    options: BuildOptions | None = None


_REGISTRY = _Registry()


@dataclass
class Step:
    """One declared build step (a command with one or more targets)."""

    label: str
    kind: str
    targets: list[str]


class Progress:
    """Prints one short line per executed step: `[n/total] WHAT`, or `[n/total] CACHE WHAT` when
    the step's outputs were retrieved from the shared cache. Thread-safe (`scons -j`).

    Counts what the summary line reports: steps run, compiles run (`compiled`), compiles whose
    outputs came from the cache (`cached`), compiles that ran on a distcc host (`remote`). With
    `explain` set (EXPLAIN=1), each executed step is followed by the reasons it ran."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.cached = 0
        self.compiled = 0
        self.remote = 0
        self.explain: Path | None = None
        self.reasons: dict[str, list[str]] = {}
        self.by_target: dict[str, Step] = {}
        self._seen_cached: set[int] = set()
        self._lock = threading.Lock()

    def reset(self, steps_: list[Step]) -> None:
        self.total = len(steps_)
        self.done = self.cached = self.compiled = self.remote = 0
        self._seen_cached.clear()
        self.by_target = {t: s for s in steps_ for t in s.targets}

    def step_of(self, path: str) -> Step | None:
        return self.by_target.get(os.path.abspath(path))

    def count_remote(self) -> None:
        with self._lock:
            self.remote += 1

    def __call__(self, text, target, source, env) -> None:  # SCons PRINT_CMD_LINE_FUNC signature
        if not text:
            return
        with self._lock:
            step = self.step_of(str(target[0])) if target else None
            why = ""
            if text.startswith("Retrieved `"):  # SCons CacheDir, once per target of a step
                if step is not None:
                    if id(step) in self._seen_cached:
                        return
                    self._seen_cached.add(id(step))
                    text = step.label
                self.cached += 1
                text = f"CACHE {text}"
            else:
                if step is not None and step.kind == "compile":
                    self.compiled += 1
                if self.explain is not None and target:
                    reasons = self.reasons.pop(str(target[0]), None) or ["because: (no explanation recorded)"]
                    why = "".join(f"       {line}\n" for line in reasons)
            self.done += 1
            out = sys.stdout
            out.write(f"[{self.done}/{self.total}] {text}\n{why}")
            if not _flushes_itself(out):  # SCons's stdout (Unbuffered) flushes every write already
                out.flush()


def enable_explain(root: Path) -> None:
    """EXPLAIN=1: SCons's `--debug=explain`, made readable. SCons asks a task's first target why
    it is out of date (`Node.explain`) when the task becomes ready, before its old outputs are
    removed; the answer is kept here and printed under the step's `[n/N]` line instead of as
    SCons's multi-line `scons: rebuilding ...` text."""
    import SCons.Node.FS  # type: ignore[import-not-found]
    import SCons.Script.Main  # type: ignore[import-not-found]

    original = SCons.Node.FS.File.explain

    def explain_file(node):
        try:
            text = original(node) or ""
        except Exception as exc:  # noqa: BLE001 - an explanation must never fail the build
            text = f"(no explanation: {exc})"
        with PROGRESS._lock:
            PROGRESS.reasons[str(node)] = explain_text(text, root)
        return None  # nothing for SCons to print

    PROGRESS.explain = root
    SCons.Node.FS.File.explain = explain_file
    SCons.Script.Main.OptionsParser.values.debug_explain = True


def explain_text(text: str, root: Path) -> list[str]:
    """SCons's explanation of a rebuild, one short line per reason, with paths relative to the
    project (or to opbuild's headers)."""
    native = str(native_include_dir())

    def short(path: str) -> str:
        if path.startswith(native):
            return "opbuild/" + os.path.relpath(path, native)
        return os.path.relpath(path, root) if os.path.isabs(path) else path

    reasons: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.endswith("because it doesn't exist"):
            reasons.append("because: not built yet")
        elif line.startswith("rebuilding `") and "' because `" in line:  # one reason, on the same line
            name, rest = line.split("' because `", 1)[1].rsplit("' ", 1)
            reasons.append(f"because: {short(name)} {rest}")
        elif line.startswith("rebuilding `") and "AlwaysBuild" in line:
            reasons.append("because: always built")
        elif line.startswith("rebuilding `"):
            continue  # the header of the list of changes that follows
        elif line.startswith("`") and "' " in line:
            name, rest = line[1:].split("' ", 1)
            what = {"changed": "changed", "is a new dependency": "is a new dependency",
                    "is no longer a dependency": "is no longer a dependency"}.get(rest, rest)
            reasons.append(f"because: {short(name)} {what}")
        elif line.startswith("the contents of the build action changed"):
            reasons.append("because: its command or options changed")
        elif line.startswith("the dependency order changed"):
            reasons.append("because: its dependencies were reordered")
        elif line.startswith("Cannot explain"):
            reasons.append("because: no record of an earlier build (new .sconsign)")
        elif line.startswith("(no explanation"):
            reasons.append(f"because: {line}")
    if not reasons and text:
        reasons.append("because: its command or options changed")
    return list(dict.fromkeys(reasons))


PROGRESS = Progress()


def _flushes_itself(stream) -> bool:
    """True for SCons's stdout wrapper (`SCons.Util.Unbuffered`), whose write() flushes."""
    return type(stream).__name__ == "Unbuffered"


def _fail(exc: Exception, remove=()) -> int:
    """Report a failed step. Generated targets are precious (SCons leaves them in place while the
    step runs), so a failing generating step removes them itself (`remove`): a stale file must
    not stay in the package as if it matched the new inputs."""
    for node in remove:
        try:
            os.unlink(str(node))
        except FileNotFoundError:
            pass
    sys.stderr.write(f"{exc}\n")
    return 1


# ---- actions (signature: target, source, env) ---------------------------------------------------

_CHECKOUT = Path(opbuild.__file__).resolve().parent.parent


def _generator_stamp(target, source, env):
    lines = []
    for node in source:
        path = Path(node.abspath)
        try:
            name = path.relative_to(_CHECKOUT).as_posix()
        except ValueError:
            name = path.name
        try:
            lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {name}\n")
        except OSError as exc:
            return _fail(RuntimeError(f"error: reading the generator file {path}: {exc}"), target)
    steps.write_file(Path(str(target[0])), "".join(lines))
    return 0


def _render_op_sources(target, source, env):
    spec = _REGISTRY.specs[env["OPBUILD_OP"]]
    try:
        steps.render_op_sources(spec, Path(str(target[0])), Path(str(target[1])))
    except Exception as exc:  # noqa: BLE001 - reported with the op's name
        return _fail(RuntimeError(f"error: op {spec.op}: generating sources failed: {exc}"), target)
    return 0


def _compile(target, source, env):
    options = _REGISTRY.options
    for stale in env.get("OPBUILD_INVALIDATES") or ():
        try:
            os.unlink(stale)
        except FileNotFoundError:
            pass
    produces = env.get("OPBUILD_PRODUCES") or None
    try:
        if produces:  # the command writes a file of its own choosing (asc_opc --output=DIR)
            steps.run_tool(options.toolchain, list(env["OPBUILD_CMD"]), produces, Path(str(target[0])),
                           env["OPBUILD_WHAT"], cwd=str(options.root))
        else:
            runner = options.distcc.run if options.distcc is not None and env.get("OPBUILD_DISTRIBUTE") else None
            steps.run_compiler(options.toolchain, list(env["OPBUILD_CMD"]), Path(str(target[0])), env["OPBUILD_WHAT"],
                               cwd=str(options.root), runner=runner)
    except steps.StepError as exc:
        return _fail(exc)
    return 0


def _kernel_descriptors(target, source, env):
    spec = _REGISTRY.specs[env["OPBUILD_OP"]]
    soc = env["OPBUILD_SOC"]
    options = _REGISTRY.options
    root, sub = Path(env["OPBUILD_PKG_ROOT"]), env["OPBUILD_SUBPACKAGE"] or None
    suffix = options.toolchain.binary_suffix
    binaries = {b.name: root / layout.kernel_binary(soc, spec.snake, b.name, suffix, sub) for b in spec.binaries}
    jsons = {b.name: root / layout.kernel_json(soc, spec.snake, b.name, sub) for b in spec.binaries}
    try:
        steps.write_kernel_descriptors(spec, soc, options.toolchain, binaries, jsons, root / layout.op_kernel_config(soc, spec.snake, sub))
    except Exception as exc:  # noqa: BLE001
        return _fail(RuntimeError(f"error: op {spec.op}: kernel descriptors for {soc}: {exc}"), target)
    return 0


def _binary_info_config(target, source, env):
    options = _REGISTRY.options
    soc = env["OPBUILD_SOC"]
    specs = [_REGISTRY.specs[name] for name in env["OPBUILD_OPS"]]
    from opbuild.build.consistency import check_c_callbacks, check_tiling_symbols

    tiling_lib = Path(source[-1].abspath)  # the last source is the linked tiling library
    try:
        problems = check_tiling_symbols(specs, tiling_lib)
        if problems:
            return _fail(RuntimeError("error: the tiling library lacks functions the specs name:\n  "
                                      + "\n  ".join(problems)), target)
        problems = check_c_callbacks(specs, tiling_lib)
    except Exception as exc:  # noqa: BLE001 - e.g. the library cannot be loaded
        return _fail(RuntimeError(f"error: checking the C simplified-key callbacks in {tiling_lib.name}: {exc}"), target)
    if problems:
        return _fail(RuntimeError("error: simplified keys and binaries disagree:\n  " + "\n  ".join(problems)), target)
    steps.write_file(Path(str(target[0])), codegen.render_binary_info_config(specs, soc, options.toolchain.binary_suffix))
    return 0


def _ops_info(target, source, env):
    specs = [_REGISTRY.specs[name] for name in env["OPBUILD_OPS"]]
    try:
        steps.write_file(Path(str(target[0])), codegen.render_ops_info(specs, env["OPBUILD_SOC"]))
    except Exception as exc:  # noqa: BLE001
        return _fail(RuntimeError(f"error: generating {Path(str(target[0])).name}: {exc}"), target)
    return 0


def _python_api(target, source, env):
    from opbuild.codegen.python_api import keyrule_path, render_python_api

    specs = [_REGISTRY.specs[name] for name in env["OPBUILD_OPS"]]
    python_dir = Path(env["OPBUILD_PKG_ROOT"]) / layout.python_api_dir()
    try:
        steps.write_file(Path(str(target[0])), render_python_api(specs))
        for spec in specs:
            rel_path = keyrule_path(spec)
            if rel_path is not None:
                module = spec.op_dir / f"{spec.key_rule.py_module}.py"
                steps.write_file(python_dir / rel_path, module.read_text())
    except Exception as exc:  # noqa: BLE001
        return _fail(RuntimeError(f"error: generating the Python aclnn API: {exc}"), target)
    return 0


def _aclnn_sources(target, source, env):
    from opbuild.codegen.aclnn_c import render_aclnn_header, render_aclnn_source

    spec = _REGISTRY.specs[env["OPBUILD_OP"]]
    try:
        steps.write_file(Path(str(target[0])), render_aclnn_header(spec))
        steps.write_file(Path(str(target[1])), render_aclnn_source(spec))
    except Exception as exc:  # noqa: BLE001
        return _fail(RuntimeError(f"error: op {spec.op}: generating the aclnn C API failed: {exc}"), target)
    return 0


def _copy_file(target, source, env):
    steps.write_file(Path(str(target[0])), Path(str(source[0])).read_text())
    return 0


def _text_file(target, source, env):
    steps.write_file(Path(str(target[0])), env["OPBUILD_TEXT"])
    return 0


def _symlink(target, source, env):
    steps.make_symlink(Path(str(target[0])), env["OPBUILD_LINK_TO"])
    return 0


_VARLISTS = {
    "stamp": (),
    "gen_sources": ("OPBUILD_OP",),
    "compile": ("OPBUILD_CMD", "OPBUILD_KEY", "OPBUILD_PRODUCES"),
    "kernel_json": ("OPBUILD_OP", "OPBUILD_SOC", "OPBUILD_TOOLCHAIN", "OPBUILD_SUBPACKAGE"),
    "binary_info": ("OPBUILD_OPS", "OPBUILD_SOC", "OPBUILD_TOOLCHAIN"),
    "ops_info": ("OPBUILD_OPS", "OPBUILD_SOC"),
    "python_api": ("OPBUILD_OPS", "OPBUILD_PKG_ROOT"),
    "aclnn_sources": ("OPBUILD_OP",),
    "copy": (),
    "text": ("OPBUILD_TEXT",),
    "symlink": ("OPBUILD_LINK_TO",),
}
"""Per kind of step, the variables whose values shape its output (its signature)."""

_FUNCTIONS = {
    "stamp": _generator_stamp, "gen_sources": _render_op_sources, "compile": _compile,
    "kernel_json": _kernel_descriptors, "binary_info": _binary_info_config, "ops_info": _ops_info,
    "python_api": _python_api, "aclnn_sources": _aclnn_sources, "copy": _copy_file, "text": _text_file,
    "symlink": _symlink,
}


def _signature(kind: str, overrides: dict) -> str:
    """OPBUILD_SIG: the sha256 of the values of the kind's varlist. SCons substitutes every
    varlist variable whenever it computes a step's signature; one short plain string is far
    cheaper to substitute than a command line of 20 words."""
    values = [overrides.get(name, "") for name in _VARLISTS[kind]]
    return hashlib.sha256(json.dumps(values, separators=(",", ":")).encode()).hexdigest()


def _actions():
    """One Action per kind of step. The label ($OPBUILD_LABEL) and error context (OPBUILD_WHAT)
    are not in the signature; only what shapes the output is (the kind's `_VARLISTS` values,
    as OPBUILD_SIG)."""
    from SCons.Action import Action

    return {kind: Action(fn, "$OPBUILD_LABEL", varlist=["OPBUILD_SIG"]) for kind, fn in _FUNCTIONS.items()}


def _generator_version() -> str:
    """The generator's version: opbuild's distribution version (pyproject), else 'dev'."""
    try:
        from importlib.metadata import version

        return version("opbuild")
    except Exception:  # noqa: BLE001 - not installed (a source checkout on PYTHONPATH)
        return "dev"


# ---- graph ----------------------------------------------------------------------------------------

def _cached_c_scanner():
    """SCons's C scanner (CScanner), with its answer per (file, include path) kept for the run.

    SCons caches a file's #include list, but resolves it again for every environment, and each
    compile step has an environment of its own: the same kernel source, launch shim and headers
    were resolved once per binary. A file is scanned only once it exists (built, if generated),
    and no file changes during a build, so the first answer holds for the rest of the run."""
    from SCons.Scanner import ClassicCPP

    class CachedCScanner(ClassicCPP):
        def __init__(self) -> None:
            super().__init__("CScanner", "$CPPSUFFIXES", "CPPPATH",
                             r'^[ \t]*#[ \t]*(?:include|import)[ \t]*(<|")([^>"]+)(>|")')
            self.results: dict[tuple, tuple] = {}

        def __call__(self, node, env, path=()) -> list:
            key = (id(node), path)
            found = self.results.get(key)
            if found is None:
                if self.scan_check and not self.scan_check(node, env):
                    return []  # not built yet: not cached
                found = self.results[key] = (node, tuple(super().__call__(node, env, path)))
            return list(found[1])

    return CachedCScanner()


def declare_build(env, specs: list[OpSpec], options: BuildOptions):
    """Declare every target of the package; returns the list of target nodes.

    Also sets up `PROGRESS` (the steps, and their labels by target)."""
    from SCons.Builder import Builder

    _REGISTRY.specs = {s.op: s for s in specs}
    _REGISTRY.options = options
    env["PRINT_CMD_LINE_FUNC"] = PROGRESS
    actions = _actions()

    tc = options.toolchain
    root = options.root
    rel = lambda p: os.path.relpath(p, root)  # noqa: E731 - paths on command lines stay relative
    out = options.out
    pkg = out / "opp" / "vendors" / options.vendor
    work = out / "build" / options.vendor
    native_inc = native_include_dir()
    scanner = _cached_c_scanner()
    all_targets = []
    declared: list[Step] = []
    compiled = {"compile"}

    # One Builder per kind of step (env.Command would make a Builder per call).
    builders = {kind: Builder(action=action, target_factory=env.fs.File, source_factory=env.fs.File,
                              source_scanner=scanner if kind == "compile" else None)
                for kind, action in actions.items()}

    # What a compile's cache entry is keyed by besides its command and inputs (OPBUILD_CACHE_DIR
    # is shared: another compiler, compiler version, SoC, macro set or generator never collides).
    base_key = {"toolchain": tc.name, "identity": tc.identity(), "version": tc.version(),
                "generator": getattr(opbuild, "__version__", "") or _generator_version()}

    def cache_key(**extra) -> str:
        return json.dumps({**base_key, **extra}, sort_keys=True)

    def command(kind, targets, sources, label, scan_includes=None, **overrides):
        if kind == "compile" and "OPBUILD_KEY" not in overrides:
            overrides["OPBUILD_KEY"] = cache_key()
        target_paths = [os.path.abspath(str(t)) for t in targets]
        if scan_includes is not None:  # a compile step: its sources are scanned for #includes here
            overrides["CPPPATH"] = scan_includes
        overrides["OPBUILD_SIG"] = _signature(kind, overrides)
        nodes = builders[kind](env, target_paths, [s if not isinstance(s, Path) else str(s) for s in sources],
                               OPBUILD_LABEL=label, **overrides)
        if kind not in compiled:
            # Generated files: not worth caching; and precious, so SCons does not delete them
            # before the step runs: the step rewrites only files whose content changed, and
            # an unchanged file keeps its mtime (nothing downstream of it looks touched).
            env.NoCache(nodes)
            env.Precious(nodes)
        declared.append(Step(label, kind, target_paths))
        all_targets.extend(nodes)
        return nodes

    stamp = command("stamp", [work / "generator.stamp"], [str(p) for p in codegen.GENERATOR_FILES],
                    "GEN generator.stamp")[0]

    # ---- per op, shared by every package the op goes into -------------------------------------
    op_sources: dict[str, tuple] = {}
    for spec in specs:
        gen_dir = work / "gen" / spec.snake
        header, shim = gen_dir / f"{spec.snake}_tiling.h", gen_dir / f"{spec.snake}_launch.c"
        header_node, shim_node = command("gen_sources", [header, shim], [spec.spec_path, stamp],
                                         f"GEN {spec.op} sources", OPBUILD_OP=spec.op)
        includes = [str(native_inc), rel(gen_dir)]
        obj = work / "obj" / f"{spec.snake}_tiling.o"
        tiling_src = spec.op_dir / spec.tiling.source
        cmd = tc.tiling_object_command(rel(tiling_src), rel(obj), includes)
        obj_nodes = command("compile", [obj], [tiling_src, header_node], f"CC tiling {spec.op}", OPBUILD_CMD=tuple(cmd),
                            OPBUILD_DISTRIBUTE=1,
                            OPBUILD_WHAT=f"op {spec.op}: compiling tiling source {rel(tiling_src)}", scan_includes=includes)
        aclnn_h, aclnn_c = gen_dir / f"aclnn_{spec.snake}.h", gen_dir / f"aclnn_{spec.snake}.c"
        aclnn_nodes = command("aclnn_sources", [aclnn_h, aclnn_c], [spec.spec_path, stamp],
                              f"GEN {spec.op} aclnn C API", OPBUILD_OP=spec.op)
        op_sources[spec.op] = (header_node, shim_node, includes, obj_nodes, aclnn_nodes)

    # ---- per package: custom vendor and built-in ---------------------------------------------
    from opbuild.abi.native_libs import acl_library, opapi_command

    acl_lib = str(acl_library())
    packages = [("custom", pkg, [s for s in specs if "custom" in s.packages]),
                ("built-in", out / "opp" / layout.BUILTIN_DIR, [s for s in specs if "built-in" in s.packages])]
    for kind, pkg_root, pkg_specs in packages:
        if not pkg_specs:
            continue
        where = f"vendors/{options.vendor}" if kind == "custom" else layout.BUILTIN_DIR
        sub_of = (lambda spec: None) if kind == "custom" else (lambda spec: layout.subpackage_of(spec.domain))
        socs_used: set[str] = set()
        for spec in pkg_specs:
            header_node, shim_node, includes, _, _ = op_sources[spec.op]
            kernel_src = spec.op_dir / spec.kernel.source
            sub = sub_of(spec)
            for soc in [s for s in spec.socs if options.socs is None or s in options.socs]:
                socs_used.add(soc)
                bins = []
                for binary in spec.binaries:
                    target = pkg_root / layout.kernel_binary(soc, spec.snake, binary.name, tc.binary_suffix, sub)
                    macros = codegen.binary_macros(spec, binary)
                    kstep = tc.kernel_step(spec, binary, soc, [rel(kernel_src), rel(shim_node.abspath)], rel(target),
                                           macros, includes, rel(work / "kernels" / kind / soc / spec.snake / binary.name))
                    extra = [command("text", [root / path], [], f"GEN {Path(path).name} ({soc}, {where})",
                                     OPBUILD_TEXT=text)[0] for path, text in kstep.inputs.items()]
                    key = cache_key(soc=soc, macros=macros)
                    objects = []
                    for obj in kstep.objects:  # `-c` compiles (distributable), then the link below
                        src = kernel_src if obj.source == rel(kernel_src) else shim_node
                        objects += command("compile", [root / obj.object], [src, header_node],
                                           f"CC {'kernel' if src is kernel_src else 'launch'} {binary.name} ({soc}, {where})",
                                           OPBUILD_CMD=tuple(obj.command), OPBUILD_KEY=key, OPBUILD_DISTRIBUTE=1,
                                           OPBUILD_WHAT=f"op {spec.op}, binary {binary.name} ({soc}): compiling {obj.source}",
                                           scan_includes=includes)
                    cmd = kstep.command
                    inputs = objects if objects else [kernel_src, shim_node, header_node]
                    nodes = command("compile", [target], [*inputs, *extra],
                                    f"{'LINK' if objects else 'CC'} kernel {binary.name} ({soc}, {where})", OPBUILD_CMD=tuple(cmd),
                                    OPBUILD_PRODUCES=kstep.produces or "",
                                    OPBUILD_KEY=key,
                                    OPBUILD_WHAT=f"op {spec.op}, binary {binary.name} ({soc}): "
                                                 + (f"linking {rel(target)}" if objects else f"compiling kernel {rel(kernel_src)}"),
                                    scan_includes=None if objects else includes)
                    bins.extend(nodes)
                jsons = [pkg_root / layout.kernel_json(soc, spec.snake, b.name, sub) for b in spec.binaries]
                command("kernel_json", [*jsons, pkg_root / layout.op_kernel_config(soc, spec.snake, sub)],
                        [spec.spec_path, stamp, *bins], f"GEN {spec.op} kernel JSONs ({soc}, {where})",
                        OPBUILD_OP=spec.op, OPBUILD_SOC=soc, OPBUILD_TOOLCHAIN=tc.name,
                        OPBUILD_PKG_ROOT=str(pkg_root), OPBUILD_SUBPACKAGE=sub or "")

        tiling_objects = [o for spec in pkg_specs for o in op_sources[spec.op][3]]
        tiling_lib = pkg_root / layout.tiling_lib()
        cmd = tc.tiling_link_command([rel(str(o)) for o in tiling_objects], rel(tiling_lib))
        # The package's binary_info_config.json files vouch for this library (key callbacks, tiling
        # symbols): relinking it removes them, and their steps (which depend on it) write them anew,
        # so a failed check elsewhere can never leave a config that describes an older library.
        configs = sorted({str(pkg_root / layout.binary_info_config(soc, sub_of(s))) for s in pkg_specs
                          for soc in s.socs if soc in socs_used})
        lib_nodes = command("compile", [tiling_lib], tiling_objects, f"LINK libcust_opmaster_rt2.0.so ({where})",
                            OPBUILD_CMD=tuple(cmd), OPBUILD_WHAT=f"linking the tiling library of {where}",
                            OPBUILD_INVALIDATES=tuple(configs))
        link = pkg_root / layout.optiling_link()
        command("symlink", [link], lib_nodes, f"LINK liboptiling.so ({where})",
                OPBUILD_LINK_TO=os.path.relpath(tiling_lib, link.parent))

        for soc in sorted(socs_used):
            soc_specs = [s for s in pkg_specs if soc in s.socs]
            for sub in sorted({sub_of(s) or "" for s in soc_specs}):
                group = tuple(s.op for s in soc_specs if (sub_of(s) or "") == sub)
                files = [str(s.spec_path) for s in soc_specs if (sub_of(s) or "") == sub]
                name = f"{sub}/binary_info_config.json" if sub else "binary_info_config.json"
                command("binary_info", [pkg_root / layout.binary_info_config(soc, sub or None)], [*files, stamp, *lib_nodes],
                        f"GEN {name} ({soc}, {where})", OPBUILD_OPS=group, OPBUILD_SOC=soc, OPBUILD_TOOLCHAIN=tc.name)
            command("ops_info", [pkg_root / layout.ops_info(soc)], [*(str(s.spec_path) for s in soc_specs), stamp],
                    f"GEN aic-{soc}-ops-info.json ({where})", OPBUILD_OPS=tuple(s.op for s in soc_specs), OPBUILD_SOC=soc)

        from opbuild.codegen.python_api import PYTHON_MODULE, keyrule_path

        python_dir = pkg_root / layout.python_api_dir()
        py_targets = [python_dir / PYTHON_MODULE]
        py_sources = [*(str(s.spec_path) for s in pkg_specs), stamp]
        for spec in pkg_specs:
            if keyrule_path(spec) is not None:
                py_targets.append(python_dir / keyrule_path(spec))
                py_sources.append(str(spec.op_dir / f"{spec.key_rule.py_module}.py"))
        command("python_api", py_targets, py_sources, f"GEN op_api/python/aclnn_ops.py ({where})",
                OPBUILD_OPS=tuple(s.op for s in pkg_specs), OPBUILD_PKG_ROOT=str(pkg_root))

        # aclnn C API: headers, and the libraries exporting aclnn<Op>GetWorkspaceSize / aclnn<Op>.
        include_dir = pkg_root / "op_api" / "include"
        for spec in pkg_specs:
            command("copy", [include_dir / f"aclnn_{spec.snake}.h"], [op_sources[spec.op][4][0]],
                    f"GEN op_api/include/aclnn_{spec.snake}.h ({where})")
        if kind == "custom":
            libraries = {layout.CUSTOM_OPAPI_LIB: pkg_specs}
        else:
            libraries = {layout.OPAPI_LIB: [s for s in pkg_specs if not s.domain]}
            for domain in layout.DOMAINS:
                members = [s for s in pkg_specs if s.domain == domain]
                if members:
                    libraries[layout.domain_opapi_lib(domain)] = members
        for lib_name, members in libraries.items():
            target = pkg_root / layout.opapi_lib_dir() / lib_name
            sources = [op_sources[s.op][4][1] for s in members]
            if not members:  # libopapi.so exists even with no domain-less op: it anchors ResetCacheThreadLocal
                anchor = work / "gen" / "opapi_anchor.c"
                sources = command("text", [anchor], [], "GEN opapi_anchor.c",
                                  OPBUILD_TEXT="/* libopapi.so: built-in ops without a domain (none here). It still\n"
                                               " * exports ResetCacheThreadLocal through its dependency on the acl\n"
                                               " * library: reference it so the linker keeps that dependency. */\n"
                                               "extern void ResetCacheThreadLocal(void);\n"
                                               "void (*opbuild_opapi_anchor(void))(void) { return ResetCacheThreadLocal; }\n")
            cmd = opapi_command([rel(str(n)) for n in sources], rel(target), [rel(str(include_dir))], cc=tc.cc_command())
            command("compile", [target], [*sources, acl_lib], f"LINK {lib_name} ({where})", OPBUILD_CMD=tuple(cmd),
                    OPBUILD_WHAT=f"linking {lib_name} of {where}")

        command("text", [pkg_root / layout.VERSION_INFO], [], f"GEN version.info ({where})",
                OPBUILD_TEXT=codegen.render_version_info(tc.version()))
    command("text", [out / "opp" / "vendors" / "config.ini"], [], "GEN vendors/config.ini",
            OPBUILD_TEXT=codegen.render_vendors_config([options.vendor]))

    PROGRESS.reset(declared)
    return all_targets
