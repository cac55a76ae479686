"""`opbuild toolkit install --prefix T` / `uninstall`: a directory shaped like CANN's `ascend-toolkit/latest`.

CANN's scripts (the samples' install.sh and run.sh) start with
`source $ASCEND_INSTALL_PATH/bin/setenv.bash`, then call `msopgen`, build the generated project,
and build apps with CMake against `$DDK_PATH/include` and `$NPU_HOST_LIB` (=`T/<arch>-linux/lib64`),
linking `-lascendcl -lnnopbase -lacl_op_compiler -lcust_opapi`. This module lays out such a T
over this opbuild install (docs/toolkit.md lists each file and how it differs from CANN's):

    T/bin/setenv.bash, T/set_env.sh     the environment (absolute paths of T and of this Python)
    T/bin/msopgen, atc, opbuild         sh wrappers: exec <this python> -m <module> "$@"
    T/include/                          a copy of opbuild/runtime/native/include (acl, aclnn, ...)
    T/<arch>-linux/include -> ../include, T/<arch>-linux/lib64/lib*.so -> opbuild's acl library
    T/lib64 -> <arch>-linux/lib64
    T/<arch>-linux/data/platform_config/<SoC>.ini   from vocabulary.SOCS
    T/compiler/version.info             Version=<opbuild version>
    T/opp/vendors/config.ini, T/opp/built-in/   (the built-in package of `--opp DIR`, if given)
    T/.opbuild-toolkit.json             what install wrote (uninstall removes exactly that)

The libraries are symlinks to the acl library (SONAME libopbuild_acl.so): a program linked with
`-lascendcl` then needs `libopbuild_acl.so`, which lib64 holds too, so LD_LIBRARY_PATH=lib64 is
enough at run time, as CANN's set_env.sh arranges. Symlinks rather than stub libraries with a
NEEDED entry: one file to keep current, and a reinstall of opbuild is picked up at once.

The whole tree is planned in memory (`plan`), compared with what is on disk (the same content:
"up to date", nothing written), and otherwise staged beside T and renamed into place; a T with
other content is replaced only with `force`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import opbuild
from opbuild.abi import native_libs
from opbuild.abi.package_layout import BUILTIN_DIR, host_arch
from opbuild.abi.vocabulary import SOCS, Soc
from opbuild.runtime_paths import native_include_dir

MANIFEST = ".opbuild-toolkit.json"
"""T/<MANIFEST>: every path install wrote, relative to T (what uninstall removes)."""

LIBRARY_NAMES = ("libascendcl.so", "libnnopbase.so", "libacl_op_compiler.so", "libopapi.so", "libruntime.so",
                 native_libs.ACL_SONAME)
"""The libraries of `<arch>-linux/lib64/` (CANN's names, and the acl library's SONAME they resolve to)."""

WRAPPERS = {"msopgen": "opbuild.ascendc.msopgen", "atc": "opbuild.om.atc", "opbuild": "opbuild"}
"""T/bin/<name> -> the Python module it runs (`<python> -m <module> "$@"`)."""

SEEDED = ("opp/vendors/config.ini",)
"""Files install writes only where absent and never compares: an installed vendor package (the
.run installer) updates `load_priority` there."""


class ToolkitError(Exception):
    """A toolkit cannot be installed or removed (the message names the path)."""


@dataclass(frozen=True)
class Entry:
    """One path of the toolkit: a file (`data`, `mode`) or a symlink (`link`)."""

    data: bytes | None = None
    mode: int = 0o644
    link: str | None = None


def lib_dir_name() -> str:
    """`<arch>-linux`, as CANN names the per-architecture directory."""
    return f"{host_arch()}-linux"


def short_soc_version(soc: Soc) -> str:
    """CANN's Short_SoC_version (Ascend910B of Ascend910B1): the chip name cut to the family name's length."""
    return soc.soc_version[: len(soc.name)]


def platform_ini(soc: Soc) -> str:
    """`<arch>-linux/data/platform_config/<SoC>.ini`: CANN's sections and keys for what opbuild models."""
    return (f"[version]\nSoC_version={soc.soc_version}\nShort_SoC_version={short_soc_version(soc)}\n\n"
            f"[SoCInfo]\nai_core_cnt={soc.cube_core_num}\ncube_core_cnt={soc.cube_core_num}\n"
            f"vector_core_cnt={soc.vector_core_num}\nmemory_size={soc.device_memory}\n\n"
            f"[AICoreSpec]\nub_size={soc.ub_size}\n")


