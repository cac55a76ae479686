"""A JSON schema compiled into nested Python checks: the MODEL_DEF schema (loader._MODEL_DEF_SCHEMA)
checked in time linear in the model and fast (issue 25: jsonschema took ~0.5 ms per node, most
of a 100,000-node model's parse).

Only the keywords that schema uses are supported — type, const, enum, required, properties,
additionalProperties, items, minItems, maxItems, minLength, maxLength, minimum, maximum, anyOf —
with JSON schema's meaning (a bool is not an integer or a number; `enum`/`const` tell `1` from
`true`); `compile_schema` refuses any other keyword, so the schema stays the one rule. The first
problem found is returned as (path, message), as jsonschema's first error would be reported
(tests/om/test_om_schema_check.py compares the two on mutated models).
"""

from __future__ import annotations

from typing import Any, Callable

Problem = tuple[list[Any], Callable[[], str]]
"""(the path to the value, innermost first; its message, made only when reported)."""
Check = Callable[[Any], Problem | None]

SUPPORTED = frozenset({"type", "const", "enum", "required", "properties", "additionalProperties", "items",
                       "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum", "anyOf"})

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def _same(a: Any, b: Any) -> bool:
    """JSON equality: bools apart from numbers, lists and objects member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def compile_schema(schema: dict[str, Any]) -> Check:
    """The check of `schema`: `check(value)` -> None, or the first problem (see `first_problem`)."""
    unknown = set(schema) - SUPPORTED
    if unknown:
        raise ValueError(f"schema keywords {sorted(unknown)} are not supported by schema_check")
    checks: list[Check] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        tests = [_TYPES[n] for n in names]
        shown = names[0] if len(names) == 1 else names

        def check_type(v: Any) -> Problem | None:
            for t in tests:
                if t(v):
                    return None
            return [], lambda: f"{_short(v)} is not of type {shown!r}"
        checks.append(check_type)
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v: None if _same(v, const) else ([], lambda: f"{const!r} was expected"))
    if "enum" in schema:
        enum = schema["enum"]
        checks.append(lambda v: None if any(_same(v, e) for e in enum)
                      else ([], lambda: f"{_short(v)} is not one of {_short(enum)}"))
    for key, test, text in (("minimum", lambda v, m: v >= m, "less than the minimum of"),
                            ("maximum", lambda v, m: v <= m, "greater than the maximum of")):
        if key in schema:
            bound = schema[key]

            def check_bound(v: Any, bound=bound, test=test, text=text) -> Problem | None:
                if isinstance(v, (int, float)) and not isinstance(v, bool) and not test(v, bound):
                    return [], lambda: f"{v!r} is {text} {bound}"
                return None
            checks.append(check_bound)
    for key, kind, text in (("minLength", str, "is too short"), ("maxLength", str, "is too long"),
                            ("minItems", list, "is too short"), ("maxItems", list, "is too long")):
        if key in schema:
            limit = schema[key]
            is_min = key.startswith("min")

            def check_len(v: Any, limit=limit, kind=kind, text=text, is_min=is_min) -> Problem | None:
                if isinstance(v, kind) and (len(v) < limit if is_min else len(v) > limit):
                    return [], lambda: f"{_short(v)} {text}"
                return None
            checks.append(check_len)
    if "required" in schema:
        required = list(schema["required"])

        def check_required(v: Any) -> Problem | None:
            if isinstance(v, dict):
                for name in required:
                    if name not in v:
                        return [], lambda name=name: f"{name!r} is a required property"
            return None
        checks.append(check_required)
    if "properties" in schema or "additionalProperties" in schema:
        props = {k: compile_schema(s) for k, s in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties", True)
        extra_check = compile_schema(extra) if isinstance(extra, dict) else None

        def check_props(v: Any) -> Problem | None:
            if not isinstance(v, dict):
                return None
            for k, item in v.items():
                c = props.get(k)
                if c is None:
                    if extra is False:
                        return [], lambda k=k: f"additional property {k!r} is not allowed"
                    c = extra_check
                if c is not None:
                    found = c(item)
                    if found is not None:
                        found[0].append(k)
                        return found
            return None
        checks.append(check_props)
    if "items" in schema:
        item_check = compile_schema(schema["items"])

        def check_items(v: Any) -> Problem | None:
            if isinstance(v, list):
                for i, item in enumerate(v):
                    found = item_check(item)
                    if found is not None:
                        found[0].append(i)
                        return found
            return None
        checks.append(check_items)
    if "anyOf" in schema:
        options = [compile_schema(s) for s in schema["anyOf"]]

        def check_any(v: Any) -> Problem | None:
            for c in options:
                if c(v) is None:
                    return None
            return [], lambda: f"{_short(v)} is not valid under any of the given schemas"
        checks.append(check_any)

    if len(checks) == 1:
        return checks[0]

    def check_all(v: Any) -> Problem | None:
        for c in checks:
            found = c(v)
            if found is not None:
                return found
        return None
    return check_all


def first_problem(check: Check, value: Any) -> tuple[list[Any], str] | None:
    """(path from the root, message) of the first problem `check` finds in `value`, or None."""
    found = check(value)
    if found is None:
        return None
    path, message = found
    return path[::-1], message()


# ---- the fast path: one generated Python function per schema node, answering valid or not -------

_PY_TYPE = {"object": "isinstance(v, dict)", "array": "isinstance(v, list)", "string": "isinstance(v, str)",
            "boolean": "isinstance(v, bool)", "null": "v is None",
            "integer": "((isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()))",
            "number": "(isinstance(v, (int, float)) and not isinstance(v, bool))"}


def compile_predicate(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """`valid(value) -> bool` of `schema`: the same rules as `compile_schema`, generated as plain
    Python (one function per schema node, every keyword of a node inlined), for the common case
    of a valid model; `compile_schema`'s check then says where the first problem is."""
    env: dict[str, Any] = {"_same": _same}
    sources: list[str] = []

    def node(s: dict[str, Any]) -> str:
        unknown = set(s) - SUPPORTED
        if unknown:
            raise ValueError(f"schema keywords {sorted(unknown)} are not supported by schema_check")
        name = f"_f{len(sources)}"
        sources.append("")  # reserve the slot (children get later numbers)
        body: list[str] = []
        if "type" in s:
            names = s["type"] if isinstance(s["type"], list) else [s["type"]]
            body.append(f"if not ({' or '.join(_PY_TYPE[n] for n in names)}): return False")
        if "const" in s:
            env[f"{name}_const"] = s["const"]
            body.append(f"if not _same(v, {name}_const): return False")
        if "enum" in s:
            env[f"{name}_enum"] = s["enum"]
            body.append(f"if not any(_same(v, e) for e in {name}_enum): return False")
        num = "(isinstance(v, (int, float)) and not isinstance(v, bool))"
        if "minimum" in s:
            body.append(f"if {num} and v < {s['minimum']!r}: return False")
        if "maximum" in s:
            body.append(f"if {num} and v > {s['maximum']!r}: return False")
        for key, kind, op in (("minLength", "str", "<"), ("maxLength", "str", ">"), ("minItems", "list", "<"),
                              ("maxItems", "list", ">")):
            if key in s:
                body.append(f"if isinstance(v, {kind}) and len(v) {op} {s[key]!r}: return False")
        if "required" in s:
            env[f"{name}_req"] = tuple(s["required"])
            body.append(f"if isinstance(v, dict):\n        for r in {name}_req:\n"
                        f"            if r not in v: return False")
        if "properties" in s or "additionalProperties" in s:
            env[f"{name}_props"] = {k: env[node(sub)] for k, sub in s.get("properties", {}).items()}
            extra = s.get("additionalProperties", True)
            env[f"{name}_extra"] = env[node(extra)] if isinstance(extra, dict) else extra
            body.append(f"if isinstance(v, dict):\n        p = {name}_props\n        x = {name}_extra\n"
                        f"        for k, item in v.items():\n            c = p.get(k)\n"
                        f"            if c is None:\n                if x is False: return False\n"
                        f"                if x is True: continue\n                c = x\n"
                        f"            if not c(item): return False")
        if "items" in s:
            env[f"{name}_items"] = env[node(s["items"])]
            body.append(f"if isinstance(v, list):\n        c = {name}_items\n        for item in v:\n"
                        f"            if not c(item): return False")
        if "anyOf" in s:
            env[f"{name}_any"] = [env[node(sub)] for sub in s["anyOf"]]
            body.append(f"if not any(c(v) for c in {name}_any): return False")
        index = int(name[2:])
        sources[index] = f"def {name}(v):\n" + "".join(f"    {line}\n" for line in body) + "    return True\n"
        exec(sources[index], env)  # generated from the schema's keywords only
        return name

    return env[node(schema)]
