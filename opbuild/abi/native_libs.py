"""The runtime's native libraries and how C code is compiled and linked against them.

Two libraries are built by `pip install` (setup.py) into opbuild/runtime/:

* `_opbuild_sim*.so`: the device simulator (loaded by opbuild.runtime.device);
* `_opbuild_acl*.so`: the aclnn C ABI: `acl/acl.h` (aclInit, aclrt*), `aclnn/acl_meta.h`
  (aclCreateTensor & co, executors) and the bridge generated aclnn wrappers call. Its SONAME is
  the fixed name `ACL_SONAME` (libopbuild_acl.so, CANN's libascendcl.so), and setup.py puts a
  file of that name beside it (`ACL_LINK_NAME`).

A package's `op_api/lib/libcust_opapi.so` is the generated aclnn wrappers (opbuild/codegen/aclnn_c.py)
compiled with `opapi_command`:

    cc -std=gnu11 -O2 -fPIC -fvisibility=hidden -Wall -ffile-prefix-map=... -I<opbuild include>
       -I<pkg>/op_api/include -o <pkg>/op_api/lib/libcust_opapi.so aclnn_<op>.c...
       -shared -L<runtime dir> -lopbuild_acl -ldl

It needs the acl library by that fixed name and carries no RUNPATH (no path of the build
machine: the package runs wherever it is copied). The name is resolved the CANN way:

* in Python, the runtime has loaded the acl library before it opens any op API library, and the
  loader matches the need by SONAME (no set-up step);
* a C program either links with rpaths (`app_flags`), or runs in the environment `opbuild env`
  prints (LD_LIBRARY_PATH to the runtime directory, like CANN's set_env.sh), building with
  `opbuild config --cflags --libs` or `pkg-config --cflags --libs opbuild` (`pkg_config_text`).

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

from opbuild.abi import package_layout
from opbuild.portable import prefix_map_flags
from opbuild.runtime_paths import native_include_dir, runtime_dir

RUNTIME_DIR = runtime_dir()
"""opbuild/runtime/: where setup.py puts the native libraries."""

ACL_STEM = "_opbuild_acl"
SIM_STEM = "_opbuild_sim"
OPAPI_LIB = package_layout.CUSTOM_OPAPI_LIB
ACL_SONAME = "libopbuild_acl.so"
"""The acl library's fixed name: its SONAME, so every library linked against it needs this name."""
ACL_LINK_NAME = ACL_SONAME
"""The file of that name setup.py puts beside the acl library (a symlink, or a copy in a wheel):
what `-lopbuild_acl` and LD_LIBRARY_PATH find."""


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


def acl_library_dir() -> Path:
    """The directory holding the acl library under its fixed name (ACL_LINK_NAME): what -L and
    LD_LIBRARY_PATH name."""
    acl = acl_library()
    if not (acl.parent / ACL_LINK_NAME).exists():
        raise NativeLibraryMissing(f"{acl.parent / ACL_LINK_NAME} is missing (the acl library under its fixed "
                                   "name); run `pip install -e .` in the repository root again")
    return acl.parent


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
    return ["-std=gnu11", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall", *prefix_map_flags(),
            *(f"-I{d}" for d in include_dirs())]


def opapi_link_flags() -> list[str]:
    """Link flags of libcust_opapi.so: a shared object needing the acl library by its fixed name
    (ACL_SONAME), with no rpath: no path of this machine in the package (see the module docstring)."""
    return ["-shared", f"-L{acl_library_dir()}", f"-l{_lib_name(ACL_LINK_NAME)}", "-ldl"]


def _lib_name(file_name: str) -> str:
    """libfoo.so -> foo (what -l takes)."""
    return file_name.removeprefix("lib").removesuffix(".so")


def acl_cflags() -> list[str]:
    """Compile flags of a C/C++ program using acl/acl.h, aclnn/*.h (`opbuild config --cflags`)."""
    return [f"-I{d}" for d in include_dirs()]


def acl_libs() -> list[str]:
    """Link flags of the acl library by its fixed name, no rpath (`opbuild config --libs`): the
    program runs in the environment `opbuild env` prints."""
    return [f"-L{acl_library_dir()}", f"-l{_lib_name(ACL_LINK_NAME)}"]


