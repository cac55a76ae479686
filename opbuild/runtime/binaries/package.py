"""Op packages on disk: where they are searched, and their binary index.

Search order (as nnopbase): an explicit package path; else each entry of
ASCEND_CUSTOM_OPP_PATH; then `$ASCEND_OPP_PATH/vendors/<v>` for each vendor of the
`load_priority` line of `vendors/config.ini`; then the built-in package
(`$ASCEND_HOME_PATH/opp_latest/built-in` if it exists, else `$ASCEND_OPP_PATH/built-in`).
The environment is read on every resolution, never frozen at import.

A package's `binary_info_config.json` for a SoC is parsed once into a dict from full simplified
key to binary, so a lookup is one dict access; the index also keeps the selection table
(`selections`: full key -> the checked Selection, filled on first use and dropped with the index
when the package changes), so a cache miss does no file-system work for its binary beyond the
package's freshness check.
"""

from __future__ import annotations

import logging
import os
import posixpath
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from opbuild import safefile
from opbuild.abi import package_layout as layout
from opbuild.abi.vocabulary import STAMP_INTERVAL_NS
from opbuild.runtime.errors import ACLNN_ERR_INNER, AclnnError

log = logging.getLogger("opbuild.runtime")


class BinaryEntry:
    """One kernel binary of a package, as binary_info_config.json lists it.

    `bin_path` and `json_path` are made on first use (an index of 100,000 binaries builds no
    Path objects); the relative paths were checked lexically to stay inside the kernel root when
    the config was parsed, and `checked_bin_path()` also checks the resolved path (symlinks).
    """

    __slots__ = ("op", "name", "core_type", "keys", "bin_rel", "json_rel", "kernel_root", "config", "_bin", "_json",
                 "_checked")

    def __init__(self, op: str, name: str, bin_rel: str, json_rel: str, core_type: int, keys: tuple[str, ...],
                 kernel_root: Path, config: Path | None = None) -> None:
        self.op = op
        self.name = name
        self.bin_rel = bin_rel
        self.json_rel = json_rel
        self.core_type = core_type
        self.keys = keys
        self.kernel_root = kernel_root
        self.config = config  # the binary_info_config.json listing it (cached plans check its stamp)
        self._bin: Path | None = None
        self._json: Path | None = None
        self._checked = False

    @property
    def bin_path(self) -> Path:
        if self._bin is None:
            self._bin = self.kernel_root / self.bin_rel
        return self._bin

    @property
    def json_path(self) -> Path:
        if self._json is None:
            self._json = self.kernel_root / self.json_rel
        return self._json

    def checked_bin_path(self, config: Path | str = "binary_info_config.json") -> Path:
        """bin_path after checking that it (and json_path), symlinks resolved, stay in the package."""
        if not self._checked:
            _inside(self.kernel_root, self.bin_rel, "binPath", config)
            _inside(self.kernel_root, self.json_rel, "jsonPath", config)
            self._checked = True
        return self.bin_path

    def __repr__(self) -> str:
        return f"BinaryEntry({self.op}: {self.name}, {self.bin_rel})"


@dataclass(frozen=True)
class BinaryIndex:
    """Every binary of one package for one SoC: full key -> entry, and each op's keys."""

    package: Path
    soc: str
    config_files: tuple[Path, ...]
    by_key: dict[str, BinaryEntry]
    keys_by_op: dict[str, tuple[str, ...]]
    key_modes: dict[str, int]
    skipped: dict[str, list[str]] = field(default_factory=dict)
    """Op -> one note per binaryList entry the reader skipped (malformed, or a repeated key)."""
    skipped_keys: dict[str, AclnnError] = field(default_factory=dict)
    """Key -> why the entry that had it was skipped (its path left the package)."""
    file_stamps: dict[str, tuple[int, int, int] | None] = field(default_factory=dict, compare=False)
    """file_stamp of each config file when it was read (cached plans compare the file with it)."""
    selections: dict[str, Any] = field(default_factory=dict, compare=False)
    """The selection table: full key -> Selection (selection.OpRuntime.select), filled on use."""


def search_roots(explicit: str | os.PathLike[str] | None = None) -> list[Path]:
    """The package roots to search, highest priority first (see module docstring)."""
    if explicit is not None:
        return [Path(explicit)]
    roots = custom_roots(os.environ)
    opp = os.environ.get("ASCEND_OPP_PATH")
    if opp:
        roots += [Path(opp) / "vendors" / v for v in read_load_priority(Path(opp) / "vendors" / "config.ini")]
    home = os.environ.get("ASCEND_HOME_PATH")
    if home and (Path(home) / "opp_latest").is_dir():
        roots.append(Path(home) / "opp_latest" / "built-in")
    elif opp:
        roots.append(Path(opp) / "built-in")
    return roots


