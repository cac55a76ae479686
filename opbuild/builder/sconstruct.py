"""The body of opbuild's SConstruct (opbuild/builder/SConstruct, read by the checkout's root
SConstruct and run by `opbuild build PROJECT`): options, spec loading, the graph, the summary.

Runs inside SCons. In order:

1. options (unknown ones are an error) and `-h`;
2. the up-to-date manifest (opbuild/builder/manifest.py): when nothing changed since the last
   complete build, say so and stop, without loading specs or declaring the graph;
3. the toolchain, then the specs (checked specs are cached in out/.opbuild/specs.pickle), OPS,
   SOC and VENDOR; any problem stops the build with `path:line:col` errors before anything
   under `out/` is written;
4. the graph (scons_tool.declare_build), decided by content (Decider "content");
5. at exit, one summary line (ops, binaries, steps run, seconds) and the failed steps, if any;
   after a complete successful build, the manifest for the next run.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

from SCons.Script import (
    COMMAND_LINE_TARGETS,
    AddOption,
    Alias,
    BoolVariable,
    Clean,
    Decider,
    Default,
    Dir,
    EnumVariable,
    Environment,
    Exit,
    GetOption,
    Help,
    SetOption,
    Variables,
)

from opbuild.builder.project import SCONSTRUCT as PACKAGED_SCONSTRUCT
from opbuild.builder.toolchain import TOOLCHAINS, ToolchainError, get_toolchain

HELP = """
opbuild: build CANN-style op packages from ops/<op>/op.yaml

  scons ops                 build every op under ops/ into out/opp/
  scons ops OPS=A,B         only these ops (op type or directory name)
  scons -c                  remove everything the build made
  scons -j N ops            N parallel compiles
  scons package             build, then write out/custom_opp_<os>_<arch>.run (as `opbuild pack`)

Options (NAME=value on the command line):
  OPS=A,B        ops to build (default: all under ops/); other ops built earlier
                 and still current stay in their packages
  SOC=s1,s2      SoCs to build for (default: each spec's `socs`)
  VENDOR=name    vendor directory under out/opp/vendors/ (default: customize)
  TOOLCHAIN=t    kernel toolchain: {toolchains} (default: host; ccec: the CANN toolkit at
                 $ASCEND_HOME_PATH, kernels built by asc_opc into .o binaries)
  OUT=dir        build output directory (default: out)
  CC=cc          host C compiler (default: $CC or cc)
  EXPLAIN=1      per op, which layer decided: up to date (manifest, ops record), restored
                 (shared bundle cache) or rebuilt and why (fingerprint: the input that
                 changed); where its checked spec came from; under each step why it runs
                 (SCons signatures) or that it came from the shared compile cache
  DISTCC_HOSTS="h1/4 h2:3633/8"   run every C compile through distcc (also from the environment);
                 without -j, the build runs as many jobs as the hosts have slots
  CACHE_URL=http://host:port/prefix   remote build cache behind OPBUILD_CACHE_DIR (also
                 OPBUILD_CACHE_URL): read on a local miss, written with every local push
  --remote-cache=read-only   read the remote cache, never write it (also OPBUILD_REMOTE_CACHE)
