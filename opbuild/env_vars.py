"""Every environment variable opbuild reads, in one table: name, who reads it, its values, what it does.

Why: the variables are read where they are used (the build, the runtime, the C ABI, the `.run`
scripts), so no module shows them all, and two were in no document. This table is the list;
docs/environment.md is generated from it (`python -m opbuild.env_vars`), and tests/test_env_vars.py
fails when the code reads an `OPBUILD_*` variable the table lacks, when the table names one nothing
reads, or when the page is stale. CANN's own variables (`ASCEND_*`) are documented where they are
used (docs/runtime.md, docs/toolkit.md); only opbuild's are here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EnvVar:
    name: str
    reader: str
    """Who reads it: build (`scons ops`, `opbuild build`), validate, runtime (Python), C ABI (the acl
    library, in C), installer (the `.run` scripts), tests."""
    values: str
    doc: str
    see: str
    """The page that explains it in full."""


ENV_VARS: tuple[EnvVar, ...] = (
    # ---- the build -----------------------------------------------------------------------------
    EnvVar("OPBUILD_CACHE_DIR", "build", "a directory",
           "the shared build cache (compile entries, op bundles, checked specs), verified on every read; "
           "shared between checkouts at any path", "docs/cli.md"),
    EnvVar("OPBUILD_CACHE_SECRET", "build", "any string",
           "the HMAC key of shared cache entries (local and remote): an entry without the right HMAC is "
           "rejected", "docs/cli.md"),
    EnvVar("OPBUILD_CACHE_URL", "build", "http(s)://[user:password@]host[:port]/prefix",
           "the remote tier behind OPBUILD_CACHE_DIR (Bazel's HTTP cache layout: ac/, cas/); the same as "
           "`scons ops CACHE_URL=...`", "docs/cli.md"),
    EnvVar("OPBUILD_REMOTE_CACHE", "build", "read-write (default) | read-only",
           "read-only: the build reads the remote cache and never writes it (untrusted CI)", "docs/cli.md"),
    EnvVar("OPBUILD_CACHE_TIMEOUT", "build", "seconds > 0",
           "the remote cache's connect and read timeouts (default 5 s to connect, 30 s to read)", "docs/cli.md"),
    EnvVar("OPBUILD_CACHE_TOKEN", "build", "a token",
           "sent to the remote cache as a Bearer token when the URL has no user:password (never printed)",
           "docs/cli.md"),
    EnvVar("OPBUILD_FULL_CHECK", "build", "1 | unset",
           "1: skip the build manifest's up-to-date answer and let SCons check the whole graph "
           "(benchmarks, debugging)", "docs/cli.md"),
    EnvVar("OPBUILD_MEMCHECK", "build, runtime, C ABI", "1 | unset",
           "at build time: kernels compiled with AddressSanitizer; at run time: the memory checker's "
           "reports (needs libasan preloaded)", "docs/runtime.md"),
    EnvVar("OPBUILD_VALIDATE_CACHE", "validate", "a directory",
           "where `opbuild validate` keeps tiling sources compiled alone (default: under ~/.cache/opbuild)",
           "docs/cli.md"),
    # ---- the runtime ---------------------------------------------------------------------------
    EnvVar("OPBUILD_SOC", "runtime, C ABI", "a SoC name (default ascend910b)",
           "the SoC whose binaries calls select (part of every cache key)", "docs/runtime.md"),
    EnvVar("OPBUILD_ISOLATION", "runtime, C ABI", "process | unset",
           "process: kernels run in an isolated worker; a crash, hang or exit becomes an error naming op, "
           "binary, block and signal", "docs/runtime.md"),
    EnvVar("OPBUILD_KERNEL_TIMEOUT", "runtime, C ABI", "seconds > 0",
           "under OPBUILD_ISOLATION=process: kill a launch that runs longer and report it", "docs/runtime.md"),
    EnvVar("OPBUILD_SIM_THREADS", "runtime, C ABI", "an int >= 1",
           "the simulator's thread count (default: the CPUs)", "docs/runtime.md"),
    EnvVar("OPBUILD_SIM_LIB", "runtime, C ABI", "a path",
           "another build of the simulator library to load instead of the one installed beside the runtime "
           "(debugging the simulator)", "docs/runtime.md"),
    EnvVar("OPBUILD_PARAM_CACHE_SIZE", "runtime, C ABI", "an int >= 1",
           "the op-parameter (plan) cache bound per thread, read once per process (default 1024 plans)",
           "docs/runtime.md"),
    EnvVar("OPBUILD_NO_FASTPATH", "runtime", "1 | unset",
           "1: the C extension's hit path is not used; every call takes the pure-Python path (the "
           "reference the equivalence tests compare against)", "docs/runtime.md"),
    EnvVar("OPBUILD_OM_TRUST", "runtime, C ABI", "1 | unset",
           "1: aclmdlLoadFromFile/FromMem load models that carry code (the C spelling of `om run --trust`)",
           "docs/capi.md"),
    EnvVar("OPBUILD_PYTHON", "C ABI, installer", "a Python executable",
           "the interpreter the acl library embeds and the `.run` installer uses (set by the toolkit's "
           "set_env.sh; default: the one that built opbuild)", "docs/capi.md"),
    # ---- debugging tools -------------------------------------------------------------------------
    EnvVar("OPBUILD_DUMP", "runtime", "a directory",
           "data dump: each launch of the selected ops writes its tensors as .npy and a JSON index there "
           "(also `rt.dump(DIR)`, `aclInit` with an acl.json `dump` object)", "docs/debugging.md"),
    EnvVar("OPBUILD_DUMP_MODE", "runtime", "input | output | all (default output)",
           "with OPBUILD_DUMP: which tensors of a launch are dumped", "docs/debugging.md"),
    EnvVar("OPBUILD_DUMP_OPS", "runtime", "OpA,OpB (default: every op)",
           "with OPBUILD_DUMP: the op types dumped", "docs/debugging.md"),
    EnvVar("OPBUILD_PROFILE", "runtime", "a file",
           "record every launch (host phases, per-block simulator times) and write a Chrome trace there "
           "at exit, with a summary on stderr (what `opbuild prof -o FILE -- cmd` sets)", "docs/debugging.md"),
    EnvVar("OPBUILD_PROFILE_PER_PROCESS", "runtime", "1 | unset",
           "set by `opbuild prof`: each process writes FILE.<pid>.json, merged by the command (not for users)",
           "docs/debugging.md"),
    EnvVar("OPBUILD_PROFILE_QUIET", "runtime", "1 | unset",
           "set by `opbuild prof`: processes print no summary; the command prints one (not for users)",
           "docs/debugging.md"),
    EnvVar("OPBUILD_MEMCHECK_PACKAGES", "runtime", "PLAIN_OPP=INSTRUMENTED_OPP[:...]",
           "set by `opbuild memcheck`: kernels and AI CPU libraries of the plain package are loaded from the "
           "instrumented build beside it", "docs/debugging.md"),
    # ---- internal --------------------------------------------------------------------------------
    EnvVar("OPBUILD_RUN_NAME", "installer", "a name",
           "set by the `.run` header and `opbuild install` for the install script: the name its messages "
           "give the installer (not for users)", "docs/package-format.md"),
    EnvVar("OPBUILD_ASCENDC_SAMPLES", "tests", "a directory",
           "a checkout of the public Ascend samples' operator/ascendc: the opt-in tests build and run them",
           "docs/ascendc.md"),
)

BY_NAME: dict[str, EnvVar] = {v.name: v for v in ENV_VARS}

PAGE = Path("docs") / "environment.md"


def markdown() -> str:
    """docs/environment.md."""
    lines = [
        "# Environment variables",
        "",
        "<!-- generated by `python -m opbuild.env_vars` from opbuild/env_vars.py; do not edit -->",
        "",
        "Every `OPBUILD_*` variable opbuild reads. CANN's own (`ASCEND_OPP_PATH`, `ASCEND_CUSTOM_OPP_PATH`,",
        "`ASCEND_HOME_PATH`, ...) are explained where they are used: docs/runtime.md, docs/toolkit.md.",
        "",
        "| variable | read by | values | what it does | see |",
        "|---|---|---|---|---|",
    ]
    for v in ENV_VARS:
        lines.append(f"| `{v.name}` | {v.reader} | {v.values} | {v.doc} | {v.see} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    from opbuild.atomic import atomic_write

    atomic_write(root / PAGE, markdown().encode())
    print(f"wrote {root / PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
