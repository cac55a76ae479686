"""Paths as they enter cache keys and build outputs: never the build machine's own.

Two checkouts of one commit, at different directories and with opbuild installed at different
places, must compute the same cache keys (so teammates and CI share OPBUILD_CACHE_DIR, as ccache
does with `base_dir`) and write byte-identical packages. Two kinds of absolute path appear on the
build's command lines, and this module is the one place that says how each is made portable:

* paths under the project root: command lines name them relative to the root (the build runs
  there; `Planner.rel`), keys by `portable_path`;
* opbuild's install (its C headers, the acl library's directory): `INSTALL_TOKENS` names each
  location by a fixed token. Keys replace the location by the token (`portable_text`), and the
  compilers get `-ffile-prefix-map=<location>=<token>` (`prefix_map_flags`), so no output
  carries the location either.

Anything else absolute (a CANN toolkit under ASCEND_HOME_PATH, CPATH) is the machine's toolchain:
it stays in keys as it is, like the compiler's identity.
"""

from __future__ import annotations

import os
from functools import lru_cache

from opbuild.runtime_paths import native_include_dir, runtime_dir


@lru_cache(maxsize=1)
def install_tokens() -> tuple[tuple[str, str], ...]:
    """(location, token) of each install location of opbuild that command lines name, longest
    location first (the include directory lies inside the runtime directory)."""
    pairs = {str(native_include_dir()): "opbuild", str(runtime_dir()): "opbuild-runtime"}
    return tuple(sorted(pairs.items(), key=lambda p: -len(p[0])))


def portable_text(text: str) -> str:
    """`text` (a command line word, a path) with opbuild's install locations replaced by tokens."""
    for location, token in install_tokens():
        if location in text:
            text = text.replace(location, token)
    return text


def portable_path(path: str, root: str | os.PathLike) -> str:
    """An absolute path as a key names it: relative to the project `root` when under it, else
    with opbuild's install locations replaced by tokens."""
    prefix = str(root).rstrip(os.sep) + os.sep
    if path.startswith(prefix):
        return path[len(prefix):]
    return portable_text(path)


def prefix_map_flags() -> list[str]:
    """Compiler flags that write opbuild's install locations into outputs as their tokens."""
    return [f"-ffile-prefix-map={location}={token}" for location, token in install_tokens()]