Environment:
  OPBUILD_CACHE_DIR   shared cache directory: compiled files (SCons CacheDir), op bundles, checked specs
  OPBUILD_CACHE_URL   remote build cache (HTTP GET/HEAD/PUT, Bazel's ac/ + cas/ layout); needs
                      OPBUILD_CACHE_DIR; credentials from the URL, OPBUILD_CACHE_TOKEN or ~/.netrc
  OPBUILD_CACHE_SECRET  entries carry an HMAC keyed by it; entries whose HMAC does not check are rebuilt
  OPBUILD_FULL_CHECK  1: always let SCons check every file (skip the up-to-date manifest)
"""


def local_jobs() -> int:
    """The default number of parallel jobs of a local build: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def main() -> None:
    started, started_ns = time.monotonic(), time.time_ns()
    root = Path(Dir("#").abspath)
    variables = Variables(None)
    variables.Add("OPS", "ops to build (comma-separated op types or directory names)", "")
    variables.Add("SOC", "SoCs to build for (comma-separated)", "")
    variables.Add("VENDOR", "vendor name", "customize")
    variables.Add(EnumVariable("TOOLCHAIN", "kernel toolchain", "host", allowed_values=sorted(TOOLCHAINS)))
    variables.Add("OUT", "output directory", "out")
    variables.Add("CC", "host C compiler", os.environ.get("CC", "cc"))
    variables.Add(BoolVariable("EXPLAIN", "print why each step runs", False))
    variables.Add("DISTCC_HOSTS", "distcc hosts for the C compiles", os.environ.get("DISTCC_HOSTS", ""))
    from opbuild.builder import remote

    variables.Add("CACHE_URL", "remote build cache URL", os.environ.get(remote.URL_ENV, ""))
    AddOption("--remote-cache", dest="remote_cache", type="choice", choices=list(remote.MODES), metavar="MODE",
              default=None, help=f"the remote build cache: {' or '.join(remote.MODES)} (default: ${remote.MODE_ENV} "
                                 f"or {remote.READ_WRITE})")
    env = Environment(tools=[], variables=variables, ENV={"PATH": os.environ.get("PATH", "")})
    Help(HELP.format(toolchains="|".join(sorted(TOOLCHAINS))), append=False)
    unknown = variables.UnknownVariables()
    if unknown:
        sys.stderr.write(f"error: unknown option(s): {', '.join(sorted(unknown))} (see scons -h)\n")
        Exit(2)
    if GetOption("help"):
        return

    from opbuild.builder import manifest

    out = root / env["OUT"]
    manifest_path = out / manifest.MANIFEST_FILE
    compiler = manifest.resolve_compiler(env["CC"])
    key = manifest.config_key({k: env[k] for k in ("OPS", "SOC", "VENDOR", "TOOLCHAIN", "OUT", "CC")}, compiler)
    fast_ok = manifest.fast_path_allowed(GetOption, list(COMMAND_LINE_TARGETS))
    if fast_ok:
        recorded = manifest.check(manifest_path, key)
        if recorded is not None:  # nothing changed since the last complete build: skip the graph
            if env["EXPLAIN"]:
                from opbuild.builder.stores import LAYERS

                sys.stdout.write("".join(f"opbuild: explain: {op}: up to date ({LAYERS['manifest']})\n"
                                         for op in recorded.get("names", [])))
            sys.stdout.write("scons: `ops' is up to date.\n")
            sys.stdout.write(f"opbuild: ok: {recorded['ops']} ops, {recorded['binaries']} kernel binaries, "
                             f"0/{recorded['steps']} steps run (nothing changed: 0 compiled, 0 from cache, 0 remote), "
                             f"{time.monotonic() - started:.1f} s\n")
            sys.stdout.flush()
            Exit(0)
    manifest.discard(manifest_path)

    # Exact: a dependency changed iff its content did. SCons's timestamps have 1-second
    # resolution, so "content-timestamp" (or a cached content signature, max_drift >= 0) misses
    # a file rewritten within the second its signature was stored: an edit saved while a build
    # reads it, or a binary rebuilt twice in one second (its JSONs then keep the old sha256).
    # Hashing every dependency costs ~0.3 s at 200 ops; a true no-op never gets here (manifest).
    Decider("content")
    SetOption("max_drift", -1)
    SetOption("implicit_cache", 1)
    from opbuild.builder.cache import CACHE_ENV

    cache_dir = os.environ.get(CACHE_ENV)
    if cache_dir:
        from opbuild.builder.cache import CacheError, open_for_build, verified_cache_class

        try:
            cache_dir = open_for_build(cache_dir)
            env.CacheDir(cache_dir, custom_class=verified_cache_class(readonly=bool(GetOption("cache_readonly"))))
        except CacheError as exc:
            sys.stderr.write(f"error: {exc}\n")
            Exit(1)
    if env["CACHE_URL"].strip() and not (GetOption("clean") or GetOption("no_exec") or GetOption("cache_disable")):
        if not cache_dir:
            sys.stderr.write(f"error: CACHE_URL / {remote.URL_ENV} needs {CACHE_ENV}: the local first tier "
                             f"of the remote cache\n")
            Exit(1)
        mode = remote.READ_ONLY if GetOption("cache_readonly") else \
            GetOption("remote_cache") or os.environ.get(remote.MODE_ENV) or None
        try:
            remote.configure(env["CACHE_URL"].strip(), mode)
        except remote.RemoteError as exc:
            sys.stderr.write(f"error: {exc}\n")
            Exit(1)

    from opbuild.builder.scons_tool import BuildOptions, OpsCache, Progress, declare_build
    from opbuild.builder.select import CACHE_FILE, SelectionError, SharedSpecs, SpecCache, select_specs

    cleaning = bool(GetOption("clean"))
    try:
        toolchain = _toolchain(env["TOOLCHAIN"], env["CC"], root)
    except ToolchainError as exc:
        sys.stderr.write(f"error: {exc}\n")
        Exit(1)
    spec_cache = SpecCache(None if cleaning else out / CACHE_FILE)
    try:
        _check_vendor(env["VENDOR"])
        use_shared = cache_dir and not (cleaning or GetOption("no_exec") or GetOption("cache_disable"))
        shared = SharedSpecs(cache_dir, readonly=bool(GetOption("cache_readonly"))) if cache_dir and use_shared else None
        selection = select_specs(root / "ops", env["OPS"], cache=spec_cache, shared=shared)
        specs, socs = _select_socs(selection.specs, env["SOC"])
        others = [s for s in selection.others if socs is None or set(s.socs) & set(socs)]
    except SelectionError as exc:
        sys.stderr.write(f"{exc}\n")
        Exit(1)

    progress = Progress()  # the build's progress lines and counts (passed on, never a global)
    distcc = None
    if env["DISTCC_HOSTS"].strip() and not cleaning:
        from opbuild.builder.distcc import Distcc, DistccError

        try:
            distcc = found = Distcc(env["DISTCC_HOSTS"], on_remote=progress.count_remote)
        except DistccError as exc:
            sys.stderr.write(f"error: {exc}\n")
            Exit(1)
        else:
            SetOption("num_jobs", found.slots())  # -j given on the command line wins
            sys.stdout.write(f"opbuild: distcc: {found.hosts} ({found.slots()} slots), -j{GetOption('num_jobs')}\n")
    else:
        SetOption("num_jobs", local_jobs())  # as many jobs as CPUs; -j given on the command line wins
    options = BuildOptions(root=root, out=out, vendor=env["VENDOR"], socs=socs, toolchain=toolchain, distcc=distcc)
    if env["EXPLAIN"]:
        from opbuild.builder.scons_tool import enable_explain

        enable_explain(root, progress)
    # Ops whose outputs are current, or restored from their bundle, are not declared (bundles.py);
    # not when cleaning (everything must be declared to be removed) or only looking (-n, -q).
    looking = cleaning or bool(GetOption("no_exec")) or bool(GetOption("question"))
    ops_cache = OpsCache(enabled=not looking,
                         cache_dir=cache_dir if cache_dir and not GetOption("cache_disable") else None,
                         push=not GetOption("cache_readonly"), jobs=int(GetOption("num_jobs") or 1) * 2)
    from opbuild.builder.outlock import lock_output

    try:
        lock_output(out)  # from here on the build writes under out/: one build at a time
        build = declare_build(env, specs, options, ops_cache, others=others, progress=progress,
                              spec_layers=selection.layers)
    except OSError as exc:
        sys.stderr.write(f"error: {_os_error(exc, out)}\n")
        Exit(1)
    targets = build.targets
    Alias("ops", targets)
    _package_alias(env, targets, out, env["VENDOR"])
    from opbuild.deploy.pack import run_file_name

    Clean("ops", [str(out / "opp"), str(out / "build"), str(out / CACHE_FILE.parent), str(out / run_file_name())])
    Default("ops")
    if not GetOption("no_exec"):
        spec_cache.save()  # everything is declared: from here on, the build may write
    if cleaning or GetOption("no_exec") or GetOption("question"):
        return
    record = (functools.partial(_record_manifest, manifest_path, key, [compiler, *toolchain.tool_files()], build, root,
                                started_ns=started_ns)
              if fast_ok else None)  # record(summary), after a complete build
    atexit.register(_summary, specs, options, started, build, record)


def _record_manifest(path: Path, key: str, tools: list[str | None], build, root: Path, summary: dict,
                     started_ns: int) -> None:
    """After a complete build: the files of the graph, and of the ops left out of it (current or
    restored), and the compiler and the toolchain's own programs and files (`tools`), for the
    next run's up-to-date check."""
    from SCons.Node.FS import File

    from opbuild.builder import manifest

    targets = build.targets
    derived = {t.get_abspath() for t in targets} | build.undeclared_outputs
    files: set[str] = set(derived) | build.undeclared_inputs
    seen: set[int] = set()
    stack = list(targets)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, File):
            files.add(node.get_abspath())
        stack.extend(node.children())
    sources = files - derived
    dirs = {str(root / "ops")} | {os.path.dirname(f) for f in sources} | build.op_dirs
    for tool in tools:
        if tool:
            sources.add(tool)
            files.add(tool)
    files.update(str(p) for p in (root / "SConstruct", PACKAGED_SCONSTRUCT) if p.is_file())
    manifest.record(path, key, sorted(files), derived, sorted(dirs), summary, started_ns)


