"""The shared build cache (OPBUILD_CACHE_DIR): an SCons CacheDir whose entries are verified.

Layout (SCons's own, so `scons --cache-*` options keep working): `<dir>/config`,
`<dir>/CACHEDIR.TAG`, and one file per cached output, `<dir>/<XX>/<sig>`, named by the output's
SCons build signature. opbuild adds

  * `<dir>/<XX>/<key>.opbundle`: an op bundle, every output of one op (opbuild/builder/bundles.py),
    named by the op key, verified and logged like any entry;
  * `<dir>/<XX>/<key>.opspec`: a checked op spec, keyed by the content it was read from
    (opbuild/builder/select.py), verified like any entry;
  * `<dir>/<XX>/<sig>.sha256`: the sha256 of the entry, written with it;
  * `<dir>/opbuild-events.jsonl`: one JSON object per line per cache event
    (`{"time", "event": "hit"|"miss"|"push"|"corrupt", "entry", "target"}`), appended.

Writing: the entry and its hash go to temporary files in the entry's directory and are renamed
into place, the hash first, so an entry is never visible half written, and concurrent builds
pushing the same entry write the same bytes. Reading: the hash record first (its HMAC checked
when OPBUILD_CACHE_SECRET is set), then the entry, opened only as a regular file (a symbolic link,
FIFO or device is corrupt, never read or waited on), read no further than the size its record
gives, hashed, and used only if the hash matches the stored one; otherwise it is reported on
stderr, logged as `corrupt`, removed, and the output is built (and pushed again, replacing the
entry).

The signature covers the command line and the content of every input, plus `OPBUILD_KEY` on
each compile step: the toolchain's name, identity (compiler and version) and version token, the
SoC, the binary's macros and the generator's version (see scons_tool). No absolute path of the
checkout is part of it, so two checkouts share entries; two toolchains never do.

Trust: the sha256 catches damage (a torn write, a flipped bit), not intent: anyone who may write
the directory can replace an entry together with its hash, and every build reading the cache
then ships that content. So only builds you trust may write OPBUILD_CACHE_DIR (docs/cli.md).
With `OPBUILD_CACHE_SECRET` set, the hash file also carries `hmac-sha256 <mac>`: an HMAC, keyed
by the secret, of the entry's name and sha256. Readers holding the secret use an entry only if
its MAC checks (a rewritten or renamed entry is reported as corrupt, removed and built again;
`opbuild cache verify` reports it); builds without the secret cannot make entries those readers
accept.

Every reader and writer of the directory (SCons's per-file entries here, op bundles, checked
specs) goes through `stores.SharedStore`, the shared side of the one cache interface, which
uses the functions below. `opbuild cache stats|verify|prune` (opbuild/cli.py) work on the same
directory. OPBUILD_CACHE_URL adds an HTTP server behind it (remote.py): its records are these
hash records, parsed and checked by the same functions (parse_record, mac_problem,
content_problem), its events logged here (`remote-*`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from opbuild import safefile
from opbuild.atomic import atomic_write

CACHE_ENV = "OPBUILD_CACHE_DIR"
SECRET_ENV = "OPBUILD_CACHE_SECRET"
"""When set: entries carry an HMAC keyed by it, and readers accept only entries whose HMAC checks."""
MAC_TAG = "hmac-sha256"
SIZE_TAG = "size"
"""The hash file's line `size <bytes>`: the entry's length, the most a reader reads of it."""
MAX_RECORD_BYTES = 4096
"""A hash file is a few lines; a larger one is corrupt (never read whole)."""
MAX_ENTRY_BYTES = 1 << 32
"""The most read of an entry whose record has no size (written before records had one)."""
EVENTS_FILE = "opbuild-events.jsonl"
HASH_SUFFIX = ".sha256"
TMP_PREFIX = ".tmp-"
BUNDLE_SUFFIX = ".opbundle"
"""An op bundle (opbuild/builder/bundles.py): every output of one op, in one entry."""
SPEC_SUFFIX = ".opspec"
"""A checked op spec (opbuild/builder/select.py SharedSpecs), keyed by the content it was read from."""
_META = {"config", "CACHEDIR.TAG", EVENTS_FILE}
REMOTE_RETRIEVED = "remote cache"
"""`Retrieved `<target>' from remote cache`: the progress line of a compile the remote tier served."""
MAX_EVENTS_BYTES = 1 << 30
"""`opbuild cache stats` reads the event log up to this size (a larger one: an error naming it)."""


