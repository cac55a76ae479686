"""`scons ops`: the op specs as an SCons dependency graph.

`declare_build(env, specs, options)` turns the build plan (plan.py: generated sources, one kernel
binary per declared binary, kernel descriptor JSONs, the tiling library, the per-SoC configs and
the package metadata) into SCons targets under `out/`, leaving out the ops that need no step
(bundles.py: current, or restored whole from the cache). Every action is a module-level function that finds its
op by name in the build's state (`BuildState`, passed in the SCons environment as OPBUILD_STATE:
no module global), so action signatures stay stable and cheap (one shared Action object per kind
of step; the per-step values that affect the output are its `varlist`, the label and the state
are not).

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
from pathlib import Path
from typing import Any, Sequence

import opbuild
from opbuild import codegen
from opbuild.abi import package_layout as layout
from opbuild.builder import steps
from opbuild.builder.cache import REMOTE_RETRIEVED
from opbuild.builder.plan import PlannedStep
from opbuild.builder.toolchain import Toolchain
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
    """opbuild.builder.distcc.Distcc when DISTCC_HOSTS is set: runs the `-c` compiles."""


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
        self.from_remote = 0
        """Of `cached`, the compiles the remote tier (OPBUILD_CACHE_URL) served."""
        self.explain: Path | None = None
        self.reasons: dict[str, list[str]] = {}
        self.by_target: dict[str, PlannedStep] = {}
        self._seen_cached: set[int] = set()
        self._lock = threading.Lock()

    def reset(self, steps_: list[PlannedStep], extra_total: int = 0) -> None:
        self.total = len(steps_) + extra_total
        self.done = self.cached = self.compiled = self.remote = self.from_remote = 0
        self._seen_cached.clear()
        self.by_target = {t: s for s in steps_ for t in s.targets}

    def restored(self, op: str, steps_: int, compiles: int, files: int, key: str, remote: bool = False) -> None:
        """An op whose outputs came from its bundle: its steps count as run, its compiles as
        taken from the cache (one line for all of them); `remote`: the bundle came from the
        remote tier (OPBUILD_CACHE_URL)."""
        with self._lock:
            self.done += steps_
            self.cached += compiles
            if remote:
                self.from_remote += compiles
            where = "op bundle, remote cache" if remote else "op bundle"
            sys.stdout.write(f"[{self.done}/{self.total}] CACHE {op}: {steps_} steps, {files} files ({where})\n")

    def step_of(self, path: str) -> PlannedStep | None:
        return self.by_target.get(os.path.abspath(path))

    def count_remote(self) -> None:
        with self._lock:
            self.remote += 1

    def count_reused(self) -> None:
        """A compile whose object `opbuild import` had made (builder/reuse.py): counted as taken
        from a cache, not as compiled."""
        with self._lock:
            self.compiled -= 1
            self.cached += 1

    def __call__(self, text, target, source, env) -> None:  # SCons PRINT_CMD_LINE_FUNC signature
        if not text:
            return
        with self._lock:
            step = self.step_of(str(target[0])) if target else None
            why = ""
            if text.startswith("Retrieved `"):  # SCons CacheDir, once per target of a step
                remote = text.endswith(f" from {REMOTE_RETRIEVED}")
                if step is not None:
                    if id(step) in self._seen_cached:
                        return
                    self._seen_cached.add(id(step))
                    text = step.label
                self.cached += 1
                if remote:
                    self.from_remote += 1
                where = "shared compile cache, remote" if remote else "shared compile cache"
                text = f"CACHE {text}" + (f" ({where})" if self.explain is not None else " (remote)" if remote else "")
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


def enable_explain(root: Path, progress: Progress) -> None:
    """EXPLAIN=1: SCons's `--debug=explain`, made readable. SCons asks a task's first target why
    it is out of date (`Node.explain`) when the task becomes ready, before its old outputs are
    removed; the answer is kept here and printed under the step's `[n/N]` line instead of as
    SCons's multi-line `scons: rebuilding ...` text."""
    import SCons.Node.FS
    import SCons.Script.Main

    original = SCons.Node.FS.File.explain

    def explain_file(node):
        try:
            text = original(node) or ""
        except Exception as exc:  # noqa: BLE001 - an explanation must never fail the build
            text = f"(no explanation: {exc})"
        with progress._lock:
            progress.reasons[str(node)] = explain_text(text, root)
        return None  # nothing for SCons to print

    progress.explain = root
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


