"""Issue 23 item 3: the `.run` installer like CANN's, run for real with sh/bash in temp dirs.

makeself's layout and options (--help --info --list --check --noexec --extract --target --keep),
the installer's (--install-path=ABS with its bin/set_env.bash and config.ini left alone, the
ASCEND_CUSTOM_OPP_PATH / ASCEND_OPP_PATH defaults with load_priority, --install-for-all, --quiet,
--force, --replace, relative paths refused, unknown options warned about), the ELF machine and
GLIBC checks, CANN's permissions, uninstall.sh, the recovery of an interrupted swap, and an
install on a PATH with bash, coreutils, tar and gzip only (no Python)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from opbuild.deploy.pack import pack, run_file_name

from fake_package import TILING_LIB

ENV_VARS = ("ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH", "LD_LIBRARY_PATH")


def _run(installer: Path, *args: str, cwd: Path, env: dict[str, str] | None = None,
         path: str | None = None) -> subprocess.CompletedProcess:
    tmpdir = cwd / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    base.update(TMPDIR=str(tmpdir), **(env or {}))
    if path is not None:
        base["PATH"] = path
    sh = shutil.which("sh", path=base["PATH"]) or "sh"
    return subprocess.run([sh, str(installer), *args], capture_output=True, text=True, env=base, cwd=cwd, timeout=120)


def _tree(root: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        found[rel] = "->" + os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
    return found


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def pkg(tmp_path, make_package) -> Path:
    return make_package(tmp_path / "src", "1")


@pytest.fixture
def run_file(pkg, tmp_path) -> Path:
    return pack(pkg, tmp_path / run_file_name())


def _installed(vendors: Path) -> set[str]:
    """The packages vendors/<v> links point to (vendors/.<v>.pkg-XXXXXX)."""
    return {os.readlink(p) for p in vendors.iterdir() if p.is_symlink()} if vendors.is_dir() else set()


def _leftovers(tmp_path: Path, vendors: Path) -> list[str]:
    """Hidden entries of vendors/ that are no installed package, and the run's temporaries."""
    installed = _installed(vendors)
    hidden = [p.name for p in vendors.iterdir() if p.name.startswith(".") and p.name not in installed] \
        if vendors.is_dir() else []
    return hidden + [p.name for p in (tmp_path / "tmpdir").iterdir()]


# ---- the archive --------------------------------------------------------------------------------

def test_reproducible_makeself_layout(pkg, run_file, tmp_path):
    data = run_file.read_bytes()
    assert data.startswith(b"#!/bin/sh\n") and os.access(run_file, os.X_OK)
    skip = int(next(line for line in data.split(b"\n") if line.startswith(b"skip=")).split(b"=")[1])
    head = b"\n".join(data.split(b"\n")[:skip]) + b"\n"
    assert data[len(head):len(head) + 2] == b"\x1f\x8b"  # the gzip payload starts after line `skip`
    copy = tmp_path / "elsewhere" / "customize"
    shutil.copytree(pkg, copy, symlinks=True)
    for p in copy.rglob("*"):
        if not p.is_symlink():
            os.utime(p, (12345, 12345))
    assert pack(copy, tmp_path / "again.run").read_bytes() == data
    assert str(pkg).encode() not in data


def test_help_info_list_check(run_file, tmp_path):
    helped = _run(run_file, "--help", cwd=tmp_path)
    assert helped.returncode == 0
    for option in ("--install-path=ABS", "--install-for-all", "--force", "--replace", "--quiet", "--list", "--info",
                   "--check", "--noexec", "--extract=DIR", "--target DIR", "--keep"):
        assert option in helped.stdout, option
    info = _run(run_file, "--info", cwd=tmp_path)
    assert info.returncode == 0 and "Identification: opbuild op package of vendor customize" in info.stdout
    assert "Compression: gzip" in info.stdout and "./install.sh" in info.stdout
    listed = _run(run_file, "--list", cwd=tmp_path)
    assert listed.returncode == 0
    names = {line.split()[-1] for line in listed.stdout.splitlines() if "->" not in line}
    assert {"install.sh", "uninstall.sh", "help.info", "packages/vendors/customize/version.info",
            f"packages/vendors/customize/{TILING_LIB}"} <= names
    checked = _run(run_file, "--check", cwd=tmp_path)
    assert checked.returncode == 0 and "SHA256 checksums are OK" in checked.stdout


