"""The optional C extension `opbuild.runtime._fastpath`, loaded in one place.

None when it is not built or is disabled with OPBUILD_NO_FASTPATH=1 (every user then takes its
pure-Python equivalent: the hit path, the TilingContext builder, the env token).
"""

from __future__ import annotations

import os
from typing import Any


def load() -> Any:
    """The extension module, or None (not built, or OPBUILD_NO_FASTPATH set)."""
    if os.environ.get("OPBUILD_NO_FASTPATH", "") not in ("", "0"):
        return None
    try:
        from opbuild.runtime import _fastpath
    except ImportError:
        return None
    return _fastpath
