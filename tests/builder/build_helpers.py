"""Running `scons ops` on throw-away projects, and looking at what it built.

A project is a temporary directory holding a copy of the repository's SConstruct and ops/. SCons
runs in a subprocess (`python -m SCons -C <project>`) with PYTHONPATH pointing at a snapshot of
the repository's code (see conftest.py), so the tests build exactly the working tree as it was
when the session started, whatever else changes meanwhile, and a test may edit its own snapshot
(templates, generator modules) without touching the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from opbuild.abi import package_layout as layout

REPO = Path(__file__).resolve().parents[2]
VENDOR = "customize"
SOC = "ascend910b"
STEP_LINE = re.compile(r"^\[(\d+)/(\d+)\] (.*)$")
KERNEL_STEP = re.compile(r"^(?:CC kernel|CC launch|LINK kernel) (\S+) \((\S+), (vendors/[^)]+|built-in)\)$")
"""The steps that make one kernel binary (host toolchain): `CC kernel <Binary> (<soc>, <package>)`
compiles its kernel source, `CC launch ...` its launch shim, `LINK kernel ...` links them;
`(<soc>, vendors/<vendor>)` or `(<soc>, built-in)`. Groups binary, soc, package."""
KERNEL_STEP_PREFIXES = ("CC kernel ", "CC launch ", "LINK kernel ")
BUNDLE_STEP = re.compile(r"^CACHE (\S+): (\d+) steps, (\d+) files \(op bundle(?:, remote cache)?\)$")
"""An op restored from its bundle (every output of the op at once): op, steps, files."""

CUSTOM, BUILTIN = "custom", "built-in"
CUSTOM_WHERE = f"vendors/{VENDOR}"
"""How progress lines name the custom package (`built-in` names the built-in one)."""
SAMPLE_PACKAGES: dict[str, tuple[str, ...]] = {
    "AddCustomTemplate": (CUSTOM,), "AddNCustom": (CUSTOM,), "MulCustom": (CUSTOM, BUILTIN),
    "ReduceSumCustom": (BUILTIN,), "LeakyReluCustom": (BUILTIN,), "NonZeroCustom": (CUSTOM,), "SortCustom": (CUSTOM,),
}
"""The packages each sample op is built into (issue 4: ops/<op>/op.yaml `package:`)."""
SAMPLE_DOMAINS = {"MulCustom": "math", "ReduceSumCustom": "math", "LeakyReluCustom": "nn"}
"""The built-in domain of each built-in sample op: its ops_<domain> sub-package, libopapi_<domain>.so."""
PYTHON_KEY_RULES = {"LeakyReluCustom"}
"""Sample ops whose GenSimplifiedKey is a Python callback (copied to op_api/python/keyrules/)."""

SAMPLE_BINARIES = {
    "AddCustomTemplate": ["AddCustomTemplate_FP16", "AddCustomTemplate_FP32"],
    "AddNCustom": ["AddNCustom_FP16", "AddNCustom_FP32", "AddNCustom_INT32"],
    "LeakyReluCustom": ["LeakyReluCustom_FP16", "LeakyReluCustom_FP32", "LeakyReluCustom_BF16",
                        "LeakyReluCustom_Relu_FP16", "LeakyReluCustom_Relu_FP32", "LeakyReluCustom_Relu_BF16"],
    "MulCustom": ["MulCustom_FP16", "MulCustom_FP32", "MulCustom_FP16_FP32", "MulCustom_INT32"],
    "ReduceSumCustom": ["ReduceSumCustom_FP32_Det", "ReduceSumCustom_FP32", "ReduceSumCustom_FP16_Det",
                        "ReduceSumCustom_FP16"],
}
SAMPLE_AICPU_OPS = ("NonZeroCustom", "SortCustom")
"""The AI CPU sample ops (engine: aicpu): no kernel binaries, no tiling; their compute sources are
linked into the package's one libcust_aicpu_kernels.so (SAMPLE_BINARIES lists the AI Core ops)."""
SAMPLE_OPS = len(SAMPLE_BINARIES) + len(SAMPLE_AICPU_OPS)
"""How many ops the samples are (the build summary's count)."""
AICPU_FILES = {"op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so", "op_impl/cpu/config/cust_aicpu_kernel.json"}
SAMPLE_DIRS = {
    "AddCustomTemplate": "add_custom_template", "AddNCustom": "add_n_custom", "LeakyReluCustom": "leaky_relu_custom",
    "MulCustom": "mul_custom", "ReduceSumCustom": "reduce_sum_custom", "NonZeroCustom": "non_zero_custom",
    "SortCustom": "sort_custom",
}


def scons_command() -> list[str]:
    """SCons run by this interpreter. `python -m SCons` works wherever the scons package is
    installed; the `scons` on PATH may be a shell shim (pyenv) that Python cannot run."""
    return [sys.executable, "-m", "SCons"]


