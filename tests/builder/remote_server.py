"""Servers for the remote build cache tests (and bench/): nginx with a WebDAV location, and a
tiny Python fault server.

`Nginx(tmp)`: the system's nginx (apt package `nginx`) run as the current user on 127.0.0.1 at a
free port, every file it writes (config, pid, logs, client body temporaries, the stored entries)
under `tmp`; `url` is the cache URL, `root` the directory it serves (`<root>/ac/`, `<root>/cas/`).
`FaultServer(behaviour)`: an http.server on 127.0.0.1 whose every answer `behaviour` decides
(500s, truncated bodies, garbage), over a dict of stored entries that a plain PUT fills.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)),
                                      None)
PREFIX = "/opbuild-cache"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONFIG = """\
{user}daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port};
        location {prefix}/ {{
            alias {root}/;
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }}
    }}
}}
"""


class Nginx:
    """nginx serving `<tmp>/root` as a WebDAV cache at `url`; `stop()` / `start()` again."""

    def __init__(self, tmp: Path) -> None:
        if NGINX is None:
            raise RuntimeError("nginx is not installed (apt-get install nginx)")
        self.tmp = tmp
        self.root = tmp / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}{PREFIX}"
        self.config = tmp / "nginx.conf"
        # as root, nginx's workers would switch to `nobody`: keep them the current user
        user = f"user {pwd.getpwuid(os.getuid()).pw_name} {grp.getgrgid(os.getgid()).gr_name};\n" if os.geteuid() == 0 else ""
        self.config.write_text(CONFIG.format(user=user, tmp=tmp, port=self.port, prefix=PREFIX, root=self.root))
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([NGINX, "-p", str(self.tmp), "-c", str(self.config), "-e", str(self.tmp / "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.proc.stderr.read().decode(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("nginx did not start listening")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def entries(self, kind: str) -> list[Path]:
        """The stored files under `ac/` or `cas/`."""
        d = self.root / kind
        return sorted(p for p in d.iterdir()) if d.is_dir() else []


Behaviour = Callable[[BaseHTTPRequestHandler, str, "FaultServer"], bool]
"""Called for each request (handler, method, server): True when it answered the request itself."""


class FaultServer:
    """A remote cache on 127.0.0.1 that stores PUT bodies in `store` and serves them, unless
    `behaviour` answers first; every request is appended to `requests` as (method, path)."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour
        self.store: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _handle(self, method: str) -> None:
                outer.requests.append((method, self.path))
                body = b""
                if method == "PUT":
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if outer.behaviour is not None and outer.behaviour(self, method, outer):
                    return
                if method == "PUT":
                    outer.store[self.path] = body
                    self.send_response(201)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = outer.store.get(self.path)
                self.send_response(404 if data is None else 200)
                self.send_header("Content-Length", str(len(data or b"")))
                self.end_headers()
                if method == "GET" and data:
                    self.wfile.write(data)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_HEAD(self) -> None:
                self._handle("HEAD")

            def do_PUT(self) -> None:
                self._handle("PUT")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{PREFIX}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def nginx(tmp_path_factory: pytest.TempPathFactory):
    """An Nginx WebDAV server on the loopback address for one test (skipped without nginx)."""
    if NGINX is None:
        pytest.skip("nginx is not installed (apt-get install nginx; .ci/run installs it)")
    server = Nginx(tmp_path_factory.mktemp("nginx"))
    server.start()
    yield server
    server.stop()