class CacheError(Exception):
    """The cache directory cannot be used (not given, not a directory)."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_path(entry: str | Path) -> str:
    return f"{entry}{HASH_SUFFIX}"


def log_event(cache_dir: str | Path, event: str, entry: str = "", target: str = "", size: int = 0) -> None:
    """Append one event to the cache's JSON-lines log (one short write: atomic with O_APPEND);
    `size`: the bytes an entry moved (remote events), logged when not 0."""
    record = {"time": round(time.time(), 3), "event": event, "entry": entry, "target": target}
    if size:
        record["bytes"] = size
    line = json.dumps(record, allow_nan=False) + "\n"
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.path.join(cache_dir, EVENTS_FILE), flags, 0o666)
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):  # (a FIFO or device put there is not written to)
                os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        pass  # the log is informational; a read-only cache still works


def _write_atomic(directory: str, final: str, data: bytes, mode: int = 0o644) -> None:
    atomic_write(os.path.join(directory, os.path.basename(final)), data, mode, prefix=TMP_PREFIX)


def _secret() -> bytes | None:
    secret = os.environ.get(SECRET_ENV)
    return secret.encode() if secret else None


def entry_mac(secret: bytes, cache_file: str, digest: str) -> str:
    """The HMAC of an entry: its file name (an entry moved to another name does not check) and sha256."""
    return hmac.new(secret, f"{os.path.basename(cache_file)}\0{digest}".encode(), hashlib.sha256).hexdigest()


def hash_record(cache_file: str, data: bytes) -> str:
    """The text of an entry's hash file: its sha256, its HMAC when OPBUILD_CACHE_SECRET is set,
    and its size (`size <bytes>`: the most a reader reads of it)."""
    digest = sha256_bytes(data)
    secret = _secret()
    mac = f"{MAC_TAG} {entry_mac(secret, cache_file, digest)}\n" if secret else ""
    return f"{digest}\n{mac}{SIZE_TAG} {len(data)}\n"


def store(cache_file: str, data: bytes, mode: int = 0o644) -> None:
    """Write an entry and its hash: hash first, then the entry (both renamed into place)."""
    directory = os.path.dirname(cache_file)
    os.makedirs(directory, exist_ok=True)
    _write_atomic(directory, hash_path(cache_file), hash_record(cache_file, data).encode())
    _write_atomic(directory, cache_file, data, mode)


@dataclass(frozen=True)
class _Record:
    """An entry's hash file, parsed: sha256, recorded size (None in records written before sizes
    were), HMAC (None when absent)."""

    digest: str
    size: int | None
    mac: str | None


def _read_record(cache_file: str) -> tuple[_Record | None, str | None]:
    """(the entry's hash record, None); (None, None): neither entry nor record (a miss; a record
    alone is an entry being written); (None, reason): the entry cannot be trusted."""
    try:
        raw = safefile.read_bytes(hash_path(cache_file), MAX_RECORD_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return None, ("no stored hash" if os.path.lexists(cache_file) else None)
    except safefile.UnsafeFileError as exc:
        return None, f"hash file {exc.reason}"
    return parse_record(raw)


def parse_record(raw: bytes) -> tuple[_Record | None, str | None]:
    """A hash record's text (a `.sha256` file, or a remote `ac/` entry: remote.py) parsed;
    (None, reason) when it is not one."""
    try:
        lines = raw.decode("ascii").splitlines()
    except UnicodeDecodeError:
        return None, "hash file is not text"
    size: int | None = None
    mac: str | None = None
    for line in lines[1:]:
        tag, _, value = line.partition(" ")
        if tag == SIZE_TAG and size is None:
            if not value.strip().isdigit():
                return None, f"hash file: bad size {value.strip()[:20]!r}"
            size = int(value)
        elif tag == MAC_TAG and mac is None:
            mac = value.strip()
    return _Record(lines[0].strip() if lines else "", size, mac), None


def mac_problem(record: _Record, cache_file: str) -> str | None:
    """Why the record's HMAC does not vouch for the entry named `cache_file` (None: it does, or
    OPBUILD_CACHE_SECRET is not set)."""
    secret = _secret()
    if secret is None:
        return None
    if record.mac is None:
        return f"no HMAC ({SECRET_ENV} is set: entries must carry one)"
    if not hmac.compare_digest(record.mac, entry_mac(secret, cache_file, record.digest)):
        return f"HMAC does not match (not written with this {SECRET_ENV})"
    return None


def content_problem(record: _Record, data: bytes) -> str | None:
    """Why `data` is not the content the record describes (None: its size and sha256 match)."""
    if record.size is not None and len(data) != record.size:
        return f"{len(data)} bytes, the record says {record.size}"
    actual = sha256_bytes(data)
    if actual != record.digest:
        return f"sha256 {actual[:12]}... does not match the stored {record.digest[:12]}..."
    return None


def load_verified(cache_file: str) -> tuple[bytes | None, str | None]:
    """(entry bytes, None) if the entry exists and matches its stored hash; (None, None) if there is
    no entry; (None, reason) if it is corrupt.

    The hash record is read first; with OPBUILD_CACHE_SECRET its HMAC is checked before the entry
    is opened. The entry is opened only as a regular file (no symbolic link, FIFO or device:
    opbuild/safefile.py), read no further than its recorded size, and hashed before it is used."""
    record, problem = _read_record(cache_file)
    if record is None:
        return None, problem
    problem = mac_problem(record, cache_file)
    if problem is not None:
        return None, problem
    try:
        data = safefile.read_bytes(cache_file, MAX_ENTRY_BYTES if record.size is None else record.size,
                                   follow_symlinks=False)
    except FileNotFoundError:
        return None, None  # (its record written, the entry not yet: another build is pushing it)
    except safefile.UnsafeFileError as exc:
        return None, exc.reason
    problem = content_problem(record, data)
    return (None, problem) if problem is not None else (data, None)


def remove_entry(cache_file: str) -> None:
    for name in (cache_file, hash_path(cache_file)):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


def read_config(path: str) -> dict:
    """The SCons configuration (`<dir>/config`) of an existing cache read without writing
    anything: no `config.lock` (SCons's reader lock is a file created and removed), for a
    read-only cache. CacheError naming the file when it is missing, not a regular file or not
    a JSON object."""
    config_file = os.path.join(path, "config")
    try:
        config = safefile.read_json(config_file, MAX_RECORD_BYTES)
    except FileNotFoundError:
        import SCons.CacheDir

        return {"prefix_len": SCons.CacheDir.CACHE_PREFIX_LEN}  # nothing pushed yet: SCons's layout for a new cache
    except OSError as exc:
        raise CacheError(f"{CACHE_ENV}={path}: read-only cache without a usable {exc}") from None
    if not isinstance(config, dict):
        raise CacheError(f"{CACHE_ENV}={path}: read-only cache: {config_file} is not a JSON object")
    return config


def verified_cache_class(readonly: bool = False):
    """The SCons CacheDir subclass `scons ops` installs (env.CacheDir(path, custom_class=...)).
    `readonly` (`--cache-readonly`, which SCons itself applies only after the SConstruct is read):
    the cache is read without writing anything (its config read without a lock file, corrupt
    entries left in place); a cache that cannot be written otherwise is a CacheError."""
    import SCons.Action
    import SCons.CacheDir
    import SCons.Warnings

    class VerifiedCacheDir(SCons.CacheDir.CacheDir):
        """Entries stored with their sha256 and verified on every read; events logged."""

        _lock = threading.Lock()

        def __init__(self, path) -> None:
            from opbuild.builder.stores import SharedStore

            super().__init__(path)
            self.store = SharedStore(self.path, "compile", readonly=readonly)  # verified reads and writes, events

        def _readconfig(self, path: str) -> None:
            if readonly:
                self.config = read_config(path)
                return
            from SCons.Util.filelock import SConsLockFailure

            try:
                super()._readconfig(path)
            except (OSError, SConsLockFailure) as exc:  # (an unwritable directory: no config.lock)
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise CacheError(f"{CACHE_ENV}={path}: cannot write the cache ({reason}); "
                                 f"to use it read-only give --cache-readonly") from None

        def retrieve(self, node) -> bool:
            if not self.is_enabled() or not SCons.Action.execute_actions:
                return False
            _, cache_file = self.cachepath(node)
            target = node.get_internal_path()
            with self._lock:
                self.requests += 1
            found = self.store.fetch(cache_file, target)
            if found is None:
                return False
            try:
                os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
                _write_atomic(os.path.dirname(os.path.abspath(target)), os.path.abspath(target), found.data,
                              found.mode | 0o200)
            except OSError as exc:
                sys.stderr.write(f"opbuild: cache: cannot retrieve {target} from {cache_file}: {exc}; building it\n")
                return False
            with self._lock:
                self.hits += 1
            env = node.get_build_env()
            text = f"Retrieved `{target}' from {REMOTE_RETRIEVED if found.tier == 'remote' else 'cache'}"
            show = env.get("PRINT_CMD_LINE_FUNC")
            if show:
                show(text, [node], [], env)
            else:
                sys.stdout.write(text + "\n")
            return True

        def push(self, node):
            if self.is_readonly() or not self.is_enabled() or node.nocache:
                return None
            _, cache_file = self.cachepath(node)
            if os.path.exists(cache_file) and os.path.exists(hash_path(cache_file)):
                return None  # another build pushed it meanwhile
            target = node.get_internal_path()
            try:
                with open(target, "rb") as f:
                    data = f.read()
                self.store.write(cache_file, data, os.stat(target).st_mode & 0o777, target)
            except OSError as exc:
                SCons.Warnings.warn(SCons.Warnings.CacheWriteErrorWarning,
                                    f"opbuild: cache: cannot push {target} to {cache_file}: {exc}")
            return None

    return VerifiedCacheDir


# ---- opbuild cache stats|verify|prune --------------------------------------------------------------

@dataclass
class Entry:
    path: Path
    size: int
    mtime: float


def open_for_build(path: str) -> str:
    """The absolute cache directory `scons ops` will use, created if missing; CacheError naming
    OPBUILD_CACHE_DIR when it is not a directory or cannot be created."""
    full = os.path.abspath(path)
    if os.path.exists(full) and not os.path.isdir(full):
        raise CacheError(f"{CACHE_ENV}={path} is not a directory")
    try:
        os.makedirs(full, exist_ok=True)
    except OSError as exc:
        raise CacheError(f"{CACHE_ENV}={path}: cannot create the cache directory: {exc.strerror or exc}") from None
    for name in ("config", "CACHEDIR.TAG"):  # (SCons reads these itself: a FIFO there would hang it)
        meta = os.path.join(full, name)
        if os.path.lexists(meta) and not stat.S_ISREG(os.lstat(meta).st_mode):
            raise CacheError(f"{CACHE_ENV}={path}: {meta} is not a regular file")
    return full


def cache_dir(given: str | None) -> Path:
    path = given or os.environ.get(CACHE_ENV)
    if not path:
        raise CacheError(f"no cache directory: pass --dir DIR or set {CACHE_ENV}")
    p = Path(path)
    if not p.is_dir():
        raise CacheError(f"{p} is not a directory (no cache there yet?)")
    return p


def entries(root: Path) -> list[Entry]:
    """Every cached output (not the hashes, metadata, log or temporaries): each name in a
    `<XX>/` directory that is not itself a directory, whatever it is (a symbolic link, FIFO or
    device there is an entry too, and `verify` finds it corrupt); sizes as `lstat` gives them."""
    found = []
    for sub in sorted(root.iterdir()):
        if sub.name in _META or not sub.is_dir() or sub.is_symlink():
            continue
        for f in sorted(sub.iterdir()):
            if f.name.endswith(HASH_SUFFIX) or f.name.startswith(TMP_PREFIX):
                continue
            try:
                st = f.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            found.append(Entry(f, st.st_size, st.st_mtime))
    return found


EVENTS = ("hit", "miss", "push", "corrupt")
"""Events of this directory's entries."""
REMOTE_EVENTS = ("remote-hit", "remote-miss", "remote-push", "remote-corrupt", "remote-fail")
"""Events of the remote tier (OPBUILD_CACHE_URL, remote.py), logged here: `remote-hit` and
`remote-push` carry the entry's `bytes`; `remote-fail` is a read or write that failed."""


def read_events(root: Path) -> dict[str, int]:
    """{event: how many} of this directory's events (EVENTS) in the event log."""
    counts = tally_events(root)
    return {e: counts[e] for e in EVENTS}


def tally_events(root: Path) -> dict[str, int]:
    """{event: how many} over the event log, remote events too, and {event + "-bytes": bytes}
    of the remote ones."""
    counts = {e: 0 for e in (*EVENTS, *REMOTE_EVENTS)} | {f"{e}-bytes": 0 for e in REMOTE_EVENTS}
    try:
        data = safefile.read_bytes(root / EVENTS_FILE, MAX_EVENTS_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return counts
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
            event = record.get("event")
            size = record.get("bytes", 0)
        except (ValueError, AttributeError, RecursionError):
            continue
        if event in counts:
            counts[event] += 1
            if event in REMOTE_EVENTS and isinstance(size, int) and size > 0:
                counts[f"{event}-bytes"] += size
    return counts


def stats(root: Path) -> dict:
    found = entries(root)
    events = tally_events(root)
    lookups = events["hit"] + events["miss"]
    bundles = [e for e in found if e.path.name.endswith(BUNDLE_SUFFIX)]
    return {"dir": str(root), "entries": len(found), "bytes": sum(e.size for e in found),
            "bundles": len(bundles), "bundle_bytes": sum(e.size for e in bundles),
            "specs": sum(1 for e in found if e.path.name.endswith(SPEC_SUFFIX)),
            "hits": events["hit"], "misses": events["miss"], "pushes": events["push"],
            "corrupt": events["corrupt"], "hit_rate": (events["hit"] / lookups) if lookups else None,
            "remote": {"hits": events["remote-hit"], "misses": events["remote-miss"],
                       "read_bytes": events["remote-hit-bytes"], "pushes": events["remote-push"],
                       "pushed_bytes": events["remote-push-bytes"], "corrupt": events["remote-corrupt"],
                       "failed": events["remote-fail"]}}


def verify(root: Path, remove: bool = True,
           check_bundle: Callable[[bytes, str], str | None] | None = None) -> list[tuple[Path, str]]:
    """Re-hash every entry, and check each op bundle's structure with `check_bundle(data, key)`
    (the problem or None; builder/bundles.py's verify_cache passes its own: this layer knows
    entries, not bundles); the corrupt ones (removed unless `remove` is False) with the reason."""
    bad = []
    for entry in entries(root):
        data, problem = load_verified(str(entry.path))
        if data is not None and check_bundle is not None and entry.path.name.endswith(BUNDLE_SUFFIX):
            problem = check_bundle(data, entry.path.name[: -len(BUNDLE_SUFFIX)])
        if problem is not None:
            bad.append((entry.path, problem))
            if remove:
                remove_entry(str(entry.path))
                log_event(root, "corrupt", str(entry.path.relative_to(root)), "")
    return bad


def prune(root: Path, max_size: int | None = None, max_age: float | None = None,
          now: float | None = None) -> list[Entry]:
    """Remove entries older than `max_age` seconds (last written or used), then the oldest until
    the rest take at most `max_size` bytes; also orphaned hashes and temporaries over an hour old."""
    now = time.time() if now is None else now
    found = sorted(entries(root), key=lambda e: e.mtime)
    removed: list[Entry] = []
    if max_age is not None:
        keep: list[Entry] = []
        for e in found:
            (removed if now - e.mtime > max_age else keep).append(e)
        found = keep
    if max_size is not None:
        total = sum(e.size for e in found)
        while found and total > max_size:
            e = found.pop(0)
            total -= e.size
            removed.append(e)
    for e in removed:
        remove_entry(str(e.path))
    for sub in root.iterdir():
        if not sub.is_dir():
            continue
        for f in sub.iterdir():
            try:
                if f.name.endswith(HASH_SUFFIX) and not Path(str(f)[: -len(HASH_SUFFIX)]).exists():
                    f.unlink()
                elif f.name.startswith(TMP_PREFIX) and now - f.stat().st_mtime > 3600:
                    f.unlink()
            except FileNotFoundError:
                pass
    return removed


_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}
_AGES = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_size(text: str) -> int:
    """`500M`, `2G`, `1048576` (binary units) → bytes."""
    t = text.strip().lower()
    for suffix in ("ib", "b"):
        if t.endswith(suffix) and len(t) > len(suffix):
            t = t[: -len(suffix)]
            break
    unit = t[-1:] if t[-1:].isalpha() else ""
    try:
        return int(float(t[: len(t) - len(unit)]) * _UNITS[unit])
    except (KeyError, ValueError):
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2G, 1048576)") from None


def parse_age(text: str) -> float:
    """`30d`, `12h`, `90m`, `3600s`, `3600` → seconds."""
    t = text.strip().lower()
    unit = t[-1:] if t[-1:].isalpha() else ""
    try:
        return float(t[: len(t) - len(unit)]) * _AGES[unit]
    except (KeyError, ValueError):
        raise ValueError(f"not an age: {text!r} (e.g. 30d, 12h, 90m, 3600s)") from None


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
