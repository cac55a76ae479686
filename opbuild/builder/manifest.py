"""The up-to-date manifest: a no-op `scons ops` without walking the SCons graph.

SCons decides "up to date" by loading every spec, declaring every node and asking each one;
with hundreds of ops that takes seconds although nothing changed. After a complete, successful
`scons ops`, the manifest (`<out>/.opbuild/uptodate.pickle`) records

  * a key of everything the graph is declared from besides files: the build options (OPS, SOC,
    VENDOR, TOOLCHAIN, OUT, CC), OPBUILD_CACHE_DIR, the build variant (toolchain.build_variant:
    OPBUILD_MEMCHECK), the compiler found on PATH, the Python and SCons versions and the root;
  * the stat (size, mtime, ctime, inode) of every file node of the graph: sources, implicit
    dependencies found by the C scanner, generated files and outputs; of our code
    (`fingerprint.code_files`); of the SConstruct; and of the compiler;
  * the stat of the directories sources are looked up in (`ops/`, each op directory, the
    include directories), so a new op, or a new file in one, is noticed.

The next `scons ops` with the same key whose every recorded stat is unchanged is up to date by
the same rule SCons's content-timestamp decider applies (an unchanged timestamp means unchanged
content), so it stops after reading the manifest: a few thousand stat calls. Anything else —
a changed or missing file, other options, `-c`, `-n`, `--tree`, `--debug`, other targets — takes
the normal SCons path, which first deletes the manifest; it is written again only when every
target ended up built or up to date. Sources modified during (or just before) the build are not
trusted: the manifest is then not written, and the next run is a normal SCons run.

The manifest is an entry of the build's local store (`stores.LocalStore`); stats and the list of
our code come from opbuild/fingerprint.py. It names absolute paths and the machine's Python: it
is only ever read by the checkout that wrote it (what is shared between checkouts is keyed by
content, bundles.py).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
import time
from pathlib import Path

from opbuild.builder.stores import LocalStore
from opbuild.builder.toolchain import COMPILER_ENVIRONMENT, build_variant
from opbuild.fingerprint import FileStat, Key, code_files, file_stat

MANIFEST_FILE = Path(".opbuild") / "uptodate.pickle"
"""Relative to the build's output directory."""

FORMAT = 1
RACY_NS = 2_000_000_000
"""A source modified less than this before the build started is not trusted to be unchanged
when its mtime is (same-tick edits); such a build writes no manifest."""

DISABLE_ENV = "OPBUILD_FULL_CHECK"
"""Set to 1 to skip the manifest and always let SCons check the graph (benchmarks, debugging)."""

_PKG = Path(__file__).resolve().parent.parent


def config_key(options: dict[str, str], compiler: str | None) -> str:
    """What the graph depends on besides files (see the module docstring)."""
    import SCons

    data = {
        "options": options,
        "cache_dir": os.environ.get("OPBUILD_CACHE_DIR", ""),
        "ascend_home": os.environ.get("ASCEND_HOME_PATH", "") if options.get("TOOLCHAIN") == "ccec" else "",
        "compiler": compiler or "",
        "compiler_environment": {k: os.environ[k] for k in COMPILER_ENVIRONMENT if k in os.environ},
        "variant": build_variant(),  # OPBUILD_MEMCHECK: a checked build and a plain one never pass for each other
        "python": [sys.version, sys.executable],
        "scons": getattr(SCons, "__version__", ""),
        "package": str(_PKG),
        "format": FORMAT,
    }
    return Key("manifest").text(json.dumps(data, sort_keys=True)).hexdigest()


def resolve_compiler(cc: str) -> str | None:
    """The real path of the C compiler program CC names (None if it is not found)."""
    import shlex

    try:
        program = shlex.split(cc)[0] if cc.strip() else "cc"
    except ValueError:
        return None
    found = shutil.which(program)
    return os.path.realpath(found) if found else None


def fast_path_allowed(get_option, targets: list[str]) -> bool:
    """Only a plain `scons [-j N] [-Q] [-k] [ops]` may be answered from the manifest."""
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return False
    if any(t != "ops" for t in targets):
        return False
    for name in ("clean", "help", "no_exec", "question", "interactive", "cache_show", "cache_force",
                 "implicit_deps_changed", "random"):
        if get_option(name):
            return False
    for name in ("debug", "tree_printers", "repository"):
        if get_option(name):
            return False
    return not get_option("taskmastertrace_file")


def _store(path: Path) -> LocalStore:
    return LocalStore(path.parent, "manifest")


def check(path: Path, key: str) -> dict | None:
    """The recorded summary if the manifest at `path` says the build is up to date, else None."""
    try:
        data = pickle.loads(_store(path).get(path.name) or b"")
        if data.get("format") != FORMAT or data.get("key") != key:
            return None
        for entry in data["files"]:
            if file_stat(entry[0]) != entry:
                return None
        code = data["code"]
        if code_files() != [e[0] for e in code]:
            return None
        for entry in code:
            if file_stat(entry[0]) != entry:
                return None
        return data["summary"]
    except Exception:  # noqa: BLE001 - no manifest, or an unreadable one: the normal path decides
        return None


def discard(path: Path) -> None:
    """Forget the manifest (the normal SCons path is about to run and may change anything)."""
    _store(path).discard(path.name)


def record(path: Path, key: str, file_nodes: list[str], derived: set[str], dirs: list[str], summary: dict,
           started_ns: int) -> bool:
    """Write the manifest after a complete successful build; False (and nothing written) when a
    source or opbuild file changed during or just before the build."""
    limit = started_ns - RACY_NS
    files: list[FileStat] = []
    for name in sorted(set(file_nodes)):
        st = file_stat(name)
        if st is None:
            return False
        if name not in derived and st[2] >= limit:
            return False
        files.append(st)
    for name in sorted(set(dirs)):  # source directories (never ones the build writes to)
        st = file_stat(name)
        if st is None or st[2] >= limit:
            return False
        files.append(st)
    code = []
    for name in code_files():
        st = file_stat(name)
        if st is None or st[2] >= limit:
            return False
        code.append(st)
    data = {"format": FORMAT, "key": key, "files": files, "code": code, "summary": summary,
            "written": time.time()}
    _store(path).put(path.name, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
    return True
