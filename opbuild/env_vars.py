"""Every environment variable opbuild reads, in one table: name, who reads it, its values, what it does.

Why: the variables are read where they are used (the build, the runtime, the C ABI, the `.run`
scripts), so no module shows them all, and two were in no document. This table is the list (name,
reader, values, default, type and range): docs/environment.md (`python -m opbuild.env_vars`),
`opbuild env --list` and the C names and `int` rules of opbuild/vocabulary_gen.h are generated from
it; `int_setting` is the Python reader of an `int` setting; `warn_unknown` names a misspelt
`OPBUILD_*` variable. tests/test_env_vars.py
fails when the code reads an `OPBUILD_*` variable the table lacks, when the table names one nothing
reads, or when the page is stale. CANN's own variables (`ASCEND_*`) are documented where they are
used (docs/runtime.md, docs/toolkit.md); only opbuild's are here.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, TextIO

from opbuild.abi.vocabulary import DEFAULT_SOC


@dataclass(frozen=True)
class EnvVar:
    name: str
    reader: str
    """Who reads it: build (`scons ops`, `opbuild build`), validate, runtime (Python), C ABI (the acl
    library, in C), installer (the `.run` scripts), tests."""
    values: str
    """The values it takes (an `int` setting's are derived from its range when this is empty)."""
    doc: str
    see: str
    """The page that explains it in full."""
    default: str = "unset"
    """What holds while it is unset (the value, or what the code does)."""
    type: str = "str"
    """`int`: parsed by `int_setting` in Python and by the same rule in C (opbuild/vocabulary_gen.h's
    `_DEFAULT`/`_MIN`/`_MAX`); anything else is read by its reader as documented."""
    minimum: int | None = None
    maximum: int | None = None

    @property
    def shown_values(self) -> str:
        if self.values or self.type != "int":
            return self.values
        return f"an int in {self.minimum}..{self.maximum}"

    @property
    def c_name(self) -> str:
        """Its name macro in opbuild/vocabulary_gen.h (`OPBUILD_ENV_SOC` for OPBUILD_SOC): C reads
        `getenv(OPBUILD_ENV_SOC)`, so a misspelt name does not compile."""
        return "OPBUILD_ENV_" + self.name.removeprefix("OPBUILD_")

    @property
    def read_in_c(self) -> bool:
        return "C ABI" in self.reader


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
    EnvVar("OPBUILD_REMOTE_CACHE", "build", "read-write | read-only",
           "read-only: the build reads the remote cache and never writes it (untrusted CI)", "docs/cli.md",
           default="read-write"),
    EnvVar("OPBUILD_CACHE_TIMEOUT", "build", "seconds > 0",
           "the remote cache's connect and read timeouts", "docs/cli.md", default="5 s to connect, 30 s to read"),
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
           "where `opbuild validate` keeps tiling sources compiled alone", "docs/cli.md",
           default="under ~/.cache/opbuild"),
    # ---- the runtime ---------------------------------------------------------------------------
    EnvVar("OPBUILD_SOC", "runtime, C ABI", "a SoC name",
           "the SoC whose binaries calls select (part of every cache key)", "docs/runtime.md",
           default=DEFAULT_SOC),
    EnvVar("OPBUILD_ISOLATION", "runtime, C ABI", "process | unset",
           "process: kernels run in an isolated worker; a crash, hang or exit becomes an error naming op, "
           "binary, block and signal", "docs/runtime.md", default="in-process"),
    EnvVar("OPBUILD_KERNEL_TIMEOUT", "runtime, C ABI", "seconds > 0",
           "under OPBUILD_ISOLATION=process: kill a launch that runs longer and report it", "docs/runtime.md"),
    EnvVar("OPBUILD_SIM_THREADS", "runtime, C ABI", "an int in 1..1024",
           "the simulator's thread count (a bad value fails the next launch)", "docs/runtime.md",
           default="the CPUs"),
    EnvVar("OPBUILD_SIM_LIB", "runtime, C ABI", "a path",
           "another build of the simulator library to load instead of the one installed beside the runtime "
           "(debugging the simulator)", "docs/runtime.md", default="the installed one"),
    EnvVar("OPBUILD_PARAM_CACHE_SIZE", "runtime, C ABI", "",
           "the op-parameter (plan) cache bound per thread, read once per process; a bad value is a warning "
           "naming it, and the default holds", "docs/runtime.md", default="1024", type="int", minimum=1,
           maximum=1 << 20),
    EnvVar("OPBUILD_NO_FASTPATH", "runtime", "1 | unset",
           "1: the C extension's hit path is not used; every call takes the pure-Python path (the "
           "reference the equivalence tests compare against)", "docs/runtime.md"),
    EnvVar("OPBUILD_OM_TRUST", "runtime, C ABI", "1 | unset",
           "1: aclmdlLoadFromFile/FromMem load models that carry code (the C spelling of `om run --trust`)",
           "docs/capi.md"),
    EnvVar("OPBUILD_PYTHON", "C ABI, installer", "a Python executable",
           "the interpreter the acl library embeds and the `.run` installer uses (set by the toolkit's "
           "set_env.sh)", "docs/capi.md", default="the one that built opbuild"),
    # ---- debugging tools -------------------------------------------------------------------------
    EnvVar("OPBUILD_DUMP", "runtime", "a directory",
           "data dump: each launch of the selected ops writes its tensors as .npy and a JSON index there "
           "(also `rt.dump(DIR)`, `aclInit` with an acl.json `dump` object)", "docs/debugging.md"),
    EnvVar("OPBUILD_DUMP_MODE", "runtime", "input | output | all",
           "with OPBUILD_DUMP: which tensors of a launch are dumped", "docs/debugging.md", default="output"),
    EnvVar("OPBUILD_DUMP_OPS", "runtime", "OpA,OpB",
           "with OPBUILD_DUMP: the op types dumped", "docs/debugging.md", default="every op"),
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
    EnvVar("OPBUILD_SLOW_TESTS", "tests", "1 | unset",
           "1: tests/builder/test_build_distcc.py compiles four binaries per generated op instead of one",
           "README.md"),
    EnvVar("OPBUILD_FUZZ_LONG", "tests", "1 | unset",
           "1: tests/om/test_om_fuzz.py runs its long fuzz campaign", "README.md"),
)

