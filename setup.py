"""Build of the native device simulator; the project metadata is in pyproject.toml.

`opbuild.runtime._opbuild_sim` is a plain C shared library (no Python module init) loaded with
ctypes by opbuild/runtime/device.py. setuptools builds it as an Extension so that
`pip install -e .` puts it next to the sources and `pip install .` into the wheel.
"""

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

NATIVE = "opbuild/runtime/native"


class build_shared_lib(build_ext):
    """build_ext for C libraries that are not Python modules (no PyInit_ symbol to export)."""

    def get_export_symbols(self, ext):
        return ext.export_symbols


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


sim = Extension(
    "opbuild.runtime._opbuild_sim",
    sources=[f"{NATIVE}/src/sim.c"],
    include_dirs=[f"{NATIVE}/include", f"{NATIVE}/src"],
    depends=[
        f"{NATIVE}/src/sim.h",
        f"{NATIVE}/include/opbuild/kernel.h",
        f"{NATIVE}/include/opbuild/types.h",
    ],
    extra_compile_args=["-std=c11", "-O2", "-pthread", "-fvisibility=hidden", "-Wall", "-Wextra"],
    extra_link_args=["-pthread"],
    language="c",
)

setup(ext_modules=[sim], cmdclass={"build_ext": build_shared_lib, "build_py": build_py_with_data})
