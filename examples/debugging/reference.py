"""Reference functions for `opbuild compare` (docs/debugging.md): one per op type, called with
the dumped inputs and the launch's attributes."""


def BuggyAdd(x, y, *, bug):  # noqa: N802 - named as the op type
    return x + y
