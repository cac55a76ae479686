"""Build at scale: a clean build of a generated N-op × 4-binary package, side by side

    local -j2 | through distcc, two loopback distccd daemons (-j4) | cold cache (populating
    OPBUILD_CACHE_DIR) | warm cache (a clean second checkout at another path, with opbuild copied to
    another path too: every op restored from its bundle)
    | `opbuild pack` of the vendor package (time, .run size) | warm per-file cache only (bundles
    removed: every compile retrieved by SCons) | one kernel
    edited in the second checkout

    python bench/build_scale_bench.py [--ops 200] [--jobs 2] [--distcc-jobs 4]

Needs distcc/distccd for the distcc row (skipped otherwise). Prints a table; asserts nothing.
The daemons run in a temporary directory and are killed at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"steps run \((\d+) compiled, (\d+) from cache, (\d+) remote\)")


def _env(extra: dict[str, str] | None = None, code: Path = REPO) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPBUILD_CACHE_DIR", "DISTCC_HOSTS", "SCONSFLAGS")}
    env["PYTHONPATH"] = str(code)
    env["OPBUILD_FULL_CHECK"] = "1"
    env.update(extra or {})
    return env


def checkout(source: Path, name: str) -> Path:
    """A fresh copy of the generated project (no out/): every clean build gets its own, because
    deleting a large out/ just before a build slows that build's file creation on some file
    systems (ext4 with `discard`) and would be timed as part of it."""
    dest = source.parent / name
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("out"))
    return dest


def copy_code(dest: Path) -> Path:
    """A copy of opbuild (package with its native libraries, templates, schemas) at `dest`: a
    teammate's install at another path (PYTHONPATH of the builds run with code=dest)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "opbuild", dest / "opbuild", symlinks=True, ignore=ignore)
    for name in ("templates", "schemas"):
        shutil.copytree(REPO / name, dest / name, ignore=ignore)
    shutil.copy2(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def build(project: Path, jobs: int, extra: dict[str, str] | None = None, args: tuple[str, ...] = (),
          code: Path = REPO) -> tuple[float, str]:
    os.sync()  # the previous build's writes are not this one's
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-C", str(project), f"-j{jobs}", "ops", *args],
                          env=_env(extra, code), capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds, proc.stdout.strip().splitlines()[-1]


def start_daemons(workdir: Path, n: int = 2) -> list[tuple[subprocess.Popen, int]]:
    daemons = []
    for _ in range(n):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = workdir / f"distccd-{port}.log"
        log.touch()
        log.chmod(0o666)
        proc = subprocess.Popen(["distccd", "--daemon", "--no-detach", "--allow", "127.0.0.1", "--listen", "127.0.0.1",
                                 "--port", str(port), "--jobs", "2", "--log-file", str(log)],
                                start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("distccd did not start")
                time.sleep(0.05)
        daemons.append((proc, port))
    return daemons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--distcc-jobs", type=int, default=4)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="opbuild-scale-"))
    rows = []
    daemons = []
    elsewhere: Path | None = None
    try:
        project = tmp / "project"
        subprocess.run([sys.executable, str(REPO / "bench" / "gen_ops.py"), str(project), str(args.ops)], check=True,
                       capture_output=True)
        seconds, line = build(checkout(project, "local"), args.jobs)
        rows.append((f"clean build, local -j{args.jobs}", seconds, line))
        local = seconds

        if shutil.which("distcc") and shutil.which("distccd"):
            workdir = Path(tempfile.mkdtemp(prefix="opbuild-distccd-"))
            workdir.chmod(0o1777)
            daemons = start_daemons(workdir)
            hosts = " ".join(f"127.0.0.1:{port}/2" for _, port in daemons)
            seconds, line = build(checkout(project, "distcc"), args.distcc_jobs, args=(f"DISTCC_HOSTS={hosts}",))
            rows.append((f"clean build, distcc 2 loopback daemons -j{args.distcc_jobs}", seconds, line))
        else:
            rows.append(("clean build, distcc (not installed)", float("nan"), ""))

        cache = tmp / "cache"
        seconds, line = build(checkout(project, "cold"), args.jobs, {"OPBUILD_CACHE_DIR": str(cache)})
        rows.append((f"clean build, cold cache -j{args.jobs} (populates it)", seconds, line))
        # a teammate: the same sources in a checkout at another path, with opbuild installed at
        # another path too (cache keys name neither: opbuild/portable.py)
        elsewhere = Path(tempfile.mkdtemp(prefix="opbuild-scale-elsewhere-")) / "team" / "mate"
        other = elsewhere / "checkout2"
        shutil.copytree(project, other, ignore=shutil.ignore_patterns("out"))
        teammate_code = copy_code(elsewhere / "opbuild-install")
        seconds, line = build(other, args.jobs, {"OPBUILD_CACHE_DIR": str(cache)}, code=teammate_code)
        rows.append((f"clean build, warm cache -j{args.jobs} (second checkout, other path)", seconds, line))
        warm = seconds

        # CANN's installer of the vendor package (what `opbuild pack` writes)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "opbuild.cli", "pack", str(other / "out" / "opp" / "vendors" / "customize")],
                              env=_env(code=teammate_code), capture_output=True, text=True)
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            sys.exit(f"opbuild pack failed:\n{proc.stderr}")
        [run_file] = (other / "out").glob("custom_opp_*.run")
        rows.append((f"opbuild pack ({run_file.stat().st_size / 2**20:.1f} MiB .run)", seconds, ""))

        # the same, with SCons's per-file entries only (op bundles and checked specs left out of a copy)
        per_file = tmp / "cache-per-file"
        shutil.copytree(cache, per_file, ignore=shutil.ignore_patterns("*.opbundle", "*.opbundle.sha256",
                                                                       "*.opspec", "*.opspec.sha256"))
        third = checkout(project, "checkout3")
        seconds, line = build(third, args.jobs, {"OPBUILD_CACHE_DIR": str(per_file)})
        rows.append((f"clean build, warm per-file cache only -j{args.jobs}", seconds, line))

        # one op's kernel edited in the second checkout: that op is built, the rest stay current
        kernel = sorted((other / "ops").glob("*/kernel.c"))[0]
        kernel.write_text(kernel.read_text() + "\nint bench_edit(void) { return 1; }\n")
        seconds, line = build(other, args.jobs, {"OPBUILD_CACHE_DIR": str(cache)}, code=teammate_code)
        rows.append((f"one kernel edited, -j{args.jobs} (second checkout)", seconds, line))
    finally:
        for proc, _ in daemons:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
        if elsewhere is not None:
            shutil.rmtree(elsewhere.parent.parent, ignore_errors=True)

    print(f"{args.ops} generated ops x 4 binaries, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"| {'build':<52} | {'time':>8} | {'vs local':>8} | compiled / from cache / remote |")
    print(f"|{'-' * 54}|{'-' * 10}|{'-' * 10}|{'-' * 32}|")
    for name, seconds, line in rows:
        m = SUMMARY.search(line)
        counts = " / ".join(m.groups()) if m else ""
        print(f"| {name:<52} | {seconds:7.2f}s | {local / seconds:7.1f}x | {counts:<30} |")
    print(f"warm cache vs clean local: {local / warm:.1f}x faster (goal: at least 20x)")


if __name__ == "__main__":
    main()