def custom_roots(env: Mapping[str, str]) -> list[Path]:
    """ASCEND_CUSTOM_OPP_PATH's package roots (`:`-separated, empty entries skipped), searched
    first by the runtime, op_fallback, atc and `opbuild om build`."""
    return [Path(p) for p in env.get("ASCEND_CUSTOM_OPP_PATH", "").split(":") if p]


def search_key(custom: Any, opp: Any, home: Any) -> tuple[Any, ...]:
    """Everything search_roots() reads, as one value that changes whenever its result may: the
    ASCEND_CUSTOM_OPP_PATH, ASCEND_OPP_PATH and ASCEND_HOME_PATH values (str, or bytes as
    os.environ stores them), the stat of vendors/config.ini and whether opp_latest is a directory.
    op_fallback keeps its library search path while this stays the same (fallback/search.py), so
    the search order and what it depends on are written in this one module."""
    return (custom, opp, home, _stat_key(_config_ini(opp)) if opp else None, _opp_latest(home) if home else None)


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


_CONFIG_INI: dict[str, str] = {}


def _config_ini(opp: Any) -> str:
    """<opp>/vendors/config.ini of an ASCEND_OPP_PATH value (str or as os.environ stores it)."""
    path = _CONFIG_INI.get(opp)
    if path is None:
        path = _CONFIG_INI[opp] = os.path.join(os.fsdecode(opp), "vendors", "config.ini")
    return path


_OPP_LATEST: dict[Any, str] = {}


def _opp_latest(home: Any) -> bool:
    """Whether <ASCEND_HOME_PATH>/opp_latest is a directory (its path made once per value)."""
    path = _OPP_LATEST.get(home)
    if path is None:
        path = _OPP_LATEST[home] = os.path.join(os.fsdecode(home), "opp_latest")
    return os.path.isdir(path)


def read_load_priority(config_ini: Path) -> list[str]:
    """Vendor names of the `load_priority=a,b` line (the first line mentioning `priority`).

    AclnnError 561000 naming the file for a name that is not one directory of `vendors/`
    (`../../x`, `a/b`: package_layout.vendor_name_problem): nothing is searched or loaded from it;
    and for a file that is not a regular file, too large or not UTF-8 (opbuild/safefile.py: a FIFO
    is never waited on). No file: no vendors.
    """
    try:
        text = safefile.read_text(config_ini)
    except FileNotFoundError:
        return []
    except safefile.UnsafeFileError as exc:
        raise AclnnError(ACLNN_ERR_INNER, f"cannot read vendors/config.ini {exc}") from None
    for line in text.splitlines():
        if "priority" in line and "=" in line:
            names = [v.strip() for v in line.split("=", 1)[1].split(",") if v.strip()]
            for name in names:
                problem = layout.vendor_name_problem(name)
                if problem:
                    raise AclnnError(ACLNN_ERR_INNER, f"{config_ini}: load_priority vendor {name!r} {problem}; "
                                                      f"a vendor is one directory name under vendors/")
            return names
    return []


def config_files(package: Path, soc: str) -> list[Path]:
    """The binary_info_config.json files of a package for a SoC (flat, and built-in `ops_*` subdirs)."""
    config_dir = package / layout.kernel_config_dir(soc)
    files = []
    if config_dir.is_dir():
        files = sorted(config_dir.glob("ops_*/binary_info_config.json"))
        flat = config_dir / "binary_info_config.json"
        if flat.is_file():
            files.append(flat)
    return files


def inside_package(root: Path | str, path: Path | str, what: str, source: Path | str) -> Path:
    """`path` with symlinks resolved, checked to stay inside the package `root` (resolved too).

    The one rule for every native file taken from a package (kernel binaries and their JSON,
    the tiling library, op API libraries): AclnnError 561000 naming `source` (the file that led
    to it), `what` it is and where it leads, before anything is opened.
    """
    root = Path(root)
    resolved = Path(path).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise AclnnError(ACLNN_ERR_INNER, f"{source}: {what} {str(path)!r} points outside the package {root} "
                                          f"(resolves to {resolved})")
    return resolved


def _inside(root: Path, relative: str, what: str, config: Path | str) -> Path:
    return inside_package(root, root / relative, what, config)


