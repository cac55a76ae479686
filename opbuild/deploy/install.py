"""`opbuild install PACKAGE_DIR --opp-path DIR`: put a built vendor package into an OPP tree.

It runs the installer script the `.run` carries (opbuild/deploy/scripts/install.sh, see
opbuild/deploy/pack.py) on the package, with `ASCEND_OPP_PATH=DIR`: one implementation of the
checks (ELF machine, GLIBC version; `force` skips them), the staged copy put in place by one
rename of the `vendors/<vendor>` link (a reader sees the old package or the new one), the lock
that makes installs into one tree take turns, the no-op re-install of an identical package,
the refusal to replace a different package of the vendor without `replace`, the permissions
(750/640, `for_all`: 755/644), `scripts/uninstall.sh`, and the vendor first in
`DIR/vendors/config.ini`'s `load_priority`. It needs bash, as the `.run` does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from opbuild.abi import package_layout as layout

SCRIPTS = Path(__file__).resolve().parent / "scripts"
PAYLOAD_SCRIPTS = ("install.sh", "uninstall.sh", "help.info")
"""The installer's scripts, as the `.run`'s payload holds them beside packages/vendors/<vendor>/."""


class InstallError(Exception):
    """The package cannot be installed; the message says why and what to do."""


def is_vendor_package(path: Path) -> bool:
    """A built package: AI Core binary configs, or (a package of AI CPU ops only) the AI CPU op info."""
    return (path / layout.KERNEL_ROOT / "config").is_dir() or (path / layout.aicpu_op_info()).is_file()


def check_vendor(vendor: str) -> None:
    """InstallError unless `vendor` can be a directory of vendors/ (package_layout's rule) that the
    installer's scripts can carry unquoted."""
    problem = layout.vendor_name_problem(vendor)
    if problem or any(c in "'\"\\$`" for c in vendor):
        raise InstallError(f"bad vendor name {vendor!r}: {problem or 'contains a quote, backslash, $ or `'}")


def install(package: Path, opp_path: Path, vendor: str | None = None, replace: bool = False,
            force: bool = False, for_all: bool = False) -> str:
    """Install `package` (e.g. out/opp/vendors/customize) into the OPP tree `opp_path`; returns
    the installer's one-line report."""
    package = Path(package).resolve()
    if not package.is_dir() or not is_vendor_package(package):
        raise InstallError(f"{package} is not a built op package (no {layout.KERNEL_ROOT}/config/ and no "
                           f"{layout.aicpu_op_info()})")
    vendor = vendor or package.name
    check_vendor(vendor)
    opp = Path(os.path.abspath(opp_path))
    if (opp / "vendors" / vendor).resolve() == package:
        raise InstallError(f"{package} is already at its destination {opp / 'vendors' / vendor}")
    bash = shutil.which("bash")
    if bash is None:
        raise InstallError("installing needs bash (not found on PATH)")
    with tempfile.TemporaryDirectory(prefix="opbuild-install-") as tmp:
        for name in PAYLOAD_SCRIPTS:
            shutil.copy(SCRIPTS / name, Path(tmp) / name)
        (Path(tmp) / "packages" / "vendors").mkdir(parents=True)
        os.symlink(package, Path(tmp) / "packages" / "vendors" / vendor)
        args = [bash, str(Path(tmp) / "install.sh"), "--replace" * replace, "--force" * force,
                "--install-for-all" * for_all]
        env = {k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"}
        env.update(ASCEND_OPP_PATH=str(opp), OPBUILD_RUN_NAME="opbuild install")
        proc = subprocess.run([a for a in args if a], capture_output=True, text=True, env=env)
    if proc.returncode:
        lines = [line.removeprefix("opbuild install: error: ") for line in proc.stderr.splitlines() if line.strip()]
        raise InstallError(lines[-1] if lines else f"the installer failed (exit status {proc.returncode})")
    return proc.stdout.strip().removeprefix("opbuild install: ")
