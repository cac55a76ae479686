"""The build steps as plain Python functions: render, compile, link, lay out.

Each function does one step of `scons ops` and knows nothing of SCons; `scons_tool` wires them
into the dependency graph. Keeping them separate lets tests and other drivers (the `.om`
single-op builder) reuse exactly the same steps.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

from opbuild import codegen
from opbuild.atomic import atomic_write
from opbuild.builder.toolchain import Toolchain
from opbuild.codegen.files import write_if_changed
from opbuild.spec.model import OpSpec


class StepError(Exception):
    """A build step failed; the message names the op, the binary or the file involved."""


def remove_stale_temps(path: Path) -> None:
    """Remove temporary files an interrupted earlier write of `path` left beside it.

    Every writer here (and `codegen.write_if_changed`) writes `.<name>.<random>.tmp` in the
    target's directory and renames it into place; a build killed in between (SIGKILL, power
    loss) leaves the temporary file behind. The step that rewrites `path` clears them, so a
    rebuild after an interrupted build yields exactly the tree of a clean build.
    """
    prefix = f".{path.name}."
    try:
        with os.scandir(path.parent) as entries:
            stale = [e.path for e in entries if e.name.startswith(prefix) and e.name.endswith(".tmp")]
    except FileNotFoundError:
        return
    for name in stale:
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


def write_file(path: Path, text: str | bytes) -> bool:
    """A generated file: stale temporaries cleared, written atomically and only if changed."""
    remove_stale_temps(path)
    return write_if_changed(path, text)


def render_op_sources(spec: OpSpec, header: Path, shim: Path, bridge: Path | None = None) -> None:
    """The op's tiling-data header and kernel launch shim (inputs of every compile of the op);
    an Ascend C op's are its kernel tiling header and C++ shim, plus its host bridge."""
    if spec.is_ascendc:
        if bridge is None:
            raise ValueError(f"op {spec.op}: an Ascend C op's sources include its host bridge")
        write_file(header, codegen.render_ascendc_tiling_header(spec))
        write_file(shim, codegen.render_ascendc_launch_shim(spec))
        write_file(bridge, codegen.render_host_bridge(spec))
        return
    write_file(header, codegen.render_tiling_header(spec))
    write_file(shim, codegen.render_launch_shim(spec))


def run_compiler(toolchain: Toolchain, command: list[str], output: Path, what: str, cwd: str | None = None,
                 runner=None) -> None:
    """Run one compiler command that writes `output`, atomically.

    The compiler writes to a temporary name beside the output, which replaces the output only on
    success; an interrupted or failed compile leaves nothing a later build could take for done
    (and the temporaries of an earlier interrupted run are removed first). `command` names
    `output` as it should appear on the command line (relative to `cwd`). `runner` (command, cwd)
    -> CompileResult runs it instead of the toolchain (distcc).
    """
    base = cwd or os.getcwd()
    output = Path(os.path.normpath(os.path.join(base, output)))
    output.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(output)
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
    os.close(fd)
    try:
        # the argument that names the output (as written on the command line) names the temporary
        names_output = [i for i, arg in enumerate(command) if os.path.normpath(os.path.join(base, arg)) == str(output)]
        if not names_output:
            raise StepError(f"error: {what}: the command does not name its output {output}")
        command = list(command)
        for i in names_output:
            command[i] = os.path.join(os.path.dirname(command[i]), os.path.basename(tmp))
        try:
            result = (runner or toolchain.run)(command, cwd=cwd)
        except OSError as exc:  # the compiler vanished or is not executable
            raise StepError(f"error: {what}: cannot run {command[0]!r}: {exc.strerror or exc}") from None
        if result.returncode != 0:
            raise StepError(f"error: {what} failed (exit {result.returncode}):\n{result.output.rstrip()}")
        if result.output.strip():
            sys.stderr.write(f"warning: {what}:\n{result.output.rstrip()}\n")
        os.chmod(tmp, 0o644 if output.suffix != ".so" else 0o755)
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def run_tool(toolchain: Toolchain, command: list[str], produces: str, output: Path, what: str,
             cwd: str | None = None) -> None:
    """Run a command that writes `produces` (relative to `cwd`), then move that file to `output`
    (atomically: a rename within the build tree). A stale `produces` is removed first, so only a
    file this run wrote can end up as the output."""
    base = cwd or os.getcwd()
    produced = Path(os.path.normpath(os.path.join(base, produces)))
    output = Path(os.path.normpath(os.path.join(base, output)))
    produced.parent.mkdir(parents=True, exist_ok=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        produced.unlink()
    except FileNotFoundError:
        pass
    try:
        result = toolchain.run(command, cwd=cwd)
    except OSError as exc:
        raise StepError(f"error: {what}: cannot run {command[0]!r}: {exc.strerror or exc}") from None
    if result.returncode != 0:
        raise StepError(f"error: {what} failed (exit {result.returncode}):\n{result.output.rstrip()}")
    if not produced.is_file():
        raise StepError(f"error: {what}: {command[0]} succeeded but did not write {produces}\n{result.output.rstrip()}")
    if result.output.strip():
        sys.stderr.write(f"warning: {what}:\n{result.output.rstrip()}\n")
    remove_stale_temps(output)
    os.chmod(produced, 0o644)
    os.replace(produced, output)


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_kernel_descriptors(spec: OpSpec, soc: str, toolchain: Toolchain, binaries: dict[str, Path],
                             json_paths: dict[str, Path], op_config: Path) -> None:
    """A descriptor JSON beside every kernel binary, plus the op's kernel config JSON (all of
    them rendered before any is written: a failure leaves the previous set whole)."""
    files = [(json_paths[binary.name], codegen.render_kernel_json(
        spec,
        binary,
        soc,
        bin_file_name=binary.name,
        bin_suffix=toolchain.binary_suffix,
        sha256=sha256_file(binaries[binary.name]),
        core_type_name=spec.core_type,
    )) for binary in spec.binaries]
    files.append((op_config, codegen.render_op_kernel_config(spec, soc, toolchain.binary_suffix)))
    for path, text in files:
        write_file(path, text)


def install_file(source: Path, target: Path) -> None:
    """Copy a built file into the package: atomically (a process that has the old file open or
    mapped keeps it; a new reader sees the old or the new file whole), executable, and only if
    its content changed."""
    data = source.read_bytes()
    remove_stale_temps(target)
    try:
        if target.stat().st_size == len(data) and target.read_bytes() == data:
            return
    except FileNotFoundError:
        target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, data, mode=0o755)


def make_symlink(link: Path, target_relative: str) -> None:
    """A relative symlink, replaced atomically."""
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and os.readlink(link) == target_relative:
        return
    tmp = link.with_name(f".{link.name}.tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target_relative, tmp)
    os.replace(tmp, link)
