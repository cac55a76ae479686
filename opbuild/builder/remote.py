"""The remote tier of the shared build cache: an HTTP server that machines and CI share.

`OPBUILD_CACHE_URL=http(s)://[user:password@]host[:port]/prefix` (or `scons ops CACHE_URL=...`)
puts a server behind the local shared cache (OPBUILD_CACHE_DIR, which stays the first tier): a
local miss is asked of the server (read-through) and what the server gives is written into the
local cache (so the next build finds it there); every entry the build pushes locally is also put
on the server (write-back). Every shared layer goes through it (stores.SharedStore): the compile
cache, op bundles and checked specs.

Layout (Bazel's HTTP remote cache, so bazel-remote, nginx with WebDAV `PUT` or an object-store
gateway serve it unchanged; bazel-remote needs `--disable_http_ac_validation`, its `/ac/` being
Bazel's protobuf otherwise):

  * `<prefix>/cas/<sha256>`: an entry's bytes, named by their sha256;
  * `<prefix>/ac/<key>`: the entry's record, `key` = sha256 of `opbuild-entry\\0<entry name>` (the
    local entry's file name: `<sig>`, `<key>.opbundle`, `<key>.opspec`). The record is the text of
    the local `.sha256` file (cache.py: the sha256, the HMAC with OPBUILD_CACHE_SECRET, `size`)
    plus `mode <octal>` (the file's permission bits; only 0644/0755 are ever applied).

Requests are plain `GET`, `HEAD` (is the content there already?) and `PUT` (content first, then
the record, so no record names missing content), each with bounded connect and read timeouts
(`OPBUILD_CACHE_TIMEOUT` seconds overrides both) and bounded bodies (a record at most
cache.MAX_RECORD_BYTES, content at most the size its record gives). One retry, only when a kept
-alive connection turns out closed before any answer.

Trust: a remote entry is used only when its record's HMAC checks (with OPBUILD_CACHE_SECRET) and
its content has the recorded size and sha256; otherwise it is *rejected*: said on stderr, counted,
not used, and not put over by this build (whoever can write the server decides what it holds).
An answer that is not a record at all (garbage, an error page served with 200) is a failed read.

Failure is never fatal: a server that refuses, times out, answers 5xx, truncates a body or
answers garbage makes that read or write fail; the build goes on locally, and the build's summary
says how many remote reads and writes failed and why. After a connection cannot be made or a
request times out, the server is not asked again in this build (each later request is counted as
failed for that reason): a dead server costs one timeout, not one per entry.

`--remote-cache=read-only` (or `OPBUILD_REMOTE_CACHE=read-only`): read, never write (untrusted CI).

Credentials: the URL's `user:password@`, else `OPBUILD_CACHE_TOKEN` (sent as a Bearer token), else
the netrc file (`NETRC`, default ~/.netrc) entry of the host. Never printed: every URL shown has
its userinfo stripped, and no message carries a header.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import netrc
import os
import re
import socket
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from opbuild.builder import cache

URL_ENV = "OPBUILD_CACHE_URL"
MODE_ENV = "OPBUILD_REMOTE_CACHE"
TIMEOUT_ENV = "OPBUILD_CACHE_TIMEOUT"
TOKEN_ENV = "OPBUILD_CACHE_TOKEN"
READ_WRITE, READ_ONLY = "read-write", "read-only"
MODES = (READ_WRITE, READ_ONLY)
CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a connection to the server."""
READ_TIMEOUT = 30.0
"""Seconds to wait for any byte of an answer."""
MODE_TAG = "mode"
AC, CAS = "ac", "cas"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_OK_PUT = (200, 201, 204)


class RemoteError(Exception):
    """The remote cache cannot be configured (a bad URL, mode, timeout or netrc file)."""


