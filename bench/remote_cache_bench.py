"""The remote build cache (issue 28, OPBUILD_CACHE_URL): a generated N-op x 4-binary package

    clean (no cache) | cold (populating a local cache and an nginx WebDAV server) | warm from the
    server only (a second checkout at another path, opbuild copied to another path, its own empty
    local cache: everything through HTTP) | warm from the directory tier only (the same, with the
    first build's OPBUILD_CACHE_DIR and no server)

and the per-entry cost of each tier: N entries of S bytes written and read through a SharedStore
with the directory tier alone, and with the remote tier (written: local + PUT; read: an empty
local cache, GET record + GET content + the local write-back).

    python bench/remote_cache_bench.py [--ops 200] [--jobs 2] [--entries 500] [--entry-bytes 65536]

Needs nginx (apt package `nginx`). Prints tables; asserts nothing. Everything (nginx's files
too) lives in a temporary directory removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "builder"))

from build_scale_bench import build, checkout, copy_code  # noqa: E402
from remote_server import NGINX, Nginx  # noqa: E402

from opbuild.builder import remote  # noqa: E402
from opbuild.builder.stores import SharedStore  # noqa: E402

COUNTS = r"\((\d+) compiled, (\d+) from cache, (?:(\d+) from remote cache, )?(\d+) remote\)"


def _counts(line: str) -> str:
    import re

    m = re.search(COUNTS, line)
    if not m:
        return ""
    compiled, cached, from_remote, _ = m.groups()
    return f"{compiled} / {cached} / {from_remote or '-'}"


def per_entry(tmp: Path, url: str | None, n: int, size: int) -> tuple[float, float]:
    """(ms per write, ms per read) of `n` distinct entries of `size` bytes through a SharedStore:
    the directory tier alone (url None), or with the remote tier (reads from an empty local cache)."""
    remote.configure(url, None)
    try:
        writer = tmp / f"w-{'remote' if url else 'dir'}"
        writer.mkdir()
        store = SharedStore(str(writer), "compile")
        blobs = [os.urandom(size) for _ in range(n)]
        keys = [f"{i:04x}{os.urandom(14).hex()}" for i in range(n)]
        started = time.perf_counter()
        for key, blob in zip(keys, blobs):
            store.put(key, blob)
        write = (time.perf_counter() - started) / n * 1e3
        reader_dir = writer if url is None else tmp / "r-remote"
        reader_dir.mkdir(exist_ok=True)
        reader = SharedStore(str(reader_dir), "compile")
        started = time.perf_counter()
        for key, blob in zip(keys, blobs):
            assert reader.get(key) == blob
        read = (time.perf_counter() - started) / n * 1e3
        return write, read
    finally:
        remote.configure(None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--entry-bytes", type=int, default=64 << 10)
    args = parser.parse_args()
    if NGINX is None:
        sys.exit("nginx is not installed (apt-get install nginx)")

    tmp = Path(tempfile.mkdtemp(prefix="opbuild-remote-bench-"))
    server = Nginx(tmp / "nginx")
    server.start()
    rows = []
    try:
        project = tmp / "project"
        subprocess.run([sys.executable, str(REPO / "bench" / "gen_ops.py"), str(project), str(args.ops)], check=True,
                       capture_output=True)
        seconds, line = build(checkout(project, "clean"), args.jobs)
        rows.append((f"clean, no cache -j{args.jobs}", seconds, line))
        clean = seconds

        local_a = tmp / "cache-a"
        seconds, line = build(checkout(project, "cold"), args.jobs,
                              {"OPBUILD_CACHE_DIR": str(local_a), remote.URL_ENV: server.url})
        rows.append((f"cold: populates the local cache and the server -j{args.jobs}", seconds, line))

        elsewhere = tmp / "elsewhere" / "team" / "mate"
        other = elsewhere / "checkout2"
        shutil.copytree(project, other, ignore=shutil.ignore_patterns("out"))
        code = copy_code(elsewhere / "opbuild-install")
        seconds, line = build(other, args.jobs, {"OPBUILD_CACHE_DIR": str(tmp / "cache-b"), remote.URL_ENV: server.url},
                              code=code)
        rows.append((f"warm from the server only, other path -j{args.jobs}", seconds, line))
        warm_remote = seconds

        third = elsewhere / "checkout3"
        shutil.copytree(project, third, ignore=shutil.ignore_patterns("out"))
        seconds, line = build(third, args.jobs, {"OPBUILD_CACHE_DIR": str(local_a)}, code=code)
        rows.append((f"warm from the directory tier only, other path -j{args.jobs}", seconds, line))
        warm_dir = seconds

        tiers = [("directory (OPBUILD_CACHE_DIR)", *per_entry(tmp, None, args.entries, args.entry_bytes)),
                 ("remote (nginx on 127.0.0.1, + local)", *per_entry(tmp, server.url, args.entries, args.entry_bytes))]
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{args.ops} generated ops x 4 binaries, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"| {'build':<58} | {'time':>8} | {'vs clean':>8} | compiled / from cache / from remote |")
    print(f"|{'-' * 60}|{'-' * 10}|{'-' * 10}|{'-' * 37}|")
    for name, seconds, line in rows:
        print(f"| {name:<58} | {seconds:7.2f}s | {clean / seconds:7.1f}x | {_counts(line):<35} |")
    print(f"warm from the server vs clean: {clean / warm_remote:.1f}x; "
          f"vs warm from the directory: {warm_remote / warm_dir:.2f}x the time")
    print(f"\nper entry, {args.entries} entries of {args.entry_bytes} bytes:")
    print(f"| {'tier':<40} | {'write':>9} | {'read':>9} |")
    print(f"|{'-' * 42}|{'-' * 11}|{'-' * 11}|")
    for name, write, read in tiers:
        print(f"| {name:<40} | {write:6.2f} ms | {read:6.2f} ms |")


if __name__ == "__main__":
    main()
