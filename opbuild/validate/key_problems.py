"""The key/binary consistency check's findings as problems in the author's files.

`opbuild.keys.key_findings` runs the op's key rule on every declared call and reports each
disagreement per call: a rule wrong for one dtype fails on dozens of calls (attribute samples
x d x p). Here each finding is placed where the author can fix it, and each distinct problem is
reported once, naming the first call and how many more fail the same way:

* a Python rule that raises: at the line of the rule file that raised (the deepest frame in it);
  one that returns a fragment no binary has: at the `return` that gave it (with "did you mean"
  among the binaries' keys);
* a C rule: at its definition in the tiling source;
* the table or default rule: at the declared dtype of the combination that has no binary;
* a binary no call reaches: at its `key` in op.yaml.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from opbuild.keys import KeyFinding, check_fragment, describe_call, load_python_callback
from opbuild.keys.context import KeyContext
from opbuild.spec.errors import JsonPath, Problem, format_json_path
from opbuild.spec.model import OpSpec, TensorChoice
from opbuild.spec.yaml_marks import Marks
from opbuild.suggest import did_you_mean

Position = tuple[str, int, int, str]
"""(file, line, col, json path or "") of a problem."""


class KeyProblems:
    """Turns one op's key findings into located, deduplicated problems."""

    def __init__(self, spec: OpSpec, marks: Marks, rule_file: tuple[Path, str] | None,
                 c_definition: tuple[str, int, int] | None) -> None:
        self.spec = spec
        self.marks = marks
        self.rule_file = rule_file  # (absolute path, path as shown)
        self.c_definition = c_definition  # (shown tiling source, line, col) of the C key callback
        self.groups: dict[tuple[Position, str], list[str]] = {}
        self.returned: dict[str, None] = {}  # fragments the rule gave, in order
        self.unreached: list[tuple[Position, Any]] = []

    # ---- positions ---------------------------------------------------------------------------

    def at(self, path: JsonPath) -> Position:
        line, col = self.marks.at(path)
        return (self.marks.file, line, col, format_json_path(path))

    def column_position(self, column: Any) -> Position:
        """The declared dtype (or format) of the combination a call belongs to."""
        spec = self.spec
        index = None
        for c, declared in enumerate(spec.combinations()):
            if all(column.get(n) is None or (column[n].dtype, column[n].format) == (ch.dtype, ch.format)
                   for n, ch in declared.items()):
                index = c
                break
        for field in ("dtypes", "formats"):
            for kind, params in (("inputs", spec.inputs), ("outputs", spec.outputs)):
                for p in params:
                    if len(getattr(p, field)) > 1 and index is not None:
                        return self.at((kind, p.index, field, index))
        return self.at(("inputs", 0, "dtypes") if spec.inputs else ("binaries",))

    def rule_position(self, error: BaseException | None) -> Position | None:
        """The deepest frame of the Python rule file in an exception's traceback."""
        if self.rule_file is None or error is None:
            return None
        target = self.rule_file[0]
        found = None
        for exc in (error, error.__cause__, error.__context__):
            if exc is None:
                continue
            for frame in traceback.extract_tb(exc.__traceback__):
                try:
                    same = Path(frame.filename).resolve() == target
                except OSError:
                    same = False
                if same and frame.lineno:
                    found = (self.rule_file[1], frame.lineno, (frame.colno or 0) + 1, "")
            if found:
                return found
        return None

    def return_position(self, ctx: KeyContext | None) -> Position | None:
        """The line of the rule file whose `return` gave the fragment for `ctx` (re-runs the rule
        once under a profiler)."""
        if self.rule_file is None or ctx is None:
            return None
        try:
            fn = load_python_callback(self.spec)
        except Exception:  # noqa: BLE001 - a rule that fails to load: no line to point at (reported elsewhere)
            return None
        code = getattr(fn, "__code__", None)
        where: list[int] = []

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event == "return" and frame.f_code is code:
                where.append(frame.f_lineno)

        old = sys.getprofile()
        sys.setprofile(profile)
        try:
            fn(ctx)
        except BaseException:  # noqa: BLE001 - (SystemExit too: the call is only re-run to locate it)
            return None
        finally:
            sys.setprofile(old)
        if not where:
            return None
        line = where[-1]
        try:
            text = self.rule_file[0].read_text(encoding="utf-8").splitlines()[line - 1]
            col = len(text) - len(text.lstrip()) + 1
        except (OSError, IndexError):
            col = 1
        return (self.rule_file[1], line, col, "")

    # ---- findings ----------------------------------------------------------------------------

    def add(self, position: Position, message: str, call: str | None = None) -> None:
        self.groups.setdefault((position, message), []).append(call or "")

    def finding(self, f: KeyFinding) -> None:
        spec, rule = self.spec, self.spec.key_rule
        call = describe_call(spec, f.ctx) if f.ctx is not None else None
        if f.fragment is not None:
            self.returned.setdefault(f.fragment, None)
        if f.kind == "duplicate":
            return  # SpecChecker reports duplicate keys and ambiguous binaries at their lines
        if f.kind == "unreached":
            b = f.binary
            if b is None:
                raise ValueError(f"{spec.op}: an unreached-binary finding names no binary")
            i = spec.binaries.index(b)
            path: JsonPath = ("binaries", i, "key") if b.key is not None else ("binaries", i)
            self.unreached.append((self.at(path), b))
            return
        if rule.callback == "python" and rule.mode == "customized":
            what = f"GenSimplifiedKey {rule.py_function}"
            if f.kind == "raised":
                position = self.rule_position(f.error) or self.at(("simplified_key", "callback"))
                self.add(position, f"{what} raised {_describe(f.error)}", call)
            else:
                position = self.return_position(f.ctx) or self.at(("simplified_key", "callback"))
                self.add(position, self.bad_fragment(what, f), call)
            return
        if rule.callback == "c" and rule.mode == "customized" and self.c_definition is not None:
            position = (*self.c_definition, "")
            what = f"GenSimplifiedKey {rule.c_symbol}"
            message = _describe(f.error) if f.kind == "raised" else self.bad_fragment(what, f)
            self.add(position, message, call)
            return
        # the table or the default rule: the declared combination has no binary
        position = self.column_position(f.column or {})
        combo = ", ".join(f"{n}={c.dtype}" for n, c in (f.column or {}).items() if isinstance(c, TensorChoice))
        if f.kind == "raised" and rule.callback == "table":
            reason = "no binary's `when` matches it (the key table has no entry for it)"
        elif f.kind == "no_binary":
            reason = f"no binary has its key {f.fragment!r}"
        else:
            reason = _describe(f.error) if f.error is not None else f.message
        self.add(position, f"dtype combination ({combo}) has no binary: {reason}; add a binary for it or remove "
                           f"the dtype", call)

    def bad_fragment(self, what: str, f: KeyFinding) -> str:
        if f.kind == "invalid":
            if f.fragment is None:
                return f"{what} returned None, not a key fragment (a path that ends without `return`?)"
            return f"{what} returned an invalid key fragment: {check_fragment(f.fragment)}"
        keys = [b.key for b in self.spec.binaries if b.key]
        if f.fragment in keys:  # a binary has the fragment, but not for this call's d or p
            ctx = f.ctx
            return (f"{what} returns {f.fragment!r} for d={ctx.deterministic if ctx else '?'}, "
                    f"p={ctx.impl_mode if ctx else '?'}, but the binary with that key does not serve them "
                    f"(its deterministic / impl_mode)")
        return (f"{what} returns {f.fragment!r}, which no binary has as its key "
                f"(binary keys: {', '.join(dict.fromkeys(keys)) or 'none'}){did_you_mean(f.fragment or '', keys)}")

    def problems(self, findings: list[KeyFinding]) -> list[Problem]:
        for f in findings:
            self.finding(f)
        out = []
        if any(f.kind in ("raised", "invalid") for f in findings):
            self.unreached = []  # a consequence of the rule failing: not a problem of its own
        for (position, message), calls in self.groups.items():
            more = f", and {len(calls) - 1} more call(s)" if len(calls) > 1 else ""
            example = f" (for a call with {calls[0]}{more})" if calls[0] else ""
            out.append(Problem(position[0], position[1], position[2], message + example, position[3]))
        gave = ", ".join(repr(k) for k in list(self.returned)[:6]) if self.returned else ""
        for position, b in self.unreached:
            keys = f"key {b.key!r}" if b.key is not None else "keys"
            hint = f" (the rule gives: {gave})" if gave and self.spec.key_rule.callback in ("python", "c") else ""
            out.append(Problem(position[0], position[1], position[2],
                               f"binary {b.name!r} is reached by no declared call: the key rule never gives its "
                               f"{keys}{hint}", position[3]))
        return out