def test_tampered_payload_refused_and_nothing_written(run_file, tmp_path):
    data = bytearray(run_file.read_bytes())
    data[-200] ^= 0x01
    bad = tmp_path / "bad.run"
    bad.write_bytes(bytes(data))
    assert _run(bad, "--check", cwd=tmp_path).returncode == 1
    proc = _run(bad, f"--install-path={tmp_path / 'opp'}", cwd=tmp_path)
    assert proc.returncode == 1 and "the payload is damaged" in proc.stderr, proc
    assert not (tmp_path / "opp").exists() and _leftovers(tmp_path, tmp_path / "opp") == []


def test_extract_noexec_target_keep(pkg, run_file, tmp_path):
    for args, where in ((["--extract=" + str(tmp_path / "x1")], tmp_path / "x1"),
                        (["--noexec", "--target", str(tmp_path / "x2")], tmp_path / "x2")):
        proc = _run(run_file, *args, cwd=tmp_path, env={"ASCEND_OPP_PATH": str(tmp_path / "opp")})
        assert proc.returncode == 0, proc
        assert (where / "install.sh").is_file() and _tree(where / "packages/vendors/customize") == _tree(pkg)
    assert not (tmp_path / "opp").exists()  # not installed
    kept = _run(run_file, "--keep", f"--install-path={tmp_path / 'opp'}", cwd=tmp_path)
    assert kept.returncode == 0, kept
    [line] = [line for line in kept.stdout.splitlines() if line.startswith("kept ")]
    assert (Path(line[5:]) / "packages/vendors/customize/version.info").is_file()
    assert (tmp_path / "opp/vendors/customize/version.info").is_file()


# ---- where it installs ------------------------------------------------------------------------

def test_install_path_writes_set_env_and_leaves_config_ini_alone(pkg, run_file, tmp_path):
    opp = tmp_path / "opp"
    proc = _run(run_file, f"--install-path={opp}", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc
    dest = opp / "vendors" / "customize"
    assert f"source {dest}/bin/set_env.bash" in proc.stdout
    tree = _tree(dest)
    assert {k: v for k, v in tree.items() if not k.startswith(("bin", "scripts"))} == _tree(pkg)
    assert not (opp / "vendors" / "config.ini").exists()
    assert _leftovers(tmp_path, opp / "vendors") == []
    script = (f'source {dest}/bin/set_env.bash; echo "$ASCEND_CUSTOM_OPP_PATH"; echo "$LD_LIBRARY_PATH"')
    fresh = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                           env={"PATH": os.environ["PATH"]})
    assert fresh.stdout.splitlines() == [str(dest), f"{dest}/op_api/lib"]
    stacked = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                             env={"PATH": os.environ["PATH"], "ASCEND_CUSTOM_OPP_PATH": "/a", "LD_LIBRARY_PATH": "/l"})
    assert stacked.stdout.splitlines() == [f"{dest}:/a", f"{dest}/op_api/lib:/l"]


def test_relative_install_path_refused(run_file, tmp_path):
    proc = _run(run_file, "--install-path=opp", cwd=tmp_path)
    assert proc.returncode == 2 and "--install-path=opp is relative" in proc.stderr, proc
    assert not (tmp_path / "opp").exists()
    proc = _run(run_file, cwd=tmp_path)
    assert proc.returncode == 2 and "give --install-path=ABS" in proc.stderr


