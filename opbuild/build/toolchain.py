"""Toolchains: how a kernel binary and the tiling library are compiled.

A toolchain is an interface (`Toolchain`) with one implementation per target: `host` compiles
kernels with the machine's C compiler into ELF shared objects that the CPU device simulator
runs; a real Ascend toolchain (`ccec`) plugs in behind the same interface later. The build only
ever talks to this interface.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from opbuild.runtime_paths import native_include_dir


class ToolchainError(Exception):
    """A toolchain cannot be used (missing compiler, unknown name)."""


@dataclass(frozen=True)
class CompileResult:
    """Outcome of one compiler run: the command, its exit status and its combined output."""

    command: tuple[str, ...]
    returncode: int
    output: str


class Toolchain(ABC):
    """Compile kernels and link the tiling library for one target."""

    name: str
    binary_suffix: str
    """Suffix of a kernel binary (`binPath` in binary_info_config.json)."""

    @abstractmethod
    def kernel_command(self, sources: list[str], output: str, macros: dict[str, str], include_dirs: list[str]) -> list[str]:
        """The command line that compiles one kernel binary."""

    @abstractmethod
    def tiling_object_command(self, source: str, output: str, include_dirs: list[str]) -> list[str]:
        """The command line that compiles one op's tiling source to an object."""

    @abstractmethod
    def tiling_link_command(self, objects: list[str], output: str) -> list[str]:
        """The command line that links every op's tiling object into the tiling library."""

    @abstractmethod
    def cc_command(self) -> list[str]:
        """The host C compiler (program and fixed arguments) for host-side code: the aclnn C API."""

    @abstractmethod
    def identity(self) -> str:
        """A string naming the compiler and its version (version.info, cache keys)."""

    def run(self, command: list[str], cwd: str | None = None) -> CompileResult:
        proc = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return CompileResult(tuple(command), proc.returncode, proc.stdout)


class HostToolchain(Toolchain):
    """The host C compiler (`CC`, default `cc`): kernels become `.so` files for the simulator."""

    name = "host"
    binary_suffix = ".so"
    common_flags = ("-std=gnu11", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall")

    def __init__(self, cc: str | None = None, root: str | None = None) -> None:
        self.cc = shlex.split(cc or os.environ.get("CC") or "cc")
        if shutil.which(self.cc[0]) is None:
            raise ToolchainError(
                f"C compiler '{self.cc[0]}' not found on PATH (toolchain 'host'); install gcc or set CC=<compiler>"
            )
        self.root = root
        self._identity: str | None = None

    def _prefix_map(self) -> list[str]:
        # Keeps the build machine's absolute paths out of the binaries (reproducible builds).
        # Commands name sources under the project by relative paths and run in the project root,
        # so only the installed headers need mapping; the project's own location appears
        # nowhere, neither in the binaries nor in the command (the shared cache's key), so two
        # checkouts share cached compiles.
        return [f"-ffile-prefix-map={native_include_dir()}=opbuild"]

    def kernel_command(self, sources, output, macros, include_dirs):
        defines = [f"-D{k}={v}" for k, v in sorted(macros.items())]
        includes = [f"-I{d}" for d in include_dirs]
        return [*self.cc, *self.common_flags, "-shared", *self._prefix_map(), *defines, *includes, "-o", output, *sources]

    def tiling_object_command(self, source, output, include_dirs):
        includes = [f"-I{d}" for d in include_dirs]
        return [*self.cc, *self.common_flags, *self._prefix_map(), *includes, "-c", "-o", output, source]

    def tiling_link_command(self, objects, output):
        return [*self.cc, "-shared", "-o", output, *objects]

    def cc_command(self) -> list[str]:
        return list(self.cc)

    def identity(self) -> str:
        if self._identity is None:
            proc = subprocess.run([*self.cc, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            first = proc.stdout.splitlines()[0] if proc.stdout else self.cc[0]
            self._identity = first.strip()
        return self._identity

    def version(self) -> str:
        """A short version token for version.info: compiler name + hash of its identity."""
        digest = hashlib.sha256(self.identity().encode()).hexdigest()[:12]
        return f"host-{Path(self.cc[0]).name}-{digest}"


TOOLCHAINS: dict[str, type[Toolchain]] = {"host": HostToolchain}


def get_toolchain(name: str, root: str | None = None) -> Toolchain:
    """The toolchain called `name`; ToolchainError listing the known ones otherwise."""
    try:
        cls = TOOLCHAINS[name]
    except KeyError:
        raise ToolchainError(f"unknown TOOLCHAIN={name!r}; known: {', '.join(sorted(TOOLCHAINS))}") from None
    return cls(root=root)  # type: ignore[call-arg]
