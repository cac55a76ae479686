"""Issue 28: the remote tier of the shared build cache (OPBUILD_CACHE_URL, opbuild/builder/remote.py).

Against a real server (nginx with a WebDAV location, started and stopped here; skipped when the
system has no nginx) and a tiny Python fault server (500s, truncated bodies, garbage, a server that
hangs or goes away). No `scons ops` here: builds are in test_remote_build.py (slow)."""

from __future__ import annotations

import base64
import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from build_helpers import REPO
from remote_server import FaultServer, free_port, nginx  # noqa: F401 - nginx: a fixture

from opbuild.builder import cache, remote
from opbuild.builder.stores import SharedStore

SECRET = "team-secret"
KEY = "ab" * 32



@pytest.fixture
def use_remote():
    """configure(url, mode) for the test; the build's remote tier cleared afterwards."""
    yield remote.configure
    remote.configure(None, None)


def _store(root: Path, layer: str = "bundles", readonly: bool = False) -> SharedStore:
    root.mkdir(parents=True, exist_ok=True)  # (as `scons ops` creates it: cache.open_for_build)
    return SharedStore(str(root), layer, readonly=readonly)


def test_an_entry_written_through_one_local_cache_is_read_through_another_from_nginx(tmp_path, nginx, use_remote):
    server = use_remote(nginx.url, None)
    first, second = _store(tmp_path / "a"), _store(tmp_path / "b")
    first.put(KEY, b"bundle bytes", 0o755, target="Op")
    assert server.counts.writes == 1
    assert [p.name for p in nginx.entries("ac")] == [remote.ac_key(KEY + cache.BUNDLE_SUFFIX)]
    assert [p.name for p in nginx.entries("cas")] == [cache.sha256_bytes(b"bundle bytes")]

    found = second.fetch(second.path(KEY), target="Op")
    assert found is not None and (found.data, found.mode, found.tier) == (b"bundle bytes", 0o755, "remote")
    assert cache.load_verified(second.path(KEY)) == (b"bundle bytes", None)  # kept in the local tier
    assert second.fetch(second.path(KEY)).tier == "local"  # and read from there next time
    assert (server.counts.hits, server.counts.misses) == (1, 0)
    stats = cache.stats(tmp_path / "b")
    assert stats["remote"]["hits"] == 1 and stats["remote"]["read_bytes"] == len(b"bundle bytes")
    assert stats["misses"] == 1 and stats["hits"] == 1


def test_a_miss_on_the_server_is_a_miss(tmp_path, nginx, use_remote):
    server = use_remote(nginx.url, None)
    assert _store(tmp_path).get(KEY) is None
    assert (server.counts.misses, server.counts.read_failures) == (1, {})


@pytest.mark.parametrize("secret", [None, SECRET], ids=["sha256", "hmac"])
def test_a_tampered_remote_entry_is_reported_not_used_and_not_overwritten(tmp_path, nginx, use_remote, monkeypatch,
                                                                        capsys, secret):
    if secret:
        monkeypatch.setenv(cache.SECRET_ENV, secret)
    server = use_remote(nginx.url, None)
    _store(tmp_path / "a").put(KEY, b"good bytes", target="Op")
    if secret:  # the record rewritten by someone without the secret: its sha256 right, its HMAC not
        monkeypatch.setenv(cache.SECRET_ENV, "another")
        forged = cache.hash_record(_store(tmp_path).path(KEY), b"evil bytes") + "mode 644\n"
        monkeypatch.setenv(cache.SECRET_ENV, secret)
        (nginx.root / "cas" / cache.sha256_bytes(b"evil bytes")).write_bytes(b"evil bytes")
        (ac,) = nginx.entries("ac")
        ac.write_text(forged)
    else:
        (blob,) = nginx.entries("cas")
        blob.write_bytes(b"evil bytez")  # same size, other content
    tampered = {p: p.read_bytes() for p in [*nginx.entries("ac"), *nginx.entries("cas")]}

    second = _store(tmp_path / "b")
    assert second.get(KEY, target="Op") is None
    err = capsys.readouterr().err
    assert "opbuild: remote cache: rejected the entry" in err and "for Op" in err and "not overwritten" in err
    assert ("HMAC" if secret else "sha256") in err
    assert sum(server.counts.rejected.values()) == 1
    assert "1 remote entries rejected" in server.summary()
    assert cache.stats(tmp_path / "b")["remote"]["corrupt"] == 1

    second.put(KEY, b"good bytes", target="Op")  # the op built locally is pushed locally only
    assert cache.load_verified(second.path(KEY)) == (b"good bytes", None)
    assert {p: p.read_bytes() for p in [*nginx.entries("ac"), *nginx.entries("cas")]} == tampered
    assert server.counts.writes == 1  # (the first store's)