def shown(url: str) -> str:
    """`url` without its userinfo (`user:password@`): the only form of a URL opbuild prints."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def ac_key(name: str) -> str:
    """The `ac/` key of the local entry named `name` (64 hex digits, as Bazel's action keys)."""
    return hashlib.sha256(f"opbuild-entry\0{name}".encode()).hexdigest()


@dataclass(frozen=True)
class Endpoint:
    """Where the server is and how to authenticate (the header is never printed)."""

    scheme: str
    host: str
    port: int
    prefix: str
    """The URL's path, without its trailing '/' (requests go to `<prefix>/ac/...`, `<prefix>/cas/...`)."""
    url: str
    """The URL as shown (no userinfo)."""
    authorization: str | None = field(default=None, repr=False)


def parse_url(url: str) -> Endpoint:
    """The endpoint of `OPBUILD_CACHE_URL`; RemoteError (naming the URL without its userinfo) when
    it is not http(s)://host[:port]/prefix or its credentials cannot be read."""
    parts = urlsplit(url.strip())
    where = shown(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RemoteError(f"{URL_ENV}={where}: not an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise RemoteError(f"{URL_ENV}={where}: a cache URL has no query or fragment")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise RemoteError(f"{URL_ENV}={where}: bad port") from None
    return Endpoint(parts.scheme, parts.hostname, port, parts.path.rstrip("/"), where,
                    _authorization(parts.username, parts.password, parts.hostname))


def _authorization(user: str | None, password: str | None, host: str) -> str | None:
    """The Authorization header: the URL's userinfo, else OPBUILD_CACHE_TOKEN, else netrc."""
    if user is not None:
        return _basic(unquote(user), unquote(password or ""))
    token = os.environ.get(TOKEN_ENV)
    if token:
        return f"Bearer {token}"
    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    if not os.path.isfile(path):
        return None
    try:
        found = netrc.netrc(path).authenticators(host)
    except (netrc.NetrcParseError, OSError) as exc:
        line = getattr(exc, "lineno", None)
        raise RemoteError(f"cannot read the netrc file {path}{f' (line {line})' if line else ''}") from None
    if found is None:
        return None
    login, _, password_ = found
    return _basic(login or "", password_ or "")


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class _Failed(Exception):
    """One request failed; `reason` is short and the same for the same kind of failure (the
    summary counts reasons); `down`: the server is not asked again in this build."""

    def __init__(self, reason: str, down: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.down = down


@dataclass
class Fetched:
    """What a remote read gave: `outcome` is "hit" (data, mode set), "miss", "fail" or "corrupt"
    (`reason` set)."""

    outcome: str
    data: bytes | None = None
    mode: int = 0o644
    reason: str = ""


@dataclass
class Counts:
    """The build's remote traffic (the summary line, `opbuild cache stats` through the event log)."""

    hits: int = 0
    misses: int = 0
    read_bytes: int = 0
    writes: int = 0
    written_bytes: int = 0
    read_failures: Counter = field(default_factory=Counter)
    write_failures: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)


class RemoteCache:
    """The HTTP server of OPBUILD_CACHE_URL. Thread-safe: one keep-alive connection per thread."""

    def __init__(self, endpoint: Endpoint, readonly: bool = False, connect_timeout: float = CONNECT_TIMEOUT,
                 read_timeout: float = READ_TIMEOUT) -> None:
        self.endpoint = endpoint
        self.readonly = readonly
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.counts = Counts()
        self.down: str | None = None
        """Why the server is not asked any more in this build (None: it is)."""
        self._rejected: set[str] = set()
        self._lock = threading.Lock()
        self._local = threading.local()

    # ---- entries ----------------------------------------------------------------------------------

    def get(self, entry: str, target: str = "") -> Fetched:
        """The remote entry of the local entry file `entry` (its name and HMAC are the local ones)."""
        name = os.path.basename(entry)
        try:
            status, raw = self._request("GET", f"{AC}/{ac_key(name)}", limit=cache.MAX_RECORD_BYTES)
            if status == 404:
                return self._count(Fetched("miss"))
            if status != 200:
                raise _Failed(f"HTTP {status}")
            record, _ = cache.parse_record(raw)
            if record is None or not _HEX64.fullmatch(record.digest) or record.size is None \
                    or record.size > cache.MAX_ENTRY_BYTES:
                raise _Failed("not a cache record")  # (garbage, an error page: a failed read, not an entry)
            mode = _mode(raw)
            problem = cache.mac_problem(record, entry)
            if problem is not None:
                return self._reject(name, target, problem)
            status, data = self._request("GET", f"{CAS}/{record.digest}", limit=record.size)
            if status == 404:
                return self._count(Fetched("miss"))  # (a record whose content was evicted)
            if status != 200:
                raise _Failed(f"HTTP {status}")
            problem = cache.content_problem(record, data)
            if problem is not None:
                return self._reject(name, target, problem)
            return self._count(Fetched("hit", data, mode))
        except _Failed as exc:
            return self._count(Fetched("fail", reason=exc.reason))

    def put(self, entry: str, data: bytes, mode: int = 0o644) -> str:
        """Put `data` as the remote entry of the local entry file `entry`: "push", "skip" (read-only,
        or an entry this build rejected: not put over) or "fail"."""
        name = os.path.basename(entry)
        with self._lock:
            if self.readonly or name in self._rejected:
                return "skip"
        record = cache.hash_record(entry, data) + f"{MODE_TAG} {_permissions(mode):o}\n"
        digest = cache.sha256_bytes(data)
        try:
            status, _ = self._request("HEAD", f"{CAS}/{digest}")
            if status != 200:
                status, _ = self._request("PUT", f"{CAS}/{digest}", body=data)
                if status not in _OK_PUT:
                    raise _Failed(f"HTTP {status}")
            status, _ = self._request("PUT", f"{AC}/{ac_key(name)}", body=record.encode())
            if status not in _OK_PUT:
                raise _Failed(f"HTTP {status}")
        except _Failed as exc:
            with self._lock:
                self.counts.write_failures[exc.reason] += 1
            return "fail"
        with self._lock:
            self.counts.writes += 1
            self.counts.written_bytes += len(data)
        return "push"

    def _count(self, fetched: Fetched) -> Fetched:
        with self._lock:
            if fetched.outcome == "hit":
                self.counts.hits += 1
                self.counts.read_bytes += len(fetched.data or b"")
            elif fetched.outcome == "miss":
                self.counts.misses += 1
            elif fetched.outcome == "fail":
                self.counts.read_failures[fetched.reason] += 1
        return fetched

    def _reject(self, name: str, target: str, problem: str) -> Fetched:
        """A remote entry that is not what its record says: reported, not used, not put over."""
        with self._lock:
            self._rejected.add(name)
            self.counts.rejected[_kind_of(problem)] += 1
        sys.stderr.write(f"opbuild: remote cache: rejected the entry {AC}/{ac_key(name)} ({name}) for {target or '?'} "
                         f"from {self.endpoint.url} ({problem}): not used, not overwritten; building it locally\n")
        return Fetched("corrupt", reason=problem)

    # ---- HTTP -------------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: bytes | None = None, limit: int = 0) -> tuple[int, bytes]:
        """(status, body of at most `limit` bytes) of one request; _Failed otherwise."""
        with self._lock:
            down = self.down
        if down is not None:
            raise _Failed(down, down=True)
        try:
            return self._attempt(method, path, body, limit, retry=True)
        except _Failed as exc:
            self._drop()
            if exc.down:
                with self._lock:
                    self.down = self.down or exc.reason
            raise

    def _attempt(self, method: str, path: str, body: bytes | None, limit: int, retry: bool) -> tuple[int, bytes]:
        conn, reused = self._connection()
        headers = {"User-Agent": "opbuild", "Content-Length": str(len(body or b""))} if method == "PUT" else \
                  {"User-Agent": "opbuild"}
        if self.endpoint.authorization:
            headers["Authorization"] = self.endpoint.authorization
        try:
            conn.request(method, f"{self.endpoint.prefix}/{path}", body=body, headers=headers)
            response = conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
            self._drop()
            if reused and retry:  # a kept-alive connection the server had closed: once more, afresh
                return self._attempt(method, path, body, limit, retry=False)
            raise _Failed(_reason(exc)) from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Failed(_reason(exc), down=isinstance(exc, (TimeoutError, socket.timeout))) from None
        try:
            data = self._body(response, method, limit)
        except (OSError, http.client.HTTPException) as exc:
            raise _Failed(_reason(exc), down=isinstance(exc, (TimeoutError, socket.timeout))) from None
        if response.will_close:
            self._drop()
        return response.status, data

    def _body(self, response: http.client.HTTPResponse, method: str, limit: int) -> bytes:
        if method == "HEAD" or response.status != 200 or limit == 0:
            response.read(64 << 10)  # (an error page: read a little, so the connection can be reused)
            if not response.isclosed():
                response.close()
                self._drop()
            return b""
        length = response.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > limit:
            self._drop()
            raise _Failed(f"body larger than the {limit} bytes expected")
        data = response.read(limit + 1) if length is None else response.read()
        if len(data) > limit:
            self._drop()
            raise _Failed(f"body larger than the {limit} bytes expected")
        return data

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        cls = http.client.HTTPSConnection if self.endpoint.scheme == "https" else http.client.HTTPConnection
        conn = cls(self.endpoint.host, self.endpoint.port, timeout=self.connect_timeout)
        try:
            conn.connect()
        except OSError as exc:
            raise _Failed(f"cannot connect: {_reason(exc)}", down=True) from None
        if conn.sock is not None:
            conn.sock.settimeout(self.read_timeout)
        self._local.conn = conn
        return conn, False

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    # ---- the summary ------------------------------------------------------------------------------

    def summary(self) -> str:
        """One line for the end of the build: hits, misses, bytes, writes; failures and why."""
        c = self.counts
        text = (f"opbuild: remote cache {self.endpoint.url}{' (read-only)' if self.readonly else ''}: "
                f"{c.hits} hits ({cache.human(c.read_bytes)}), {c.misses} misses, "
                f"{c.writes} writes ({cache.human(c.written_bytes)})")
        for what, counter in (("remote reads failed", c.read_failures), ("remote writes failed", c.write_failures),
                              ("remote entries rejected", c.rejected)):
            if counter:
                why = "; ".join(f"{n}x {reason}" for reason, n in counter.most_common())
                text += f"; {sum(counter.values())} {what} ({why})"
        return text + "\n"


def _reason(exc: BaseException) -> str:
    """A short, aggregatable reason for a transport failure (no URL, no header)."""
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, (ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError)):
        return "connection closed by the server"
    if isinstance(exc, http.client.IncompleteRead):
        return "truncated body"
    if isinstance(exc, http.client.HTTPException):
        return f"not an HTTP answer ({type(exc).__name__})"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror or exc})"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__


