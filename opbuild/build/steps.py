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
from opbuild.build.toolchain import Toolchain
from opbuild.codegen.files import write_if_changed
from opbuild.spec.model import OpSpec


class StepError(Exception):
    """A build step failed; the message names the op, the binary or the file involved."""


def render_op_sources(spec: OpSpec, header: Path, shim: Path) -> None:
    """The op's tiling-data header and kernel launch shim (inputs of every compile of the op)."""
    write_if_changed(header, codegen.render_tiling_header(spec))
    write_if_changed(shim, codegen.render_launch_shim(spec))


def run_compiler(toolchain: Toolchain, command: list[str], output: Path, what: str) -> None:
    """Run one compiler command that writes `output`, atomically.

    The compiler writes to a temporary name beside the output, which replaces the output only on
    success; an interrupted or failed compile leaves nothing a later build could take for done.
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
    os.close(fd)
    try:
        command = [tmp if arg == str(output) else arg for arg in command]
        result = toolchain.run(command)
        if result.returncode != 0:
            raise StepError(f"error: {what} failed (exit {result.returncode}):\n{result.output.rstrip()}")
        if result.output.strip():
            sys.stderr.write(f"warning: {what}:\n{result.output.rstrip()}\n")
        os.chmod(tmp, 0o644 if output.suffix != ".so" else 0o755)
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_kernel_descriptors(spec: OpSpec, soc: str, toolchain: Toolchain, binaries: dict[str, Path],
                             json_paths: dict[str, Path], op_config: Path) -> None:
    """A descriptor JSON beside every kernel binary, plus the op's kernel config JSON."""
    for binary in spec.binaries:
        text = codegen.render_kernel_json(
            spec,
            binary,
            soc,
            bin_file_name=binary.name,
            bin_suffix=toolchain.binary_suffix,
            sha256=sha256_file(binaries[binary.name]),
            core_type_name=spec.core_type,
        )
        write_if_changed(json_paths[binary.name], text)
    write_if_changed(op_config, codegen.render_op_kernel_config(spec, soc, toolchain.binary_suffix))


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
