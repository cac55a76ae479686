"""Build benchmarks: spec validation + codegen per op, `scons ops` no-op and clean builds.

    python bench/build_bench.py [--ops 200] [--runs 5] [--big-clean] [--skip-clean]

Prints a table; nothing is asserted (goals: codegen <= 5 ms/op, no-op <= 1 s at 200 ops).
Projects are built in a temporary directory against this checkout's opbuild (PYTHONPATH);
the sample ops are the repository's ops/, the large project comes from bench/gen_ops.py.

Rows:
  validate           load_spec (YAML + schema + semantic checks) per op, in-process
  codegen            every render_* an op needs (header, shim, macros and JSON of every binary,
                     op config, its share of the package files) per op, in-process
  no-op (manifest)   `scons ops` when nothing changed: answered from out/.opbuild/uptodate.pickle
  no-op (SCons)      the same with OPBUILD_FULL_CHECK=1: SCons checks every node
  one kernel edited  rebuild after one op's kernel.c changed (its binaries + JSONs), -j2
  clean -jN          `scons -jN ops` from an empty out/
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import gen_ops  # noqa: E402


def _backdate(root: Path, seconds: float = 60) -> None:
    """Sources older than the build (the manifest does not trust files edited just before)."""
    past = time.time() - seconds
    for p in [*root.rglob("*"), root]:
        if not p.is_symlink():
            os.utime(p, (past, past))


def scons(project: Path, *args: str, jobs: int = 2, env: dict[str, str] | None = None) -> float:
    full_env = {k: v for k, v in os.environ.items() if k not in ("OPBUILD_CACHE_DIR", "OPBUILD_FULL_CHECK")}
    full_env["PYTHONPATH"] = str(REPO)
    full_env.update(env or {})
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", f"-j{jobs}", "ops", *args], cwd=project,
                          env=full_env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"scons failed in {project}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed


def sample_project(tmp: Path) -> Path:
    project = tmp / "samples"
    project.mkdir()
    shutil.copy2(REPO / "SConstruct", project / "SConstruct")
    shutil.copytree(REPO / "ops", project / "ops", ignore=shutil.ignore_patterns("__pycache__"))
    return project


def codegen_per_op(spec_files: list[Path], repeat: int = 3) -> tuple[float, float]:
    """(validate ms/op, codegen ms/op), best of `repeat` passes over all specs."""
    from opbuild import codegen
    from opbuild.codegen.python_api import render_python_api
    from opbuild.spec import load_spec

    specs = [load_spec(f) for f in spec_files]  # warm up: imports, templates compiled once
    best_load = best_gen = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        specs = [load_spec(f) for f in spec_files]
        best_load = min(best_load, time.perf_counter() - t)

        t = time.perf_counter()
        for spec in specs:
            codegen.render_tiling_header(spec)
            codegen.render_launch_shim(spec)
            for soc in spec.socs:
                for binary in spec.binaries:
                    codegen.binary_macros(spec, binary)
                    codegen.render_kernel_json(spec, binary, soc, bin_file_name=binary.name, bin_suffix=".so",
                                               sha256="0" * 64, core_type_name=spec.core_type)
                codegen.render_op_kernel_config(spec, soc, ".so")
        for soc in sorted({s for spec in specs for s in spec.socs}):
            codegen.render_binary_info_config(specs, soc, ".so")
            codegen.render_ops_info(specs, soc)
        render_python_api(specs)
        best_gen = min(best_gen, time.perf_counter() - t)
    n = len(spec_files)
    return best_load / n * 1000, best_gen / n * 1000


def noop_times(project: Path, runs: int, full: bool) -> list[float]:
    env = {"OPBUILD_FULL_CHECK": "1"} if full else None
    scons(project, env=env)  # settle: the first run after a build may still write the manifest
    return [scons(project, env=env) for _ in range(runs)]


def edit_time(project: Path, op_dir: Path, n: int) -> float:
    """Rebuild after one op's kernel gained a function (its binaries and JSONs rebuild)."""
    kernel = op_dir / "kernel.c"
    with open(kernel, "a") as f:
        f.write(f"\nint bench_edit_marker_{n}(void) {{ return {n}; }}\n")
    st = kernel.stat()
    os.utime(kernel, (st.st_atime, st.st_mtime + 2))
    return scons(project)


def clean_time(project: Path, jobs: int) -> float:
    for d in ("out",):
        shutil.rmtree(project / d, ignore_errors=True)
    for f in project.glob(".sconsign*"):
        f.unlink()
    return scons(project, jobs=jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200, help="generated ops for the large project")
    parser.add_argument("--runs", type=int, default=5, help="no-op runs (median reported)")
    parser.add_argument("--big-clean", action="store_true", help="also time a clean -j2 build of the large project")
    parser.add_argument("--skip-clean", action="store_true", help="skip the sample clean-build timings")
    args = parser.parse_args()

    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="opbuild-bench-") as tmp_name:
        tmp = Path(tmp_name)
        samples = sample_project(tmp)
        big = tmp / "generated"
        gen_ops.generate(big, args.ops)

        sample_specs = sorted(samples.glob("ops/*/op.yaml"))
        big_specs = sorted(big.glob("ops/*/op.yaml"))
        v, g = codegen_per_op(sample_specs)
        rows.append(("validate, per op", f"{len(sample_specs)} samples", f"{v:.2f} ms"))
        rows.append(("codegen, per op", f"{len(sample_specs)} samples", f"{g:.2f} ms"))
        v, g = codegen_per_op(big_specs, repeat=2)
        rows.append(("validate, per op", f"{len(big_specs)} generated", f"{v:.2f} ms"))
        rows.append(("codegen, per op", f"{len(big_specs)} generated", f"{g:.2f} ms"))

        _backdate(samples)
        if not args.skip_clean:
            for jobs in (1, 2):
                rows.append((f"clean build -j{jobs}", f"{len(sample_specs)} samples", f"{clean_time(samples, jobs):.2f} s"))
        else:
            scons(samples)
        for full in (False, True):
            times = noop_times(samples, args.runs, full)
            rows.append((f"no-op ({'SCons' if full else 'manifest'})", f"{len(sample_specs)} samples",
                         f"{statistics.median(times):.3f} s (min {min(times):.3f})"))
        rows.append(("one kernel edited", f"{len(sample_specs)} samples",
                     f"{edit_time(samples, samples / 'ops' / 'mul_custom', 1):.2f} s (4 binaries)"))

        _backdate(big)
        if args.big_clean:
            rows.append(("clean build -j2", f"{len(big_specs)} generated", f"{clean_time(big, 2):.1f} s"))
        else:
            scons(big, jobs=os.cpu_count() or 2)
        for full in (False, True):
            times = noop_times(big, args.runs, full)
            rows.append((f"no-op ({'SCons' if full else 'manifest'})", f"{len(big_specs)} generated",
                         f"{statistics.median(times):.3f} s (min {min(times):.3f})"))
        rows.append(("one kernel edited", f"{len(big_specs)} generated",
                     f"{edit_time(big, big_specs[len(big_specs) // 2].parent, 2):.2f} s (4 binaries)"))

    width = [max(len(r[i]) for r in rows) for i in range(3)]
    print(f"{'measure':<{width[0]}}  {'project':<{width[1]}}  time")
    print(f"{'-' * width[0]}  {'-' * width[1]}  {'-' * width[2]}")
    for r in rows:
        print(f"{r[0]:<{width[0]}}  {r[1]:<{width[1]}}  {r[2]}")
    print(f"\n(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
