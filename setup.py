"""Build of the native libraries; the project metadata is in pyproject.toml.

`opbuild.runtime._opbuild_sim` is the device simulator: a plain C shared library (no Python
module init) loaded with ctypes by opbuild/runtime/device.py.

`opbuild.runtime._opbuild_acl` is the aclnn C ABI (acl/acl.h, aclnn/acl_meta.h): the acl objects,
aclrt* on the simulator, and the bridge from generated aclnn wrappers to the Python runtime. It
is linked against libpython (it embeds an interpreter in programs that have none) and dlopens the
simulator by path at first use (the same file device.py loads, so a process has one simulator).

`opbuild.runtime._fastpath` is a CPython extension (numpy's C headers): the cache-hit path of the
per-op two-phase wrappers (opbuild/runtime/call/executor.py works without it).

setuptools builds them as Extensions so that `pip install -e .` puts them next to the sources and
`pip install .` into the wheel.
"""

import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

NATIVE = "opbuild/runtime/native"
ROOT = Path(__file__).resolve().parent
"""The checkout this file is in (mapped to `.` in what the compiler records)."""
ACL_SONAME = "libopbuild_acl.so"
"""= opbuild.abi.native_libs.ACL_SONAME (tests/capi check the built library carries it)."""


class build_shared_lib(build_ext):
    """build_ext for C libraries that are not Python modules (no PyInit_ symbol to export)."""

    def get_export_symbols(self, ext):
        return ext.export_symbols

    def build_extension(self, ext):
        # Reproducible from any checkout path: the compiler records no directory of the checkout
        # (DWARF's comp_dir, __FILE__). The op API libraries link against the acl library and the
        # shared build cache keys that link by its content: a library recording its checkout's path
        # made every other checkout's links miss the cache (issue 28).
        prefix_maps = [f"-ffile-prefix-map={d}=." for d in sorted({os.getcwd(), str(ROOT)})]
        ext.extra_compile_args = [a for a in ext.extra_compile_args if not a.startswith("-ffile-prefix-map=")] + prefix_maps
        if ext.name == ACL_NAME:
            # The acl library dlopens the simulator built next to it: bake in its file name.
            sim_file = os.path.basename(self.get_ext_filename(SIM_NAME))
            ext.define_macros = [m for m in ext.define_macros if m[0] != "OPBUILD_SIM_BASENAME"]
            ext.define_macros.append(("OPBUILD_SIM_BASENAME", _c_string(sim_file)))
        if ext.name == ACL_NAME:
            # Op API libraries need the acl library by its fixed SONAME (opbuild/abi/native_libs.py):
            # -lopbuild_acl and LD_LIBRARY_PATH find it under that name, beside the real file.
            ext.extra_link_args = [a for a in ext.extra_link_args if not a.startswith("-Wl,-soname,")]
            ext.extra_link_args.append(f"-Wl,-soname,{ACL_SONAME}")
        super().build_extension(ext)
        if ext.name == ACL_NAME:
            _link_acl(Path(self.get_ext_fullpath(ext.name)))

    def copy_extensions_to_source(self):
        """`pip install -e .`: the libraries are copied next to the sources; the fixed name too."""
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            if ext.name == ACL_NAME:
                _link_acl(Path(self._get_inplace_equivalent(build_py, ext)[0]))


