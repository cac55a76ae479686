"""Problems found in op specs, and the exception that carries them.

Every problem names the file, the 1-based line and column, and the JSON path of the offending
value, and prints as `path:line:col: message [$.inputs[0].dtypes]` (a problem about a whole file,
such as a missing one, has line 0 and prints as `path: message`). A problem in a file that is not
a spec (a key rule module, a C source) has no JSON path (`""`) and prints as `path:line:col: message`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Union

JsonPath = tuple[Union[str, int], ...]
"""A location inside the loaded document: mapping keys and sequence indices from the root."""

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def format_json_path(path: Iterable[str | int]) -> str:
    """`("inputs", 0, "dtypes")` -> `$.inputs[0].dtypes`; odd keys are quoted: `$['a b']`."""
    out = ["$"]
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out.append(f"[{part}]")
        elif isinstance(part, str) and _PLAIN_KEY.match(part):
            out.append(f".{part}")
        else:
            text = str(part).replace("\\", "\\\\").replace("'", "\\'")
            out.append(f"['{text}']")
    return "".join(out)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec, at a place in a file."""

    file: str
    line: int
    col: int
    message: str
    json_path: str = "$"

    def __str__(self) -> str:
        if self.line <= 0:
            return f"{self.file}: {self.message}"
        if not self.json_path:
            return f"{self.file}:{self.line}:{self.col}: {self.message}"
        return f"{self.file}:{self.line}:{self.col}: {self.message} [{self.json_path}]"


def sort_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Problems by file, then line and column; each file's problems keep their relative order."""
    order: dict[str, int] = {}
    listed = list(problems)
    for p in listed:
        order.setdefault(p.file, len(order))
    return sorted(listed, key=lambda p: (order[p.file], p.line, p.col))


class SpecError(Exception):
    """One or more op specs are invalid; `.problems` lists every problem found, sorted."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: list[Problem] = sort_problems(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)
