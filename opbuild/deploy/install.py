"""`opbuild install PACKAGE_DIR --opp-path DIR`: put a built vendor package into an OPP tree.

The package is copied to `DIR/vendors/<vendor>/` and its vendor is moved to the front of
`DIR/vendors/config.ini`'s `load_priority`, as CANN's install.sh does. The copy is staged in a
temporary directory beside the destination and swapped in by rename, so a reader of the tree sees
either the old package or the new one, never a half-copied one. A different package already
installed under the same vendor is only replaced with `force`.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import tempfile
from pathlib import Path

from opbuild.abi import package_layout as layout
from opbuild.codegen.files import write_if_changed


class InstallError(Exception):
    """The package cannot be installed; the message says why and what to do."""


def is_vendor_package(path: Path) -> bool:
    return (path / layout.KERNEL_ROOT / "config").is_dir()


def _trees_equal(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(_trees_equal(a / d, b / d) for d in cmp.common_dirs)


def update_load_priority(config_ini: Path, vendor: str) -> None:
    """Put `vendor` first in the `load_priority=` line (created if missing), keeping other lines."""
    lines = config_ini.read_text().splitlines() if config_ini.is_file() else []
    for i, line in enumerate(lines):
        if "priority" in line and "=" in line:
            key, _, value = line.partition("=")
            vendors = [v.strip() for v in value.split(",") if v.strip() and v.strip() != vendor]
            lines[i] = f"{key.strip()}={','.join([vendor, *vendors])}"
            break
    else:
        lines.insert(0, f"load_priority={vendor}")
    write_if_changed(config_ini, "\n".join(lines) + "\n")


def install(package: Path, opp_path: Path, vendor: str | None = None, force: bool = False) -> str:
    """Install `package` (e.g. out/opp/vendors/customize); returns a one-line report."""
    package = package.resolve()
    if not package.is_dir() or not is_vendor_package(package):
        raise InstallError(f"{package} is not a built op package (no {layout.KERNEL_ROOT}/config/)")
    vendor = vendor or package.name
    if not vendor or "/" in vendor or vendor in (".", ".."):
        raise InstallError(f"bad vendor name {vendor!r}")
    vendors_dir = opp_path / "vendors"
    dest = vendors_dir / vendor
    if dest.resolve() == package:
        raise InstallError(f"{package} is already at its destination {dest}")
    if dest.exists():
        if _trees_equal(package, dest):
            update_load_priority(vendors_dir / "config.ini", vendor)
            return f"{dest}: already installed (identical); load_priority has {vendor} first"
        if not force:
            raise InstallError(f"{dest} holds a different package of vendor {vendor}; use --force to replace it")
    vendors_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{vendor}.install-", dir=vendors_dir))
    old = None
    try:
        shutil.copytree(package, staging / vendor, symlinks=True)
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{vendor}.old-", dir=vendors_dir))
            os.replace(dest, old / vendor)
        os.replace(staging / vendor, dest)
    except BaseException:
        if old is not None and (old / vendor).exists() and not dest.exists():
            os.replace(old / vendor, dest)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    update_load_priority(vendors_dir / "config.ini", vendor)
    return f"installed {package} as {dest}; load_priority has {vendor} first"