def _link_acl(library: Path) -> None:
    """`ACL_SONAME` beside the acl library: a relative symlink to it."""
    link = library.parent / ACL_SONAME
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(library.name)


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _libpython() -> tuple[list[str], list[str]]:
    """(library_dirs, libraries) to link libpython, as `python3-config --embed --ldflags`."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        # A static interpreter exports its own symbols; standalone C programs cannot embed it.
        return [], []
    libdir = sysconfig.get_config_var("LIBDIR")
    version = sysconfig.get_config_var("LDVERSION") or sysconfig.get_config_var("VERSION")
    return ([libdir] if libdir else []), [f"python{version}"]


class build_py_with_data(build_py):
    """Ship the top-level `schemas/` and `templates/` inside the package (`opbuild/_data/`), so a
    non-editable install (a wheel, a pre-commit hook environment) validates and generates too."""

    def run(self):
        super().run()
        for name in ("schemas", "templates"):
            target = Path(self.build_lib) / "opbuild" / "_data" / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(name, target)


WARNINGS = ["-Wall", "-Wextra", "-Werror"]
"""opbuild's own C sources build warning-free (a new warning fails the build). Not applied to user
kernels or the C opbuild generates for op packages (opbuild/builder/toolchain.py)."""

SIM_NAME = "opbuild.runtime._opbuild_sim"
ACL_NAME = "opbuild.runtime._opbuild_acl"

sim = Extension(
    SIM_NAME,
    sources=[f"{NATIVE}/src/sim.c", f"{NATIVE}/src/sim_isolate.c"],
    include_dirs=[f"{NATIVE}/include", f"{NATIVE}/src"],
    depends=[
        f"{NATIVE}/src/sim.h",
        f"{NATIVE}/src/sim_internal.h",
        f"{NATIVE}/include/opbuild/kernel.h",
        f"{NATIVE}/include/opbuild/types.h",
        f"{NATIVE}/include/opbuild/vocabulary_gen.h",
    ],
    extra_compile_args=["-std=c11", "-O2", "-pthread", "-fvisibility=hidden", *WARNINGS],
    extra_link_args=["-pthread"],
    libraries=["m", "dl"],
    language="c",
)

_py_libdirs, _py_libs = _libpython()
ACL_SOURCES = ["acl_log.c", "acl_meta.c", "acl_rt.c", "acl_bridge.c", "opcache.c", "plancache.c", "opkey.c", "acl_config.c",
               "acl_event.c", "acl_desc.c", "acl_op.c"]
acl = Extension(
    ACL_NAME,
    sources=[f"{NATIVE}/src/{name}" for name in ACL_SOURCES],
    include_dirs=[f"{NATIVE}/include", f"{NATIVE}/src"],
    depends=[
        f"{NATIVE}/src/acl_internal.h",
        f"{NATIVE}/src/opcache.h",
        f"{NATIVE}/src/plancache.h",
        f"{NATIVE}/src/opkey.h",
        f"{NATIVE}/src/setting.h",
        f"{NATIVE}/include/opbuild/vocabulary_gen.h",
        f"{NATIVE}/src/sim.h",
        f"{NATIVE}/include/acl/acl.h",
        f"{NATIVE}/include/acl/acl_base.h",
        f"{NATIVE}/include/acl/acl_rt.h",
        f"{NATIVE}/include/acl/acl_mdl.h",
        f"{NATIVE}/include/acl/acl_op.h",
        f"{NATIVE}/include/acl/acl_op_compiler.h",
        f"{NATIVE}/src/acl_desc.h",
        f"{NATIVE}/src/acl_python.h",
        f"{NATIVE}/include/aclnn/acl_meta.h",
        f"{NATIVE}/include/aclnn/opbuild_acl.h",
    ],
    # The interpreter a standalone C program embeds (env OPBUILD_PYTHON overrides it at run time).
    define_macros=[("OPBUILD_PYTHON_EXECUTABLE", _c_string(sys.executable))],
    library_dirs=_py_libdirs,
    libraries=[*_py_libs, "dl"],
    runtime_library_dirs=_py_libdirs,
    extra_compile_args=["-std=gnu11", "-O2", "-pthread", "-fvisibility=hidden", *WARNINGS],
    # nodelete: the library registers a pthread key destructor and must never be unloaded.
    extra_link_args=["-pthread", "-Wl,-z,nodelete"],
    language="c",
)



def _numpy_include() -> list[str]:
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is a build requirement
        return []
    return [numpy.get_include()]


FASTPATH_NAME = "opbuild.runtime._fastpath"
fastpath = Extension(
    FASTPATH_NAME,
    sources=[f"{NATIVE}/src/fastpath.c", f"{NATIVE}/src/fastpath_hit.c", f"{NATIVE}/src/opkey.c",
             f"{NATIVE}/src/plancache.c",
             f"{NATIVE}/src/fallback_exec.c", f"{NATIVE}/src/oneshot.c", f"{NATIVE}/src/tiling_fill.c", f"{NATIVE}/src/signature_miss.c",
             f"{NATIVE}/src/describe.c"],
    include_dirs=[*_numpy_include(), f"{NATIVE}/src", f"{NATIVE}/include"],
    depends=[f"{NATIVE}/src/opkey.h", f"{NATIVE}/src/plancache.h", f"{NATIVE}/src/fastpath.h", f"{NATIVE}/src/tiling_block.h", f"{NATIVE}/src/oneshot_api.h", f"{NATIVE}/include/opbuild/vocabulary_gen.h", f"{NATIVE}/include/opbuild/tiling.h"],
    extra_compile_args=["-std=gnu11", "-O2", "-fvisibility=hidden", *WARNINGS],
    language="c",
)

setup(ext_modules=[sim, acl, fastpath], cmdclass={"build_ext": build_shared_lib, "build_py": build_py_with_data})
