"""DISTCC_HOSTS: every kernel and tiling compile goes through distcc, here to two distccd daemons
on loopback (started per test in a temporary directory, killed at teardown). The output is
byte-identical to a local build; a daemon killed mid-build does not fail the build."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from build_helpers import REPO, expected_kernel_steps, tree

from opbuild.builder.distcc import host_slots

needs_distcc = pytest.mark.skipif(not (shutil.which("distcc") and shutil.which("distccd")),
                                  reason="distcc/distccd not installed (apt-get install distcc)")
SUMMARY_COUNTS = re.compile(r"\((\d+) compiled, (\d+) from cache, (\d+) remote\)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, workdir: Path, jobs: int = 2) -> None:
        self.port = _free_port()
        self.log = workdir / f"distccd-{self.port}.log"
        self.log.touch()
        self.log.chmod(0o666)  # distccd started as root runs as the distcc user
        pid_file = workdir / f"distccd-{self.port}.pid"
        self.proc = subprocess.Popen(
            ["distccd", "--daemon", "--no-detach", "--allow", "127.0.0.1", "--listen", "127.0.0.1",
             "--port", str(self.port), "--jobs", str(jobs), "--log-file", str(self.log), "--pid-file", str(pid_file),
             "--log-level", "info"],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                assert self.proc.poll() is None, f"distccd exited: {self.log.read_text()}"
                assert time.monotonic() < deadline, "distccd did not start listening"
                time.sleep(0.05)

    def host(self, slots: int = 2) -> str:
        return f"127.0.0.1:{self.port}/{slots}"

    def compiles(self) -> int:
        """Compiles this daemon ran successfully (its own log)."""
        return self.log.read_text(errors="replace").count("COMPILE_OK")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.proc.pid, sig)  # the daemon and its workers (its own process group)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def farm():
    # not under tmp_path: distccd started as root drops to the distcc user, which must reach its log
    workdir = Path(tempfile.mkdtemp(prefix="opbuild-distccd-"))
    workdir.chmod(0o1777)
    daemons = []
    try:
        daemons += [Daemon(workdir), Daemon(workdir)]
        yield daemons
    finally:
        for d in daemons:
            d.kill(signal.SIGTERM)
        shutil.rmtree(workdir, ignore_errors=True)


def _counts(result) -> tuple[int, int, int]:
    m = SUMMARY_COUNTS.search(result.stdout.strip().splitlines()[-1])
    assert m, result.stdout
    return tuple(int(g) for g in m.groups())


def test_host_slots():
    assert host_slots("127.0.0.1:3632/3 127.0.0.1:3633/5") == 8
    assert host_slots("--randomize localhost hostA hostB:4000/6,lzo @sshhost/2") == 2 + 4 + 6 + 2
    assert host_slots("") == 0


@needs_distcc
def test_sample_ops_compile_on_the_daemons_byte_identical_to_local(farm, clean_build, project):
    reference, _ = clean_build
    hosts = " ".join(d.host() for d in farm)
    p = project()
    result = p.build(env={"DISTCC_HOSTS": hosts}, jobs=4)
    assert sorted(result.kernel_steps()) == expected_kernel_steps()
    compiled, cached, remote = _counts(result)
    daemon_compiles = [d.compiles() for d in farm]
    assert all(n > 0 for n in daemon_compiles), daemon_compiles  # both hosts took work
    assert remote == sum(daemon_compiles) and remote > 0, (remote, daemon_compiles)
    assert "opbuild: distcc: " in result.stdout and "-j4" in result.stdout
    assert tree(p.out) == tree(reference.out)  # packages and objects, byte for byte


@needs_distcc
def test_without_j_the_farm_sizes_the_jobs(farm, project):
    hosts = f"{farm[0].host(3)} {farm[1].host(5)}"
    p = project()
    env = p.env({"DISTCC_HOSTS": ""})
    cmd = [sys.executable, "-m", "SCons", "-C", str(p.root), "ops", "OPS=AddNCustom", f"DISTCC_HOSTS={hosts}"]
    proc = subprocess.run(cmd, env=env, cwd=p.root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"opbuild: distcc: {hosts} (8 slots), -j8" in proc.stdout, proc.stdout
    proc = subprocess.run([*cmd[:4], "-j3", *cmd[4:], "-c"], env=env, cwd=p.root, capture_output=True, text=True)
    proc = subprocess.run([*cmd[:4], "-j3", *cmd[4:]], env=env, cwd=p.root, capture_output=True, text=True)
    assert proc.returncode == 0 and "-j3" in proc.stdout, proc.stdout + proc.stderr


@needs_distcc
def test_a_daemon_killed_mid_build_does_not_fail_it(farm, clean_build, project):
    reference, _ = clean_build
    p = project()
    env = p.env({"DISTCC_HOSTS": " ".join(d.host() for d in farm)})
    proc = subprocess.Popen(p.command(("ops",), 4), env=env, cwd=p.root, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if sum("] CC " in x for x in lines) >= 4:
                farm[0].kill()  # mid-build
                break
        lines.extend(proc.stdout)
        assert proc.wait(timeout=240) == 0, "".join(lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert farm[0].proc.poll() is not None
    assert lines[-1].startswith("opbuild: ok: "), "".join(lines)
    assert tree(p.out) == tree(reference.out)


@needs_distcc
def test_generated_100_op_package_through_distcc(farm, tmp_path, code):
    """100 generated ops, one binary each (four each with OPBUILD_SLOW_TESTS=1: 1,300 compiles)."""
    binaries = "4" if os.environ.get("OPBUILD_SLOW_TESTS") == "1" else "1"
    local, remote = tmp_path / "local", tmp_path / "remote"
    for d in (local, remote):
        subprocess.run([sys.executable, str(REPO / "bench" / "gen_ops.py"), str(d), "100", "--binaries", binaries],
                       check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OPBUILD_CACHE_DIR", "DISTCC_HOSTS", "SCONSFLAGS")}
    env.update({"PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"})
    run = [sys.executable, "-m", "SCons", "-Q"]
    subprocess.run([*run, "-C", str(local), "-j2", "ops"], env=env, check=True, capture_output=True, timeout=600)
    out = subprocess.run([*run, "-C", str(remote), "-j4", "ops", "DISTCC_HOSTS=" + " ".join(d.host() for d in farm)],
                         env=env, check=True, capture_output=True, text=True, timeout=600).stdout
    assert all(d.compiles() > 0 for d in farm)
    # every object compile (kernel and launch object of each binary, each tiling object) is remote
    # unless distcc fell back to compiling it locally; most must have run on the daemons
    objects = 100 * (2 * int(binaries) + 1)
    assert int(SUMMARY_COUNTS.search(out.strip().splitlines()[-1]).group(3)) > objects // 2
    assert tree(remote / "out") == tree(local / "out")
