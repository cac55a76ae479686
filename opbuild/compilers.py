"""The host compilers as opbuild picks them: the one rule for which C++ compiler goes with which C
compiler.

What: `CC` (default `cc`) is the C compiler; the C++ compiler is `CXX`, else the C++ driver beside
the C compiler (gcc -> g++, clang -> clang++, cc -> c++, with the same directory and target prefix).
Why here (the foundation layer): the builder's host toolchain (builder/toolchain.py) and the torch
kernel's first-use build (runtime/torch_build.py) both choose a C++ compiler, and the runtime
may not import the builder; one function keeps them from drifting apart.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path


def cxx_for(cc: str) -> str:
    """The C++ driver beside a C compiler: gcc -> g++, cc -> c++, clang -> clang++, else c++."""
    name = Path(cc).name
    for c_name, cxx_name in (("gcc", "g++"), ("clang", "clang++"), ("cc", "c++")):
        if name == c_name or name.endswith("-" + c_name):
            driver = name[: -len(c_name)] + cxx_name
            return str(Path(cc).with_name(driver)) if "/" in cc else driver
    return "c++"


def cc_command() -> list[str]:
    """The host C compiler: `CC`, default `cc` (as words)."""
    return shlex.split(os.environ.get("CC") or "cc")


def cxx_command(cc: str | None = None) -> list[str]:
    """The host C++ compiler (as words): `CXX`, else the driver beside the C compiler `cc`
    (default: cc_command's)."""
    explicit = os.environ.get("CXX")
    if explicit:
        return shlex.split(explicit)
    return [cxx_for(cc if cc is not None else cc_command()[0])]
