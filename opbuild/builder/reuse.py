"""Objects compiled outside the build, taken by the build's same compile instead of running it.

Why: `opbuild import ascendc` must compile an op's host source (and the Ascend C bridge core) to
read its OpDef; the first `scons ops` after it compiled both again -- the largest part of an
Ascend C op's first build. Now the import compiles them *as the build will*: the build's own
command for the file's place in the project (`ops/<op>/op_host/<x>.cpp`, the build's object
path), run on the file it copies there, with `-ffile-prefix-map=<its directory>=<the build's>`
so that what the object records of its path (`__FILE__`) is the build's. The object is then
byte for byte the build's, and the import records it here for the build to take.

An entry is keyed by the compiler's identity and the build's command (its output path replaced
by a placeholder); it holds every file the compile read (the compiler's `-MD` list, under the
build's paths) with its sha256, and the object's sha256. The build takes the object only when
each of those files still has that content and the object its recorded sha256: anything else
(an edited header, another opbuild, a damaged entry) is a compile as before. Entries live in
the validate cache (OPBUILD_VALIDATE_CACHE; builder/tiling_lib.py) and are read as untrusted
input: regular files of bounded size, JSON of the expected shape.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from opbuild import safefile
from opbuild.atomic import atomic_write

OUTPUT = "$OUTPUT"
"""What stands for the output path in an entry's key."""
MANIFEST_MAX = 1 << 20
OBJECT_MAX = 256 << 20
"""The largest manifest / object read back (larger: not an entry of ours)."""
_VERSION = 1


def entry_key(identity: str, command: Sequence[str], output: str) -> str:
    """The key of the compile `command` writing `output` with the compiler `identity`."""
    words = [OUTPUT if word == output else word for word in command]
    text = json.dumps([_VERSION, identity, words], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(path: Path | str) -> str | None:
    data = _read_regular(Path(path), OBJECT_MAX)
    return None if data is None else hashlib.sha256(data).hexdigest()


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of `path` when it is a regular file of at most `limit` bytes (opbuild/safefile.py:
    never blocks on a FIFO, never reads a device), else None: not an entry to take."""
    try:
        return safefile.read_bytes(path, limit)
    except OSError:
        return None


def dependencies(deps_file: Path) -> list[str]:
    """The files of a compiler's `-MD -MF` output (make syntax: `obj: src hdr \\`)."""
    data = _read_regular(deps_file, MANIFEST_MAX * 16)
    if data is None:
        return []
    text = data.decode("utf-8", "surrogateescape").replace("\\\n", " ")
    _, _, rest = text.partition(": ")
    names, word, escaped = [], "", False
    for ch in rest:
        if escaped:
            word += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch.isspace():
            if word:
                names.append(word)
            word = ""
        else:
            word += ch
    if word:
        names.append(word)
    return names


def record(directory: Path, identity: str, command: Sequence[str], output: str, files: Mapping[str, Path],
           obj: Path) -> None:
    """Record `obj` as what `command` (the build's) makes; `files`: every file the compile read, by
    the path the build's compile reads it at -> the file that has that content now."""
    digests = {}
    for build_path, actual in files.items():
        digest = _digest(actual)
        if digest is None:
            return  # a file that cannot be read back: nothing worth recording
        digests[build_path] = digest
    data = _read_regular(obj, OBJECT_MAX)
    if data is None:
        return
    object_digest = hashlib.sha256(data).hexdigest()
    manifest = {"version": _VERSION, "files": sorted(digests.items()), "object": object_digest}
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(directory / f"object-{object_digest}.o", data, 0o644, prefix=".object-")
    atomic_write(directory / f"reuse-{entry_key(identity, command, output)}.json",
                 json.dumps(manifest, sort_keys=True).encode(), 0o644, prefix=".reuse-")


def take(directory: Path, identity: str, command: Sequence[str], output: str, cwd: Path, target: Path) -> bool:
    """Write the recorded object of `command` to `target` when every file it was compiled from
    (paths relative to `cwd`, where the build runs its commands) still has the recorded content;
    False (nothing written) otherwise."""
    raw = _read_regular(directory / f"reuse-{entry_key(identity, command, output)}.json", MANIFEST_MAX)
    if raw is None:
        return False
    try:
        manifest = json.loads(raw)
        files = [(str(p), str(d)) for p, d in manifest["files"]]
        object_digest = str(manifest["object"])
        if manifest["version"] != _VERSION:
            return False
    except (ValueError, KeyError, TypeError):
        return False
    for path, digest in files:
        if _digest(cwd / path) != digest:
            return False
    data = _read_regular(directory / f"object-{object_digest}.o", OBJECT_MAX)
    if data is None or hashlib.sha256(data).hexdigest() != object_digest:
        return False
    atomic_write(target, data, 0o644, prefix=f".{target.name}.")
    return True
