"""The body of the repository's SConstruct: options, spec loading, the graph, the summary.

Runs inside SCons. Specs are loaded and checked (schema, semantics, simplified-key rules)
before any target is declared, so a bad spec stops the build with `path:line:col` errors and
nothing under `out/` is written.
"""

from __future__ import annotations

import os
import sys
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
    from opbuild.build.select import SelectionError, select_specs

    try:
        specs = select_specs(root / "ops", env["OPS"])
    except SelectionError as exc:
        sys.stderr.write(f"{exc}\n")
        Exit(1)
    try:
        toolchain = get_toolchain(env["TOOLCHAIN"], root=str(root))
        if env["CC"] and env["TOOLCHAIN"] == "host":
            from opbuild.build.toolchain import HostToolchain

            toolchain = HostToolchain(cc=env["CC"], root=str(root))
    except ToolchainError as exc:
        sys.stderr.write(f"error: {exc}\n")
        Exit(1)

    socs = tuple(s for s in env["SOC"].split(",") if s) or None
    out = root / env["OUT"]
    options = BuildOptions(root=root, out=out, vendor=env["VENDOR"], socs=socs, toolchain=toolchain)
    targets = declare_build(env, specs, options)
    Alias("ops", targets)
    Clean("ops", [str(out / "opp"), str(out / "build")])
    Default("ops")
