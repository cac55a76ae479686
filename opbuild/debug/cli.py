"""The debugging subcommands: `opbuild compare`, `opbuild prof`, `opbuild memcheck` (docs/debugging.md).

Collected in SUBCOMMANDS and registered by opbuild/cli.py (its last lines: this module does not import it); each
handler imports what it runs lazily, as every other command does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

SUBCOMMANDS: list[tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = []
"""(name, help, configure, run) of each subcommand below, in order: opbuild/cli.py registers them
(this layer sits below the command line, so it hands its commands up instead of importing it)."""


def command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None]):
    """Collect the decorated function as subcommand `name` (registered by opbuild/cli.py)."""

    def collect(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        SUBCOMMANDS.append((name, help, configure, run))
        return run

    return collect


ASAN_OPTIONS = "halt_on_error=0:suppress_equal_pcs=0:detect_leaks=0"
"""What the memory checker needs of AddressSanitizer (docs/runtime.md, "Kernel memory checker")."""


def _command_args(args: argparse.Namespace, name: str) -> list[str] | None:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print(f"opbuild {name}: error: give the command to run after --, e.g. opbuild {name} -- python app.py",
              file=sys.stderr)
        return None
    return cmd


def _run(cmd: list[str], env: dict[str, str], name: str) -> int:
    """Run the user's command unchanged; its exit status (1 with one line if it cannot start)."""
    try:
        return subprocess.run(cmd, env=env).returncode
    except OSError as exc:
        print(f"opbuild {name}: error: cannot run {cmd[0]}: {exc.strerror}", file=sys.stderr)
        return 1


# ~~~ compare ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_compare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dump", metavar="DUMP_DIR", help="a dump (OPBUILD_DUMP, rt.dump, acl.json's dump_path)")
    parser.add_argument("--reference", "-r", required=True, metavar="REF",
                        help="a directory laid out like the dump, or a Python file/module with a function per op type")
    parser.add_argument("--tolerance", action="append", default=[], metavar="DTYPE=VALUE",
                        help="the relative and absolute threshold of a dtype (defaults: float16=1e-3, bfloat16=4e-3, "
                             "float32=1e-4, float64=1e-7; other dtypes exact); repeatable")
    parser.add_argument("--json", action="store_true", help="print the results as JSON (for CI)")


@command("compare", "compare a data dump with a reference dump or reference functions: per tensor errors, cosine "
                    "similarity, elements over the dtype's threshold; exit 1 on any failure", _configure_compare)
def _compare(args: argparse.Namespace) -> int:
    from opbuild.debug.compare import run

    return run(args.dump, args.reference, args.tolerance, args.json)


# ~~~ prof ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_prof(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the Chrome trace / Perfetto JSON to write (open it in chrome://tracing or ui.perfetto.dev)")
    parser.add_argument("--html", metavar="PAGE", help="also write the summary and each op's blocks as one static "
                                                        "HTML page (a plot; opens without a network)")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to profile")


@command("prof", "run a command and record every kernel launch (host phases, per-block durations) as a Chrome "
                 "trace; prints a per-op summary", _configure_prof)
def _prof(args: argparse.Namespace) -> int:
    from opbuild.runtime.debug import profile

    cmd = _command_args(args, "prof")
    if cmd is None:
        return 1
    output = Path(args.output)
    with tempfile.TemporaryDirectory(prefix="opbuild-prof-") as tmp:
        env = dict(os.environ)
        env[profile.ENV_FILE] = str(Path(tmp) / "trace")
        env[profile.ENV_PER_PROCESS] = "1"
        env[profile.ENV_QUIET] = "1"
        rc = _run(cmd, env, "prof")
        parts = sorted(Path(tmp).glob("trace.*.json"))
        trace = profile.merge_traces(parts)
        try:
            profile.write_trace(trace, output)
            if args.html:
                from opbuild.runtime.debug.report import html_report

                page = Path(args.html)
                page.write_text(html_report(trace, " ".join(cmd)), encoding="utf-8")
        except OSError as exc:
            print(f"opbuild prof: error: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
            return 1
    print(profile.format_summary(profile.summary(trace)))
    if not parts:
        print("opbuild prof: the command made no launches through the opbuild runtime", file=sys.stderr)
    print(f"trace: {output} ({len(parts)} process{'es' if len(parts) != 1 else ''}); open it in ui.perfetto.dev")
    if args.html:
        print(f"page: {args.html}")
    return rc


# ~~~ memcheck ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _configure_memcheck(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", default=".", metavar="DIR",
                        help="the op project whose out/opp the command uses (default: .); its ops are built with "
                             "the checker into DIR/out/memcheck, beside the package")
    parser.add_argument("--build-option", action="append", default=[], metavar="NAME=VALUE",
                        help="a scons option of the project's build (SOC=, OPS=, TOOLCHAIN=...; VENDOR= is read "
                             "from DIR/out/opp when it holds one vendor package); repeatable")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to check")


