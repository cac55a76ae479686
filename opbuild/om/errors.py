"""Errors of the .om reader/writer: each names the field and the byte offset it is about."""

from __future__ import annotations


class OmError(Exception):
    """A problem with an .om file or its build; `field` and `offset` say where (offset may be None)."""

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
