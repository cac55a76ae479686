"""Toolchains: how a kernel binary and the tiling library are compiled.

A toolchain is an interface (`Toolchain`) with one implementation per target: `host` compiles
kernels with the machine's C compiler into ELF shared objects that the CPU device simulator
runs; `ccec` compiles them with the CANN toolkit's `asc_opc` into `.o` device binaries (found
through ASCEND_HOME_PATH), the tiling library still with the host compiler, against the CANN
headers. The build only ever talks to this interface (`kernel_step`, `tiling_object_command`,
`tiling_link_command`, `cc_command`, `identity`, `version`).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opbuild.spec.model import Binary, OpSpec

from opbuild import nonfinite
from opbuild.abi.vocabulary import DEFAULT_BINARY_IMPL_MODES, SOCS, impl_mode_string
from opbuild.compilers import cc_command, cxx_command
from opbuild.portable import prefix_map_flags


class ToolchainError(Exception):
    """A toolchain cannot be used (missing compiler, unknown name)."""


@dataclass(frozen=True)
class CompileResult:
    """Outcome of one compiler run: the command, its exit status and its combined output."""

    command: tuple[str, ...]
    returncode: int
    output: str


@dataclass(frozen=True)
class KernelObject:
    """One `-c` compile of a kernel binary's source into an object (distcc can run it)."""

    source: str
    object: str
    command: list[str]


@dataclass(frozen=True)
class KernelStep:
    """How one kernel binary is made.

    `objects` are compiled first, each on its own (`-c`, so distcc can distribute them); then
    `command` writes the binary (links the objects, or compiles everything at once): it names
    the output path itself (`produces` None), or it writes `produces` (relative to the project
    root), which the build then moves to the binary's place. `inputs` are files the commands
    read that the build generates first (path -> text)."""

    command: list[str]
    produces: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    objects: list[KernelObject] = field(default_factory=list)


COMPILER_ENVIRONMENT = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH",
                        "LIBRARY_PATH", "SOURCE_DATE_EPOCH")
"""Variables gcc (and the CANN compilers built on it) read that change their output."""


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
    def tiling_link_command(self, objects: list[str], output: str, cxx: bool = False) -> list[str]:
        """The command line that links every op's tiling object into the tiling library (`cxx`:
        some object is C++, an Ascend C op's host bridge)."""

    @abstractmethod
    def cc_command(self) -> list[str]:
        """The host C compiler (program and fixed arguments) for host-side code: the aclnn C API."""

    @abstractmethod
    def identity(self) -> str:
        """A string naming the compiler and its version (version.info, cache keys)."""

    @abstractmethod
    def version(self) -> str:
        """A short version token for version.info and the compile cache's keys."""

    def environment(self) -> dict[str, str]:
        """The environment variables, set in this build, that change what the compilers make
        (extra include or program directories, a fixed build date): part of every cache key, as
        the compilers inherit them (Triton's cache keys its "cache-invalidating" variables too)."""
        return {name: os.environ[name] for name in COMPILER_ENVIRONMENT if name in os.environ}

    def kernel_step(self, spec: OpSpec, binary: Binary, soc: str, sources: list[str], output: str,
                    macros: dict[str, str], include_dirs: list[str], work_dir: str) -> KernelStep:
        """How to make one kernel binary (`work_dir`: a directory of its own for intermediate
        files, relative to the project root). By default: `kernel_command`."""
        return KernelStep(self.kernel_command(sources, output, macros, include_dirs))

    def tool_files(self) -> list[str]:
        """Programs and files whose change must rebuild every kernel (the up-to-date manifest)."""
        return []

    def run(self, command: list[str], cwd: str | None = None) -> CompileResult:
        proc = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return CompileResult(tuple(command), proc.returncode, proc.stdout)

    def run_all(self, commands: list[list[str]], cwd: str | None = None) -> list[CompileResult]:
        """Independent commands run at once (the compiles of an Ascend C op's host blob, whose two
        large TUs take about as long each); their results in order. A command that cannot start
        is a result with status 127 and the reason."""
        running: list[tuple[list[str], subprocess.Popen | None, str]] = []
        try:
            for command in commands:
                try:
                    running.append((command, subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                                                              stderr=subprocess.STDOUT, text=True), ""))
                except OSError as exc:
                    running.append((command, None, f"cannot run {command[0]}: {exc}"))
            results = []
            for command, proc, reason in running:
                if proc is None:
                    results.append(CompileResult(tuple(command), 127, reason))
                    continue
                output, _ = proc.communicate()
                results.append(CompileResult(tuple(command), proc.returncode, output))
            return results
        finally:
            for _, proc, _ in running:
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()