def sanitizer_runtime() -> Path | None:
    """The C compiler's AddressSanitizer runtime (cc -print-file-name=libasan.so), if it has one."""
    cc = os.environ.get("CC", "cc").split()[0] or "cc"
    try:
        out = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = Path(out)
    return path.resolve() if path.is_absolute() and path.exists() else None


def build_options(project: Path, given: list[str]) -> list[str] | str:
    """The scons options of the checked build: VENDOR= of the plain build's one vendor package
    (DIR/out/opp/vendors/<vendor>), then the given ones; a message when one is malformed or OUT."""
    options: dict[str, str] = {}
    vendors = project / "out" / "opp" / "vendors"
    found = sorted(p.name for p in vendors.iterdir() if p.is_dir()) if vendors.is_dir() else []
    if len(found) == 1:
        options["VENDOR"] = found[0]
    for item in given:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            return f"--build-option {item!r}: expected NAME=VALUE (a scons option, e.g. SOC=ascend910b)"
        if name == "OUT":
            return "--build-option OUT=...: the checked build's output directory is fixed (out/memcheck)"
        options[name] = value
    return [f"{k}={v}" for k, v in options.items()]


def memcheck_env(base: dict[str, str], asan: Path, plain: Path, instrumented: Path) -> dict[str, str]:
    """The environment of a checked command: the sanitizer preloaded and set up, the runtime told
    to take kernels from the instrumented build."""
    from opbuild.runtime.debug.variant import ENV

    env = dict(base)
    env["LD_PRELOAD"] = " ".join(p for p in (str(asan), base.get("LD_PRELOAD", "")) if p)
    extra = base.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = ASAN_OPTIONS + (f":{extra}" if extra else "")
    env["PYTHONMALLOC"] = "malloc"
    env["OPBUILD_MEMCHECK"] = "1"
    env[ENV] = f"{plain}={instrumented}"
    symbolizer = shutil.which("llvm-symbolizer")
    if symbolizer and "ASAN_SYMBOLIZER_PATH" not in base:
        env["ASAN_SYMBOLIZER_PATH"] = symbolizer  # source file:line in the reports
    return env


@command("memcheck", "build the project's kernels with the memory checker beside the package and run a command "
                     "under it (no environment to set by hand)", _configure_memcheck)
def _memcheck(args: argparse.Namespace) -> int:
    from opbuild.runtime.debug.variant import MEMCHECK_OUT

    cmd = _command_args(args, "memcheck")
    if cmd is None:
        return 1
    project = Path(args.project).resolve()
    if not (project / "ops").is_dir():
        print(f"opbuild memcheck: error: {project} has no ops/ directory (give the op project with --project)",
              file=sys.stderr)
        return 1
    asan = sanitizer_runtime()
    if asan is None:
        print("opbuild memcheck: error: the C compiler has no AddressSanitizer runtime (cc -print-file-name=libasan.so)",
              file=sys.stderr)
        return 1
    options = build_options(project, args.build_option)
    if isinstance(options, str):
        print(f"opbuild memcheck: error: {options}", file=sys.stderr)
        return 1
    build_env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "SCONSFLAGS")}
    build_env["OPBUILD_MEMCHECK"] = "1"
    scons_args = ["ops", f"OUT={MEMCHECK_OUT}", *options]
    build = subprocess.run([sys.executable, "-m", "SCons", "-Q", *scons_args], cwd=project, env=build_env,
                           capture_output=True, text=True)
    if build.returncode != 0:
        sys.stderr.write(build.stdout + build.stderr)
        print(f"opbuild memcheck: error: the checked build (OPBUILD_MEMCHECK=1 scons {' '.join(scons_args)}) failed "
              f"in {project}", file=sys.stderr)
        return 1
    summary = [line for line in build.stdout.splitlines() if line.startswith("opbuild: ok:")]
    print(f"opbuild memcheck: instrumented build in {project / MEMCHECK_OUT}: "
          f"{summary[-1][len('opbuild: ok: '):] if summary else 'done'}", file=sys.stderr)
    env = memcheck_env(dict(os.environ), asan, project / "out" / "opp", project / MEMCHECK_OUT / "opp")
    return _run(cmd, env, "memcheck")
