"""The one error type of the Ascend C front end."""

from __future__ import annotations


class AscendcHostError(Exception):
    """An op_host source that does not build, registers no or several OpDefs, or describes itself
    in a way opbuild cannot read. The message names the file (and the op, line or compiler output)."""
