"""Reading files that come from outside (package files, shared-cache entries): regular files only,
bounded in size, UTF-8 text, JSON of bounded nesting; every refusal one `UnsafeFileError` naming
the path.

Why: a reader that `open()`s and `read()`s whatever is at a path hangs on a FIFO (its open or its
read never returns), exhausts memory on `/dev/zero`, raises UnicodeDecodeError on bytes that are
not UTF-8 and RecursionError on JSON nested 100,000 deep. Here a file is opened with
O_NONBLOCK (a FIFO's open returns at once) and, when asked, O_NOFOLLOW; `fstat` of the opened
descriptor must say S_ISREG (what was checked is what is read); at most `limit` + 1 bytes are read
and more than `limit` is refused. `UnsafeFileError` is an OSError, so a caller's existing `except
OSError` keeps handling it, and its text is `<path>: <reason>`.

Imports nothing of opbuild, so that any layer can use it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from typing import Any

MAX_PACKAGE_FILE_BYTES = 64 << 20
"""The default bound of one package file read whole (config.ini, JSON descriptors, plugin files)."""
MAX_JSON_DEPTH = 200
"""Deepest nesting of arrays and objects accepted in a JSON file (a package's are a few deep)."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


class UnsafeFileError(OSError):
    """A file refused: missing, not a regular file, too large, not UTF-8, not JSON, nested too
    deeply. `path` and `reason` are kept; str() is `<path>: <reason>`."""

    def __init__(self, path: str | os.PathLike[str], reason: str, code: int | None = None) -> None:
        super().__init__(code if code is not None else errno.EINVAL, reason)
        self.filename = os.fspath(path)
        self.path = os.fspath(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class MissingFileError(UnsafeFileError, FileNotFoundError):
    """The file does not exist (also a FileNotFoundError, for callers that treat that apart)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: str | os.PathLike[str], limit: int = MAX_PACKAGE_FILE_BYTES, *,
               follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; UnsafeFileError otherwise
    (MissingFileError, also a FileNotFoundError, when it does not exist). With
    `follow_symlinks=False` a symbolic link is refused too."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise MissingFileError(path, "no such file", errno.ENOENT) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise UnsafeFileError(path, "a symbolic link, not a regular file", errno.ELOOP) from None
        raise UnsafeFileError(path, f"cannot open: {exc.strerror or exc}", exc.errno) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(path, f"{_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise UnsafeFileError(path, f"{st.st_size} bytes, more than the {limit} allowed")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # (it grew while read)
            raise UnsafeFileError(path, f"more than the {limit} bytes allowed")
        return b"".join(chunks)
    except UnsafeFileError:
        raise
    except OSError as exc:
        raise UnsafeFileError(path, f"cannot read: {exc.strerror or exc}", exc.errno) from None
    finally:
        os.close(fd)


def decode_text(path: str | os.PathLike[str], data: bytes) -> str:
    """`data` (read from `path`) as UTF-8 text; UnsafeFileError naming the path and offset otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafeFileError(path, f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def read_text(path: str | os.PathLike[str], limit: int = MAX_PACKAGE_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file `path` (at most `limit` bytes); UnsafeFileError otherwise."""
    return decode_text(path, read_bytes(path, limit))


def check_json_depth(path: str | os.PathLike[str], text: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """UnsafeFileError when arrays/objects in the JSON `text` nest deeper than `max_depth`."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > max_depth:
                raise UnsafeFileError(path, f"JSON nested more than {max_depth} deep")
        else:
            depth -= 1


def loads_json(path: str | os.PathLike[str], text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON document `text` (read from `path`), nesting bounded; UnsafeFileError otherwise."""
    check_json_depth(path, text, max_depth)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UnsafeFileError(path, f"not valid JSON: {exc}") from None
    except RecursionError:  # (only if max_depth is set above the interpreter's limit)
        raise UnsafeFileError(path, "JSON nested too deeply") from None


def read_json(path: str | os.PathLike[str], limit: int = MAX_PACKAGE_FILE_BYTES,
              max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON document in the regular UTF-8 file `path`; UnsafeFileError naming it otherwise."""
    return loads_json(path, read_text(path, limit), max_depth)