def setenv_text(prefix: Path, python: str) -> str:
    """bin/setenv.bash (= set_env.sh): CANN's variables for T, usable from a plain shell."""
    lib64 = prefix / lib_dir_name() / "lib64"

    def q(p: object) -> str:  # sh single quotes
        return "'" + str(p).replace("'", "'\\''") + "'"

    return (
        "# opbuild toolkit environment (opbuild toolkit install; docs/toolkit.md). Source it: . setenv.bash\n"
        f"export ASCEND_HOME_PATH={q(prefix)}\n"
        f"export ASCEND_TOOLKIT_HOME={q(prefix)}\n"
        f"export ASCEND_AICPU_PATH={q(prefix)}\n"
        f"export ASCEND_OPP_PATH={q(prefix / 'opp')}\n"
        f"export OPBUILD_PYTHON={q(python)}\n"
        f"export PATH={q(prefix / 'bin')}\"${{PATH:+:$PATH}}\"\n"
        f"export LD_LIBRARY_PATH={q(lib64)}\"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"\n"
    )


def _wrapper(python: str, module: str) -> bytes:
    quoted = "'" + python.replace("'", "'\\''") + "'"
    return f"#!/bin/sh\n# opbuild toolkit wrapper (docs/toolkit.md)\nexec {quoted} -m {module} \"$@\"\n".encode()


def _tree(source: Path, dest: str, entries: dict[str, Entry]) -> None:
    """Add the files and symlinks under `source` as `dest/...`."""
    for path in sorted(source.rglob("*")):
        rel = f"{dest}/{path.relative_to(source).as_posix()}"
        if path.is_symlink():
            entries[rel] = Entry(link=os.readlink(path))
        elif path.is_file():
            entries[rel] = Entry(data=path.read_bytes(), mode=0o755 if os.access(path, os.X_OK) else 0o644)


def plan(prefix: Path, opp: Path | None = None, python: str | None = None) -> dict[str, Entry]:
    """Every path of the toolkit at `prefix` (relative, POSIX) and its content."""
    python = python or sys.executable
    arch = lib_dir_name()
    acl = native_libs.acl_library_dir() / native_libs.ACL_LINK_NAME
    setenv = setenv_text(prefix, python).encode()
    entries: dict[str, Entry] = {"bin/setenv.bash": Entry(setenv), "set_env.sh": Entry(setenv)}
    for name, module in WRAPPERS.items():
        entries[f"bin/{name}"] = Entry(_wrapper(python, module), 0o755)
    _tree(native_include_dir(), "include", entries)
    entries[f"{arch}/include"] = Entry(link="../include")
    entries["lib64"] = Entry(link=f"{arch}/lib64")
    for lib in LIBRARY_NAMES:
        entries[f"{arch}/lib64/{lib}"] = Entry(link=str(acl))
    for soc in SOCS:
        entries[f"{arch}/data/platform_config/{soc.soc_version}.ini"] = Entry(platform_ini(soc).encode())
    entries["compiler/version.info"] = Entry(f"Version={opbuild.version()}\n".encode())
    entries["opp/vendors/config.ini"] = Entry(b"load_priority=\n")
    if opp is not None:
        builtin = opp / BUILTIN_DIR
        if not builtin.is_dir():
            raise ToolkitError(f"{opp}: no {BUILTIN_DIR}/ package here (give a built OPP tree, e.g. out/opp)")
        _tree(builtin, f"opp/{BUILTIN_DIR}", entries)
    return entries


def _differs(prefix: Path, entries: dict[str, Entry]) -> list[str]:
    """The planned paths whose content on disk is missing or different (seeded files not compared)."""
    out = []
    for rel, entry in entries.items():
        path = prefix / rel
        if rel in SEEDED and path.is_file():
            continue
        if entry.link is not None:
            ok = path.is_symlink() and os.readlink(path) == entry.link
        else:
            ok = not path.is_symlink() and path.is_file() and path.read_bytes() == entry.data \
                and (path.stat().st_mode & 0o777) == entry.mode
        if not ok:
            out.append(rel)
    return out


