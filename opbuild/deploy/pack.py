"""`opbuild pack`: a vendor package as CANN's self-extracting installer, `custom_opp_<os>_<arch>.run`.

The file is laid out like a makeself archive (what CANN's build uses): a POSIX sh header of
`skip` lines (opbuild/deploy/scripts/header.sh), then the payload, a gzip'ed tar of

    install.sh  uninstall.sh  help.info  packages/vendors/<vendor>/...

The header takes makeself's options (--help --info --list --check --noexec --keep --target DIR,
and CANN's --extract=DIR), checks the payload's sha256 before extracting anything, and runs
`bash install.sh` with the other options: --install-path=ABS, --install-for-all, --force,
--replace, --quiet (scripts/install.sh and help.info say what each does). Installing needs bash,
coreutils, tar and gzip on the target, no Python. `opbuild install` runs the same install.sh
(opbuild/deploy/install.py): one implementation of the staged swap, the checks and load_priority.

Reproducible: entries sorted, mtime 0, owner 0/0 with no names, modes 0755/0644, gzip with no
name and mtime 0; no path of the build machine anywhere. Packing the same package at any path
gives the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import platform
import tarfile
from pathlib import Path

from opbuild.abi import package_layout as layout
from opbuild.atomic import atomic_write
from opbuild.deploy.install import PAYLOAD_SCRIPTS, SCRIPTS, InstallError, check_vendor, is_vendor_package


def run_file_name() -> str:
    """custom_opp_<os>_<arch>.run, as CANN names it (os: /etc/os-release ID, e.g. ubuntu)."""
    try:
        os_id = platform.freedesktop_os_release().get("ID", "linux")
    except OSError:
        os_id = "linux"
    safe = "".join(c for c in os_id.lower() if c.isalnum() or c in "-.") or "linux"
    return f"custom_opp_{safe}_{platform.machine() or 'unknown'}.run"




def _normalized(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if info.isdir() or (info.isfile() and info.mode & 0o111):
        info.mode = 0o755
    elif info.isfile():
        info.mode = 0o644
    return info


def payload(package: Path, vendor: str) -> tuple[bytes, int]:
    """The tar.gz of the scripts and `package` as `packages/vendors/<vendor>/...` (reproducible,
    see the module docstring), and the total size of its files (for `--info`)."""
    raw = io.BytesIO()
    total = 0
    entries: list[tuple[str, Path | None]] = [(name, SCRIPTS / name) for name in PAYLOAD_SCRIPTS]
    entries += [("packages", None), ("packages/vendors", None), (f"packages/vendors/{vendor}", package)]
    entries += [(f"packages/vendors/{vendor}/{p.relative_to(package).as_posix()}", p)
                for p in sorted(package.rglob("*"), key=lambda p: p.relative_to(package).as_posix())]
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for arcname, path in entries:
            if path is None:
                info = tarfile.TarInfo(arcname)
                info.type = tarfile.DIRTYPE
                tar.addfile(_normalized(info))
                continue
            info = _normalized(tar.gettarinfo(str(path), arcname=arcname))
            if info.isfile():
                total += info.size
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue(), total


def header(vendor: str, data: bytes, total: int) -> bytes:
    """The sh header of the installer of `data` (header.sh with its fields filled in)."""
    help_info = (SCRIPTS / "help.info").read_text().rstrip("\n")
    fields = {"@VENDOR@": vendor, "@LABEL@": f"opbuild op package of vendor {vendor}",
              "@TARGETDIR@": "(a temporary directory opbuild-run.XXXXXX in TMPDIR)",
              "@FILESIZES@": str(len(data)), "@TOTALSIZE@": str(total),
              "@SHA256@": hashlib.sha256(data).hexdigest(), "@HELP_INFO@": help_info}
    text = (SCRIPTS / "header.sh").read_text()
    for key, value in fields.items():
        text = text.replace(key, value)
    if not text.endswith("\n"):
        text += "\n"
    return text.replace("@SKIP@", str(text.count("\n"))).encode()


def pack(package: Path, output: Path | None = None, vendor: str | None = None) -> Path:
    """Write the installer of `package` (e.g. out/opp/vendors/customize) to `output` (default:
    <out>/<run_file_name()>, beside the OPP tree <out>/opp/vendors/<vendor>); returns its path."""
    package = Path(package)
    if not package.is_dir() or not is_vendor_package(package):
        raise InstallError(f"{package} is not a built op package of a vendor (no op_impl/ai_core/tbe/kernel/config/ "
                           f"and no {layout.aicpu_op_info()})")
    vendor = vendor or package.resolve().name
    check_vendor(vendor)
    output = Path(output) if output is not None else package.resolve().parent.parent.parent / run_file_name()
    data, total = payload(package, vendor)
    output.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(output, header(vendor, data, total) + data, 0o755)
    return output
