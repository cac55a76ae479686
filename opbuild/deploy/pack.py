"""`opbuild pack`: a vendor package as CANN's self-extracting installer, `custom_opp_<os>_<arch>.run`.

The file is a POSIX sh stub followed by a gzip'ed tar of `<vendor>/` (the package tree). Run as

    ./custom_opp_ubuntu_x86_64.run --install-path=DIR [--force] [--quiet]   (DIR: an OPP tree;
                                                                  default $ASCEND_OPP_PATH)

it checks the payload's sha256, extracts it to a temporary directory and installs it with
`opbuild install` (opbuild/deploy/install.py: the one implementation of the copy, the refusal
to replace a different package of the vendor without --force, and the `load_priority` update of
`DIR/vendors/config.ini`), through the Python of `$OPBUILD_PYTHON` (default `python3`): the
package runs on opbuild's runtime, so opbuild must be installed where it is deployed anyway.

Reproducible: entries sorted, mtime 0, owner 0/0 with no names, modes 0755/0644, gzip with no
name and mtime 0; no path of the build machine anywhere. Packing the same package at any path
gives the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import platform
import shlex
import tarfile
from pathlib import Path

from opbuild.atomic import atomic_write
from opbuild.deploy.install import InstallError, is_vendor_package


def run_file_name() -> str:
    """custom_opp_<os>_<arch>.run, as CANN names it (os: /etc/os-release ID, e.g. ubuntu)."""
    try:
        os_id = platform.freedesktop_os_release().get("ID", "linux")
    except OSError:
        os_id = "linux"
    safe = "".join(c for c in os_id.lower() if c.isalnum() or c in "-.") or "linux"
    return f"custom_opp_{safe}_{platform.machine() or 'unknown'}.run"


def payload(package: Path, vendor: str) -> bytes:
    """The tar.gz of `package` as `<vendor>/...` (reproducible, see the module docstring)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        paths = [package, *sorted(package.rglob("*"), key=lambda p: p.relative_to(package).as_posix())]
        for path in paths:
            rel = path.relative_to(package).as_posix()
            info = tar.gettarinfo(str(path), arcname=vendor if rel == "." else f"{vendor}/{rel}")
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isdir() or (info.isfile() and info.mode & 0o111):
                info.mode = 0o755
            elif info.isfile():
                info.mode = 0o644
            if info.isfile():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


_STUB = r"""#!/bin/sh
# @NAME@: self-extracting installer of the op package of vendor @VENDOR@ (made by `opbuild pack`).
# Run with --help. What follows the line `exit $?` is a tar.gz of @VENDOR@/.
VENDOR=@VENDOR_Q@
PAYLOAD_OFFSET=@OFFSET@
PAYLOAD_SHA256=@SHA256@
me=$(basename "$0")
usage() {
    cat <<USAGE
usage: $me [--install-path=DIR] [--force] [--quiet] [--help]

Install the op package of vendor $VENDOR into the OPP tree DIR: DIR/vendors/$VENDOR, first in
load_priority of DIR/vendors/config.ini (what \`opbuild install\` does; it runs it).
  --install-path=DIR  the OPP tree (default: \$ASCEND_OPP_PATH)
  --force             replace a different package of vendor $VENDOR installed there
  --quiet             print nothing but errors
  --help              this text
Needs opbuild: \${OPBUILD_PYTHON:-python3} must import it (activate its virtualenv or set OPBUILD_PYTHON).
USAGE
}
main() {
    install_path=${ASCEND_OPP_PATH:-}
    quiet=0
    force=
    for arg in "$@"; do
        case $arg in
            --install-path=*) install_path=${arg#--install-path=} ;;
            --quiet) quiet=1 ;;
            --force) force=--force ;;
            --help|-h) usage; return 0 ;;
            *) echo "$me: error: unknown option $arg (see --help)" >&2; return 2 ;;
        esac
    done
    if [ -z "$install_path" ]; then
        echo "$me: error: give --install-path=DIR (or set ASCEND_OPP_PATH)" >&2; return 2
    fi
    py=${OPBUILD_PYTHON:-python3}
    if ! "$py" -c "import opbuild.deploy.install" >/dev/null 2>&1; then
        echo "$me: error: $py cannot import opbuild (activate its virtualenv or set OPBUILD_PYTHON)" >&2; return 1
    fi
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/opbuild-run.XXXXXX") || return 1
    trap 'rm -rf "$tmp"' EXIT
    trap 'rm -rf "$tmp"; exit 130' INT TERM
    tail -c +$((PAYLOAD_OFFSET + 1)) "$0" > "$tmp/payload.tar.gz" || return 1
    if command -v sha256sum >/dev/null 2>&1; then
        sum=$(sha256sum "$tmp/payload.tar.gz" | cut -d' ' -f1)
        if [ "$sum" != "$PAYLOAD_SHA256" ]; then
            echo "$me: error: the payload is damaged (sha256 $sum, expected $PAYLOAD_SHA256)" >&2; return 1
        fi
    fi
    mkdir "$tmp/pkg" && (cd "$tmp/pkg" && gzip -dc ../payload.tar.gz | tar -xf -) || {
        echo "$me: error: cannot extract the payload into $tmp" >&2; return 1; }
    mkdir -p "$install_path" || return 1
    report=$("$py" -m opbuild.cli install "$tmp/pkg/$VENDOR" --opp-path "$install_path" --vendor "$VENDOR" $force) || return 1
    if [ "$quiet" = 0 ]; then
        echo "$me: vendor $VENDOR in $install_path/vendors/$VENDOR (${report##*; })"
        echo "set up C programs with: eval \"\$(opbuild env --package '$install_path/vendors/$VENDOR')\""
    fi
    return 0
}
main "$@"
exit $?
"""


def stub(name: str, vendor: str, offset: int, digest: str) -> bytes:
    text = (_STUB.replace("@NAME@", name).replace("@VENDOR_Q@", shlex.quote(vendor)).replace("@VENDOR@", vendor)
            .replace("@SHA256@", digest).replace("@OFFSET@", f"{offset:<10d}"))  # (padded with spaces: a leading 0 is octal in sh)
    return text.encode()


def pack(package: Path, output: Path | None = None, vendor: str | None = None) -> Path:
    """Write the installer of `package` (e.g. out/opp/vendors/customize) to `output` (default:
    <out>/<run_file_name()>, beside the OPP tree <out>/opp/vendors/<vendor>); returns its path."""
    package = Path(package)
    if not package.is_dir() or not is_vendor_package(package):
        raise InstallError(f"{package} is not a built op package of a vendor (no op_impl/ai_core/tbe/kernel/config/)")
    vendor = vendor or package.resolve().name
    if not vendor or "/" in vendor or vendor in (".", "..") or any(c.isspace() or c in "'\"\\$`" for c in vendor):
        raise InstallError(f"bad vendor name {vendor!r}")
    output = Path(output) if output is not None else package.resolve().parent.parent.parent / run_file_name()
    data = payload(package, vendor)
    digest = hashlib.sha256(data).hexdigest()
    offset = len(stub(output.name, vendor, 0, digest))  # fixed-width offset: the stub's length does not change
    head = stub(output.name, vendor, offset, digest)
    assert len(head) == offset
    output.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(output, head + data, 0o755)
    return output