MEMCHECK_FLAGS = ("-fsanitize=address", "-fsanitize-recover=address", "-fno-omit-frame-pointer", "-g")
"""Kernel compile and link flags of the memory checker build (OPBUILD_MEMCHECK=1 at build time):
AddressSanitizer instruments every load and store of the kernel; a kernel goes on after a report
(the launch fails with the first one: docs/runtime.md); -g: the report names the source line."""

BUILD_VARIANT_ENVIRONMENT = ("OPBUILD_MEMCHECK",)
"""Variables of opbuild's own that change the binaries a build makes (the build variant): part of
the build's signature (manifest.config_key), so switching one on or off rebuilds."""


def build_variant() -> dict[str, str]:
    """The build variant: each BUILD_VARIANT_ENVIRONMENT variable's value ("0" when unset; a bad
    value is the toolchain's error, `memcheck_flags`)."""
    return {name: os.environ.get(name, "") or "0" for name in BUILD_VARIANT_ENVIRONMENT}


def memcheck_flags() -> tuple[str, ...]:
    """MEMCHECK_FLAGS when OPBUILD_MEMCHECK=1, none when it is unset or 0; anything else is an error."""
    value = os.environ.get("OPBUILD_MEMCHECK", "")
    if value in ("", "0"):
        return ()
    if value == "1":
        return MEMCHECK_FLAGS
    raise ToolchainError(f"OPBUILD_MEMCHECK={value!r} is neither 1 nor 0")


ASCENDC_COMMON_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden", "-Wall")
ASCENDC_KERNEL_FLAGS = (*ASCENDC_COMMON_FLAGS, "-DASCENDC_CPU_DEBUG=1")
"""An Ascend C kernel compiled for the CPU twin, as CANN's CPU debug build does (ASCENDC_CPU_DEBUG
keeps the samples' `<<<>>>` launchers out)."""
ASCENDC_HOST_FLAGS = (*ASCENDC_COMMON_FLAGS, "-fno-gnu-unique")
"""An Ascend C op's host source and bridge (C++17, like CANN's op_host build). Function-local
statics of inline functions (the OpDef registry) weak, not STB_GNU_UNIQUE, so that
`localize_command` can make them local (host_blob_command, below)."""


def ascendc_soc_macros(soc: str) -> dict[str, str]:
    """The SoC's limits an Ascend C binary is compiled with (the CPU twin's UB arena and core
    check, include/ascendc/opbuild_ascendc/launch.h)."""
    from opbuild.abi.vocabulary import SOC

    info = SOC[soc]
    return {"OPBUILD_SOC_UB_SIZE": str(info.ub_size), "OPBUILD_SOC_CORE_NUM": str(info.core_num)}


AICPU_LINK_FLAGS = ("-Wl,-z,defs", "-lm")
"""Every undefined symbol of libcust_aicpu_kernels.so is a link error (libc and libm are linked)."""