def _answer(status: int, body: bytes = b"", length: int | None = None):
    def behaviour(handler, method, server) -> bool:
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(body) if length is None else length))
        handler.end_headers()
        if method != "HEAD":
            handler.wfile.write(body)
        if length is not None:
            handler.close_connection = True
        return True
    return behaviour


def _garbage(handler, method, server) -> bool:
    handler.wfile.write(b"this is not HTTP at all\r\n\r\n")
    handler.close_connection = True
    return True


@pytest.fixture
def fault():
    servers: list[FaultServer] = []

    def start(behaviour=None) -> FaultServer:
        servers.append(FaultServer(behaviour))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.mark.parametrize("behaviour, reason", [
    (_answer(500, b"Internal Server Error"), "HTTP 500"),
    (_answer(503), "HTTP 503"),
    (_garbage, "not an HTTP answer"),
], ids=["500", "503", "garbage"])
def test_a_server_answering_errors_fails_reads_and_writes_without_raising(tmp_path, fault, use_remote, behaviour,
                                                                          reason):
    server = use_remote(fault(behaviour).url, None)
    store = _store(tmp_path)
    assert store.get(KEY, target="Op") is None
    store.put(KEY, b"data", target="Op")  # the local push stands
    assert cache.load_verified(store.path(KEY)) == (b"data", None)
    assert sum(server.counts.read_failures.values()) == 1 and reason in next(iter(server.counts.read_failures))
    assert sum(server.counts.write_failures.values()) == 1
    summary = server.summary()
    assert "1 remote reads failed (1x " in summary and "1 remote writes failed" in summary and reason in summary
    assert cache.stats(tmp_path)["remote"]["failed"] == 2


def test_a_truncated_body_fails_the_read(tmp_path, fault, use_remote):
    good = FaultServer()
    try:
        writer = remote.RemoteCache(remote.parse_url(good.url))
        assert writer.put(str(tmp_path / "x" / (KEY + cache.BUNDLE_SUFFIX)), b"0123456789" * 10) == "push"
        stored = dict(good.store)
    finally:
        good.close()

    def truncated(handler, method, server) -> bool:
        data = stored.get(handler.path)
        if data is None or "/cas/" not in handler.path:
            return False
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data[:10])  # then the connection ends
        handler.close_connection = True
        return True

    server_ = fault(truncated)
    server_.store.update(stored)
    server = use_remote(server_.url, None)
    assert _store(tmp_path / "b").get(KEY) is None
    assert server.counts.read_failures == {"truncated body": 1}
    assert not (tmp_path / "b" / KEY[:2].upper()).exists()  # nothing half written locally


def test_an_answer_that_is_not_a_record_is_a_failed_read_not_a_rejected_entry(tmp_path, fault, use_remote):
    server = use_remote(fault(_answer(200, b"<html>welcome</html>")).url, None)
    store = _store(tmp_path)
    assert store.get(KEY) is None
    assert server.counts.read_failures == {"not a cache record": 1} and not server.counts.rejected