@dataclass
class BuildState:
    """What the actions read besides their targets, sources and variables: the specs by op name
    and the build's options. One per build, in the SCons environment as OPBUILD_STATE (not part
    of any signature; the progress is the environment's PRINT_CMD_LINE_FUNC)."""

    options: BuildOptions
    specs: dict[str, OpSpec] = field(default_factory=dict)


def _state(env) -> BuildState:
    return env["OPBUILD_STATE"]


def _flushes_itself(stream) -> bool:
    """True for SCons's stdout wrapper (`SCons.Util.Unbuffered`), whose write() flushes."""
    return type(stream).__name__ == "Unbuffered"


def _fail(exc: Exception) -> int:
    """Report a failed step. Its targets stay as the previous build left them (every target is
    precious, and every step writes through a temporary file renamed into place): a running app
    keeps a working package. SCons does not record a failed step, so the next build runs it
    again; the build's summary lists the files left stale (`stale_files`)."""
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
            return _fail(RuntimeError(f"error: reading the generator file {path}: {exc}"))
    steps.write_file(Path(str(target[0])), "".join(lines))
    return 0


def _render_op_sources(target, source, env):
    spec = _state(env).specs[env["OPBUILD_OP"]]
    try:
        steps.render_op_sources(spec, *(Path(str(t)) for t in target))
    except Exception as exc:  # noqa: BLE001 - reported with the op's name
        return _fail(RuntimeError(f"error: op {spec.op}: generating sources failed: {exc}"))
    return 0


def _reused(options, command: list[str], target: Path) -> bool:
    """Whether the recorded object of this compile (builder/reuse.py, made by `opbuild import`)
    was written to `target` instead of compiling."""
    from opbuild.ascendc.check import OBJECT_WORD
    from opbuild.builder import reuse
    from opbuild.builder.tiling_lib import cache_dir

    output = os.path.relpath(target, options.root)
    key_command = [OBJECT_WORD if word == output else word for word in command]
    return reuse.take(cache_dir() / "objects", options.toolchain.identity(), key_command, OBJECT_WORD,
                      Path(options.root), target)


def _compile(target, source, env):
    options = _state(env).options
    produces = env.get("OPBUILD_PRODUCES") or None
    try:
        if produces:  # the command writes a file of its own choosing (asc_opc --output=DIR)
            steps.run_tool(options.toolchain, list(env["OPBUILD_CMD"]), produces, Path(str(target[0])),
                           env["OPBUILD_WHAT"], cwd=str(options.root))
        elif env.get("OPBUILD_REUSE") and _reused(options, list(env["OPBUILD_CMD"]), Path(target[0].abspath)):
            progress = env.get("PRINT_CMD_LINE_FUNC")  # the object `opbuild import` compiled for this very command
            if isinstance(progress, Progress):
                progress.count_reused()
        else:
            runner = options.distcc.run if options.distcc is not None and env.get("OPBUILD_DISTRIBUTE") else None
            steps.run_compiler(options.toolchain, list(env["OPBUILD_CMD"]), Path(str(target[0])), env["OPBUILD_WHAT"],
                               cwd=str(options.root), runner=runner)
    except steps.StepError as exc:
        return _fail(exc)
    return 0


