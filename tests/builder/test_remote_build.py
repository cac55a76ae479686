"""Issue 28: `scons ops` with the remote build cache (OPBUILD_CACHE_URL) on a real server.

Two clones at different paths, each with its own copy of opbuild (its native libraries built
there, as a clone's `pip install -e .` builds them) and its own empty OPBUILD_CACHE_DIR, share
nothing but an nginx WebDAV server: the second compiles nothing and builds the same out/opp.
A server that dies mid-build, answers 500s or holds a tampered entry never fails or corrupts a
build; read-only mode puts nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from build_helpers import SAMPLE_OPS, kill_group, snapshot_code, tree
from remote_server import FaultServer, nginx  # noqa: F401 - nginx: a fixture

from opbuild.builder import remote

pytestmark = pytest.mark.slow

SUMMARY = re.compile(r"^opbuild: ok: .*\((\d+) compiled, (\d+) from cache, (\d+) from remote cache, (\d+) remote\)")
SECRET = "team-secret"


def _counts(stdout: str) -> tuple[int, int, int]:
    """(compiled, from cache, from remote cache) of the build's summary line (its last line)."""
    m = SUMMARY.match(stdout.strip().splitlines()[-1])
    assert m, stdout[-3000:]
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _remote_line(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("opbuild: remote cache ")]
    assert len(lines) == 1, stdout[-3000:]
    return lines[0]



def _with_native_libraries_built_here(code: Path) -> Path:
    """`code` with its native libraries built in place (the bytes a clone at this path has)."""
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=code,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return code


def _env(tmp_path: Path, name: str, url: str, **extra: str) -> dict[str, str]:
    return {"OPBUILD_CACHE_DIR": str(tmp_path / f"cache-{name}"), remote.URL_ENV: url,
            "OPBUILD_CACHE_SECRET": SECRET, **extra}


def test_two_clones_sharing_only_the_server_build_identical_packages_and_the_second_compiles_nothing(
        project, tmp_path, nginx):
    first = project(_with_native_libraries_built_here(snapshot_code(tmp_path / "a" / "code")))
    result = first.build(env=_env(tmp_path, "a", nginx.url))
    compiled, _, _ = _counts(result.stdout)
    assert compiled > 0
    line = _remote_line(result.stdout)
    assert re.search(r": 0 hits \(0 B\), [1-9]\d* misses, [1-9]\d* writes ", line) and "failed" not in line, line
    assert nginx.entries("ac") and nginx.entries("cas")

    second = project(_with_native_libraries_built_here(snapshot_code(tmp_path / "checkout-two" / "deeper" / "code")))
    result = second.build(env=_env(tmp_path, "b", nginx.url))
    assert _counts(result.stdout) == (0, compiled, compiled), result.stdout[-3000:]
    assert "failed" not in _remote_line(result.stdout) and "rejected" not in _remote_line(result.stdout)
    assert tree(second.out / "opp") == tree(first.out / "opp")


def test_a_server_stopped_mid_build_never_fails_it(project, tmp_path, nginx, clean_build):
    p = project()
    env = p.env(_env(tmp_path, "a", nginx.url))
    proc = subprocess.Popen(p.command(("ops",), 2), env=env, cwd=p.root, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("[") and len(lines) > 10:  # steps are running: the server goes away
                nginx.stop()
                break
        lines.extend(proc.stdout)
        assert proc.wait(300) == 0, "".join(lines)[-3000:]
    finally:
        kill_group(proc)
    output = "".join(lines)
    assert re.search(r"\d+ remote (reads|writes) failed \(", _remote_line(output)), output[-3000:]
    assert _counts(output)[0] > 0
    assert tree(p.out / "opp") == tree(clean_build[0].out / "opp")


def _always(status: int):
    def behaviour(handler, method, server) -> bool:
        handler.send_response(status)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True
    return behaviour


def test_a_server_answering_500s_never_fails_the_build(project, tmp_path, clean_build):
    server = FaultServer(_always(500))
    try:
        p = project()
        result = p.build(env=_env(tmp_path, "a", server.url))
    finally:
        server.close()
    line = _remote_line(result.stdout)
    assert re.search(r"; (\d+) remote reads failed \(\1x HTTP 500\); (\d+) remote writes failed \(\2x HTTP 500\)", line), line
    assert tree(p.out / "opp") == tree(clean_build[0].out / "opp")


def test_a_tampered_remote_entry_is_rejected_built_locally_and_left_as_it_is(project, tmp_path, nginx):
    first = project()
    first.build(env=_env(tmp_path, "a", nginx.url))
    bundle = max(nginx.entries("cas"), key=lambda p: p.stat().st_size)  # the largest entry: an op bundle
    data = bytearray(bundle.read_bytes())
    data[len(data) // 2] ^= 1
    bundle.write_bytes(bytes(data))

    second = project()
    result = second.build(env=_env(tmp_path, "b", nginx.url))
    assert "opbuild: remote cache: rejected the entry" in result.stderr and "sha256" in result.stderr
    assert "1 remote entries rejected (1x sha256 does not match)" in _remote_line(result.stdout)
    assert len(result.bundles()) == SAMPLE_OPS - 1  # that op's steps ran here (its compiles from the compile cache)
    assert tree(second.out / "opp") == tree(first.out / "opp")
    assert bundle.read_bytes() == bytes(data)  # not put over


def test_read_only_mode_puts_nothing(project, tmp_path):
    server = FaultServer()
    try:
        p = project()
        result = p.build("--remote-cache=read-only", env=_env(tmp_path, "a", server.url))
        env_result = project().build(env=_env(tmp_path, "b", server.url, **{remote.MODE_ENV: remote.READ_ONLY}))
    finally:
        server.close()
    assert [m for m, _ in server.requests if m != "GET"] == []
    assert server.requests  # it was asked
    for r in (result, env_result):
        assert "(read-only): 0 hits" in _remote_line(r.stdout) and "0 writes" in _remote_line(r.stdout)


def test_a_cache_url_without_a_local_cache_dir_is_one_error(project):
    p = project()
    result = p.scons("ops", env={remote.URL_ENV: "http://127.0.0.1:9/c"})
    assert result.rc == 1
    assert result.stderr.strip() == ("error: CACHE_URL / OPBUILD_CACHE_URL needs OPBUILD_CACHE_DIR: "
                                     "the local first tier of the remote cache"), result.stderr
    assert not (p.out / "opp").exists()


def test_a_cache_url_with_credentials_is_never_printed(project, tmp_path):
    p = project()
    result = p.scons("ops", env=_env(tmp_path, "a", "http://bob:pw-secret@127.0.0.1:1/c"))
    assert result.rc == 0, str(result)
    assert "pw-secret" not in result.stdout + result.stderr and "bob" not in result.stdout + result.stderr
    assert "opbuild: remote cache http://127.0.0.1:1/c: " in result.stdout
    assert "remote reads failed (" in result.stdout and "cannot connect: connection refused" in result.stdout
    assert os.path.isdir(tmp_path / "cache-a")