def test_a_body_larger_than_its_record_says_is_not_read(tmp_path, fault, use_remote):
    writer_server = fault()
    writer = remote.RemoteCache(remote.parse_url(writer_server.url))
    entry = str(tmp_path / "x" / (KEY + cache.BUNDLE_SUFFIX))
    assert writer.put(entry, b"small") == "push"
    (cas,) = [p for p in writer_server.store if "/cas/" in p]
    writer_server.store[cas] = b"small" + b"x" * 10_000
    server = use_remote(writer_server.url, None)
    assert _store(tmp_path / "b").get(KEY) is None
    assert server.counts.read_failures == {"body larger than the 5 bytes expected": 1}


def test_a_server_that_hangs_costs_one_timeout_then_is_not_asked_again(tmp_path, fault):
    def hang(handler, method, server) -> bool:
        time.sleep(3)
        return False

    slow = fault(hang)
    server = remote.RemoteCache(remote.parse_url(slow.url), connect_timeout=0.3, read_timeout=0.3)
    entry = str(tmp_path / (KEY + cache.BUNDLE_SUFFIX))
    assert server.get(entry).outcome == "fail"
    asked = len(slow.requests)
    assert server.get(entry).outcome == "fail" and server.put(entry, b"x") == "fail"
    assert len(slow.requests) == asked  # not asked again in this build
    assert server.counts.read_failures == {"timed out": 2} and server.counts.write_failures == {"timed out": 1}
    assert server.down == "timed out"


def test_a_server_that_is_down_fails_fast_and_is_asked_once(tmp_path):
    port = free_port()  # nothing listens there
    server = remote.RemoteCache(remote.parse_url(f"http://127.0.0.1:{port}/c"))
    entry = str(tmp_path / (KEY + cache.BUNDLE_SUFFIX))
    for _ in range(3):
        assert server.get(entry).outcome == "fail"
    assert server.counts.read_failures == {"cannot connect: connection refused": 3}
    assert "3 remote reads failed (3x cannot connect: connection refused)" in server.summary()


def test_a_server_that_goes_away_between_requests_fails_the_rest(tmp_path, fault):
    def gone_after_first_put(handler, method, server) -> bool:
        if method == "PUT" and "/ac/" in handler.path:
            server.server.socket.close()  # no new connection from here on
        return False

    s = fault(gone_after_first_put)
    server = remote.RemoteCache(remote.parse_url(s.url))
    entry = str(tmp_path / (KEY + cache.BUNDLE_SUFFIX))
    assert server.put(entry, b"one") == "push"
    server._drop()  # (the kept-alive connection ends with the server)
    assert server.get(entry).outcome == "fail"
    assert server.put(entry, b"two") == "fail"
    assert server.down is not None and "cannot connect" in server.down


def test_read_only_reads_and_never_puts(tmp_path, fault, use_remote):
    s = fault()
    use_remote(s.url, None)
    _store(tmp_path / "a").put(KEY, b"shared", target="Op")
    s.requests.clear()
    server = use_remote(s.url, remote.READ_ONLY)
    store = _store(tmp_path / "b")
    assert store.get(KEY) == b"shared"
    store.put("cd" * 32, b"mine", target="Other")
    assert cache.load_verified(store.path("cd" * 32)) == (b"mine", None)  # the local tier still written
    assert [m for m, _ in s.requests if m != "GET"] == []
    assert "(read-only)" in server.summary() and "0 writes" in server.summary()