def _lexically_inside(relative: Any, what: str, config: Path, root: Path) -> str:
    """`relative` normalized; AclnnError if it is absolute or climbs out of the kernel root."""
    if not isinstance(relative, str) or not relative:
        raise TypeError(f"{what} {relative!r} is not a path")
    norm = posixpath.normpath(relative)
    if norm.startswith("/") or norm == ".." or norm.startswith("../") or "\0" in norm:
        raise AclnnError(ACLNN_ERR_INNER, f"{config}: {what} {relative!r} points outside the package {root}")
    return norm


class _Skip(Exception):
    """One binaryList entry is malformed: the reader skips it (as nnopbase does) and says why."""


def _entry(op: str, item: Any, config: Path, package: Path, kernel_root: Path,
           subpackage: str | None) -> BinaryEntry:
    """One binaryList item as a BinaryEntry; _Skip naming what is wrong with it.

    A binPath/jsonPath that leaves the package is an AclnnError carried inside the _Skip, so a call
    whose key only that entry had fails with 561000 naming it (nothing is loaded from it).
    """
    if not isinstance(item, dict):
        raise _Skip(f"is a {type(item).__name__}, not an object")
    if "simplifiedKey" not in item:
        raise _Skip("has no simplifiedKey")
    keys = item["simplifiedKey"]
    keys = (keys,) if isinstance(keys, str) else keys
    if not isinstance(keys, (list, tuple)) or not keys or not all(isinstance(k, str) and k for k in keys):
        raise _Skip(f"simplifiedKey {item['simplifiedKey']!r} is not a key or a list of keys")
    keys = tuple(keys)
    for required in ("binPath", "coreType"):
        if required not in item:
            raise _Skip(f"has no {required}", keys)
    try:
        core_type = int(item["coreType"])
        bin_rel = _lexically_inside(item["binPath"], "binPath", config, package)
        json_rel = item.get("jsonPath") or posixpath.splitext(bin_rel)[0] + ".json"
        json_rel = _lexically_inside(json_rel, "jsonPath", config, package)
    except AclnnError as exc:
        raise _Skip(exc.message, keys, exc) from None
    except (TypeError, ValueError) as exc:
        raise _Skip(f"bad field: {exc}", keys) from None
    if subpackage:
        bin_rel, json_rel = (layout.insert_subpackage(r, subpackage) for r in (bin_rel, json_rel))
    name = posixpath.splitext(posixpath.basename(bin_rel))[0]
    return BinaryEntry(op, name, bin_rel, json_rel, core_type, keys, kernel_root, config)


def _parse_config(package: Path, soc: str, config: Path) -> tuple[dict[str, BinaryEntry], dict[str, tuple[str, ...]],
                                                                  dict[str, int], dict[str, list[str]],
                                                                  dict[str, AclnnError]]:
    """Parse one binary_info_config.json: (key -> entry, op -> keys, op -> simplifiedKeyMode,
    op -> notes on skipped entries, key -> error of the skipped entry that had it).

    A file that is not a JSON object is an error (561000). Within it, as nnopbase: an op or a
    binaryList entry that is malformed is skipped with one warning naming op and entry, a key an
    earlier entry already has stays with the first, and reading goes on.
    """
    try:
        text = safefile.read_text(config)
    except safefile.UnsafeFileError as exc:
        raise AclnnError(ACLNN_ERR_INNER, f"cannot read binary_info_config.json {exc}") from None
    try:
        data = safefile.loads_json(config, text)
    except safefile.UnsafeFileError as exc:
        raise AclnnError(ACLNN_ERR_INNER, f"corrupt binary_info_config.json {exc}") from None
    if not isinstance(data, dict):
        raise AclnnError(ACLNN_ERR_INNER, f"corrupt binary_info_config.json {config}: top level is not an object")
    kernel_root = package / layout.KERNEL_ROOT
    # A built-in sub-package (config/<soc>/ops_<domain>/) keeps its kernels in
    # kernel/<soc>/ops_<domain>/...; its binPaths omit that segment and the reader inserts it.
    subpackage = config.parent.name if config.parent.name.startswith("ops_") else None
    by_key: dict[str, BinaryEntry] = {}
    keys_by_op: dict[str, tuple[str, ...]] = {}
    modes: dict[str, int] = {}
    skipped: dict[str, list[str]] = {}
    skipped_keys: dict[str, AclnnError] = {}

    def skip(op: str, what: str, why: str) -> None:
        note = f"{config}: op {op}: {what} {why}; skipped"
        log.warning("%s", note)
        skipped.setdefault(op, []).append(note)

    for op, info in data.items():
        if not isinstance(info, dict) or not isinstance(info.get("binaryList"), list):
            skip(op, "entry", "has no binaryList list")
            continue
        try:
            modes[op] = int(info.get("simplifiedKeyMode", 0))
        except (TypeError, ValueError):
            skip(op, "entry", f"has a bad simplifiedKeyMode {info.get('simplifiedKeyMode')!r}")
            continue
        op_keys: list[str] = []
        for i, item in enumerate(info["binaryList"]):
            what = f"binaryList[{i}]"
            try:
                entry = _entry(op, item, config, package, kernel_root, subpackage)
            except _Skip as exc:
                why, *rest = exc.args
                skip(op, what, why)
                if len(rest) == 2:  # it left the package: a call with its key says so
                    for key in rest[0]:
                        skipped_keys.setdefault(key, rest[1])
                continue
            taken = [k for k in entry.keys if k in by_key]
            if taken:
                skip(op, f"{what} ({entry.name})", f"repeats key(s) {', '.join(taken)} of "
                     f"{', '.join(sorted({by_key[k].name for k in taken}))}: the first keeps them; its other keys are")
                skipped[op][-1] = skipped[op][-1].removesuffix("; skipped") + " kept"
            for key in entry.keys:
                if key not in by_key:
                    by_key[key] = entry
                    op_keys.append(key)
        keys_by_op[op] = tuple(op_keys)
    return by_key, keys_by_op, modes, skipped, skipped_keys