def snapshot_code(dest: Path) -> Path:
    """Copy the repository's files (tracked and untracked-but-not-ignored, as in the working tree)
    to `dest`, with every mtime set a minute back (nothing in it counts as "just edited"), and
    the runtime's native libraries (built by `pip install`, not in git): `scons ops` links the
    packages' op API libraries against the acl library (opbuild.abi.native_libs)."""
    try:
        listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True).stdout
        names = [n for n in listed.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file()
                 and not {".git", "out", "__pycache__", ".venv"} & set(p.relative_to(REPO).parts)]
    past = time.time() - 60
    for name in names:
        src = REPO / name
        if not src.is_file() or src.suffix in (".so", ".pyc"):
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        shutil.copymode(src, target)
        os.utime(target, (past, past))
    from opbuild.abi.native_libs import ACL_LINK_NAME, RUNTIME_DIR

    for lib in sorted([*RUNTIME_DIR.glob("_opbuild_*.so"), RUNTIME_DIR / ACL_LINK_NAME]):
        target = dest / "opbuild" / "runtime" / lib.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(lib, target, follow_symlinks=False)
    backdate(dest)
    return dest


def backdate(root: Path, seconds: float = 60) -> None:
    """Every file and directory under `root` (and `root`) modified `seconds` ago, so that none
    counts as just edited (see opbuild/builder/manifest.py)."""
    past = time.time() - seconds
    for p in [*root.rglob("*"), root]:
        if not p.is_symlink():
            os.utime(p, (past, past))


def bump(path: Path, seconds: float = 2) -> None:
    """Move a file's mtime forward (the decider is content-timestamp: the timestamp must move)."""
    st = path.stat()
    os.utime(path, (st.st_atime, st.st_mtime + seconds))


def edit(path: Path, append: str) -> None:
    """Append text to a file and move its mtime forward."""
    with open(path, "a") as f:
        f.write(append)
    bump(path)


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def steps(self) -> list[str]:
        """The labels of the `[n/N] LABEL` progress lines, in order."""
        return [m.group(3) for line in self.stdout.splitlines() if (m := STEP_LINE.match(line))]

    def bundles(self) -> dict[str, tuple[int, int]]:
        """{op: (steps, files)} of each op restored from its bundle in this run (bundles.py)."""
        found = {}
        for s in self.steps:
            if m := BUNDLE_STEP.match(s):
                found[m.group(1)] = (int(m.group(2)), int(m.group(3)))
        return found

    def kernels(self) -> list[str]:
        """Binaries made (any of their compile or link steps ran, not retrieved from the cache) in
        this run (a binary of an op in both packages is listed once per package)."""
        return [b for b, _, _ in self.kernel_steps()]

    def kernel_steps(self, prefix: str = "") -> list[tuple[str, str, str]]:
        """(binary, soc, package) of each kernel binary made in this run, once each (prefix
        "CACHE ": retrieved from the cache); package is `vendors/<vendor>` or `built-in`. Every
        kernel step line must have the KERNEL_STEP form."""
        found: dict[tuple[str, str, str], None] = {}
        for s in self.steps:
            if s.startswith(tuple(prefix + k for k in KERNEL_STEP_PREFIXES)):
                m = KERNEL_STEP.match(s[len(prefix):])
                assert m, f"malformed kernel step: {s!r}"
                found[m.groups()] = None
        return list(found)

    def __str__(self) -> str:
        return f"exit {self.rc}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