def test_credentials_come_from_the_url_token_or_netrc_and_are_never_shown(tmp_path, fault, monkeypatch, capsys):
    seen: list[str | None] = []

    def record_auth(handler, method, server) -> bool:
        seen.append(handler.headers.get("Authorization"))
        return _answer(500)(handler, method, server)

    s = fault(record_auth)
    host_port = s.url.split("//")[1].split("/")[0]
    monkeypatch.delenv(remote.TOKEN_ENV, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    url = f"http://bob:s3cr%40t@{host_port}/c"
    server = remote.RemoteCache(remote.parse_url(url))
    entry = str(tmp_path / (KEY + cache.BUNDLE_SUFFIX))
    server.get(entry)
    assert seen[-1] == "Basic " + base64.b64encode(b"bob:s3cr@t").decode()
    assert server.endpoint.url == f"http://{host_port}/c" == remote.shown(url)
    assert "s3cr" not in server.summary() and "bob" not in server.summary() and "s3cr" not in repr(server.endpoint)

    monkeypatch.setenv(remote.TOKEN_ENV, "tok123")
    remote.RemoteCache(remote.parse_url(f"http://{host_port}/c")).get(entry)
    assert seen[-1] == "Bearer tok123"

    monkeypatch.delenv(remote.TOKEN_ENV)
    netrc_file = tmp_path / "netrc"
    netrc_file.write_text("machine 127.0.0.1 login alice password pw-from-netrc\n")
    netrc_file.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc_file))
    remote.RemoteCache(remote.parse_url(f"http://{host_port}/c")).get(entry)
    assert seen[-1] == "Basic " + base64.b64encode(b"alice:pw-from-netrc").decode()

    netrc_file.write_text("machine 127.0.0.1 login alice password pw-x\nbogus\n")  # malformed
    with pytest.raises(remote.RemoteError) as info:
        remote.parse_url(f"http://{host_port}/c")
    assert str(netrc_file) in str(info.value) and "pw" not in str(info.value)


@pytest.mark.parametrize("url, problem", [
    ("ftp://host/c", "not an http:// or https:// URL"),
    ("http:///c", "not an http:// or https:// URL"),
    ("http://u:pw@host:99999/c", "bad port"),
    ("http://host/c?x=1", "no query"),
])
def test_a_bad_url_is_one_error_without_its_credentials(url, problem):
    with pytest.raises(remote.RemoteError) as info:
        remote.parse_url(url)
    assert problem in str(info.value) and "pw" not in str(info.value)


def test_a_bad_mode_or_timeout_is_one_error(monkeypatch, use_remote):
    with pytest.raises(remote.RemoteError, match="'sometimes' is not one of read-write, read-only"):
        use_remote("http://host/c", "sometimes")
    monkeypatch.setenv(remote.TIMEOUT_ENV, "soon")
    with pytest.raises(remote.RemoteError, match="OPBUILD_CACHE_TIMEOUT=soon"):
        use_remote("http://host/c", None)


def test_cache_stats_shows_the_remote_tier(tmp_path, nginx, use_remote):
    use_remote(nginx.url, None)
    _store(tmp_path / "a").put(KEY, b"entry", target="Op")
    _store(tmp_path / "b").get(KEY, target="Op")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "opbuild", "cache", "stats", "--dir", str(tmp_path / "b")],
                         capture_output=True, text=True, env=env, check=True).stdout
    assert "remote:  1 hits (5 B), 0 misses, 0 pushes (0 B), 0 rejected, 0 failed reads/writes" in out
    out = subprocess.run([sys.executable, "-m", "opbuild", "cache", "stats", "--dir", str(tmp_path / "a")],
                         capture_output=True, text=True, env=env, check=True).stdout
    assert "remote:  0 hits (0 B), 0 misses, 1 pushes (5 B)" in out


def test_a_stale_kept_alive_connection_is_retried_once(tmp_path, nginx):
    server = remote.RemoteCache(remote.parse_url(nginx.url))
    entry = str(tmp_path / (KEY + cache.BUNDLE_SUFFIX))
    assert server.put(entry, b"x") == "push"
    conn = server._local.conn
    assert conn is not None and conn.sock is not None
    conn.sock.shutdown(socket.SHUT_RDWR)  # as a server closing an idle connection
    assert server.get(entry).outcome == "hit"
    assert isinstance(server._local.conn, http.client.HTTPConnection) and server._local.conn is not conn