BY_NAME: dict[str, EnvVar] = {v.name: v for v in ENV_VARS}

PAGE = Path("docs") / "environment.md"


def _warn(message: str, stream: TextIO | None) -> None:
    print(f"opbuild: warning: {message}", file=sys.stderr if stream is None else stream)


_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*", re.ASCII)
"""The one spelling of an `int` setting, in Python and in C (strtol after optional blanks, then
only blanks): decimal digits with an optional sign, no `_`, no `0x`."""

_BAD_INT_WARNED: set[tuple[str, str]] = set()


def int_setting(name: str, environ: Mapping[str, str] | None = None, stream: TextIO | None = None) -> int:
    """The value of the `int` setting `name` (EnvVar.type == "int"): its environment value when that
    is an integer in [minimum, maximum], else its default. A set value that is not is a warning on
    stderr naming the variable, the value and the rule (once per process and value), never an error.
    The acl library reads it in C by the same rule and words (native/src/setting.h over
    opbuild/vocabulary_gen.h's `<NAME>_DEFAULT/_MIN/_MAX`), so a C program and Python agree."""
    var = BY_NAME[name]
    assert var.type == "int" and var.minimum is not None and var.maximum is not None, name
    default = int(var.default)
    text = (os.environ if environ is None else environ).get(name)
    if text is None or text == "":
        return default
    if _INT_TEXT.fullmatch(text) and var.minimum <= int(text) <= var.maximum:
        return int(text)
    if (name, text) not in _BAD_INT_WARNED:
        _BAD_INT_WARNED.add((name, text))
        _warn(f"{name}={text!r} is not an integer in {var.minimum}..{var.maximum}; using the default {default}",
              stream)
    return default


def unknown_names(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Each `OPBUILD_*` variable of the environment that opbuild does not read, with the "did you mean"
    suffix of the nearest known name ("" when none is near)."""
    unknown = sorted(n for n in (os.environ if environ is None else environ)
                     if n.startswith("OPBUILD_") and n not in BY_NAME)
    if not unknown:
        return []
    from opbuild.suggest import did_you_mean  # difflib: only when there is something to suggest

    return [(n, did_you_mean(n, BY_NAME)) for n in unknown]


_CHECKED: list[bool] = []


def warn_unknown(environ: Mapping[str, str] | None = None, stream: TextIO | None = None) -> None:
    """Warn on stderr, once per process, about each unknown `OPBUILD_*` variable in the environment
    (a misspelt setting would otherwise be ignored in silence). Called by `import opbuild.runtime`
    and at the start of the `opbuild` command; never fatal."""
    if _CHECKED:
        return
    _CHECKED.append(True)
    for name, hint in unknown_names(environ):
        _warn(f"{name} is set but opbuild reads no such variable{hint} (`opbuild env --list` lists them)",
              stream)


def table() -> str:
    """`opbuild env --list`: each variable, its default and what it does, one per line, aligned."""
    width = max(len(v.name) for v in ENV_VARS)
    rows = [f"{'variable':<{width}}  {'default':<12}  what it does"]
    for v in ENV_VARS:
        rows.append(f"{v.name:<{width}}  {v.default:<12}  {v.doc} [{v.shown_values}; {v.reader}]")
    return "\n".join(rows) + "\n"


def markdown() -> str:
    """docs/environment.md."""
    lines = [
        "# Environment variables",
        "",
        "<!-- generated by `python -m opbuild.env_vars` from opbuild/env_vars.py; do not edit -->",
        "",
        "Every `OPBUILD_*` variable opbuild reads (`opbuild env --list` prints the same list). CANN's own",
        "(`ASCEND_OPP_PATH`, `ASCEND_CUSTOM_OPP_PATH`, `ASCEND_HOME_PATH`, ...) are explained where they are",
        "used: docs/runtime.md, docs/toolkit.md. An `OPBUILD_*` variable that is not in this list is a",
        "warning (with the nearest name) at `import opbuild.runtime` and at the start of the `opbuild`",
        "command.",
        "",
        "| variable | read by | values | default | what it does | see |",
        "|---|---|---|---|---|---|",
    ]
    def cell(text: str) -> str:
        return text.replace("|", "\\|")  # `1 | unset` inside a table cell

    for v in ENV_VARS:
        lines.append(f"| `{v.name}` | {v.reader} | {cell(v.shown_values)} | {cell(v.default)} | {cell(v.doc)} | "
                     f"{v.see} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    from opbuild.atomic import atomic_write

    atomic_write(root / PAGE, markdown().encode())
    print(f"wrote {root / PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
