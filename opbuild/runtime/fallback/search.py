"""The op API symbol search of op_fallback (GetOpApiFuncAddr).

What: the library search path (`search_path`: custom packages in priority order, then the
built-in package's libopapi*.so), the library handles (dlopened once per path), the symbol lookup
with its cache (`get_op_api_func`, `get_op_api_addr`, `find_op_api`) and OpApiNotFound, which
names every library searched. See the package docstring for the search order.
Why its own module: finding a symbol needs neither the acl library nor argument conversion;
keeping the path, handle and symbol caches together keeps their locking in one place.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from typing import Any, NamedTuple, Sequence

from opbuild.abi import package_layout as layout
from opbuild.runtime.binaries.package import STAMP_INTERVAL_NS, search_key
from opbuild.runtime.call.cache_key import search_env
from opbuild.runtime.errors import ACLNN_ERR_INNER, AclnnError

log = logging.getLogger("opbuild.fallback")

CUSTOM_LIB = layout.CUSTOM_OPAPI_LIB
BUILTIN_LIBS = layout.opapi_lib_names()[1:]
"""The built-in package's op API libraries, in search order (op_api/lib/ of the package)."""
OP_API_LIB_DIR = os.path.join("op_api", "lib")
RESET_CACHE = "ResetCacheThreadLocal"

# ---- errors --------------------------------------------------------------------------------------


class SearchedLibrary(NamedTuple):
    path: str
    state: str  # "missing", "no symbol", "found", or "load failed: <dlerror>"


class OpApiNotFound(AclnnError):
    """No library of the search path exports the symbol. `.searched` lists every library, in
    order, with what was found there."""

    def __init__(self, name: str, searched: Sequence[SearchedLibrary]) -> None:
        self.name = name
        self.searched = tuple(searched)
        if searched:
            lines = "\n".join(f"  {i}. {s.path}: {_STATE_TEXT.get(s.state, s.state)}"
                              for i, s in enumerate(searched, 1))
            text = f"op API symbol {name} not found in any of {len(searched)} libraries (search order):\n{lines}"
        else:
            text = (f"op API symbol {name} not found: no library to search (ASCEND_CUSTOM_OPP_PATH and "
                    "ASCEND_OPP_PATH are unset and no roots were given)")
        super().__init__(ACLNN_ERR_INNER, text)


_STATE_TEXT = {"missing": "does not exist", "no symbol": "exists, no such symbol"}

# ---- the search path -----------------------------------------------------------------------------

_lock = threading.Lock()
"""The package's one lock: handle opening, cache clearing (execute.clear_caches) and the acl
library's first load (acllib._get_acl)."""
_HANDLES: dict[str, ctypes.CDLL] = {}
_OPENS: dict[str, int] = {}
_SYMBOLS: dict[tuple[str, tuple[str, ...]], tuple[int, str]] = {}
_ENV_PATH: tuple[Any, tuple[str, ...]] | None = None


_PACKAGE_OF: dict[str, str] = {}
"""Library path -> its package root (checked by _handle before the library is opened)."""


