"""The tiling keys an Ascend C kernel branches on, read after preprocessing.

CANN's build makes one kernel function per `TILING_KEY_IS(k)` of the kernel and lists them in
the kernel JSON's kernelList; opbuild does the same from the values found here. The keys are
read from the preprocessed source, so a key named through a macro (`#define REDUCE_TILING_1 1`,
a macro from a header) counts as its value. How: the kernel is preprocessed as a binary's
compile would (`toolchain.ascendc_preprocess_command`) with a probe appended,
`TILING_KEY_IS(<marker>)`, whose expansion shows what the header turns `TILING_KEY_IS(x)` into
(`prefix x suffix`); every other occurrence of that expansion in the output is a branch, and the
text in place of x its key. No knowledge of the header's internals is needed.

A key whose text is not an integer constant after preprocessing (a `constexpr` variable, a
template parameter) is a problem naming the kernel line: the kernelList cannot be written.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

MARKER = "__opbuild_tiling_key_probe__"
BEGIN, END = "__opbuild_probe_begin__", "__opbuild_probe_end__"
PROBE = f"\n{BEGIN} TILING_KEY_IS({MARKER}) {END}\n"
"""Appended to the kernel (after it, so the kernel's own includes define TILING_KEY_IS)."""

_LINE_MARK = re.compile(r'^#\s*(\d+)\s+"([^"]*)"', re.M)
_INT_SUFFIX = re.compile(r"(?<=[0-9a-fA-Fx])(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)\b")


@dataclass(frozen=True)
class KeyBranch:
    """One TILING_KEY_IS in the kernel: its line (in the kernel file, 0 if unknown), the text of
    its argument after preprocessing, and its value (None when it is no integer constant)."""

    line: int
    text: str
    key: int | None


def _value(text: str) -> int | None:
    """An integer constant expression of literals (+ - * << >> | & ~, parentheses), or None."""
    cleaned = _INT_SUFFIX.sub("", text.strip())
    cleaned = re.sub(r"\(\s*(?:unsigned\s+)?(?:u?int(?:8|16|32|64)_t|long|int|unsigned|size_t)\s*\)", "", cleaned)
    try:
        tree = ast.parse(cleaned, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.LShift,
               ast.RShift, ast.BitOr, ast.BitAnd, ast.BitXor, ast.Invert, ast.USub, ast.UAdd)
    if not all(isinstance(node, allowed) for node in ast.walk(tree)):
        return None
    if any(isinstance(node, ast.Constant) and not isinstance(node.value, int) for node in ast.walk(tree)):
        return None
    try:
        value = eval(compile(tree, "<key>", "eval"), {"__builtins__": {}})  # literals only
    except (ArithmeticError, ValueError):
        return None
    return value if isinstance(value, int) and 0 <= value < 1 << 64 else None


def key_branches(preprocessed: str, kernel_path: str) -> list[KeyBranch]:
    """The branches in `preprocessed` (the kernel plus PROBE, through `cpp`); `kernel_path` is the
    kernel as the preprocessor named it in its line markers. Raises ValueError when the probe is
    missing (the kernel does not include kernel_operator.h, or the preprocessor failed)."""
    start = preprocessed.rfind(BEGIN)
    stop = preprocessed.find(END, start)
    if start < 0 or stop < 0:
        raise ValueError("the preprocessed kernel lacks the tiling-key probe")
    expansion = " ".join(preprocessed[start + len(BEGIN):stop].split())
    if MARKER not in expansion:
        raise ValueError(f"TILING_KEY_IS does not expand around its argument ({expansion!r})")
    if expansion.startswith("TILING_KEY_IS"):
        raise ValueError("TILING_KEY_IS is not defined (does the kernel include kernel_operator.h?)")
    prefix, suffix = expansion.split(MARKER, 1)
    body = preprocessed[:start]
    # where each output line came from: the line markers of the kernel file
    lines: list[tuple[int, int]] = []  # (offset where a marked line starts, its kernel line or -1)
    for m in _LINE_MARK.finditer(body):
        eol = body.find("\n", m.end())
        lines.append((len(body) if eol < 0 else eol + 1, int(m.group(1)) if m.group(2) == kernel_path else -1))
    head = " ".join(prefix.split())
    tail = " ".join(suffix.split())
    found = []
    for m in re.finditer(re.escape(head).replace(r"\ ", r"\s*"), body):
        arg = _balanced(body, m.end())
        if arg is None:
            continue
        rest = " ".join(body[m.end() + len(arg):m.end() + len(arg) + 4 * len(tail) + 16].split())
        if not rest.replace(" ", "").startswith(tail.replace(" ", "")):
            continue
        text = " ".join(arg.split())
        found.append(KeyBranch(_line_at(body, lines, m.start()), text, _value(text)))
    return found


def _balanced(text: str, start: int) -> str | None:
    """The text from `start` up to the first `)` or `,` outside parentheses (the macro argument)."""
    depth = 0
    for i in range(start, min(len(text), start + 4096)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return text[start:i]
            depth -= 1
        elif c == "," and depth == 0:
            return None
    return None


def _line_at(body: str, marks: list[tuple[int, int]], offset: int) -> int:
    """The kernel line of `offset` in the preprocessed text (0 if it is not in the kernel file)."""
    base, line_no = 0, 0
    for start, line in marks:
        if start > offset:
            break
        base, line_no = start, line
    if line_no <= 0:
        return 0
    return line_no + body.count("\n", base, offset)


def tiling_keys(branches: list[KeyBranch]) -> tuple[int, ...]:
    """The distinct keys in order of first appearance; (0,) for a kernel with no branch."""
    keys = tuple(dict.fromkeys(b.key for b in branches if b.key is not None))
    return keys or (0,)