def _write(root: Path, entries: dict[str, Entry]) -> None:
    for rel, entry in sorted(entries.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry.link is not None:
            os.symlink(entry.link, path)
        else:
            path.write_bytes(entry.data or b"")
            os.chmod(path, entry.mode)
    manifest = {"written_by": "opbuild toolkit install", "paths": sorted(entries)}
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def _written_paths(prefix: Path) -> list[str] | None:
    """The paths an earlier install recorded in T/<MANIFEST>, None when T is not such a toolkit."""
    try:
        paths = json.loads((prefix / MANIFEST).read_text())["paths"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return paths if isinstance(paths, list) and all(isinstance(p, str) for p in paths) else None


def _carry_over(old: Path, stage: Path, written: set[str], entries: dict[str, Entry]) -> None:
    """Copy into `stage` what the old toolkit holds that install did not write (a vendor package a
    .run installed into opp/vendors/) and its seeded files as they are now (config.ini)."""
    for path in sorted(old.rglob("*")):
        rel = path.relative_to(old).as_posix()
        if rel == MANIFEST or (rel in written and rel not in SEEDED) or (rel in entries and rel not in SEEDED):
            continue
        if any(parent.is_symlink() for parent in path.parents if old in parent.parents):
            continue  # inside a symlinked directory of the toolkit (lib64, <arch>-linux/include)
        dest = stage / rel
        if path.is_symlink():
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.is_symlink() or dest.exists():
                dest.unlink()
            os.symlink(os.readlink(path), dest)
        elif path.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        elif path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)


def install(prefix: Path, opp: Path | None = None, force: bool = False, python: str | None = None) -> str:
    """Lay out the toolkit at `prefix` (absolute after resolving); returns the line to print.

    `force` replaces an earlier toolkit of different content (what it did not write, e.g. installed
    vendor packages, is carried over); a non-empty directory that is not a toolkit is never replaced."""
    prefix = Path(os.path.abspath(prefix))
    entries = plan(prefix, opp, python)
    if prefix.exists() and not prefix.is_dir():
        raise ToolkitError(f"{prefix}: exists and is not a directory")
    written: list[str] | None = None
    if prefix.is_dir() and any(prefix.iterdir()):
        differing = _differs(prefix, entries)
        if not differing:
            return f"{prefix}: up to date ({len(entries)} paths)"
        shown = ", ".join(differing[:3]) + (f" and {len(differing) - 3} more" if len(differing) > 3 else "")
        written = _written_paths(prefix)
        if written is None:
            raise ToolkitError(f"{prefix}: is not empty and is not an opbuild toolkit (no {MANIFEST}); "
                               "not replaced, even with --force: give a new or empty directory")
        if not force:
            raise ToolkitError(f"{prefix}: holds different content ({shown}); use --force to replace it")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.stage-", dir=prefix.parent))
    old: Path | None = None
    try:
        _write(stage, entries)
        if written is not None:
            _carry_over(prefix, stage, set(written), entries)
        os.chmod(stage, 0o755)
        if prefix.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.old-", dir=prefix.parent))
            os.rmdir(old)
            os.rename(prefix, old)
        os.rename(stage, prefix)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        if old is not None and old.exists() and not prefix.exists():
            os.rename(old, prefix)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return (f"installed the toolkit at {prefix} ({len(entries)} paths); use it with: "
            f"source {shlex.quote(f'{prefix}/bin/setenv.bash')}")  # (a space or quote in it: still one word)


def uninstall(prefix: Path) -> str:
    """Remove what install wrote at `prefix` (the manifest's paths, then directories left empty)."""
    prefix = Path(os.path.abspath(prefix))
    manifest = prefix / MANIFEST
    paths = _written_paths(prefix)
    if paths is None:
        raise ToolkitError(f"{prefix}: not an opbuild toolkit (no readable {MANIFEST}); nothing removed")
    bad = [rel for rel in paths if ".." in Path(rel).parts or Path(rel).is_absolute()]
    if bad:
        raise ToolkitError(f"{manifest}: path {bad[0]!r} leaves the toolkit; nothing removed")
    dirs: set[Path] = set()
    for rel in paths:
        path = prefix / rel
        if path.is_symlink() or path.is_file():
            path.unlink()
        dirs.update(p for p in path.parents if p != prefix and prefix in p.parents)
    manifest.unlink()
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()
        except OSError:
            pass  # holds files install did not write (e.g. an installed vendor package)
    left = [p for p in prefix.rglob("*")]
    try:
        prefix.rmdir()
    except OSError:
        return f"removed the toolkit's {len(paths)} paths from {prefix}; kept {len(left)} paths it did not write"
    return f"removed the toolkit at {prefix} ({len(paths)} paths)"
