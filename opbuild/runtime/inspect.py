"""`opbuild inspect`: a built package's ops, binaries, full simplified keys and paths, and its
AI CPU ops (op info entry and the kernel library that runs them)."""

from __future__ import annotations

from pathlib import Path

from opbuild import safefile
from opbuild.abi import package_layout as layout
from opbuild.runtime.binaries.package import binary_index


def package_socs(package: Path) -> list[str]:
    config_root = package / layout.KERNEL_ROOT / "config"
    return sorted(p.name for p in config_root.iterdir() if p.is_dir()) if config_root.is_dir() else []


def inspect_package(package: Path, soc: str | None = None) -> str:
    """A text listing: per SoC, per op, each binary with its keys and files."""
    if not package.is_dir():
        raise FileNotFoundError(f"no package directory {package}")
    package = package.resolve()
    socs = [soc] if soc else package_socs(package)
    aicpu = aicpu_lines(package)
    if not socs and not aicpu:
        raise FileNotFoundError(f"{package} has no {layout.KERNEL_ROOT}/config/<soc>/ and no "
                                f"{layout.aicpu_op_info()}: is it a built op package?")
    lines = [f"package {package}"]
    for s in socs:
        index = binary_index(package, s)
        if not index.config_files:
            raise FileNotFoundError(f"{package}: no binary_info_config.json for SoC {s}")
        lines.append(f"soc {s}  ({', '.join(str(f.relative_to(package)) for f in index.config_files)})")
        for op in sorted(index.keys_by_op):
            mode = index.key_modes.get(op, 0)
            lines.append(f"  {op}  simplifiedKeyMode={mode}")
            seen = []
            for key in index.keys_by_op[op]:
                entry = index.by_key[key]
                if entry not in seen:
                    seen.append(entry)
            for entry in seen:
                status = "" if entry.bin_path.is_file() else "  [MISSING]"
                lines.append(f"    {entry.name}{status}")
                lines.append(f"      bin:  {entry.bin_path.relative_to(package)}")
                lines.append(f"      json: {entry.json_path.relative_to(package)}")
                for key in entry.keys:
                    lines.append(f"      key:  {key}")
    return "\n".join(lines + aicpu) + "\n"


def aicpu_lines(package: Path) -> list[str]:
    """The package's AI CPU ops (its cust_aicpu_kernel.json), each with the library and entry that
    run it; [] when it has none. An unreadable op info is an error naming the file."""
    info_path = package / layout.aicpu_op_info()
    try:
        info = safefile.read_json(info_path)
    except FileNotFoundError:
        return []
    except safefile.UnsafeFileError as exc:
        raise ValueError(f"AI CPU op info {exc}") from None
    if not isinstance(info, dict):
        raise ValueError(f"{info_path}: not a JSON object of op types")
    lib = package / layout.aicpu_kernel_lib()
    status = "" if lib.is_file() else "  [MISSING]"
    lines = [f"aicpu  ({info_path.relative_to(package)})"]
    for op in sorted(info):
        entry = info[op].get("opInfo", {}) if isinstance(info[op], dict) else {}
        lines.append(f"  {op}  engine=aicpu{status}")
        lines.append(f"      lib:  {lib.relative_to(package)}")
        lines.append(f"      entry: {entry.get('functionName', '?')}")
    return lines