_INDEX_CACHE: dict[tuple[str, str], tuple[tuple[tuple[str, Any], ...], BinaryIndex, list[int]]] = {}
_INDEX_LOCK = threading.Lock()

# A package's files are re-stat'ed at most every STAMP_INTERVAL_NS, by cached indexes and cached
# plans alike, in Python and in C (vocabulary.STAMP_INTERVAL_NS, OPKEY_STAMP_INTERVAL_NS in C).


def file_stamp(path: str) -> tuple[int, int, int] | None:
    """(mtime ns, size, inode) of a file; None when it cannot be read (opcache.c and fastpath.c
    compare the same)."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def binary_index(package: Path, soc: str) -> BinaryIndex:
    """The package's binary index for `soc`, parsed once and re-parsed only when a config file
    (or the config directory, or an `ops_*` subdirectory) changed: a lookup of an unchanged
    package costs a few stat calls (at most every STAMP_INTERVAL_NS) and one dict access."""
    cache_key = (str(package), soc)
    cached = _INDEX_CACHE.get(cache_key)
    if cached is not None:
        stamps, index, checked = cached
        now = time.monotonic_ns()
        if now - checked[0] < STAMP_INTERVAL_NS:
            return index
        for path, stamp in stamps:
            if file_stamp(path) != stamp:
                break
        else:
            checked[0] = now
            return index
    config_dir = package / layout.kernel_config_dir(soc)
    watched = [str(config_dir)]
    if config_dir.is_dir():
        watched += sorted(str(d) for d in config_dir.glob("ops_*") if d.is_dir())
    stamps = tuple((w, file_stamp(w)) for w in watched)
    files = config_files(package, soc)
    stamps += tuple((str(f), file_stamp(str(f))) for f in files)
    by_key: dict[str, BinaryEntry] = {}
    keys_by_op: dict[str, tuple[str, ...]] = {}
    modes: dict[str, int] = {}
    skipped: dict[str, list[str]] = {}
    skipped_keys: dict[str, AclnnError] = {}
    for f in files:
        k, o, m, sk, sk_keys = _parse_config(package, soc, f)
        by_key.update(k)
        keys_by_op.update(o)
        modes.update(m)
        for op, notes in sk.items():
            skipped.setdefault(op, []).extend(notes)
        skipped_keys.update(sk_keys)
    index = BinaryIndex(package, soc, tuple(files), by_key, keys_by_op, modes, skipped, skipped_keys, dict(stamps))
    with _INDEX_LOCK:
        _INDEX_CACHE[cache_key] = (stamps, index, [time.monotonic_ns()])
    return index


def find_op_package(op: str, soc: str, explicit: str | os.PathLike[str] | None = None) -> tuple[Path | None, list[Path]]:
    """The first package (in search order) whose binary index has `op`, and the roots searched."""
    roots = search_roots(explicit)
    for root in roots:
        if op in binary_index(root, soc).keys_by_op:
            return root, roots
    return None, roots