def _libraries(roots: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
    libs: list[str] = []
    for root in roots:
        root = os.path.abspath(os.fspath(root))
        lib_dir = os.path.join(root, OP_API_LIB_DIR)
        if os.path.basename(root) == "built-in":
            found = [os.path.join(lib_dir, name) for name in BUILTIN_LIBS]
        else:
            found = [os.path.join(lib_dir, CUSTOM_LIB)]
        for lib in found:
            _PACKAGE_OF[lib] = root
        libs += found
    return tuple(libs)


def _env_roots() -> list[str]:
    """The package roots of the environment: the runtime's one search order (binaries.package.search_roots)."""
    from opbuild.runtime.binaries.package import search_roots

    return [os.fspath(p) for p in search_roots()]


def package_roots() -> list[str]:
    """The environment's op package roots in search order (see the package docstring): what
    search_path(None) searches the libraries of, and where aclopCompileAndExecute finds an op."""
    return _env_roots()


def search_path(roots: Sequence[str | os.PathLike[str]] | None = None) -> tuple[str, ...]:
    """The absolute paths of the libraries searched, in order.

    `roots`: package roots, highest priority first; a root named `built-in` stands for the
    built-in package (its seven libopapi*.so), any other for a custom package (its
    libcust_opapi.so). None: the environment's packages (see the module docstring), resolved
    now; the result is reused while ASCEND_CUSTOM_OPP_PATH, ASCEND_OPP_PATH, ASCEND_HOME_PATH
    and the stat of vendors/config.ini (and of opp_latest) stay the same."""
    global _ENV_PATH
    if roots is not None:
        return _libraries(roots)
    # The variables as os.environ stores them (search_env: one dict read each; os.environ.get
    # decodes and costs ~10x more, and syn_exec_aclnn asks on every call).
    key = search_key(*search_env()[1:])
    cached = _ENV_PATH
    if cached is not None and cached[0] == key:
        return cached[1]
    paths = _libraries(_env_roots())
    _ENV_PATH = (key, paths)
    return paths


_RECENT: list[Any] = [None, 0]  # [(search_env(), paths) of the last full check, its monotonic_ns]


def recent_search_path() -> tuple[str, ...]:
    """search_path() of the environment for a call's hot path: the environment variables are
    compared on every call, vendors/config.ini (and opp_latest) re-checked at most every
    STAMP_INTERVAL_NS, as cached plans re-check their package's stamp (a stat costs about what
    the rest of syn_exec_aclnn does)."""
    env = search_env()
    now = time.monotonic_ns()
    cached, checked = _RECENT
    if cached is not None and cached[0] == env and now - checked < STAMP_INTERVAL_NS:
        return cached[1]
    paths = search_path(None)
    _RECENT[0], _RECENT[1] = (env, paths), now
    return paths


def _handle(path: str) -> tuple[ctypes.CDLL | None, str]:
    """The library at `path` (opened once per path), or (None, why not)."""
    lib = _HANDLES.get(path)
    if lib is not None:
        return lib, "found"
    if not os.path.exists(path):
        return None, "missing"
    with _lock:
        lib = _HANDLES.get(path)
        if lib is None:
            root = _PACKAGE_OF.get(path)
            if root is not None:  # a symlinked library must not lead out of its package
                from opbuild.runtime.binaries.package import inside_package

                inside_package(root, path, "op API library", "op_fallback")
            try:
                # Op API libraries need the acl library by its fixed name and carry no rpath: load it
                # first, the loader then matches that need by SONAME (opbuild/abi/native_libs.py).
                from opbuild.runtime.capi import acl_library

                acl_library()
                lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            except OSError as exc:
                return None, f"load failed: {exc}"
            _OPENS[path] = _OPENS.get(path, 0) + 1
            _HANDLES[path] = lib
    return lib, "found"


_dlsym = ctypes.CDLL(None).dlsym
_dlsym.restype = ctypes.c_void_p
_dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


def _find(name: str, paths: tuple[str, ...]) -> tuple[int, str]:
    """(address, library) of the first library of `paths` that has `name`; OpApiNotFound else."""
    key = (name, paths)
    hit = _SYMBOLS.get(key)
    if hit is not None:
        return hit
    searched: list[SearchedLibrary] = []
    raw = name.encode()
    for path in paths:
        lib, state = _handle(path)
        if lib is not None:
            address = _dlsym(lib._handle, raw)
            if address:
                hit = (address, path)
                _SYMBOLS[key] = hit
                return hit
            state = "no symbol"
        log.debug("op API symbol %s: %s: %s", name, path, state)
        searched.append(SearchedLibrary(path, state))
    raise OpApiNotFound(name, searched)


def get_op_api_addr(name: str, roots: Sequence[str | os.PathLike[str]] | None = None) -> int:
    """The address of op API symbol `name` (see get_op_api_func)."""
    return _find(name, search_path(roots))[0]


def get_op_api_func(name: str, roots: Sequence[str | os.PathLike[str]] | None = None):
    """The op API function `name` (GetOpApiFuncAddr): a ctypes function pointer (a fresh object
    each call: restype c_int, no argtypes; set them for your signature) of the first library of
    the search path that exports it. `roots`: see search_path. OpApiNotFound (an AclnnError,
    status 561000) names every library searched when none has it."""
    address, path = _find(name, search_path(roots))
    fn = _HANDLES[path]._FuncPtr(address)
    fn.__name__ = name  # type: ignore[attr-defined]  # ctypes function pointers take a __name__ (CDLL sets one); typeshed lacks it
    return fn


def find_op_api(name: str, roots: Sequence[str | os.PathLike[str]] | None = None) -> tuple[int, str]:
    """(address, absolute library path) of op API symbol `name`."""
    return _find(name, search_path(roots))


def library_opens() -> dict[str, int]:
    """How many times each library path was dlopened by this module (1 each: handles are cached)."""
    return dict(_OPENS)



def _forget_locked() -> None:
    """Forget found symbols and the resolved environment search path (caller holds _lock; see
    execute.clear_caches)."""
    global _ENV_PATH
    _SYMBOLS.clear()
    _ENV_PATH = None
    _RECENT[0] = None
