"""Reading the shared cache never hangs, blows up or trusts what it has not checked (issue 25): an
entry replaced by a FIFO hung every build, a symbolic link to /dev/zero raised MemoryError even with
OPBUILD_CACHE_SECRET (the entry was read before its HMAC was checked), and `opbuild cache verify`
skipped both ("0 corrupt"). Entries are now opened as regular files only, read no further than
the size their record gives, checked before use, and verify counts the others as corrupt."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from opbuild.builder import cache
from opbuild.builder.stores import SharedStore

REPO = Path(__file__).resolve().parents[2]
KEY = "ab" + "0" * 30
SECRET = "team-secret"


def _entry(root: Path, data: bytes = b"compiled bytes") -> str:
    store = SharedStore(str(root), "compile")
    store.put(KEY, data)
    return store.path(KEY)


def _read_in_thread(entry: str) -> tuple[threading.Thread, list]:
    result: list = []
    thread = threading.Thread(target=lambda: result.append(cache.load_verified(entry)), daemon=True)
    thread.start()
    thread.join(timeout=30)  # a hang detector, not a timing: a correct read returns at once
    return thread, result


def _unblock(fifo: str) -> None:
    """Let a reader stuck in open() of `fifo` go (it then reads end of file)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_an_entry_replaced_by_a_fifo_is_corrupt_not_waited_on(tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    os.unlink(entry)
    os.mkfifo(entry)
    thread, result = _read_in_thread(entry)
    _unblock(entry)
    assert not thread.is_alive(), "reading a FIFO entry hung"
    data, problem = result[0]
    assert data is None and "FIFO" in problem


def test_a_hash_file_replaced_by_a_fifo_is_corrupt_not_waited_on(tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    os.unlink(cache.hash_path(entry))
    os.mkfifo(cache.hash_path(entry))
    thread, result = _read_in_thread(entry)
    _unblock(cache.hash_path(entry))
    assert not thread.is_alive(), "reading a FIFO hash file hung"
    assert result[0][0] is None and "FIFO" in result[0][1]


_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a read of /dev/zero must not get far
from opbuild.builder import cache
data, problem = cache.load_verified(sys.argv[1])
print(repr(data), problem)
"""


@pytest.mark.parametrize("secret", [None, SECRET], ids=["no secret", "with OPBUILD_CACHE_SECRET"])
def test_a_link_to_dev_zero_is_corrupt_without_being_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          secret: str | None) -> None:
    if secret:
        monkeypatch.setenv(cache.SECRET_ENV, secret)
    entry = _entry(tmp_path)
    os.unlink(entry)
    os.symlink("/dev/zero", entry)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", _CHILD, entry], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("None ") and "symbolic link" in proc.stdout


def test_with_a_secret_the_entry_is_not_opened_before_its_hmac_checks(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    entry = _entry(tmp_path)  # written without the secret: no HMAC
    opened: list[str] = []
    real = cache.safefile.read_bytes

    def recording(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(cache.safefile, "read_bytes", recording)
    monkeypatch.setenv(cache.SECRET_ENV, SECRET)
    data, problem = cache.load_verified(entry)
    assert data is None and "no HMAC" in problem
    assert entry not in opened


def test_an_entry_longer_than_its_record_is_corrupt(tmp_path: Path) -> None:
    entry = _entry(tmp_path, b"0123456789")
    with open(entry, "ab") as f:
        f.write(b"x" * 100)
    data, problem = cache.load_verified(entry)
    assert data is None and "110 bytes, more than the 10 allowed" in problem


def test_entries_round_trip_and_records_without_a_size_still_read(tmp_path: Path) -> None:
    entry = _entry(tmp_path, b"payload")
    assert cache.load_verified(entry) == (b"payload", None)
    Path(cache.hash_path(entry)).write_text(cache.sha256_bytes(b"payload") + "\n")  # an older record
    assert cache.load_verified(entry) == (b"payload", None)
    os.unlink(entry)
    assert cache.load_verified(entry) == (None, None)  # a record alone: an entry being written


def test_cache_verify_counts_fifos_and_links_as_corrupt(tmp_path: Path) -> None:
    good = _entry(tmp_path, b"good")
    for name, make in (("cd" + "1" * 30, lambda p: os.mkfifo(p)), ("ef" + "2" * 30, lambda p: os.symlink("/dev/zero", p))):
        store = SharedStore(str(tmp_path), "compile")
        store.put(name, b"was here")
        os.unlink(store.path(name))
        make(store.path(name))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(cache.SECRET_ENV, None)
    proc = subprocess.run([sys.executable, "-m", "opbuild.cli", "cache", "verify", "--dir", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "3 entries checked, 2 corrupt" in proc.stdout
    assert "FIFO" in proc.stdout and "symbolic link" in proc.stdout
    assert os.path.exists(good) and not os.path.lexists(SharedStore(str(tmp_path), "compile").path("cd" + "1" * 30))


def test_an_events_log_that_is_a_fifo_neither_hangs_a_build_nor_stats(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / cache.EVENTS_FILE)
    thread = threading.Thread(target=lambda: cache.log_event(tmp_path, "hit", "x"), daemon=True)
    thread.start()
    thread.join(timeout=30)
    _unblock(str(tmp_path / cache.EVENTS_FILE))
    assert not thread.is_alive(), "logging to a FIFO hung"
    with pytest.raises(OSError, match="FIFO"):
        cache.read_events(tmp_path)


def test_a_cache_whose_scons_config_is_a_fifo_is_refused_with_one_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config")
    with pytest.raises(cache.CacheError, match="config is not a regular file"):
        cache.open_for_build(str(tmp_path))
