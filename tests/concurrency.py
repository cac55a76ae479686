"""Running one piece of test work in several threads at once, failures reported."""

from __future__ import annotations

import threading
from typing import Callable


def in_threads(work: Callable[[int], None], n: int, timeout: float | None = None) -> list[BaseException]:
    """Run work(0), ..., work(n - 1), each in its own thread, all at once; what they raised (a
    test asserts it is empty: `assert not errors, errors[:3]`). `timeout`: per join."""
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            work(k)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return errors
