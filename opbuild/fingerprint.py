"""The fingerprint: what decides whether build work is redone, written once, computed one way.

Every layer that may skip work (the up-to-date manifest, the spec caches, the op records and op
bundles, the shared compile cache, the validate compile cache) asks one of two questions:

* **has this file changed since I looked?** — answered locally and cheaply by its stat
  (`file_stat`: size, mtime, ctime, inode; equal stats mean unchanged content, the rule of SCons's
  content-timestamp decider). Stats name the file by its absolute path: they are only ever
  compared on the machine, in the checkout, that recorded them;
* **is this the work I did before, wherever it was done?** — answered by a `Key`: a sha256 over
  parts fed in one way (each part length-prefixed, so no two lists of parts hash alike), whose
  files are named relative to the project root (or by opbuild's install tokens,
  opbuild/portable.py) and hashed by content. A key never contains the checkout's path, an
  mtime or the machine's name: two clones at different directories compute the same key, and so
  share the entries of OPBUILD_CACHE_DIR.

"Our code" — the part of opbuild whose content can change what a build, a spec check or the
generator produces — is one list, `code_files()`: opbuild's top-level modules, the packages a
build imports (builder, codegen, spec, keys, abi, validate), the generator's templates (not the
scaffold ones, which only `opbuild new` renders), the JSON schemas and the C headers kernels
compile against. Every key includes `code_digest()` (their names and content); the manifest and
the spec cache record their stats; the generator stamp depends on them.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

FORMAT = 2
"""Part of every key: bump when what a key covers changes."""

_PKG = Path(__file__).resolve().parent

CODE_PACKAGES = ("builder", "codegen", "spec", "keys", "abi", "validate", "ascendc")
"""The opbuild packages whose modules builds and spec checks run (the runtime, om and CLI are not)."""

FileStat = tuple[str, int, int, int, int]


def file_stat(path: str) -> FileStat | None:
    """(path, size, mtime_ns, ctime_ns, inode), or None if the file cannot be stat'ed: equal
    stats mean an unchanged file (the local, same-checkout check)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def stats(paths) -> tuple[FileStat, ...] | None:
    """The stat of each path, or None if one cannot be stat'ed."""
    found = []
    for path in paths:
        st = file_stat(path)
        if st is None:
            return None
        found.append(st)
    return tuple(found)


@lru_cache(maxsize=1)
def _code() -> tuple[tuple[str, str], ...]:
    from opbuild.runtime_paths import native_include_dir, schemas_dir, templates_dir

    found: list[tuple[str, str]] = [(f"opbuild/{p.name}", str(p)) for p in sorted(_PKG.glob("*.py"))]
    tops = [(_PKG / sub, f"opbuild/{sub}", (".py",)) for sub in CODE_PACKAGES]
    for top, name, suffixes in (*tops, (templates_dir(), "templates", None), (schemas_dir(), "schemas", None),
                                (native_include_dir(), "include", None)):
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not (name == "templates" and d == "scaffold"))
            rel = os.path.relpath(dirpath, top)
            for f in sorted(filenames):
                if suffixes is None or f.endswith(suffixes):
                    found.append((f"{name}/{f}" if rel == "." else f"{name}/{rel}/{f}", os.path.join(dirpath, f)))
    return tuple(found)


def code_files() -> list[str]:
    """Our code: the absolute path of every file in the list (see the module docstring), in a
    fixed order."""
    return [path for _, path in _code()]


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 over the name (relative to opbuild's install, not its path) and content of every
    file of `code_files()`: the same for two installs of the same opbuild. Once per process."""
    h = hashlib.sha256(f"code {FORMAT}\0".encode())
    for name, path in _code():
        with open(path, "rb") as f:
            h.update(f"{name}\0".encode() + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


class ContentHashes:
    """The sha256 of files, each read once per build (many keys share headers)."""

    def __init__(self) -> None:
        self._hashes: dict[str, str] = {}

    def digest(self, path: str) -> str:
        found = self._hashes.get(path)
        if found is None:
            try:
                with open(path, "rb") as f:
                    found = hashlib.sha256(f.read()).hexdigest()
            except FileNotFoundError:
                found = "missing"
            except OSError as exc:
                found = f"unreadable: {exc.strerror}"
            self._hashes[path] = found
        return found


class Key:
    """A path-independent key (see the module docstring). `kind` names what it keys (two kinds
    of entry never share a key); parts are added in order; `hexdigest()` is the key.

        Key("opspec").code().text(op_dir.name).file(path, root=op_dir.parent).hexdigest()
    """

    def __init__(self, kind: str, hashes: ContentHashes | None = None) -> None:
        self._h = hashlib.sha256()
        self._hashes = hashes or ContentHashes()
        self.text(f"{kind} {FORMAT}")

    def copy(self) -> Key:
        twin = Key.__new__(Key)
        twin._h, twin._hashes = self._h.copy(), self._hashes
        return twin

    def data(self, part: bytes) -> Key:
        self._h.update(len(part).to_bytes(8, "little") + part)
        return self

    def text(self, *parts: str) -> Key:
        for part in parts:
            self.data(part.encode())
        return self

    def json(self, value) -> Key:
        """A JSON value (sorted keys); absolute paths of opbuild's install in it become tokens."""
        from opbuild.portable import portable_text

        return self.text(portable_text(json.dumps(value, sort_keys=True, separators=(",", ":"))))

    def code(self) -> Key:
        """Our code (`code_digest`)."""
        return self.text(code_digest())

    def file(self, path: str, root: str | os.PathLike) -> Key:
        """A file: its name relative to `root` (or by opbuild's install token) and its content."""
        from opbuild.portable import portable_path

        return self.text(portable_path(os.path.abspath(path), root), self._hashes.digest(path))

    def hexdigest(self) -> str:
        return self._h.hexdigest()