def _kind_of(problem: str) -> str:
    """A rejected entry's problem without the digests in it (the summary counts kinds)."""
    if "HMAC" in problem:
        return "HMAC does not check"
    if problem.startswith("sha256 "):
        return "sha256 does not match"
    if "the record says" in problem:
        return "size does not match"
    return problem


def _mode(raw: bytes) -> int:
    for line in raw.decode("ascii", "replace").splitlines()[1:]:
        tag, _, value = line.partition(" ")
        if tag == MODE_TAG:
            try:
                return _permissions(int(value.strip(), 8))
            except ValueError:
                break
    return 0o644


def _permissions(mode: int) -> int:
    """Only whether a file is executable crosses machines: 0755 or 0644."""
    return 0o755 if mode & 0o111 else 0o644


# ---- the build's remote tier -----------------------------------------------------------------------

_active: RemoteCache | None = None


def configure(url: str | None, mode: str | None) -> RemoteCache | None:
    """Set the build's remote tier from `url` (CACHE_URL= or OPBUILD_CACHE_URL) and `mode`
    (--remote-cache or OPBUILD_REMOTE_CACHE; default read-write); None when no URL is given.
    RemoteError for a bad URL, mode or timeout. Called once by `scons ops` (sconstruct.py)."""
    global _active
    _active = None
    if not url:
        return None
    mode = mode or READ_WRITE
    if mode not in MODES:
        raise RemoteError(f"--remote-cache / {MODE_ENV}: {mode!r} is not one of {', '.join(MODES)}")
    connect, read = CONNECT_TIMEOUT, READ_TIMEOUT
    timeout = os.environ.get(TIMEOUT_ENV)
    if timeout:
        try:
            connect = read = float(timeout)
        except ValueError:
            connect = read = -1.0
        if not 0 < connect <= 600:
            raise RemoteError(f"{TIMEOUT_ENV}={timeout}: not a number of seconds in (0, 600]")
    _active = RemoteCache(parse_url(url), readonly=mode == READ_ONLY, connect_timeout=connect, read_timeout=read)
    return _active


def active() -> RemoteCache | None:
    """The build's remote tier (None: no OPBUILD_CACHE_URL)."""
    return _active
