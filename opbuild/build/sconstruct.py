"""The body of the repository's SConstruct: options, spec loading, the graph, the summary.

Runs inside SCons. Specs are loaded and checked (schema, semantics, simplified-key rules)
before any target is declared, so a bad spec stops the build with `path:line:col` errors and
nothing under `out/` is written.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from pathlib import Path

from SCons.Script import (  # type: ignore[import-not-found]
    Alias,
    CacheDir,
    Clean,
    Decider,
    Default,
    Dir,
    Environment,
    EnumVariable,
    Exit,
    GetOption,
    Help,
    PathVariable,
    SetOption,
    Variables,
)

from opbuild.build.toolchain import TOOLCHAINS, ToolchainError, get_toolchain

HELP = """
opbuild: build CANN-style op packages from ops/<op>/op.yaml

  scons ops                 build every op under ops/ into out/opp/
  scons ops OPS=A,B         only these ops (op type or directory name)
  scons -c                  remove everything the build made
  scons -j N ops            N parallel compiles

Options (NAME=value on the command line):
  OPS=A,B        ops to build (default: all under ops/)
  SOC=s1,s2      SoCs to build for (default: each spec's `socs`)
  VENDOR=name    vendor directory under out/opp/vendors/ (default: customize)
  TOOLCHAIN=t    kernel toolchain: {toolchains} (default: host)
  OUT=dir        build output directory (default: out)
  CC=cc          host C compiler (default: $CC or cc)
Environment:
  OPBUILD_CACHE_DIR   shared SCons cache directory (CacheDir) for compiled files
"""


def main() -> None:
    root = Path(Dir("#").abspath)
    variables = Variables(None)
    variables.Add("OPS", "ops to build (comma-separated op types or directory names)", "")
    variables.Add("SOC", "SoCs to build for (comma-separated)", "")
    variables.Add("VENDOR", "vendor name", "customize")
    variables.Add(EnumVariable("TOOLCHAIN", "kernel toolchain", "host", allowed_values=sorted(TOOLCHAINS)))
    variables.Add("OUT", "output directory", "out")
    variables.Add("CC", "host C compiler", os.environ.get("CC", "cc"))
    env = Environment(tools=[], variables=variables, ENV={"PATH": os.environ.get("PATH", "")})
    Help(HELP.format(toolchains="|".join(sorted(TOOLCHAINS))), append=False)
    unknown = variables.UnknownVariables()
    if unknown:
        sys.stderr.write(f"error: unknown option(s): {', '.join(sorted(unknown))} (see scons -h)\n")
        Exit(2)
    if GetOption("help"):
        return

    Decider("content-timestamp")
    SetOption("implicit_cache", 1)
    SetOption("max_drift", 1)
    cache_dir = os.environ.get("OPBUILD_CACHE_DIR")
    if cache_dir:
        CacheDir(cache_dir)

    from opbuild.build.scons_tool import BuildOptions, declare_build
    from opbuild.build.select import CACHE_FILE, SelectionError, select_specs

    started = time.monotonic()
    cleaning = bool(GetOption("clean"))
    out = root / env["OUT"]
    try:
        specs = select_specs(root / "ops", env["OPS"], cache_file=None if cleaning else out / CACHE_FILE)
        specs, socs = _select_socs(specs, env["SOC"])
    except SelectionError as exc:
        sys.stderr.write(f"{exc}\n")
        Exit(1)
    try:
        toolchain = _toolchain(env["TOOLCHAIN"], env["CC"], root)
    except ToolchainError as exc:
        sys.stderr.write(f"error: {exc}\n")
        Exit(1)

    options = BuildOptions(root=root, out=out, vendor=env["VENDOR"], socs=socs, toolchain=toolchain)
    targets = declare_build(env, specs, options)
    Alias("ops", targets)
    Clean("ops", [str(out / "opp"), str(out / "build"), str(out / CACHE_FILE.parent)])
    Default("ops")
    if not cleaning:
        atexit.register(_summary, specs, options, started)


def _toolchain(name: str, cc: str, root: Path):
    if name == "host":
        from opbuild.build.toolchain import HostToolchain

        return HostToolchain(cc=cc or None, root=str(root))
    return get_toolchain(name, root=str(root))


def _select_socs(specs, wanted: str):
    """(specs to build, SoCs asked for or None). SOC=a,b keeps the ops that support any of them;
    an unknown SoC, or one no selected op supports, is an error."""
    from opbuild.abi.platform import known_socs
    from opbuild.build.select import SelectionError

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


def _summary(specs, options, started: float) -> None:
    """One line at the end of `scons ops`: ops, binaries, steps run, seconds; the failed steps."""
    from SCons.Script import GetBuildFailures  # type: ignore[import-not-found]

    from opbuild.build.scons_tool import PROGRESS

    seconds = time.monotonic() - started
    binaries = sum(len(s.binaries) * len([c for c in s.socs if options.socs is None or c in options.socs])
                   for s in specs)
    cached = f", {PROGRESS.cached} from cache" if PROGRESS.cached else ""
    failures = GetBuildFailures()
    status = "FAILED" if failures else "ok"
    line = (f"opbuild: {status}: {len(specs)} ops, {binaries} kernel binaries, "
            f"{PROGRESS.done}/{PROGRESS.total} steps run{cached}, {seconds:.1f} s\n")
    if not failures:
        sys.stdout.write(line)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    out = [line, f"opbuild: {len(failures)} step(s) failed:\n"]
    for bf in failures:
        node = getattr(bf, "node", None)
        step = PROGRESS.step_of(str(node)) if node is not None else None
        what = step.label if step is not None else str(node or bf.filename or "?")
        out.append(f"  {what}: {bf.errstr}\n")
    sys.stderr.write("".join(out))
    sys.stderr.flush()