def _kernel_descriptors(target, source, env):
    spec = _state(env).specs[env["OPBUILD_OP"]]
    soc = env["OPBUILD_SOC"]
    options = _state(env).options
    root, sub = Path(env["OPBUILD_PKG_ROOT"]), env["OPBUILD_SUBPACKAGE"] or None
    suffix = options.toolchain.binary_suffix
    binaries = {b.name: root / layout.kernel_binary(soc, spec.snake, b.name, suffix, sub) for b in spec.binaries}
    jsons = {b.name: root / layout.kernel_json(soc, spec.snake, b.name, sub) for b in spec.binaries}
    try:
        steps.write_kernel_descriptors(spec, soc, options.toolchain, binaries, jsons, root / layout.op_kernel_config(soc, spec.snake, sub))
    except Exception as exc:  # noqa: BLE001 - reported with what failed, as above
        return _fail(RuntimeError(f"error: op {spec.op}: kernel descriptors for {soc}: {exc}"))
    return 0


def _install_tiling_lib(target, source, env):
    """The linked tiling library (source[0], outside the package), checked against the specs of
    the package, then copied into it atomically; a library that fails a check is not installed."""
    specs = [_state(env).specs[name] for name in env["OPBUILD_OPS"]]
    from opbuild.builder.consistency import check_c_callbacks, check_tiling_symbols
    from opbuild.builder.tiling_probe import check_tiling_overruns

    linked = Path(source[0].abspath)
    try:
        problems = check_tiling_symbols(specs, linked)
        if problems:
            return _fail(RuntimeError("error: the tiling library lacks functions the specs name:\n  "
                                      + "\n  ".join(problems)))
        problems = check_c_callbacks(specs, linked)
    except Exception as exc:  # noqa: BLE001 - e.g. the library cannot be loaded
        return _fail(RuntimeError(f"error: checking the C simplified-key callbacks in {linked.name}: {exc}"))
    if problems:
        return _fail(RuntimeError("error: simplified keys and binaries disagree:\n  " + "\n  ".join(problems)))
    try:
        problems = check_tiling_overruns(specs, linked)
    except Exception as exc:  # noqa: BLE001 - reported with what failed, as above
        return _fail(RuntimeError(f"error: running the tiling functions of {linked.name} on a probe call: {exc}"))
    if problems:
        return _fail(RuntimeError("error: tiling functions write past their tiling data:\n  " + "\n  ".join(problems)))
    steps.install_file(linked, Path(str(target[0])))
    return 0


def _binary_info_config(target, source, env):
    options = _state(env).options
    specs = [_state(env).specs[name] for name in env["OPBUILD_OPS"]]
    try:
        text = codegen.render_binary_info_config(specs, env["OPBUILD_SOC"], options.toolchain.binary_suffix)
    except Exception as exc:  # noqa: BLE001 - reported with what failed, as above
        return _fail(RuntimeError(f"error: generating {Path(str(target[0])).name}: {exc}"))
    steps.write_file(Path(str(target[0])), text)
    return 0


def _ops_info(target, source, env):
    specs = [_state(env).specs[name] for name in env["OPBUILD_OPS"]]
    try:
        steps.write_file(Path(str(target[0])), codegen.render_ops_info(specs, env["OPBUILD_SOC"]))
    except Exception as exc:  # noqa: BLE001 - reported with what failed, as above
        return _fail(RuntimeError(f"error: generating {Path(str(target[0])).name}: {exc}"))
    return 0


def _python_api(target, source, env):
    from opbuild.codegen.python_api import keyrule_path, render_python_api

    specs = [_state(env).specs[name] for name in env["OPBUILD_OPS"]]
    python_dir = Path(env["OPBUILD_PKG_ROOT"]) / layout.python_api_dir()
    try:  # everything rendered and read before anything is written
        files = [(Path(str(target[0])), render_python_api(specs))]
        for spec in specs:
            rel_path = keyrule_path(spec)
            if rel_path is not None:
                files.append((python_dir / rel_path, (spec.op_dir / f"{spec.key_rule.py_module}.py").read_text()))
    except Exception as exc:  # noqa: BLE001 - reported with what failed, as above
        return _fail(RuntimeError(f"error: generating the Python aclnn API: {exc}"))
    for path, text in reversed(files):  # the key-rule modules the new aclnn_ops.py imports first
        steps.write_file(path, text)
    return 0


