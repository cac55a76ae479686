"""The runtime's native libraries and how C code is compiled and linked against them.

Two libraries are built by `pip install` (setup.py) into opbuild/runtime/:

* `_opbuild_sim*.so`: the device simulator (loaded by opbuild.runtime.device);
* `_opbuild_acl*.so`: the aclnn C ABI: `acl/acl.h` (aclInit, aclrt*), `aclnn/acl_meta.h`
  (aclCreateTensor & co, executors) and the bridge generated aclnn wrappers call.

A package's `op_api/lib/libcust_opapi.so` is the generated aclnn wrappers (opbuild/codegen/aclnn_c.py)
compiled with `opapi_command`:

    cc -std=gnu11 -O2 -fPIC -fvisibility=hidden -Wall -I<opbuild include> -I<pkg>/op_api/include
       -o <pkg>/op_api/lib/libcust_opapi.so aclnn_<op>.c...
       -shared -L<runtime dir> -l:<acl library file> -Wl,-rpath,<runtime dir> -ldl

An application (a CANN-style aclnn sample) compiles with `app_flags(package_root)`; one calling ops
of other op API libraries too (the built-in package's libopapi_<domain>.so) with
`app_flags_for_libraries([...])`.
"""

from __future__ import annotations

import os
import shlex
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Sequence

from opbuild.runtime_paths import native_include_dir

RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"
"""opbuild/runtime/: where setup.py puts the native libraries."""

ACL_STEM = "_opbuild_acl"
SIM_STEM = "_opbuild_sim"
OPAPI_LIB = "libcust_opapi.so"


class NativeLibraryMissing(FileNotFoundError):
    """A native library of the runtime is not built."""


def _find(stem: str) -> Path:
    found = sorted(RUNTIME_DIR.glob(f"{stem}*.so"))
    for suffix in EXTENSION_SUFFIXES:  # the build for this interpreter first
        for path in found:
            if path.name == stem + suffix:
                return path
    if found:
        return found[0]
    raise NativeLibraryMissing(f"the native library {stem} is not built: no {stem}*.so in {RUNTIME_DIR}; "
                               "run `pip install -e .` in the repository root")


def acl_library() -> Path:
    """The aclnn C ABI library (acl/acl.h, aclnn/acl_meta.h, the aclnn bridge)."""
    return _find(ACL_STEM)


def sim_library() -> Path:
    """The device simulator library (see opbuild.runtime.device for the OPBUILD_SIM_LIB override)."""
    return _find(SIM_STEM)


def include_dirs() -> list[Path]:
    """Where acl/acl.h, aclnn/acl_meta.h and opbuild/*.h are."""
    return [native_include_dir()]


def _cc(cc: str | Sequence[str] | None) -> list[str]:
    if cc is None:
        cc = os.environ.get("CC") or "cc"
    return shlex.split(cc) if isinstance(cc, str) else list(cc)


def opapi_cflags() -> list[str]:
    """Compile flags of generated aclnn wrapper sources (add -I<pkg>/op_api/include)."""
    return ["-std=gnu11", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall", *(f"-I{d}" for d in include_dirs())]


def opapi_link_flags() -> list[str]:
    """Link flags of libcust_opapi.so: a shared object resolving the bridge from the acl library.

    The acl library is found through an absolute rpath (the runtime this opbuild is installed
    in), so the package works wherever it is copied to; its own location comes from dladdr.
    """
    acl = acl_library()
    return ["-shared", f"-L{acl.parent}", f"-l:{acl.name}", f"-Wl,-rpath,{acl.parent}", "-ldl"]


def opapi_command(sources: Sequence[str | os.PathLike], output: str | os.PathLike,
                  include_dirs: Sequence[str | os.PathLike] = (), cc: str | Sequence[str] | None = None) -> list[str]:
    """The command that compiles and links generated wrapper sources into `output` (libcust_opapi.so).

    `include_dirs`: where the generated aclnn_<op>.h headers are (<pkg>/op_api/include)."""
    return [*_cc(cc), *opapi_cflags(), *(f"-I{d}" for d in include_dirs), "-o", str(output),
            *(str(s) for s in sources), *opapi_link_flags()]


def app_flags(package_root: str | os.PathLike) -> list[str]:
    """Compile + link flags of a C/C++ program calling a package's aclnn API (after its sources):
    the headers, libcust_opapi.so of the package and the acl library, both with rpaths."""
    root = Path(package_root).resolve()
    lib = root / "op_api" / "lib"
    acl = acl_library()
    return [*(f"-I{d}" for d in include_dirs()), f"-I{root / 'op_api' / 'include'}",
            f"-L{lib}", "-lcust_opapi", f"-Wl,-rpath,{lib}",
            f"-L{acl.parent}", f"-l:{acl.name}", f"-Wl,-rpath,{acl.parent}"]


def app_flags_for_libraries(libraries: Sequence[str | os.PathLike]) -> list[str]:
    """Compile + link flags of a C/C++ program calling ops of named op API libraries, maybe of
    several packages (after its sources): `libraries` are paths `<root>/op_api/lib/<file>`
    (libcust_opapi.so of a vendor package, libopapi.so / libopapi_<domain>.so of the built-in
    package). For each, in the order given: its package's headers (<root>/op_api/include) and the
    library by file name (-l:<file>) with an rpath to its directory; then the acl library, as
    app_flags (which is this for `<root>/op_api/lib/libcust_opapi.so` alone).

    Two libraries of one file name (libcust_opapi.so of two vendors) cannot be linked together:
    the loader finds both by that name through the rpaths. ValueError."""
    libs = [Path(lib).resolve() for lib in libraries]
    names = [lib.name for lib in libs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"op API libraries of the same file name cannot be linked into one program: {', '.join(dupes)}")
    acl = acl_library()
    flags = [f"-I{d}" for d in include_dirs()]
    for inc in dict.fromkeys(lib.parent.parent / "include" for lib in libs):
        flags.append(f"-I{inc}")
    for lib_dir in dict.fromkeys(lib.parent for lib in libs):
        flags += [f"-L{lib_dir}", f"-Wl,-rpath,{lib_dir}"]
    flags += [f"-l:{lib.name}" for lib in libs]
    return [*flags, f"-L{acl.parent}", f"-l:{acl.name}", f"-Wl,-rpath,{acl.parent}"]