class Project:
    """A temporary project: SConstruct + ops/ (copied from the repository), built into out/."""

    def __init__(self, root: Path, code: Path) -> None:
        self.root = root
        self.code = code
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy2(code / "SConstruct", root / "SConstruct")
        shutil.copytree(code / "ops", root / "ops", ignore=shutil.ignore_patterns("__pycache__"))

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def pkg(self) -> Path:
        """The custom vendor package (out/opp/vendors/customize)."""
        return self.out / "opp" / "vendors" / VENDOR

    @property
    def builtin(self) -> Path:
        """The built-in package (out/opp/built-in)."""
        return self.out / "opp" / "built-in"

    def package(self, kind: str) -> Path:
        return self.pkg if kind == CUSTOM else self.builtin

    def op_dir(self, op: str) -> Path:
        return self.root / "ops" / SAMPLE_DIRS[op]

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPBUILD_CACHE_DIR", "OPBUILD_FULL_CHECK", "SCONSFLAGS")}
        env["PYTHONPATH"] = str(self.code)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.update(extra or {})
        return env

    def command(self, args: tuple[str, ...], jobs: int) -> list[str]:
        return [*scons_command(), "-C", str(self.root), f"-j{jobs}", *args]

    def scons(self, *args: str, env: dict[str, str] | None = None, jobs: int = 2, timeout: float = 300) -> Result:
        # cwd: `python -m` puts the working directory first on sys.path (before PYTHONPATH)
        proc = subprocess.run(self.command(args, jobs), env=self.env(env), cwd=self.root, capture_output=True,
                              text=True, timeout=timeout)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def build(self, *args: str, **kw) -> Result:
        """`scons ops ...` that must succeed."""
        result = self.scons("ops", *args, **kw)
        assert result.rc == 0, str(result)
        return result

    def start(self, *args: str, jobs: int = 2) -> subprocess.Popen:
        """`scons ...` in the background, in its own process group (kill_group ends it and its
        compilers at once)."""
        return subprocess.Popen(self.command(args, jobs), env=self.env(), cwd=self.root, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def tree(root: Path, skip: tuple[str, ...] = (".opbuild",)) -> dict[str, tuple[str, bytes | str]]:
    """Every file and symlink under `root` (relative path -> ("file", bytes) | ("link", target))."""
    found: dict[str, tuple[str, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                found[rel] = ("link", os.readlink(p))
            elif p.is_file():
                found[rel] = ("file", p.read_bytes())
    return found


def mtimes(root: Path, skip: tuple[str, ...] = (".opbuild",)) -> dict[str, int]:
    """mtime (ns, of the entry itself) of every file and symlink under `root`."""
    found: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink() or p.is_file():
                found[p.relative_to(root).as_posix()] = p.lstat().st_mtime_ns
    return found


def subpackage(op: str, kind: str) -> str:
    """The sub-package directory segment of `op` in a package: `ops_<domain>/` in built-in, else ''."""
    return f"ops_{SAMPLE_DOMAINS[op]}/" if kind == BUILTIN else ""


def expected_package_files(ops: dict[str, list[str]] = SAMPLE_BINARIES, kind: str = CUSTOM,
                           aicpu: tuple[str, ...] = SAMPLE_AICPU_OPS) -> set[str]:
    """Every file (docs/package-format.md §1) that `scons ops` must produce for those of `ops` in the package
    `kind` (relative to the package directory), except the arch-dependent tiling library (checked
    separately); the op_proto library is listed for this machine's arch. The built-in package keeps
    each op's kernels and configs in the ops_<domain> sub-package of its domain and its aclnn
    functions in libopapi_<domain>.so (libopapi.so always). The AI CPU ops of `aicpu` add their
    aclnn headers and the package's op_impl/cpu files."""
    kernel = f"op_impl/ai_core/tbe/kernel/{SOC}"
    config = f"op_impl/ai_core/tbe/kernel/config/{SOC}"
    ops = {op: binaries for op, binaries in ops.items() if kind in SAMPLE_PACKAGES[op]}
    aicpu = tuple(op for op in aicpu if kind in SAMPLE_PACKAGES[op])
    if aicpu:
        aicpu_files = AICPU_FILES | {f"op_api/include/aclnn_{SAMPLE_DIRS[op]}.h" for op in aicpu}
        if not ops:
            return aicpu_files | {"version.info", "op_api/python/aclnn_ops.py", "op_api/lib/libcust_opapi.so",
                                  "op_proto/inc/op_proto.h", str(layout.op_proto_lib())}
    if not ops:
        return set()
    files = {
        "version.info",
        "op_api/python/aclnn_ops.py",
        "framework/onnx/opbuild_onnx_plugins.json",
        f"op_impl/ai_core/tbe/config/{SOC}/aic-{SOC}-ops-info.json",
        "op_impl/ai_core/tbe/op_tiling/liboptiling.so",
        "op_proto/inc/op_proto.h",
        str(layout.op_proto_lib()),
    }
    if kind == CUSTOM:
        files.add("op_api/lib/libcust_opapi.so")
    else:
        files |= {"op_api/lib/libopapi.so", *(f"op_api/lib/libopapi_{SAMPLE_DOMAINS[op]}.so" for op in ops)}
    for op, binaries in ops.items():
        snake = SAMPLE_DIRS[op]
        sub = subpackage(op, kind)
        files |= {f"{config}/{sub}binary_info_config.json", f"{config}/{sub}{snake}.json",
                  f"op_api/include/aclnn_{snake}.h"}
        if op in PYTHON_KEY_RULES:
            files.add(f"op_api/python/keyrules/{snake}/key_rule.py")
        for b in binaries:
            files |= {f"{kernel}/{sub}{snake}/{b}.so", f"{kernel}/{sub}{snake}/{b}.json"}
    return files | aicpu_files if aicpu else files


def expected_kernel_steps(ops: dict[str, list[str]] = SAMPLE_BINARIES) -> list[tuple[str, str, str]]:
    """(binary, soc, package) of every kernel binary a clean build of `ops` makes, sorted."""
    where = {CUSTOM: CUSTOM_WHERE, BUILTIN: BUILTIN}
    return sorted((b, SOC, where[kind]) for op, binaries in ops.items() for kind in SAMPLE_PACKAGES[op]
                  for b in binaries)


def expected_kernel_compiles(ops: dict[str, list[str]] = SAMPLE_BINARIES) -> list[tuple[str, str, str]]:
    """(binary, soc, package) of every binary whose kernel and launch objects a build compiles: once
    per binary, in the first package of its op (the binary in its other packages links the same
    objects: builder/plan.py)."""
    where = {CUSTOM: CUSTOM_WHERE, BUILTIN: BUILTIN}
    return sorted((b, SOC, where[SAMPLE_PACKAGES[op][0]]) for op, binaries in ops.items() for b in binaries)