def _package_alias(env, targets, out: Path, vendor: str) -> None:
    """`scons package`: the build, then CANN's installer of the vendor package,
    out/custom_opp_<os>_<arch>.run (opbuild/deploy/pack.py, as `opbuild pack`)."""
    from SCons.Action import Action

    def write_installer(target, source, env) -> int:
        from opbuild.deploy.install import InstallError
        from opbuild.deploy.pack import pack

        try:
            path = pack(out / "opp" / "vendors" / vendor)
        except (InstallError, OSError) as exc:
            sys.stderr.write(f"error: scons package: {exc}\n")
            return 1
        sys.stdout.write(f"opbuild: wrote {path} ({path.stat().st_size} bytes)\n")
        return 0

    alias = env.Alias("package", targets, Action(write_installer, None))
    env.AlwaysBuild(alias)


def _toolchain(name: str, cc: str, root: Path):
    if name == "host":
        from opbuild.builder.toolchain import HostToolchain

        return HostToolchain(cc=cc or None, root=str(root))
    return get_toolchain(name, root=str(root), cc=cc or None)


def _check_vendor(vendor: str) -> None:
    from opbuild.builder.select import SelectionError

    if not vendor or vendor in (".", "..") or any(c in vendor for c in ",=/\\") or any(c.isspace() for c in vendor):
        raise SelectionError(f"error: VENDOR={vendor!r} is not a vendor directory name "
                             "(no commas, '=', slashes or whitespace)")


