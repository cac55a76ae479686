"""Errors of the .om reader/writer: each names the field and the byte offset it is about."""

from __future__ import annotations

from opbuild.runtime.acl_errors import ModelFileError


class OmError(ModelFileError):
    """A problem with an .om file or its build; `field` and `offset` say where (offset may be None).
    The C API reports it as ACL_ERROR_PARSE_MODEL (runtime/acl_errors.py)."""

    def __init__(self, message: str, field: str | None = None, offset: int | None = None) -> None:
        self.field = field
        self.offset = offset
        self.detail = message
        where = ""
        if field is not None:
            where = f"{field}" + (f" @{offset} (0x{offset:x})" if offset is not None else "") + ": "
        super().__init__(where + message)


class OmCompatError(OmError):
    """The .om was built for another host (CPU, OS, opp or compiler version)."""


class OmTrustError(OmError):
    """The .om carries native code or Python and was not trusted (see docs/om-format.md, Trust)."""


def one_line(text: str) -> str:
    """`text` on one line: its lines joined with "; " (a runtime message listing the nearest
    keys, an error quoting a name with a newline in it, a third-party library's report)."""
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


MAX_LISTED = 8
"""How many names an error lists before "... and N more" (a 100,000-op model's message stays short)."""


def listed(names, limit: int = MAX_LISTED) -> str:
    """`names` comma-separated, the first `limit` of them: `a, b, c, ... and 99997 more`."""
    names = list(names)
    shown = ", ".join(str(n) for n in names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... and {len(names) - limit} more"


def shown(value, limit: int = 200) -> str:
    """repr(value) cut to `limit` characters (a value read from a file may be any size)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"
