"""Distributed compilation through distcc (`scons ops DISTCC_HOSTS="..."` or the environment).

Every `-c` compile of a C source (kernel objects, tiling objects) runs as `distcc <command>`;
links, code generation and asc_opc stay local. The compile's command line, and so its cache
key (OPBUILD_CACHE_DIR), is the same as in a local build: distcc is a launcher added when the
command runs, never part of the command the build records. distcc preprocesses locally and
sends the preprocessed source, so the object is the same as a local compile's (the commands
use relative paths and -ffile-prefix-map; no debug info): outputs are byte-identical.

A host that is down or dies mid-build does not fail the build: distcc retries the compile
locally (DISTCC_FALLBACK, on by default) and backs off from that host. Each compile gets its
own DISTCC_LOG, read afterwards to tell a compile that ran on a host ("compile ... on HOST
completed ok") from a local fallback; it is appended to the user's DISTCC_LOG if set.

-j: when the user gave no -j, the build runs as many jobs as the hosts have slots (`/LIMIT`
of each host; distcc's defaults: 4 per host, 2 for localhost).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable

from opbuild.builder.toolchain import CompileResult

_REMOTE_OK = re.compile(r"\bcompile \S+ on (\S+) completed ok")


class DistccError(Exception):
    """distcc asked for but not usable."""


def host_slots(hosts: str) -> int:
    """The number of jobs a DISTCC_HOSTS list allows (sum of each host's /LIMIT)."""
    total = 0
    for token in hosts.split():
        if token.startswith("--localslots") or token.startswith("--") or token.startswith("+"):
            continue
        spec = token.split(",", 1)[0]
        local = spec.split("/", 1)[0].split(":", 1)[0] in ("localhost",)
        m = re.search(r"/(\d+)", spec)
        total += int(m.group(1)) if m else (2 if local else 4)
    return total


class Distcc:
    """Runs compile commands through distcc and counts the ones that ran on a host."""

    def __init__(self, hosts: str, on_remote: Callable[[], None] | None = None) -> None:
        self.hosts = " ".join(hosts.split())
        if not self.hosts:
            raise DistccError("DISTCC_HOSTS is empty")
        program = shutil.which("distcc")
        if program is None:
            raise DistccError("DISTCC_HOSTS is set but distcc is not installed (apt-get install distcc)")
        self.program = program
        self.on_remote = on_remote
        self.user_log = os.environ.get("DISTCC_LOG")
        self._log_lock = threading.Lock()

    def slots(self) -> int:
        return max(1, host_slots(self.hosts))

    def run(self, command: list[str], cwd: str | None = None) -> CompileResult:
        fd, log = tempfile.mkstemp(prefix="opbuild-distcc-", suffix=".log")
        os.close(fd)
        try:
            env = {**os.environ, "DISTCC_HOSTS": self.hosts, "DISTCC_LOG": log}
            env.setdefault("DISTCC_FALLBACK", "1")
            proc = subprocess.run([self.program, *command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            with open(log, errors="replace") as f:
                text = f.read()
        finally:
            os.unlink(log)
        remote = any(m.group(1).split(":", 1)[0] not in ("localhost",) for m in _REMOTE_OK.finditer(text))
        if proc.returncode == 0 and remote and self.on_remote is not None:
            self.on_remote()
        if self.user_log:
            with self._log_lock, open(self.user_log, "a") as f:
                f.write(text)
        # distcc's own chatter goes to its log; what remains is the compiler's output
        return CompileResult(tuple(command), proc.returncode, proc.stdout)