def test_default_targets_and_load_priority(run_file, tmp_path):
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("# kept\nload_priority = acme, customize\nother=1\n")
    proc = _run(run_file, "--quiet", cwd=tmp_path, env={"ASCEND_OPP_PATH": str(opp)})
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc
    assert (opp / "vendors" / "config.ini").read_text() == "# kept\nload_priority=customize,acme\nother=1\n"
    assert _mode(opp / "vendors" / "config.ini") == 0o640

    custom = tmp_path / "custom"
    proc = _run(run_file, cwd=tmp_path, env={"ASCEND_OPP_PATH": str(opp), "ASCEND_CUSTOM_OPP_PATH": str(custom)})
    assert proc.returncode == 0, proc
    assert (custom / "vendors/customize/version.info").is_file()
    assert (custom / "vendors/config.ini").read_text() == "load_priority=customize\n"
    two = _run(run_file, cwd=tmp_path, env={"ASCEND_CUSTOM_OPP_PATH": f"{custom}:/x"})
    assert two.returncode == 2 and "holds several paths" in two.stderr


def test_unknown_option_warned_and_ignored(run_file, tmp_path):
    proc = _run(run_file, "--nox11", "--bogus", f"--install-path={tmp_path / 'opp'}", cwd=tmp_path)
    assert proc.returncode == 0 and "warning: unknown option --bogus ignored" in proc.stderr, proc
    assert "nox11" not in proc.stderr  # makeself's no-op options are taken by the header
    assert (tmp_path / "opp/vendors/customize/version.info").is_file()


# ---- re-install, replace, permissions --------------------------------------------------------

def test_identical_no_op_different_needs_replace(make_package, run_file, tmp_path):
    opp = tmp_path / "opp"
    env = {"ASCEND_OPP_PATH": str(opp)}
    assert _run(run_file, cwd=tmp_path, env=env).returncode == 0
    dest = opp / "vendors" / "customize"
    inode = os.stat(dest).st_ino
    again = _run(run_file, cwd=tmp_path, env=env)
    assert again.returncode == 0 and "already installed (identical)" in again.stdout
    assert os.stat(dest).st_ino == inode
    other = pack(make_package(tmp_path / "other", "2"), tmp_path / "other.run")
    refused = _run(other, cwd=tmp_path, env=env)
    assert refused.returncode == 1 and "use --replace" in refused.stderr, refused
    assert (dest / "version.info").read_text().endswith("=1\n")
    replaced = _run(other, "--replace", cwd=tmp_path, env=env)
    assert replaced.returncode == 0 and f"replaced {dest}" in replaced.stdout, replaced
    assert (dest / "version.info").read_text().endswith("=2\n")
    assert _leftovers(tmp_path, opp / "vendors") == []


def test_permissions_default_and_for_all(run_file, tmp_path):
    for args, (d, f, x, u) in (((), (0o750, 0o640, 0o750, 0o550)),
                               (("--install-for-all",), (0o755, 0o644, 0o755, 0o555))):
        opp = tmp_path / ("all" if args else "default")
        assert _run(run_file, *args, f"--install-path={opp}", cwd=tmp_path).returncode == 0
        dest = opp / "vendors" / "customize"
        modes = {p.relative_to(dest).as_posix(): _mode(p) for p in dest.rglob("*") if not p.is_symlink()}
        assert _mode(dest.resolve()) == d and _mode(opp / "vendors") == d
        assert modes.pop("scripts/uninstall.sh") == u and modes.pop(TILING_LIB) == x
        assert modes.pop("bin/set_env.bash") == f and modes.pop("version.info") == f
        assert {m for p, m in modes.items() if (dest / p).is_dir()} == {d}
        assert {m for p, m in modes.items() if (dest / p).is_file()} == {f}


# ---- the shared-library check ----------------------------------------------------------------