class HostToolchain(Toolchain):
    """The host C compiler (`CC`, default `cc`): kernels become `.so` files for the simulator
    (instrumented by AddressSanitizer when OPBUILD_MEMCHECK=1: `memcheck_flags`)."""

    name = "host"
    binary_suffix = ".so"
    common_flags = ("-std=gnu11", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall")

    def __init__(self, cc: str | None = None, root: str | None = None) -> None:
        self.cc = shlex.split(cc) if cc else cc_command()
        if shutil.which(self.cc[0]) is None:
            raise ToolchainError(
                f"C compiler '{self.cc[0]}' not found on PATH (toolchain 'host'); install gcc or set CC=<compiler>"
            )
        self.root = root
        self._identity: str | None = None
        self.memcheck = memcheck_flags()
        self.kernel_flags = (*self.common_flags, *self.memcheck)
        self.cxx = cxx_command(self.cc[0])
        self.objcopy = os.environ.get("OBJCOPY") or "objcopy"
        self.ld = os.environ.get("LD") or "ld"
        self.ascendc_flags = (*ASCENDC_KERNEL_FLAGS, *self.memcheck)
        self.ascendc_host_flags = ASCENDC_HOST_FLAGS

    def _prefix_map(self) -> list[str]:
        # Keeps the build machine's absolute paths out of the binaries (reproducible builds).
        # Commands name sources under the project by relative paths and run in the project root,
        # so only opbuild's install locations need mapping (opbuild/portable.py, which
        # also keeps them out of the shared cache's keys): two checkouts share cached compiles.
        return prefix_map_flags()

    def kernel_command(self, sources, output, macros, include_dirs):
        defines = [f"-D{k}={v}" for k, v in sorted(macros.items())]
        includes = [f"-I{d}" for d in include_dirs]
        return [*self.cc, *self.kernel_flags, "-shared", *self._prefix_map(), *defines, *includes, "-o", output, *sources]

    def kernel_step(self, spec, binary, soc, sources, output, macros, include_dirs, work_dir):
        """Each source compiled to an object (`-c`), then linked: the same bytes as the one-step
        `kernel_command`, and the compiles can run on distcc hosts. The objects are named
        `<work_dir>.<source stem>.o`, beside `work_dir` rather than in it: one directory fewer to
        create per binary (a clean build of 800 binaries made 800 directories for them)."""
        defines = [f"-D{k}={v}" for k, v in sorted(macros.items())]
        includes = [f"-I{d}" for d in include_dirs]
        objects = []
        for source in sources:
            obj = f"{work_dir}.{Path(source).stem}.o"
            objects.append(KernelObject(source, obj, [*self.cc, *self.kernel_flags, *self._prefix_map(), *defines,
                                                      *includes, "-c", "-o", obj, source]))
        link = [*self.cc, *self.kernel_flags, "-shared", "-o", output, *(o.object for o in objects)]
        return KernelStep(link, objects=objects)

    def tiling_object_command(self, source, output, include_dirs):
        includes = [f"-I{d}" for d in include_dirs]
        return [*self.cc, *self.common_flags, *self._prefix_map(), *includes, "-c", "-o", output, source]

    def tiling_link_command(self, objects, output, cxx: bool = False):
        """`cxx`: some object is C++ (an Ascend C op's host bridge): link with the C++ driver."""
        return [*(self.cxx if cxx else self.cc), "-shared", "-o", output, *objects]

    def aicpu_object_command(self, source, output, include_dirs):
        """An AI CPU compute source (or the generated registry) to an object: the host code's
        command, instrumented by AddressSanitizer when OPBUILD_MEMCHECK=1 as kernels are (AI CPU
        tasks run in the simulator too, and the memory checker names their buffers)."""
        command = self.tiling_object_command(source, output, include_dirs)
        return [*command[:len(self.cc)], *self.memcheck, *command[len(self.cc):]]

    def aicpu_link_command(self, objects, output):
        """libcust_aicpu_kernels.so from its objects (linked with the sanitizer when they are).
        `-z defs` (AICPU_LINK_FLAGS): a symbol no object defines (a compute function made static,
        a helper never written) fails the link, naming it, instead of the library failing to
        load at run time for every AI CPU op of the package."""
        command = self.tiling_link_command(objects, output)
        return [*command[:len(self.cc)], *self.memcheck, *command[len(self.cc):], *AICPU_LINK_FLAGS]

    def cc_command(self) -> list[str]:
        return list(self.cc)

    # ---- Ascend C ops (opbuild/ascendc): C++17 sources against include/ascendc --------------------

    def ascendc_kernel_step(self, spec, binary, soc, sources, output, macros, include_dirs, work_dir,
                            forced_header: str) -> KernelStep:
        """An Ascend C binary: the kernel compiled by the C++ compiler with the binary's macros, its
        C++ launch shim with the SoC's limits (ascendc_soc_macros), both with the kernel-side tiling
        header force-included (`forced_header`), then linked like a C kernel. Only the shim reads
        the SoC's limits and it reads nothing of the binary, so the build compiles a kernel object
        once for every SoC of a binary and a shim once for every binary of a SoC.
        `sources`: the kernel source, then the shim."""
        includes = [f"-I{d}" for d in include_dirs]
        objects = []
        for index, source in enumerate(sources):
            obj = f"{work_dir}.{Path(source).stem}.o"
            defines = [f"-D{k}={v}" for k, v in sorted((ascendc_soc_macros(soc) if index else macros).items())]
            objects.append(KernelObject(source, obj, [*self.cxx, *self.ascendc_flags, *self._prefix_map(), *defines,
                                                      "-include", forced_header, *includes, "-c", "-o", obj, source]))
        link = [*self.cxx, *self.ascendc_flags, "-shared", "-o", output, *(o.object for o in objects)]
        return KernelStep(link, objects=objects)

    def ascendc_preprocess_command(self, source, output, macros, include_dirs, forced_header: str) -> list[str]:
        """`-E` of an Ascend C kernel as a binary's compile sees it (the tiling-key scan)."""
        defines = [f"-D{k}={v}" for k, v in sorted(macros.items())]
        return [*self.cxx, "-E", *self.ascendc_flags, *defines, "-include", forced_header,
                *(f"-I{d}" for d in include_dirs), "-o", output, source]

    def ascendc_host_object_command(self, source, output, include_dirs, bridge: bool = False) -> list[str]:
        """An Ascend C op's op_host source, or (`bridge`) its generated bridge, to an object. The
        bridge is glue: built for size (-Os), it compiles in half the time."""
        flags = [("-Os" if f == "-O2" else f) for f in self.ascendc_host_flags] if bridge else self.ascendc_host_flags
        return [*self.cxx, *flags, *self._prefix_map(), *(f"-I{d}" for d in include_dirs), "-c", "-o", output, source]

    def host_blob_command(self, objects, output) -> list[str]:
        """One op's host objects (its source and its bridge) as one relocatable object, its COMDAT
        groups resolved inside it (`--force-group-allocation`): then `localize_command` can make
        every hidden symbol local without the final link discarding sections they point into."""
        return [self.ld, "-r", "--force-group-allocation", "-o", output, *objects]

    def localize_command(self, source, output) -> list[str]:
        """Every hidden symbol of an object made local: the host code of two ops (each with its own
        OpDef registry and, often, a tiling class of the same name) can share one library."""
        return [self.objcopy, "--localize-hidden", source, output]

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


SOC_VERSIONS = {s.name: s.soc_version for s in SOCS}
"""opbuild's SoC names -> asc_opc --soc_version (the first chip of each family)."""

CCEC_SETUP_HINT = ("set ASCEND_HOME_PATH to the CANN toolkit (e.g. `source /usr/local/Ascend/ascend-toolkit/set_env.sh`, "
                   "or `export ASCEND_HOME_PATH=/usr/local/Ascend/ascend-toolkit/latest`)")


class CcecToolchain(HostToolchain):
    """The CANN toolkit under ASCEND_HOME_PATH: kernels compiled by `asc_opc` into `.o` device
    binaries, one per binary, from a per-binary parameter JSON (`<bin>_param.json`, as CANN's
    op-project build writes it); the tiling library and the aclnn libraries by the host C
    compiler, with `-I$ASCEND_HOME_PATH/include`.

    `asc_opc` is `$ASCEND_HOME_PATH/bin/asc_opc` if that exists, else the first `asc_opc` on
    PATH. Its version is `Version=` of `$ASCEND_HOME_PATH/compiler/version.info` (what
    version.info's custom_opp_compiler_version reports); the identity (cache key) also hashes
    the asc_opc program."""

    name = "ccec"
    binary_suffix = ".o"
    impl_mode = impl_mode_string(DEFAULT_BINARY_IMPL_MODES)

    def __init__(self, cc: str | None = None, root: str | None = None) -> None:
        home = os.environ.get("ASCEND_HOME_PATH", "").strip()
        if not home:
            raise ToolchainError(f"TOOLCHAIN=ccec needs a CANN install: {CCEC_SETUP_HINT}")
        if not os.path.isdir(home):
            raise ToolchainError(f"ASCEND_HOME_PATH={home} is not a directory; {CCEC_SETUP_HINT}")
        self.home = os.path.abspath(home)
        candidate = os.path.join(self.home, "bin", "asc_opc")
        tool = candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else shutil.which("asc_opc")
        if tool is None:
            raise ToolchainError(f"asc_opc not found: neither {candidate} nor on PATH (TOOLCHAIN=ccec, "
                                 f"ASCEND_HOME_PATH={self.home})")
        self.asc_opc = os.path.abspath(tool)
        super().__init__(cc=cc, root=root)
        self._ccec_identity: str | None = None

    def _prefix_map(self) -> list[str]:
        return [*super()._prefix_map(), f"-ffile-prefix-map={self.home}=ascend"]

    def kernel_command(self, sources, output, macros, include_dirs):
        raise ToolchainError("TOOLCHAIN=ccec compiles kernels from a parameter JSON: use kernel_step()")

    def kernel_step(self, spec, binary, soc, sources, output, macros, include_dirs, work_dir):
        param = f"{work_dir}/{binary.name}_param.json"
        out_dir = f"{work_dir}/out"
        command = [self.asc_opc, sources[0], f"--main_func={spec.kernel_ref.symbol}", f"--input_param={param}",
                   f"--soc_version={SOC_VERSIONS.get(soc, soc)}", f"--output={out_dir}",
                   f"--impl_mode={self.impl_mode}", "--op_mode=dynamic",
                   f"--simplified_key_mode={spec.key_rule.simplified_key_mode}"]
        text = nonfinite.dumps(param_json(spec, binary), indent=2, sort_keys=False) + "\n"
        return KernelStep(command, produces=f"{out_dir}/{binary.name}{self.binary_suffix}", inputs={param: text})

    def tiling_object_command(self, source, output, include_dirs):
        return super().tiling_object_command(source, output, [*include_dirs, os.path.join(self.home, "include")])

    def ascendc_kernel_step(self, spec, binary, soc, sources, output, macros, include_dirs, work_dir, forced_header):
        """asc_opc compiles Ascend C itself, from the same parameter JSON (the kernel-side tiling
        struct comes from its own build of the host class): the C-API path, unchanged."""
        return self.kernel_step(spec, binary, soc, sources, output, macros, include_dirs, work_dir)

    def tool_files(self) -> list[str]:
        version_info = os.path.join(self.home, "compiler", "version.info")
        return [self.asc_opc, *([version_info] if os.path.isfile(version_info) else [])]

    def cann_version(self) -> str | None:
        try:
            with open(os.path.join(self.home, "compiler", "version.info")) as f:
                for line in f:
                    if line.startswith("Version="):
                        return line.split("=", 1)[1].strip()
        except OSError:
            pass
        return None

    def identity(self) -> str:
        if self._ccec_identity is None:
            with open(self.asc_opc, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()[:16]
            self._ccec_identity = f"asc_opc {self.cann_version() or '?'} sha256:{digest}; host {super().identity()}"
        return self._ccec_identity

    def version(self) -> str:
        return self.cann_version() or f"ccec-{hashlib.sha256(self.identity().encode()).hexdigest()[:12]}"


def param_json(spec: OpSpec, binary: Binary) -> dict[str, Any]:
    """`<bin>_param.json` for asc_opc: {"op_type", "op_list": [{"bin_filename", "inputs",
    "outputs", "attrs"}]} (CANN's ascendc_bin_param_build.py); an optional input the binary
    leaves out is null."""
    from opbuild.codegen.kernel_src import binary_tensor_format

    when = dict(binary.when)

    def tensor(p):
        choice = when.get(p.name)
        if choice is None:
            return None
        return {"name": p.name, "index": p.index, "dtype": choice.dtype, "format": binary_tensor_format(p, binary),
                "paramType": str(getattr(p.param_type, "value", p.param_type)), "shape": [-2]}

    pinned = dict(binary.attr_when)
    attrs = [{"name": a.name, "dtype": str(getattr(a.type, "value", a.type)),
              "value": pinned.get(a.name, a.default)} for a in spec.attrs]
    return {"op_type": spec.op, "op_list": [{
        "bin_filename": binary.name,
        "inputs": [tensor(p) for p in spec.inputs],
        "outputs": [tensor(p) for p in spec.outputs],
        "attrs": attrs,
    }]}


TOOLCHAINS: dict[str, type[HostToolchain]] = {"host": HostToolchain, "ccec": CcecToolchain}


def get_toolchain(name: str, root: str | None = None, cc: str | None = None) -> Toolchain:
    """The toolchain called `name`; ToolchainError listing the known ones otherwise."""
    try:
        cls = TOOLCHAINS[name]
    except KeyError:
        raise ToolchainError(f"unknown TOOLCHAIN={name!r}; known: {', '.join(sorted(TOOLCHAINS))}") from None
    return cls(cc=cc, root=root)
