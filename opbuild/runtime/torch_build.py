"""The torch ops' C++ CPU kernel (native/src/torch_kernel.cpp), built on first use and cached.

What: `kernel_library(torch)` compiles torch_kernel.cpp with the host C++ compiler against the
installed torch's headers and libraries (its C++ ABI: `-D_GLIBCXX_USE_CXX11_ABI` as torch was
built), keeps the library in opbuild's user cache directory (`runtime_paths.user_cache_dir()`,
`torch_kernel/`) under a name keyed by contents and versions, never a path (`cache_key`: two
checkouts share it; written atomically, so concurrent first uses never load a partial file), loads it with
`torch.ops.load_library` and binds it to the runtime (`_fastpath.oneshot_api`). It returns None,
after one warning naming why and what to install, when there is no compiler, the build fails or
the runtime has no native fast path: the ops then keep their Python kernel.

The compiler is the builder's (opbuild/compilers.py `cxx_command`, which builder/toolchain.py's
HostToolchain uses too): `CXX`, else the C++ driver beside `CC` (default `cc` -> `c++`).

Why here (the runtime layer): the kernel serves runtime calls; torch is optional, so setup.py
cannot build it, and nothing imports this module unless torch ops are registered.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from opbuild.atomic import atomic_write
from opbuild.compilers import cxx_command
from opbuild.portable import prefix_map_flags
from opbuild.runtime_paths import runtime_dir, user_cache_dir

SOURCE_DIR = runtime_dir() / "native" / "src"
SOURCE = "torch_kernel.cpp"
"""The kernel's source; it and the headers of SOURCE_DIR it includes (oneshot_api.h, the C ABI it
shares with _fastpath) are keyed by content (`sources`)."""
BUILD_TIMEOUT_S = 600

_LOCK = threading.Lock()
_RESULT: dict[str, Any] = {}
"""'kernel': the bound library (a ctypes.PyDLL) or None once the first use decided."""


class TorchKernelWarning(RuntimeWarning):
    """The C++ kernel is not used (no compiler, a failed build): the ops run their Python kernel."""


OPTIONS = ("-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra")
LIBRARIES = ("-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python")
_INCLUDE = re.compile(rb'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources() -> dict[str, bytes]:
    """The kernel's source and every header of SOURCE_DIR it includes (transitively, `#include
    "..."`), by file name: what its build reads of opbuild's own files."""
    found: dict[str, bytes] = {}
    pending = [SOURCE]
    while pending:
        name = pending.pop()
        path = SOURCE_DIR / name
        if name in found or not path.is_file():
            continue  # (a quoted include found elsewhere: none today)
        found[name] = path.read_bytes()
        pending += [m.decode() for m in _INCLUDE.findall(found[name])]
    return dict(sorted(found.items()))


def _abi_define(torch: Any) -> str:
    return f"-D_GLIBCXX_USE_CXX11_ABI={int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))}"


def _compile_flags(torch: Any) -> list[str]:
    root = Path(torch.__file__).parent
    includes = [sysconfig.get_paths()["include"], str(root / "include"),
                str(root / "include" / "torch" / "csrc" / "api" / "include")]
    return [*OPTIONS, _abi_define(torch), *prefix_map_flags(), *(f for d in includes for f in ("-isystem", d)),
            f"-I{SOURCE_DIR}"]


def _link_flags(torch: Any) -> list[str]:
    lib = Path(torch.__file__).parent / "lib"
    return [f"-L{lib}", *LIBRARIES, f"-Wl,-rpath,{lib}"]


def _identity(cxx: list[str]) -> str:
    """The compiler's identity for the cache key (its --version first line)."""
    done = subprocess.run([*cxx, "--version"], capture_output=True, text=True, timeout=60, check=False)
    return (done.stdout.splitlines() or [""])[0]


def cache_key(torch: Any, cxx: list[str]) -> str:
    """The kernel's cache key (decision 0007: no checkout or install path): the sources' and
    included headers' contents, torch's version and C++ ABI, the Python ABI, the compiler (its
    command and identity) and the flags that are not paths. The include and library directories
    are not in it: they follow from torch's and Python's versions, and may lie in a checkout's
    virtualenv."""
    h = hashlib.sha256()
    for name, text in sources().items():
        h.update(name.encode() + b"\0" + hashlib.sha256(text).digest())
    for part in (torch.__version__, _abi_define(torch), sys.implementation.cache_tag, shlex.join(cxx), _identity(cxx),
                 shlex.join(OPTIONS), shlex.join(LIBRARIES)):
        h.update(b"\0" + part.encode())
    return h.hexdigest()[:20]


def library_path(torch: Any, cxx: list[str]) -> Path:
    """Where the kernel built by `cxx` for this torch is cached."""
    return user_cache_dir() / "torch_kernel" / f"torch_kernel-{torch.__version__.replace('+', '_')}-{cache_key(torch, cxx)}.so"


def build(torch: Any) -> Path:
    """The kernel's library, compiled now unless cached. Raises RuntimeError naming why it
    cannot be built (no compiler, the compiler's errors)."""
    cxx = cxx_command()
    if shutil.which(cxx[0]) is None:
        raise RuntimeError(f"C++ compiler '{cxx[0]}' not found on PATH (CXX, else the C++ driver beside CC); "
                           f"install g++ (e.g. apt-get install g++) or set CXX=<compiler>")
    path = library_path(torch, cxx)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".build-") as tmp:
        out = Path(tmp) / path.name
        command = [*cxx, *_compile_flags(torch), str(SOURCE_DIR / SOURCE), *_link_flags(torch),
                   "-o", str(out)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"{shlex.join(command)}: {exc}") from None
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise RuntimeError(f"{shlex.join(command)} failed (exit {done.returncode}):\n{tail}")
        atomic_write(path, out.read_bytes(), mode=0o755)
    return path


def _numpy_dtypes(torch: Any) -> dict[Any, Any]:
    """torch dtype -> the numpy dtype of its numpy view (torch_ops._to_numpy's: bfloat16 as ml_dtypes')."""
    import ml_dtypes
    import numpy as np

    table = {torch.bfloat16: np.dtype(ml_dtypes.bfloat16)}
    for dtype in (torch.float16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32, torch.int64,
                  torch.uint8, torch.uint16, torch.uint32, torch.uint64, torch.bool, torch.complex64,
                  torch.complex128):
        try:
            table[dtype] = torch.empty(0, dtype=dtype).numpy().dtype
        except (TypeError, RuntimeError):  # a dtype numpy has no view of: the Python kernel's
            pass
    return table


def _load(torch: Any) -> Any:
    from opbuild.runtime.call import executor

    if executor._fastpath is None:
        raise RuntimeError("the runtime's native fast path (_fastpath) is not built: reinstall opbuild "
                           "(pip install -e .) with a C compiler")
    path = build(torch)
    torch.ops.load_library(str(path))
    lib = ctypes.PyDLL(str(path))
    for name in ("opbuild_torch_init", "opbuild_torch_register", "opbuild_torch_stats"):
        getattr(lib, name).restype = ctypes.py_object
    lib.opbuild_torch_init.argtypes = [ctypes.py_object] * 3
    lib.opbuild_torch_register.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.py_object, ctypes.py_object,
                                           ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_char_p]
    lib.opbuild_torch_init(executor._fastpath.oneshot_api, executor._CACHE, _numpy_dtypes(torch))
    return lib


def kernel_library(torch: Any) -> Any:
    """The bound C++ kernel library (built and loaded on the first call), or None after one
    TorchKernelWarning saying why not (the ops keep their Python kernel)."""
    with _LOCK:
        if "kernel" not in _RESULT:
            try:
                _RESULT["kernel"] = _load(torch)
            except (RuntimeError, OSError) as exc:
                _RESULT["kernel"] = None
                warnings.warn(f"opbuild torch ops: the C++ CPU kernel is not used, calls run the Python kernel "
                              f"(slower): {exc}", TorchKernelWarning, stacklevel=3)
        return _RESULT["kernel"]


def stats() -> tuple[int, int]:
    """(hits, misses) of the C++ kernel: calls its hit path served, and calls it handed to the
    Python kernel; (0, 0) when it is not loaded."""
    lib = _RESULT.get("kernel")
    return tuple(lib.opbuild_torch_stats()) if lib is not None else (0, 0)