def test_other_machine_refused_before_anything_is_written_force_skips(make_package, shared_object, tmp_path):
    so = bytearray(shared_object)
    little = so[5] == 1
    other = 183 if int.from_bytes(so[18:20], "little" if little else "big") != 183 else 62  # AArch64 / x86-64
    so[18:20] = other.to_bytes(2, "little" if little else "big")
    run_file = pack(make_package(tmp_path / "arm", "1", so=bytes(so)), tmp_path / "arm.run")
    opp = tmp_path / "opp"
    proc = _run(run_file, f"--install-path={opp}", cwd=tmp_path)
    assert proc.returncode == 1 and "libcust_opmaster_rt2.0.so is built for" in proc.stderr, proc
    assert "--force skips this check" in proc.stderr
    assert not opp.exists() and _leftovers(tmp_path, opp / "vendors") == []
    assert _run(run_file, "--force", f"--install-path={opp}", cwd=tmp_path).returncode == 0
    assert (opp / "vendors/customize" / TILING_LIB).read_bytes() == bytes(so)


def _needing_glibc_99(shared_object: bytes) -> bytes:
    at = shared_object.index(b"GLIBC_2.")
    end = shared_object.index(b"\0", at)
    return shared_object[:at] + b"GLIBC_99.0".ljust(end - at, b"\0") + shared_object[end:]


def test_too_new_glibc_refused(make_package, shared_object, tmp_path):
    run_file = pack(make_package(tmp_path / "new", "1", so=_needing_glibc_99(shared_object)), tmp_path / "new.run")
    proc = _run(run_file, f"--install-path={tmp_path / 'opp'}", cwd=tmp_path)
    assert proc.returncode == 1 and "need GLIBC_99.0, this machine has glibc" in proc.stderr, proc
    assert not (tmp_path / "opp").exists()


# ---- uninstall, recovery ---------------------------------------------------------------------

def test_uninstall_removes_the_dir_and_the_priority_entry(make_package, run_file, tmp_path):
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("load_priority=acme\n")
    assert _run(run_file, cwd=tmp_path, env={"ASCEND_OPP_PATH": str(opp)}).returncode == 0
    assert (opp / "vendors" / "config.ini").read_text() == "load_priority=customize,acme\n"
    script = opp / "vendors/customize/scripts/uninstall.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and "removed" in proc.stdout, proc
    assert not (opp / "vendors/customize").exists()
    assert (opp / "vendors" / "config.ini").read_text() == "load_priority=acme\n"
    assert [p.name for p in (opp / "vendors").iterdir()] == ["config.ini"]
    # the last vendor: config.ini goes too
    (opp / "vendors" / "config.ini").write_text("load_priority=customize\n")
    assert _run(run_file, cwd=tmp_path, env={"ASCEND_OPP_PATH": str(opp)}).returncode == 0
    assert subprocess.run(["bash", str(script), "--quiet"], capture_output=True, cwd=tmp_path).returncode == 0
    assert list((opp / "vendors").iterdir()) == []


def test_an_interrupted_swap_is_undone_by_the_next_run(make_package, run_file, tmp_path):
    """A vendors/<v> that is a real directory (an older installer's) is replaced by two renames; a
    run killed between them leaves the old package in vendors/.<v>.old-*: the next run puts it
    back before doing anything else (the tree then holds the old one)."""
    opp = tmp_path / "opp"
    assert _run(run_file, f"--install-path={opp}", cwd=tmp_path).returncode == 0
    dest = opp / "vendors" / "customize"
    before = _tree(dest)
    aside = opp / "vendors" / ".customize.old-abc123"
    aside.mkdir()
    real = dest.resolve()
    dest.unlink()
    real.rename(aside / "customize")
    (opp / "vendors" / ".customize.install-xyz").mkdir()  # a killed run's staging directory
    other = pack(make_package(tmp_path / "other", "2"), tmp_path / "other.run")
    proc = _run(other, f"--install-path={opp}", cwd=tmp_path)
    assert proc.returncode == 1 and f"restored {dest}" in proc.stderr and "use --replace" in proc.stderr, proc
    assert _tree(dest) == before
    assert _leftovers(tmp_path, opp / "vendors") == []


# ---- bash + coreutils + tar + gzip only ------------------------------------------------------

