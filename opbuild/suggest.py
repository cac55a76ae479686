""""Did you mean ...?" for a misspelt name: the closest known name, if one is close enough.

Used wherever an author names something the op must declare (an attribute read by a key rule,
a tensor in `when` or a shape rule, a dtype), so the message says what was probably meant.
Imports only the dtype vocabulary (lazily): the key rules' `KeyContext` uses it at run time too.
"""

from __future__ import annotations

import difflib
from typing import Iterable


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like `name`, else None: equal ignoring case; or the dtype `name` is
    another spelling of (`fp16`, `half`, `bf16`, `DT_FLOAT`: vocabulary.DTYPE_SPELLINGS) when it is
    known; or difflib ratio >= 0.6."""
    from opbuild.abi.vocabulary import DTYPE_SPELLINGS

    choices = [k for k in dict.fromkeys(known) if isinstance(k, str)]
    folded = [k for k in choices if k.lower() == name.lower()]
    if folded:
        return folded[0]
    spelled = DTYPE_SPELLINGS.get(name.lower())
    if spelled in choices:
        return spelled
    hits = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return hits[0] if hits else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`"; did you mean 'alpha'?"`, or `""` when no known name is close to `name`."""
    hit = closest(name, known)
    return f"; did you mean {hit!r}?" if hit is not None and hit != name else ""
