"""The functions a C source declares and defines, with their line, column and visibility.

Enough C to answer what the spec checks and `opbuild validate` ask of an op's sources without
compiling them: is
`kernel.entry` defined in the kernel source, is `tiling.function` (the infer-shape function, the
C key callback) defined in the tiling source, is it declared `OPBUILD_API` (exported from a
tiling library linked with -fvisibility=hidden), which functions does one library get from
it as global symbols (two ops defining one fail to link; spec/project_checks.py), and which
tiling keys a kernel branches on (`TILING_KEY_IS`; validate/tiling_keys.py). Comments are
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
    return _DIRECTIVE.sub(_spaces, _COMMENT.sub(_spaces, text))


def c_functions(text: str) -> list[CFunction]:
    """Every function declaration and definition at the start of a line, in source order."""
    code = _blank_comments(text)
    found = []
    for m in _FUNCTION.finditer(code):
        name = m.group("name")
        prefix = m.group("prefix")
        if name in _NOT_NAMES or re.search(r"\b(?:return|else|typedef)\b", prefix):
            continue
        line, col = _position(code, m.start("name"))
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


_COMMENTS_AND_LITERALS = r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'"""
_NOT_TEXT = re.compile(_COMMENTS_AND_LITERALS, re.S)
"""Comments, string and character literals."""
_NOT_CODE = re.compile(_COMMENTS_AND_LITERALS + r"|(?m:^[ \t]*#[^\n]*(?:(?<=\\)\n[^\n]*)*)", re.S)
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
    line, col = _position(code, start + name.start(1))
    return [CFunction(name.group(1), line, col, True,
                      any(marker in declaration[:name.start()] for marker in _EXPORT_MARKERS), False)]


# ~~~ attributes an AI CPU compute source reads ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

AICPU_ATTR_FIELDS: dict[str, str] = {"aicpu_attr": "", "aicpu_attr_int": "i", "aicpu_attr_bool": "i",
                                     "aicpu_attr_float": "f"}
"""opbuild/aicpu.h's attribute accessors -> the AicpuAttr field each reads ("": the whole attr)."""
_ATTR_READ = re.compile(r"\b(?P<fn>aicpu_attr(?:_int|_bool|_float)?)\s*\(\s*[^,;(){}]*,\s*"
                        r'(?P<name>"(?:\\.|[^"\\\n])*")\s*\)')


@dataclass(frozen=True)
class AttrRead:
    """One `aicpu_attr*(ctx, "name")` call of an AI CPU compute source, at the name's literal."""

    accessor: str
    name: str
    line: int
    col: int


def aicpu_attr_reads(text: str) -> list[AttrRead]:
    """Every accessor call of opbuild/aicpu.h naming its attribute by a string literal, in source
    order (not those in comments; a name given any other way cannot be checked here)."""
    code = _COMMENT.sub(_spaces, text)
    found = []
    for m in _ATTR_READ.finditer(code):
        literal = m.group("name")
        if "\\" in literal:
            continue  # (an escape in an attribute name: not an op's attribute name anyway)
        found.append(AttrRead(m.group("fn"), literal[1:-1], *_position(code, m.start("name"))))
    return found


# ~~~ tiling keys a kernel tests ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

_KEY_TEST = re.compile(r"\bTILING_KEY_IS\s*\(")
_INT_LITERAL = re.compile(r"(0[xX][0-9A-Fa-f]+|0[bB][01]+|[0-9]+)(?:[uU](?:ll|LL|[lL])?|(?:ll|LL|[lL])[uU]?)?")
_OBJECT_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]*?)[ \t]*$", re.M)


@dataclass(frozen=True)
class KeyTest:
    """One `TILING_KEY_IS(argument)` of a kernel source (opbuild/kernel.h's branch on the launch's
    tiling key)."""

    argument: str
    """As written, whitespace collapsed."""
    key: int | None
    """Its value: an integer literal, or a name the source `#define`s as one (once); None for
    anything else (an expression, an enum constant, a macro parameter or one from a header)."""
    line: int
    col: int


def int_literal(text: str) -> int | None:
    """The value of a C integer literal (decimal, 0x hex, 0 octal, 0b binary, u/l suffixes; in
    parentheses or not), or None when `text` is something else."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    m = _INT_LITERAL.fullmatch(text)
    if m is None:
        return None
    digits = m.group(1)
    if digits[:2] in ("0x", "0X", "0b", "0B"):
        return int(digits, 0)
    if len(digits) > 1 and digits[0] == "0":
        return int(digits, 8) if set(digits) <= set("01234567") else None
    return int(digits)


def tiling_key_tests(text: str) -> list[KeyTest]:
    """Every `TILING_KEY_IS(...)` of a C source, in source order; not those in comments or string
    literals. Preprocessor conditionals are not evaluated: a branch under `#if 0` counts too."""
    code = _NOT_TEXT.sub(_spaces, text)
    values: dict[str, set[int | None]] = {}
    for m in _OBJECT_MACRO.finditer(code):
        values.setdefault(m.group(1), set()).add(int_literal(m.group(2)))
    macros = {name: v.pop() for name, v in values.items() if len(v) == 1}  # (defined twice alike: one value)
    found = []
    for m in _KEY_TEST.finditer(code):
        depth, end = 1, m.end()
        while end < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[end], 0)
            end += 1
        argument = " ".join(code[m.end():end - 1].split())
        key = int_literal(argument)
        if key is None and argument in macros:
            key = macros[argument]
        found.append(KeyTest(argument, key, *_position(code, m.start())))
    return found


def _position(code: str, pos: int) -> tuple[int, int]:
    """(line, column) of offset `pos`, both from 1."""
    return code.count("\n", 0, pos) + 1, pos - (code.rfind("\n", 0, pos) + 1) + 1