COREUTILS = ("basename", "cat", "chmod", "cp", "cut", "dirname", "head", "ls", "mkdir", "mktemp", "mv", "od",
             "readlink", "rm", "rmdir", "sha256sum", "sort", "stat", "tail", "tr", "wc", "env", "printf", "echo",
             "true", "false", "test", "[", "uname", "id", "touch", "ln", "date", "dd", "tee", "sleep")


def test_install_with_bash_coreutils_tar_gzip_only(pkg, run_file, make_package, shared_object, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in (*COREUTILS, "bash", "sh", "tar", "gzip"):
        found = shutil.which(name)
        if found:
            os.symlink(found, bin_dir / name)
    for name in ("bash", "sh", "tar", "gzip", "sha256sum", "od", "tr", "sort", "stat"):
        assert (bin_dir / name).exists(), name
    path = str(bin_dir)
    assert shutil.which("python3", path=path) is None and shutil.which("python", path=path) is None
    assert shutil.which("getconf", path=path) is None  # the glibc version is read from libc.so.6 then
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    proc = _run(run_file, cwd=tmp_path, path=path, env={"ASCEND_OPP_PATH": str(opp)})
    assert proc.returncode == 0 and proc.stderr == "", proc
    dest = opp / "vendors" / "customize"
    assert {k: v for k, v in _tree(dest).items() if not k.startswith("scripts")} == _tree(pkg)
    assert (opp / "vendors" / "config.ini").read_text() == "load_priority=customize\n"
    again = _run(run_file, cwd=tmp_path, path=path, env={"ASCEND_OPP_PATH": str(opp)})
    assert again.returncode == 0 and "identical" in again.stdout, again
    gone = subprocess.run([str(bin_dir / "bash"), str(dest / "scripts/uninstall.sh")], capture_output=True, text=True,
                          env={"PATH": path}, cwd=tmp_path)
    assert gone.returncode == 0 and not dest.exists(), gone

    # the GLIBC check still works there (this machine's version read from libc.so.6, no getconf)
    new = pack(make_package(tmp_path / "new", "1", so=_needing_glibc_99(shared_object)), tmp_path / "new.run")
    refused = _run(new, cwd=tmp_path, path=path, env={"ASCEND_OPP_PATH": str(opp)})
    assert refused.returncode == 1, refused
    assert re.search(r"need GLIBC_99\.0, this machine has glibc 2\.[0-9]+: nothing installed", refused.stderr), refused


def test_killed_at_any_point_the_tree_holds_the_old_or_the_new_package(make_package, run_file, tmp_path):
    """SIGKILL to the whole installer at spread-out moments of a --replace: afterwards vendors/
    holds the old package or the new one, whole, never none; the next run leaves nothing behind."""
    new_run = pack(make_package(tmp_path / "new", "2"), tmp_path / "new.run")
    opp = tmp_path / "opp"
    refs = {}
    for name, installer in (("old", run_file), ("new", new_run)):
        shutil.rmtree(opp, ignore_errors=True)
        assert _run(installer, f"--install-path={opp}", cwd=tmp_path).returncode == 0
        refs[name] = _tree(opp / "vendors/customize")
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    env["TMPDIR"] = str(tmp_path / "tmpdir")
    seen = set()
    for i in range(12):
        shutil.rmtree(opp, ignore_errors=True)
        assert _run(run_file, f"--install-path={opp}", cwd=tmp_path).returncode == 0
        proc = subprocess.Popen(["sh", str(new_run), f"--install-path={opp}", "--replace", "--quiet"], env=env,
                                cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=0.02 * i)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        proc.wait()
        dest = opp / "vendors" / "customize"
        assert dest.exists(), f"kill after {0.02 * i}s: no package at {dest}"  # (one rename: never missing)
        state = next((name for name, ref in refs.items() if _tree(dest) == ref), None)
        assert state is not None, f"kill after {0.02 * i}s: a half package at {dest}"
        seen.add(state)
        # the next run cleans up
        again = _run(new_run, f"--install-path={opp}", "--replace", cwd=tmp_path)
        assert again.returncode == 0 and _tree(dest) == refs["new"], again
        vendors = opp / "vendors"  # (a killed .run's own extraction directory under TMPDIR stays: SIGKILL)
        assert [p.name for p in vendors.iterdir() if p.name.startswith(".")] == list(_installed(vendors))
    assert "old" in seen  # (the kills came early enough at least once)


# ---- issue 25: one rename, a lock around config.ini -------------------------------------------

def _wrapper(bin_dir: Path, name: str, body: str) -> str:
    """A `name` on a PATH of its own that runs `body` (sh), then the real `name`; the PATH."""
    bin_dir.mkdir(exist_ok=True)
    real = shutil.which(name)
    (bin_dir / name).write_text(f"#!/bin/sh\n{body}\nexec {real} \"$@\"\n")
    (bin_dir / name).chmod(0o755)
    return f"{bin_dir}:{os.environ['PATH']}"


def test_killed_just_before_the_rename_the_old_package_is_still_there(make_package, run_file, tmp_path):
    """The kill the issue found: between the two renames of a swap vendors/<v> was missing. Now
    one rename replaces it: a SIGKILL to the installer's group right before the `mv` onto
    vendors/<v> leaves the old package, and the next run cleans up and installs."""
    opp = tmp_path / "opp"
    assert _run(run_file, f"--install-path={opp}", cwd=tmp_path).returncode == 0
    dest = opp / "vendors" / "customize"
    old = _tree(dest)
    new_run = pack(make_package(tmp_path / "new", "2"), tmp_path / "new.run")
    path = _wrapper(tmp_path / "wrap", "mv", f'for a; do last=$a; done\n'
                                             f'case "$*" in *--exchange*) ;; *) [ "$last" = "{dest}" ] && kill -9 0 ;; esac')
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    (tmp_path / "tmpdir").mkdir(exist_ok=True)
    env.update(TMPDIR=str(tmp_path / "tmpdir"), PATH=path)
    proc = subprocess.Popen(["sh", str(new_run), f"--install-path={opp}", "--replace", "--quiet"], env=env,
                            cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(timeout=120) == -9
    assert dest.exists() and _tree(dest) == old
    again = _run(new_run, f"--install-path={opp}", "--replace", cwd=tmp_path)
    assert again.returncode == 0 and (dest / "version.info").read_text().endswith("=2\n"), again
    vendors = opp / "vendors"
    assert [p.name for p in vendors.iterdir() if p.name.startswith(".")] == list(_installed(vendors))


def _vendor_package(make_package, root: Path, vendor: str) -> Path:
    return make_package(root, vendor).rename(root / vendor)


def test_concurrent_installs_of_two_vendors_both_stay_in_load_priority(make_package, tmp_path):
    """Two installs of different vendors at once: each read config.ini, then wrote its own line,
    and one vendor was lost (3 of 40 rounds). With config.ini's read-modify-write slowed to make
    the race certain, the lock makes them take turns and both vendors stay."""
    runs = [pack(_vendor_package(make_package, tmp_path / v, v), tmp_path / f"{v}.run") for v in ("alpha", "beta")]
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("load_priority=customize\n")
    path = _wrapper(tmp_path / "wrap", "mktemp", 'case "$*" in *.config.ini.*) sleep 2 ;; esac')
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    (tmp_path / "tmpdir").mkdir(exist_ok=True)
    env.update(TMPDIR=str(tmp_path / "tmpdir"), PATH=path, ASCEND_OPP_PATH=str(opp))
    procs = [subprocess.Popen(["sh", str(r), "--quiet"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in runs]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    line = (opp / "vendors" / "config.ini").read_text()
    assert line.startswith("load_priority=") and set(line.strip().split("=")[1].split(",")) == {"alpha", "beta", "customize"}
    assert _leftovers(tmp_path, opp / "vendors") == []


def _zombie() -> subprocess.Popen:
    """A child that has ended and is not reaped yet: /proc/PID still exists (state Z), as for an
    installer killed in a container whose init reaps late."""
    proc = subprocess.Popen(["true"])
    state_file = Path(f"/proc/{proc.pid}/stat")
    for _ in range(2000):
        if state_file.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return proc
        time.sleep(0.005)
    raise AssertionError(f"pid {proc.pid} did not end")


def test_a_lock_held_or_waited_for_by_a_killed_unreaped_installer_is_broken(run_file, tmp_path):
    """A SIGKILLed installer not yet reaped is a zombie: its lock is broken at once (no 5-minute
    wait) and its waiter directory is removed, for install and uninstall alike."""
    opp = tmp_path / "opp"
    vendors = opp / "vendors"
    holder, waiter = _zombie(), _zombie()
    try:
        for pid in (holder.pid, None):
            lock = vendors / ".opbuild.lock"
            (lock if pid else vendors / f".opbuild.lock.{waiter.pid}").mkdir(parents=True)
            if pid:
                (lock / "pid").write_text(f"{pid}\n")
                (vendors / f".opbuild.lock.{waiter.pid}").mkdir()
            started = time.monotonic()
            done = _run(run_file, f"--install-path={opp}", "--replace", cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            assert time.monotonic() - started < 60, "waited for a dead holder"
            assert sorted(p.name for p in vendors.iterdir() if p.name.startswith(".opbuild.lock")) == []
        (vendors / f".opbuild.lock.{waiter.pid}").mkdir()
        gone = subprocess.run(["bash", str(vendors / "customize/scripts/uninstall.sh"), "--quiet"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert gone.returncode == 0, gone.stderr
        assert not (vendors / f".opbuild.lock.{waiter.pid}").exists()
    finally:
        holder.wait()
        waiter.wait()


def test_install_and_uninstall_take_the_same_lock():
    """The lock's few lines are in both scripts (uninstall.sh travels alone in the package): the
    same text, so they can never disagree."""
    from opbuild.deploy.install import SCRIPTS

    def take_lock(name: str) -> str:
        text = (SCRIPTS / name).read_text()
        start = text.index("take_lock() {")
        return text[start:text.index("\n}\n", start)]

    assert take_lock("install.sh") == take_lock("uninstall.sh")
    for name in ("install.sh", "uninstall.sh"):
        assert "lock_dir=$vendors_dir/.opbuild.lock\n" in (SCRIPTS / name).read_text()


# ---- issue 25: a verified checksum, every decompression error, a hint that survives quotes ---------

def _without(tmp_path: Path, *missing: str) -> str:
    """A PATH holding every program of this one but `missing`."""
    bin_dir = tmp_path / ("no-" + "-".join(missing))
    bin_dir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            target = Path(d) / name
            if name not in missing and not (bin_dir / name).exists() and os.access(target, os.X_OK):
                os.symlink(target, bin_dir / name)
    return str(bin_dir)


def test_a_payload_whose_gzip_crc_is_wrong_is_refused(pkg, tmp_path):
    """A payload that matches its checksum but does not decompress cleanly (its gzip CRC wrong:
    tar extracted everything and `gzip -dc | tar` reported tar's success): nothing installed."""
    from opbuild.deploy import pack as packing

    good = pack(pkg, tmp_path / "good.run").read_bytes()
    skip = int(next(line for line in good.split(b"\n") if line.startswith(b"skip=")).split(b"=")[1])
    head_len = len(b"\n".join(good.split(b"\n")[:skip]) + b"\n")
    payload = bytearray(good[head_len:])
    payload[-8] ^= 0xFF  # the gzip trailer's CRC32
    head = packing.header(pkg.name, bytes(payload), int(re.search(rb'totalsize="(\d+)"', good).group(1)))
    bad = tmp_path / "bad.run"
    bad.write_bytes(head + bytes(payload))
    opp = tmp_path / "opp"
    proc = _run(bad, f"--install-path={opp}", cwd=tmp_path)
    assert proc.returncode == 1, proc
    assert proc.stderr.strip().splitlines() == ["bad.run: error: the payload does not decompress (gzip -t failed: a "
                                                "damaged archive): nothing installed"], proc
    assert not (opp / "vendors" / "customize").exists()


@pytest.mark.parametrize("tools", [("sha256sum",), ("sha256sum", "shasum", "openssl")],
                         ids=["no sha256sum", "no sha256 tool at all"])
def test_without_sha256sum_the_payload_is_still_verified_or_refused(run_file, tmp_path, tools):
    data = bytearray(run_file.read_bytes())
    data[-200] ^= 0xFF  # a damaged payload
    bad = tmp_path / "bad.run"
    bad.write_bytes(bytes(data))
    path = _without(tmp_path, *tools)
    proc = _run(bad, f"--install-path={tmp_path / 'opp'}", cwd=tmp_path, path=path)
    assert proc.returncode == 1, proc
    if len(tools) == 1 and shutil.which("shasum", path=path) is None and shutil.which("openssl", path=path) is None:
        pytest.skip("neither shasum nor openssl here: the fallback cannot be shown")
    expected = "the payload is damaged" if len(tools) == 1 else "none of sha256sum, shasum, openssl is installed"
    assert expected in proc.stderr and proc.stderr.count("\n") == 1, proc
    assert not (tmp_path / "opp").exists()


def test_a_broken_sha256_tool_is_a_refusal_not_a_mismatch(run_file, tmp_path):
    wrap = tmp_path / "wrap"
    wrap.mkdir()
    (wrap / "sha256sum").write_text("#!/bin/sh\nexit 1\n")
    (wrap / "sha256sum").chmod(0o755)
    proc = _run(run_file, f"--install-path={tmp_path / 'opp'}", cwd=tmp_path, path=f"{wrap}:{os.environ['PATH']}")
    assert proc.returncode == 1 and "`sha256sum` failed or printed no sha256: nothing installed" in proc.stderr, proc


def test_without_sha256sum_a_different_package_is_not_taken_for_the_installed_one(make_package, run_file, tmp_path):
    """install.sh compares the new package with the installed one by sha256: without sha256sum the
    files were left out of the comparison, a different package was "already installed
    (identical)" and not installed, exit 0."""
    opp = tmp_path / "opp"
    assert _run(run_file, f"--install-path={opp}", cwd=tmp_path).returncode == 0
    other = pack(make_package(tmp_path / "other", "2"), tmp_path / "other.run")
    path = _without(tmp_path, "sha256sum")
    if shutil.which("shasum", path=path) is None and shutil.which("openssl", path=path) is None:
        pytest.skip("neither shasum nor openssl here")
    proc = _run(other, f"--install-path={opp}", cwd=tmp_path, path=path)
    assert proc.returncode == 1 and "holds a different package of vendor customize; use --replace" in proc.stderr, proc
    again = _run(run_file, f"--install-path={opp}", cwd=tmp_path, path=path)
    assert again.returncode == 0 and "already installed (identical)" in again.stdout, again


def test_the_printed_hint_survives_a_space_and_a_quote_in_the_path(run_file, tmp_path):
    opp = tmp_path / "it's my opp"
    proc = _run(run_file, f"--install-path={opp}", cwd=tmp_path)
    assert proc.returncode == 0, proc
    [hint] = [line.removeprefix("set it up with: ") for line in proc.stdout.splitlines() if line.startswith("set it up")]
    shown = subprocess.run(["bash", "-c", f'{hint} && printf "%s\\n" "$ASCEND_CUSTOM_OPP_PATH"'], capture_output=True,
                           text=True, env={k: v for k, v in os.environ.items() if k not in ENV_VARS})
    assert shown.returncode == 0 and shown.stdout == f"{opp}/vendors/customize\n", (hint, shown)