def _onnx_plugins(target, source, env):
    from opbuild.codegen.framework_json import render_onnx_plugins

    specs = [_state(env).specs[name] for name in env["OPBUILD_OPS"]]
    try:
        text = render_onnx_plugins(specs)
    except Exception as exc:  # noqa: BLE001 - reported with what failed, as above
        return _fail(RuntimeError(f"error: generating {Path(str(target[0])).name}: {exc}"))
    steps.write_file(Path(str(target[0])), text)
    return 0


def _aclnn_sources(target, source, env):
    from opbuild.codegen.aclnn_c import render_aclnn_header, render_aclnn_source

    spec = _state(env).specs[env["OPBUILD_OP"]]
    try:
        header, source_text = render_aclnn_header(spec), render_aclnn_source(spec)
    except Exception as exc:  # noqa: BLE001 - reported with what failed, as above
        return _fail(RuntimeError(f"error: op {spec.op}: generating the aclnn C API failed: {exc}"))
    steps.write_file(Path(str(target[0])), header)
    steps.write_file(Path(str(target[1])), source_text)
    return 0


def _op_proto_sources(target, source, env):
    from opbuild.codegen.op_proto import render_op_proto_header, render_op_proto_source

    specs = [_state(env).specs[name] for name in env["OPBUILD_OPS"]]
    try:
        source_text = render_op_proto_source(specs, env["OPBUILD_WHERE"])
        header = render_op_proto_header(specs, env["OPBUILD_WHERE"])
    except Exception as exc:  # noqa: BLE001 - reported with what failed, as above
        return _fail(RuntimeError(f"error: generating op_proto of {env['OPBUILD_WHERE']} failed: {exc}"))
    steps.write_file(Path(str(target[0])), source_text)
    steps.write_file(Path(str(target[1])), header)
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


_FUNCTIONS = {
    "stamp": _generator_stamp, "gen_sources": _render_op_sources, "compile": _compile,
    "kernel_json": _kernel_descriptors, "tiling_lib": _install_tiling_lib, "binary_info": _binary_info_config, "ops_info": _ops_info,
    "python_api": _python_api, "onnx_plugins": _onnx_plugins, "aclnn_sources": _aclnn_sources, "op_proto": _op_proto_sources, "copy": _copy_file, "text": _text_file,
    "symlink": _symlink,
}


def _actions():
    """One Action per kind of step. The label ($OPBUILD_LABEL) and error context (OPBUILD_WHAT)
    are not in the signature; only what shapes the output is (the kind's `plan.VARLISTS` values,
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


@dataclass
class DeclaredBuild:
    """What `declare_build` declared, and what it left out of the graph."""

    targets: list
    """Every SCons target node."""
    undeclared_inputs: set[str] = field(default_factory=set)
    undeclared_outputs: set[str] = field(default_factory=set)
    """Input and output files of the ops that were current or restored (for the up-to-date manifest)."""
    op_dirs: set[str] = field(default_factory=set)
    finish: Any = None
    """finish(): after the build, records the ops SCons built and stores their bundles."""
    progress: Any = None
    """The build's Progress (what the summary line counts)."""


@dataclass
class OpsCache:
    """How `declare_build` may skip ops (bundles.py): off for `-c`, `-n`, `-q`."""

    enabled: bool = True
    cache_dir: str | None = None
    """OPBUILD_CACHE_DIR, for bundles (None: no bundles; current ops are still skipped)."""
    push: bool = True
    """Store bundles of the ops SCons built (off with --cache-readonly)."""
    jobs: int = 2
    """Ops restored at once."""


