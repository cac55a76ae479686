"""One cache interface: entries of bytes, named by a key, kept locally or shared.

Every layer that keeps work for later goes through a `Store`:

| layer (as EXPLAIN=1 names it) | store | entry |
|---|---|---|
| manifest | `LocalStore(out/.opbuild)` | `uptodate.pickle`: the stats of the last complete build (manifest.py) |
| local spec cache | `LocalStore(out/.opbuild)` | `specs.pickle`: checked specs by stat (select.py) |
| ops record | `LocalStore(out/.opbuild)` | `ops.json`: each op's key and output stats (bundles.py) |
| shared spec cache | `SharedStore(OPBUILD_CACHE_DIR, "shared_specs")` | a checked spec by content key (select.py) |
| shared bundle cache | `SharedStore(OPBUILD_CACHE_DIR, "bundles")` | every output of one op (bundles.py) |
| shared compile cache | `SharedStore(OPBUILD_CACHE_DIR, "compile")` | one compiled file by SCons build signature (cache.py) |
| validate cache | `LocalStore($OPBUILD_VALIDATE_CACHE)` | a tiling source compiled alone (builder/tiling_lib.py) |

What decides whether an entry still applies is the fingerprint (opbuild/fingerprint.py): stats for
the local records, path-independent content keys for everything shared. SCons's own signatures
(`.sconsign`) are the one layer outside this interface: SCons keeps them, for the steps it runs.

Both kinds write atomically (a temporary file renamed into place: never seen half written).
A `SharedStore` adds what a directory other builds write needs: each entry's sha256 (and HMAC,
with OPBUILD_CACHE_SECRET) verified on every read, a corrupt entry reported, removed and rebuilt,
and every hit, miss, push and corrupt entry appended to the cache's event log (cache.py).
With OPBUILD_CACHE_URL a `SharedStore` has a second tier (remote.py): a local miss is asked of
the HTTP server (its entry verified, then kept locally), and every local push is put there too.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from opbuild.atomic import atomic_write
from opbuild.builder import cache, remote

LAYERS = {
    "manifest": "manifest",
    "specs": "local spec cache",
    "ops": "ops record",
    "shared_specs": "shared spec cache",
    "bundles": "shared bundle cache",
    "compile": "shared compile cache",
    "scons": "SCons signatures",
    "fingerprint": "fingerprint",
    "validate": "validate cache",
}
"""Each layer's name, as EXPLAIN=1 prints it (`<op>: restored (shared bundle cache)`)."""


@dataclass(frozen=True)
class Found:
    """A verified shared entry: its bytes, its permission bits, and the tier that had it
    ("local": OPBUILD_CACHE_DIR; "remote": OPBUILD_CACHE_URL)."""

    data: bytes
    mode: int
    tier: str


class Store:
    """Entries of bytes by key. `get` answers None when there is no usable entry."""

    layer = ""

    def path(self, key: str) -> str:
        raise NotImplementedError

    def get(self, key: str, target: str = "") -> bytes | None:
        raise NotImplementedError

    def put(self, key: str, data: bytes, mode: int = 0o644, target: str = "") -> None:
        raise NotImplementedError

    def has(self, key: str) -> bool:
        return os.path.exists(self.path(key))


class LocalStore(Store):
    """Entries as plain files in one directory of this machine (`out/.opbuild`, the validate
    cache), named by their key. Written atomically; read as they are (no other build writes them)."""

    def __init__(self, directory: str | Path, layer: str) -> None:
        self.directory = Path(directory)
        self.layer = LAYERS[layer]

    def path(self, key: str) -> str:
        return str(self.directory / key)

    def get(self, key: str, target: str = "") -> bytes | None:
        try:
            with open(self.path(key), "rb") as f:
                return f.read()
        except OSError:
            return None

    def put(self, key: str, data: bytes, mode: int = 0o644, target: str = "") -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        atomic_write(Path(self.path(key)), data, mode, prefix=f".{key}.")

    def discard(self, key: str) -> None:
        try:
            os.unlink(self.path(key))
        except FileNotFoundError:
            pass


