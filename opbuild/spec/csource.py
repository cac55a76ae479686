"""The functions a C source declares and defines, with their line, column and visibility.

Enough C to answer what the spec checks and `opbuild validate` ask of an op's sources without
compiling them: is
`kernel.entry` defined in the kernel source, is `tiling.function` (the infer-shape function, the
C key callback) defined in the tiling source, is it declared `OPBUILD_API` (exported from a
tiling library linked with -fvisibility=hidden), and which functions does one library get from
it as global symbols (two ops defining one fail to link; spec/project_checks.py). Comments are
blanked, keeping every position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_PREFIX = r'(?:\w+|"C"|__attribute__\s*\(\([^\n]*?\)\))'
_PARAMS = r"\((?:[^;{}()]|\([^;{}()]*\))*\)"
_FUNCTION = re.compile(rf"^[ \t]*(?P<prefix>(?:{_PREFIX}[ \t\*]+)*)(?P<name>[A-Za-z_]\w*)\s*{_PARAMS}\s*(?P<end>[{{;])",
                       re.M)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_NOT_NAMES = frozenset("if for while switch return sizeof do else case defined _Generic".split())
_EXPORT_MARKERS = ("OPBUILD_API", 'visibility("default")', "visibility (\"default\")")


@dataclass(frozen=True)
class CFunction:
    """One function declaration or definition in a C source."""

    name: str
    line: int
    col: int
    defined: bool
    """A definition (with a body), not just a prototype."""
    exported: bool
    """Its declaration specifiers say OPBUILD_API (or visibility("default"))."""
    static: bool


def _blank_comments(text: str) -> str:
    """Comments and preprocessor directives (macro bodies are not declarations) as spaces."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group())  # noqa: E731
    return _DIRECTIVE.sub(blank, _COMMENT.sub(blank, text))


def c_functions(text: str) -> list[CFunction]:
    """Every function declaration and definition at the start of a line, in source order."""
    code = _blank_comments(text)
    found = []
    for m in _FUNCTION.finditer(code):
        name = m.group("name")
        prefix = m.group("prefix")
        if name in _NOT_NAMES or re.search(r"\b(?:return|else|typedef)\b", prefix):
            continue
        pos = m.start("name")
        line = code.count("\n", 0, pos) + 1
        col = pos - (code.rfind("\n", 0, pos) + 1) + 1
        found.append(CFunction(name, line, col, m.group("end") == "{",
                               any(marker in prefix for marker in _EXPORT_MARKERS),
                               re.search(r"\bstatic\b", prefix) is not None))
    return found


def definition(functions: list[CFunction], name: str) -> CFunction | None:
    """The definition of `name`, if the source has one."""
    return next((f for f in functions if f.name == name and f.defined), None)


def declared_exported(functions: list[CFunction], name: str) -> bool:
    """Whether some declaration or the definition of `name` says OPBUILD_API."""
    return any(f.name == name and f.exported for f in functions)


def defined_names(functions: list[CFunction], *, exported_only: bool = False) -> list[str]:
    """The names of the functions the source defines (for "did you mean")."""
    return [f.name for f in functions if f.defined and (f.exported or not exported_only)]


_NOT_CODE = re.compile(r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'"""
                       r"|(?m:^[ \t]*#[^\n]*(?:(?<=\\)\n[^\n]*)*)", re.S)
"""Comments, string and character literals, preprocessor directives (with their continuation lines)."""
_BLOCK_OR_END = re.compile(r"[{};]")
_PARAMS_END = re.compile(r"\)\s*$")
_NAME_BEFORE = re.compile(r"([A-Za-z_]\w*)\s*$")
_LOCAL = re.compile(r"\b(?:static|inline|__inline__|typedef|weak)\b")


def _spaces(m: re.Match[str]) -> str:
    text = m.group()
    return " " * len(text) if "\n" not in text else "\n".join(" " * len(line) for line in text.split("\n"))


def global_functions(text: str) -> list[CFunction]:
    """The functions a C source defines as strong global symbols (not static, inline or weak):
    what the linker takes from its object, and refuses twice in one library ("multiple
    definition"). One pass over the file-scope text, tracking braces, so a declaration may
    span lines (`static int\nhelper(void)`); cheaper than `c_functions`, as the build runs it
    on the sources of every op."""
    code = _NOT_CODE.sub(_spaces, text)
    found: list[CFunction] = []
    depth = start = 0
    for m in _BLOCK_OR_END.finditer(code):
        c = m.group()
        if depth:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if not depth:
                    start = m.end()
        elif c == "{":
            depth = 1
            if _PARAMS_END.search(code, start, m.start()):
                found += _definition(code, start, m.start())
        else:  # `;`, or a stray `}`
            start = m.end()
    return found


def _definition(code: str, start: int, end: int) -> list[CFunction]:
    """The function that the file-scope text code[start:end] (ending in its parameter list)
    defines, if a global one."""
    declaration = code[start:end].rstrip()
    i = declaration.rfind("(")  # the `(` of the parameter list: the last one, unless parameters nest them
    while declaration.count("(", i) != declaration.count(")", i) and i > 0:
        i = declaration.rfind("(", 0, i)
    name = _NAME_BEFORE.search(declaration, 0, i)
    if name is None or name.group(1) in _NOT_NAMES or _LOCAL.search(declaration, 0, name.start()):
        return []
    pos = start + name.start(1)
    line = code.count("\n", 0, pos) + 1
    return [CFunction(name.group(1), line, pos - (code.rfind("\n", 0, pos) + 1) + 1, True,
                      any(marker in declaration[:name.start()] for marker in _EXPORT_MARKERS), False)]