def _select_socs(specs, wanted: str):
    """(specs to build, SoCs asked for or None). SOC=a,b keeps the ops that support any of them;
    an unknown SoC, or one no selected op supports, is an error."""
    from opbuild.abi.platform import known_socs
    from opbuild.builder.select import SelectionError

    socs = tuple(dict.fromkeys(s.strip().lower() for s in wanted.split(",") if s.strip()))
    if not socs:
        return specs, None
    unknown = [s for s in socs if s not in known_socs()]
    if unknown:
        raise SelectionError(f"error: SOC names unknown SoC(s) {', '.join(unknown)}; known: {', '.join(known_socs())}")
    supported = {soc for spec in specs for soc in spec.socs}
    unsupported = [s for s in socs if s not in supported]
    if unsupported:
        raise SelectionError(f"error: no selected op supports SOC={','.join(unsupported)}; "
                             f"the ops' SoCs: {', '.join(sorted(supported))}")
    return [spec for spec in specs if set(spec.socs) & set(socs)], socs


STALE_LISTED = 40
"""At most this many stale files are named in the summary of a failed build."""


def stale_files(targets, failed_nodes, opp: Path) -> tuple[list[tuple[str, str]], int]:
    """After a failed build: the package files (under `opp`) that exist but were not rebuilt,
    as (path, why): the targets of the failed steps (`failed_nodes`, "its step failed"), then
    every target that depends on one of them ("depends on a failed step"); and how many other
    package targets were left unchecked because the build stopped. Every one of them still holds
    what an earlier build wrote (targets are precious), so the package stays usable, but may not
    match its sources."""
    from SCons.Node import executed, up_to_date

    prefix = str(opp) + os.sep
    users: dict[int, list] = {}
    for t in targets:
        for child in t.children():
            users.setdefault(id(child), []).append(t)
    why: dict[int, tuple[Any, str]] = {}  # (an SCons node: untyped, SCons has no stubs)
    stack = [n for node in failed_nodes  # every target of a failed step
             for n in (node.get_executor().get_all_targets() if node.has_builder() else [node])]
    for t in stack:
        why[id(t)] = (t, "its step failed")
    while stack:
        for user in users.get(id(stack.pop()), ()):
            if id(user) not in why and user.get_state() not in (executed, up_to_date):
                why[id(user)] = (user, "depends on a failed step")
                stack.append(user)
    listed = [(t.get_abspath(), reason) for t, reason in why.values()
              if t.get_abspath().startswith(prefix) and os.path.lexists(t.get_abspath())]
    unchecked = sum(1 for t in targets if id(t) not in why and t.get_abspath().startswith(prefix)
                    and t.get_state() not in (executed, up_to_date) and os.path.lexists(t.get_abspath()))
    return sorted(listed, key=lambda item: (item[1] != "its step failed", item[0])), unchecked