def package_opapi_libs(package_root: str | os.PathLike) -> list[Path]:
    """The op API libraries of a package, custom or built-in (`op_api/lib/` files named by
    package_layout.opapi_lib_names, in its search order); empty when it has none."""
    lib = Path(package_root) / "op_api" / "lib"
    return [lib / name for name in package_layout.opapi_lib_names() if (lib / name).is_file()]


def package_flags(package_root: str | os.PathLike) -> list[str]:
    """Compile + link flags of one package's op API (`opbuild config --package PKG`): its
    headers and every op API library it has (libcust_opapi.so of a vendor package; libopapi.so
    and libopapi_<domain>.so of the built-in one), in search order, no rpath."""
    root = Path(package_root).resolve()
    return [f"-I{root / 'op_api' / 'include'}", f"-L{root / 'op_api' / 'lib'}",
            *(f"-l{_lib_name(lib.name)}" for lib in package_opapi_libs(root))]


def environment() -> dict[str, str]:
    """What `opbuild env` exports (CANN's set_env.sh): LD_LIBRARY_PATH to the acl library, so
    programs and op API libraries find it by its fixed name."""
    return {"LD_LIBRARY_PATH": str(acl_library_dir())}


def pkg_config_text() -> str:
    """opbuild.pc: `pkg-config --cflags --libs opbuild` gives acl_cflags() and acl_libs()."""
    import opbuild

    ver = opbuild.version()
    return (f"includedir={include_dirs()[0]}\nlibdir={acl_library_dir()}\n\n"
            "Name: opbuild\nDescription: opbuild aclnn C ABI (acl/acl.h, aclnn/acl_meta.h) on the device simulator\n"
            f"Version: {ver}\nCflags: -I${{includedir}}\nLibs: -L${{libdir}} -l{_lib_name(ACL_LINK_NAME)}\n")


def opapi_command(sources: Sequence[str | os.PathLike], output: str | os.PathLike,
                  include_dirs: Sequence[str | os.PathLike] = (), cc: str | Sequence[str] | None = None) -> list[str]:
    """The command that compiles and links generated wrapper sources into `output` (libcust_opapi.so).

    `include_dirs`: where the generated aclnn_<op>.h headers are (<pkg>/op_api/include)."""
    return [*_cc(cc), *opapi_cflags(), *(f"-I{d}" for d in include_dirs), "-o", str(output),
            *(str(s) for s in sources), *opapi_link_flags()]


def app_flags(package_root: str | os.PathLike) -> list[str]:
    """Compile + link flags of a C/C++ program calling a package's aclnn API (after its sources):
    the headers, libcust_opapi.so of the package and the acl library, both with rpaths (a
    program that runs with no set-up step; see `acl_libs` for the set_env.sh way)."""
    root = Path(package_root).resolve()
    lib = root / "op_api" / "lib"
    return [*(f"-I{d}" for d in include_dirs()), *package_flags(root), f"-Wl,-rpath,{lib}",
            *acl_libs(), f"-Wl,-rpath,{acl_library_dir()}"]


def app_flags_for_libraries(libraries: Sequence[str | os.PathLike]) -> list[str]:
    """Compile + link flags of a C/C++ program calling ops of named op API libraries, maybe of
    several packages (after its sources): `libraries` are paths `<root>/op_api/lib/<file>`
    (libcust_opapi.so of a vendor package, libopapi.so / libopapi_<domain>.so of the built-in
    package). For each, in the order given: its package's headers (<root>/op_api/include) and the
    library by file name (-l:<file>) with an rpath to its directory; then the acl library by its
    fixed name with an rpath, as app_flags (which is this for `<root>/op_api/lib/libcust_opapi.so` alone).

    Two libraries of one file name (libcust_opapi.so of two vendors) cannot be linked together:
    the loader finds both by that name through the rpaths. ValueError."""
    libs = [Path(lib).resolve() for lib in libraries]
    names = [lib.name for lib in libs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"op API libraries of the same file name cannot be linked into one program: {', '.join(dupes)}")
    acl_dir = acl_library_dir()
    flags = [f"-I{d}" for d in include_dirs()]
    for inc in dict.fromkeys(lib.parent.parent / "include" for lib in libs):
        flags.append(f"-I{inc}")
    for lib_dir in dict.fromkeys(lib.parent for lib in libs):
        flags += [f"-L{lib_dir}", f"-Wl,-rpath,{lib_dir}"]
    flags += [f"-l:{lib.name}" for lib in libs]
    return [*flags, *acl_libs(), f"-Wl,-rpath,{acl_dir}"]