def cause_text(exc: BaseException) -> str:
    """`Type: message` of the exception a wrapper was raised from (or the wrapper's own text)."""
    inner = exc.__cause__ or exc
    return f"{type(inner).__name__}: {inner}" if inner is not exc else str(exc)


def _describe(error: BaseException | None) -> str:
    """`KeyError: no attribute 'mx' ...`, from the rule's own exception (not its wrappers)."""
    if error is None:
        return "an error"
    inner = error.__cause__ or error
    text = str(inner)
    if isinstance(inner, KeyError) and len(inner.args) == 1 and isinstance(inner.args[0], str) \
            and " " in inner.args[0]:
        text = inner.args[0]  # a sentence (KeyContext.attr's), not a missing key: no quotes
    if type(inner).__name__ in ("KeyRuleError", "CallbackError"):
        return text  # opbuild's own: the message says it all
    return f"{type(inner).__name__}: {text}"


def key_problems(spec: OpSpec, marks: Marks, fragment_fn: Callable[[KeyContext], str],
                 rule_file: tuple[Path, str] | None = None,
                 c_definition: tuple[str, int, int] | None = None) -> list[Problem]:
    """Located problems of the key/binary consistency check of one op (see the module doc)."""
    from opbuild.keys import key_findings

    return KeyProblems(spec, marks, rule_file, c_definition).problems(key_findings(spec, fragment_fn))