def _stale_report(targets, failures, options) -> str:
    nodes = [bf.node for bf in failures if getattr(bf, "node", None) is not None]
    files, unchecked = stale_files(targets, nodes, options.out / "opp")
    if not files and not unchecked:
        return "opbuild: no package file was left stale\n"
    lines = []
    if files:
        lines.append(f"opbuild: the packages keep the previous build's files; {len(files)} are now stale "
                     f"(not rebuilt from the current sources):\n")
        for path, why in files[:STALE_LISTED]:
            lines.append(f"  {os.path.relpath(path, options.root)} ({why})\n")
        if len(files) > STALE_LISTED:
            lines.append(f"  ... and {len(files) - STALE_LISTED} more\n")
    if unchecked:
        lines.append(f"opbuild: {unchecked} other package file(s) were not checked (the build stopped at the "
                     f"failure; `scons -k ops` builds everything it can)\n")
    return "".join(lines)


def _summary(specs, options, started: float, build, record) -> None:
    """One line at the end of `scons ops`: ops, binaries, steps run, seconds; the failed steps.
    Records the ops SCons built (and stores their bundles); after a complete successful build,
    `record(summary)` writes the up-to-date manifest."""
    from SCons.Node import executed, up_to_date
    from SCons.Script import GetBuildFailures

    progress = build.progress
    targets = build.targets
    try:
        build.finish()
    except Exception as exc:  # noqa: BLE001 - the outputs stand, but the next build would trust a stale record
        from opbuild.builder.bundles import INSTALLED_FILE

        _fatal(f"error: cannot record the built ops ({INSTALLED_FILE}): {_os_error(exc, options.out / INSTALLED_FILE)}")
    seconds = time.monotonic() - started
    binaries = sum(len(s.binaries) * len(s.packages) * len([c for c in s.socs if options.socs is None or c in options.socs])
                   for s in specs)  # every kernel binary built, in every package the op goes into
    failures = GetBuildFailures()
    # every target built or found up to date (not so after Ctrl-C, which may report no failure)
    complete = all(t.get_state() in (executed, up_to_date) for t in targets)
    status = "FAILED" if failures else "ok" if complete else "INCOMPLETE"
    from opbuild.builder import remote

    server = remote.active()
    from_remote = f"{progress.from_remote} from remote cache, " if server is not None else ""
    line = (f"opbuild: {status}: {len(specs)} ops, {binaries} kernel binaries, "
            f"{progress.done}/{progress.total} steps run ({progress.compiled} compiled, {progress.cached} from cache, "
            f"{from_remote}{progress.remote} remote), {seconds:.1f} s\n")
    if server is not None:  # before the summary line (the last line of a build)
        (sys.stdout if not failures else sys.stderr).write(server.summary())
    try:
        if not failures:
            if complete and record is not None:
                try:
                    record({"ops": len(specs), "binaries": binaries, "steps": progress.total,
                            "names": sorted(s.op for s in specs)})
                except Exception as exc:  # noqa: BLE001 - a full disk, a read-only out/: say so, exit 1
                    sys.stdout.write(line)
                    _fatal(f"error: cannot write the up-to-date manifest: {_os_error(exc, options.out)}")
            (sys.stdout if complete else sys.stderr).write(line)
            sys.stdout.flush()
            return
        sys.stdout.flush()
        out = [line, f"opbuild: {len(failures)} step(s) failed:\n"]
        for bf in failures:
            node = getattr(bf, "node", None)
            step = progress.step_of(str(node)) if node is not None else None
            what = step.label if step is not None else str(node or bf.filename or "?")
            out.append(f"  {what}: {bf.errstr}\n")
        out.append(_stale_report(targets, failures, options))
        sys.stderr.write("".join(out))
        sys.stderr.flush()
    except BrokenPipeError:  # `scons ops | head`
        pass


def _os_error(exc: BaseException, near: Path) -> str:
    """One line for an error writing under `near`: the file it names, and why."""
    if isinstance(exc, OSError):
        where = exc.filename2 or exc.filename or near  # (os.replace: the file it was replacing)
        return f"{where}: {exc.strerror or exc}"
    return f"{near}: {type(exc).__name__}: {exc}"


def _fatal(message: str) -> None:
    """At exit (after SCons wrote its signatures): print `message` and end the process with
    status 1. An exception in an atexit handler would print a traceback and keep status 0."""
    try:
        sys.stdout.flush()
        sys.stderr.write(message.rstrip("\n") + "\n")
        sys.stderr.flush()
    finally:
        os._exit(1)