class SharedStore(Store):
    """Entries in the shared build cache, `<dir>/<XX>/<key><suffix>` (SCons's CacheDir layout),
    each with its verified sha256 (and HMAC) beside it; see cache.py for the trust model."""

    KINDS = {  # layer: (entry name suffix, what stderr calls an entry, what happens instead, events logged)
        "compile": ("", "entry", "building it", True),
        "bundles": (cache.BUNDLE_SUFFIX, "op bundle", "building the op", True),
        "shared_specs": (cache.SPEC_SUFFIX, "spec entry", "checking the spec", False),
    }
    """Events are of outputs: a spec read from the cache is not a build step saved (`opbuild cache
    stats` counts hits and misses of outputs); its corrupt entries are logged all the same."""

    def __init__(self, cache_dir: str, layer: str, readonly: bool = False) -> None:
        self.cache_dir = cache_dir
        self.suffix, self.noun, self.instead, self.events = self.KINDS[layer]
        self.layer = LAYERS[layer]
        self.readonly = readonly

    def path(self, key: str) -> str:
        return os.path.join(self.cache_dir, key[:2].upper(), key + self.suffix)

    def has(self, key: str) -> bool:
        path = self.path(key)
        return os.path.exists(path) and os.path.exists(cache.hash_path(path))

    def get(self, key: str, target: str = "") -> bytes | None:
        return self.read(self.path(key), target)

    def read(self, entry: str, target: str = "") -> bytes | None:
        """The verified bytes of the entry file `entry` (logged as a hit), or None: no entry (a
        miss), or a corrupt one (reported, removed, logged)."""
        found = self.fetch(entry, target)
        return None if found is None else found.data

    def fetch(self, entry: str, target: str = "") -> Found | None:
        """The verified entry file `entry`, from this directory or else from the remote tier
        (OPBUILD_CACHE_URL: remote.py; what it gives is written here too), or None."""
        data, problem = cache.load_verified(entry)
        if data is not None:
            try:
                os.utime(entry, None)  # recently used: pruned last
                mode = os.stat(entry).st_mode & 0o777
            except OSError:
                mode = 0o644
            self._log("hit", entry, target)
            return Found(data, mode, "local")
        if problem is not None:
            self.reject(entry, target, problem)
        self._log("miss", entry, target)
        server = remote.active()
        if server is None:
            return None
        got = server.get(entry, target)
        if got.data is not None and not self.readonly:
            try:
                cache.store(entry, got.data, got.mode)  # read-through: the next build finds it here
            except OSError as exc:
                sys.stderr.write(f"opbuild: cache: cannot keep {self._rel(entry)} from the remote cache here: "
                                 f"{exc.strerror or exc}\n")
        self._log(f"remote-{got.outcome}", entry, target, len(got.data or b""),
                  always=got.outcome in ("fail", "corrupt"))
        return None if got.data is None else Found(got.data, got.mode, "remote")

    def reject(self, entry: str, target: str, problem: str) -> None:
        """An entry that cannot be used (its hash, HMAC or structure is wrong): said on stderr,
        removed (left in place by a read-only store, or when the directory refuses: said so),
        logged as corrupt; the caller builds what it held."""
        fate = "left in place (read-only cache)" if self.readonly else "removed"
        if not self.readonly:
            try:
                cache.remove_entry(entry)
            except OSError as exc:
                fate = f"not removed ({exc.strerror or exc})"
        sys.stderr.write(f"opbuild: cache: corrupt {self.noun} {entry} for {target or '?'} ({problem}): "
                         f"not used, {fate}; {self.instead}\n")
        cache.log_event(self.cache_dir, "corrupt", self._rel(entry), target)

    def put(self, key: str, data: bytes, mode: int = 0o644, target: str = "") -> None:
        self.write(self.path(key), data, mode, target)

    def write(self, entry: str, data: bytes, mode: int = 0o644, target: str = "") -> None:
        """Store `data` as the entry file `entry` with its hash (OSError if the cache cannot be written)."""
        if self.readonly:
            return
        cache.store(entry, data, mode)
        self._log("push", entry, target)
        server = remote.active()
        if server is not None:  # write-back; a failure is counted, never raised
            outcome = server.put(entry, data, mode)
            if outcome != "skip":
                self._log(f"remote-{outcome}", entry, target, len(data) if outcome == "push" else 0,
                          always=outcome == "fail")

    def _log(self, event: str, entry: str, target: str, size: int = 0, always: bool = False) -> None:
        if self.events or always:
            cache.log_event(self.cache_dir, event, self._rel(entry), target, size)

    def _rel(self, entry: str) -> str:
        return os.path.relpath(entry, self.cache_dir)