def explain_ops(decision, specs: list[OpSpec], spec_layers: dict[str, str], ops_cache: OpsCache) -> None:
    """EXPLAIN=1: one line per op, before the steps, naming the layer that decided what the build
    does with it (stores.LAYERS), and where its checked spec came from."""
    from opbuild.builder.stores import LAYERS

    lines = []
    for spec in sorted(specs, key=lambda s: s.op):
        if decision is not None:
            verdict = decision.verdicts.get(spec.op)
            if verdict is None:
                continue
        elif not ops_cache.enabled:
            verdict = f"declared whole (-c, -n or -q): as SCons decides ({LAYERS['scons']})"
        else:
            continue
        where = spec_layers.get(spec.op)
        lines.append(f"opbuild: explain: {spec.op}: {verdict}" + (f"; spec: {where}" if where else "") + "\n")
    sys.stdout.write("".join(lines))


def declare_build(env, specs: list[OpSpec], options: BuildOptions, ops_cache: OpsCache | None = None,
                  others: Sequence[OpSpec] = (), progress: Progress | None = None,
                  spec_layers: dict[str, str] | None = None) -> DeclaredBuild:
    """Declare the build's steps to SCons (see plan.py for the steps, bundles.py for the ops that
    need none: current or restored from the cache). `others`: with OPS=, the ops not selected;
    those whose outputs are current stay in their packages. `progress` prints the steps (and,
    with its `explain` set, one line per op naming the layer that decided; `spec_layers`: where
    each op's checked spec came from). The actions find the specs and options in
    env["OPBUILD_STATE"]."""
    from SCons.Builder import Builder

    from opbuild.abi.native_libs import acl_library
    from opbuild.builder import bundles
    from opbuild.builder.plan import COMPILED, Planner

    progress = progress or Progress()
    state = BuildState(options, {s.op: s for s in specs})
    env["OPBUILD_STATE"] = state
    env["PRINT_CMD_LINE_FUNC"] = progress
    ops_cache = ops_cache or OpsCache(enabled=False)
    actions = _actions()
    scanner = _cached_c_scanner()
    # One Builder per kind of step (env.Command would make a Builder per call).
    builders = {kind: Builder(action=action, target_factory=env.fs.File, source_factory=env.fs.File,
                              source_scanner=scanner if kind in COMPILED else None)
                for kind, action in actions.items()}

    # What a compile's cache entry is keyed by besides its command and inputs (OPBUILD_CACHE_DIR
    # is shared: another compiler, compiler version, SoC, macro set or generator never collides).
    tc = options.toolchain
    base_key = {"toolchain": tc.name, "identity": tc.identity(), "version": tc.version(),
                "generator": getattr(opbuild, "__version__", "") or _generator_version()}
    if tc.environment():  # (only when set: keys stay those of earlier builds otherwise)
        base_key["environment"] = tc.environment()

    def cache_key(**extra) -> str:
        return json.dumps({**base_key, **extra}, sort_keys=True)

    stamp = str(options.out / "build" / options.vendor / "generator.stamp")
    planner = Planner(options, stamp, native_include_dir(), cache_key)
    global_steps = planner.plan_global(ascendc=any(s.is_ascendc for s in [*specs, *others]))
    everything = planner.packages([*specs, *others])  # an op's plan depends only on its own packages
    ops = {spec.op: planner.plan_op(spec, everything) for spec in specs}

    to_build, restored, decision, kept = list(ops.values()), [], None, []
    result = DeclaredBuild(targets=[], progress=progress)
    if ops_cache.enabled:
        other_plans = [planner.plan_op(spec, everything) for spec in others]
        global_outputs = {t for s in global_steps for t in s.targets}  # (made by every build: no op's input)
        decision = bundles.decide(list(ops.values()), other_plans, options.root, options.out, base_key, global_outputs,
                                  ops_cache.cache_dir, ops_cache.jobs)
        to_build, restored, kept = decision.to_build, decision.restored, decision.kept
        result.undeclared_inputs, result.undeclared_outputs, result.op_dirs = decision.undeclared()
        if decision.dropped:
            sys.stdout.write(f"opbuild: OPS: left out of the packages, changed since they were built: "
                             f"{', '.join(decision.dropped)} (build them to put them back)\n")
        if decision.removed:
            sys.stdout.write(f"opbuild: removed the outputs of ops no longer under ops/: "
                             f"{', '.join(decision.removed)}\n")
    state.specs.update({p.spec.op: p.spec for p in kept})
    if progress.explain is not None:
        explain_ops(decision, [*specs, *others], spec_layers or {}, ops_cache)
    packages = planner.packages([*specs, *(p.spec for p in kept)])  # OPS=: the current ops left out stay in
    acl_lib = str(acl_library())
    plans = {**ops, **{p.spec.op: p for p in kept}}
    for package in packages:
        planner.plan_package(package, plans, acl_lib)

    declared: list[PlannedStep] = []
    # Outputs SCons did not write (restored from a bundle, or an interrupted restore): its
    # .sconsign may describe other content, so their steps run whatever it says (bundles.py).
    rebuild = {t for plan in (decision.rebuild if decision is not None else ()) for t in plan.targets()}

    def declare(step) -> None:
        overrides = dict(step.overrides)
        if step.scan_includes is not None:  # a compile step: its sources are scanned for #includes
            overrides["CPPPATH"] = step.scan_includes
        nodes = builders[step.kind](env, step.targets, step.sources, OPBUILD_LABEL=step.label, **overrides)
        # Every target is precious: SCons does not delete it before its step runs. Each step
        # writes a temporary file and renames it into place (a generating step only when the
        # content changed, so nothing downstream looks touched), so a step that fails leaves the
        # previous build's file whole, and a running app keeps a working package.
        env.Precious(nodes)
        if step.kind not in COMPILED:
            env.NoCache(nodes)  # generated files: not worth caching
        if rebuild and step.targets[0] in rebuild:
            env.AlwaysBuild(nodes)
        declared.append(step)
        result.targets.extend(nodes)

    for step in global_steps:
        declare(step)
    for plan in to_build:
        for step in plan.steps:
            declare(step)
    for package in packages:
        for step in package.steps:
            declare(step)

    package_files = sorted({t for step in [*global_steps, *(s for p in packages for s in p.steps)] for t in step.targets})
    if decision is not None:
        # Package files an earlier complete build wrote that this build does not make (the
        # last AI CPU op removed: no libcust_aicpu_kernels.so; no op left in the built-in package).
        made = set(package_files) | {t for plan in plans.values() for t in plan.targets()}
        bundles.remove_outputs([f for f in decision.installed.package_files if f not in made], options.out)

    progress.reset(declared, extra_total=sum(len(plan.steps) for plan, _ in restored))
    for plan, key in restored:
        progress.restored(plan.spec.op, len(plan.steps), plan.compile_steps(), len(plan.stored_files()), key,
                          remote=decision is not None and plan.spec.op in decision.from_remote)

    def finish() -> None:
        """After the build: an op whose every target was built or found up to date is recorded
        as current, and its bundle stored; the others are forgotten (built again next time)."""
        from SCons.Node import executed, up_to_date

        if decision is None:
            return
        done = [plan for plan in to_build
                if all(env.fs.File(t).get_state() in (executed, up_to_date) for t in plan.targets())]
        if all(env.fs.File(t).get_state() in (executed, up_to_date) for t in package_files):
            decision.installed.package_files = package_files
        else:  # (a failed build: what it wrote so far is remembered with what was there)
            decision.installed.package_files = sorted(set(decision.installed.package_files) | set(package_files))
        decision.record_built(done, ops_cache.cache_dir if ops_cache.push else None)

    result.finish = finish
    return result

