"""YAML loading that remembers where everything was written.

`load_yaml(text, file)` returns plain Python data (dicts, lists, str, int, float, bool, None)
plus a `Marks` side table that maps every JSON path (tuple of keys and indices) to the 1-based
line and column of the mapping key and of the value. Duplicate mapping keys, non-string keys,
merge keys (`<<`), unknown tags and recursive aliases are reported as problems (with the position
of the offending occurrence), as are YAML syntax errors.

Bounded: a document longer than `MAX_YAML_BYTES`, or whose aliases would expand to more than
`MAX_ALIAS_NODES` nodes (a "billion laughs": ten nested aliases in 2 KB expand to 10^10 nodes),
is rejected before anything is expanded, naming the alias where the limit is crossed. The count
is made on the parser's event stream (`alias_problem`), so the check costs one pass over the
text and memory proportional to it. `safe_load` applies the same bounds for YAML read without
marks (`.om` model files).

The node tree is composed by libyaml (`yaml.CSafeLoader`) when PyYAML was built with it, else by
the pure-Python `yaml.SafeLoader`; scalars are resolved with PyYAML's safe rules (YAML 1.1: `yes`,
`on` are booleans, `1e3` is a string, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .errors import JsonPath, Problem, format_json_path

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CONSTRUCTOR = SafeConstructor()

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_SCALAR_TAGS = {
    _STR,
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
}

Position = tuple[int, int]

MAX_YAML_BYTES = 1 << 20
"""The largest YAML document read (1 MiB; an op.yaml is a few KB, a model file some hundred)."""
MAX_ALIAS_NODES = 10_000
"""The most nodes alias resolution may produce in one document (each alias counts the nodes of
the collection it stands for, nested aliases included)."""


@dataclass
class Marks:
    """Where each part of a loaded document was written (1-based line and column).

    `key(path)`: the mapping key whose value lives at `path` (None for sequence items and the
    root). `value(path)`: the value (for a sequence item, the item). `at(path)`: the best single
    place to point at for a problem about `path`: the value when it is a scalar or a flow
    collection (`[a, b]`, `{k: v}`), else its key; a path that was not written (a missing field)
    falls back to its nearest written ancestor.
    """

    file: str
    keys: dict[JsonPath, Position] = field(default_factory=dict)
    values: dict[JsonPath, Position] = field(default_factory=dict)
    blocks: set[JsonPath] = field(default_factory=set)

    def key(self, path: JsonPath) -> Position | None:
        return self.keys.get(tuple(path))

    def value(self, path: JsonPath) -> Position | None:
        return self.values.get(tuple(path))

    def at(self, path: JsonPath) -> Position:
        path = tuple(path)
        while True:
            if path in self.blocks and path in self.keys:
                return self.keys[path]
            if path in self.values:
                return self.values[path]
            if path in self.keys:
                return self.keys[path]
            if not path:
                return (1, 1)
            path = path[:-1]

    def problem(self, path: JsonPath, message: str, *, at_key: bool = False) -> Problem:
        """A problem about `path` (pointing at its key when `at_key` and there is one)."""
        pos = (self.key(path) if at_key else None) or self.at(path)
        return Problem(self.file, pos[0], pos[1], message, format_json_path(path))


def _pos(node: Node) -> Position:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    """Turns a composed node tree into plain data, filling `marks` and `problems`."""

    def __init__(self, marks: Marks):
        self.marks = marks
        self.problems: list[Problem] = []
        self._active: set[int] = set()

    def error(self, pos: Position, path: JsonPath, message: str) -> None:
        self.problems.append(Problem(self.marks.file, pos[0], pos[1], message, format_json_path(path)))

    def build(self, node: Node, path: JsonPath) -> Any:
        self.marks.values[path] = _pos(node)
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        if not isinstance(node, (SequenceNode, MappingNode)):  # (composing makes only these three kinds)
            raise TypeError(f"unexpected YAML node {type(node).__name__}")
        if id(node) in self._active:
            self.error(_pos(node), path, "recursive alias: a collection contains itself")
            return None
        if not node.flow_style:
            self.marks.blocks.add(path)
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                if node.tag != _SEQ:
                    self.error(_pos(node), path, f"unsupported YAML tag {node.tag!r}")
                return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
            if node.tag != _MAP:
                self.error(_pos(node), path, f"unsupported YAML tag {node.tag!r}")
            return self.mapping(node, path)
        finally:
            self._active.discard(id(node))

    def scalar(self, node: ScalarNode, path: JsonPath) -> Any:
        if node.tag not in _SCALAR_TAGS:
            self.error(_pos(node), path, f"unsupported YAML tag {node.tag!r}")
            return node.value
        if node.tag == _STR:
            return node.value
        try:
            return _CONSTRUCTOR.yaml_constructors[node.tag](_CONSTRUCTOR, node)
        except (ConstructorError, ValueError) as exc:
            self.error(_pos(node), path, f"invalid {node.tag.rsplit(':', 1)[-1]} value {node.value!r}: {exc}")
            return node.value

    def mapping(self, node: MappingNode, path: JsonPath) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key_pos = _pos(key_node)
            if key_node.tag == _MERGE:
                self.error(key_pos, path, "merge keys (<<) are not supported; write the fields out")
                continue
            if not isinstance(key_node, ScalarNode):
                self.error(key_pos, path, "a mapping key must be a plain string, not a collection")
                continue
            key = self.scalar(key_node, path)
            if not isinstance(key, str):
                self.error(key_pos, path + (key_node.value,),
                           f"mapping key {key_node.value!r} is read as {type(key).__name__} {key!r}; "
                           f"quote it to make it a string")
                key = key_node.value
            child = path + (key,)
            if key in result:
                first = self.marks.keys[child]
                self.error(key_pos, child, f"duplicate key {key!r} (first defined at line {first[0]}, column {first[1]})")
                continue
            self.marks.keys[child] = key_pos
            result[key] = self.build(value_node, child)
        return result


def size_problem(size: int, file: str) -> Problem | None:
    """A problem when a document of `size` bytes is over `MAX_YAML_BYTES` (a whole-file problem)."""
    if size <= MAX_YAML_BYTES:
        return None
    return Problem(file, 0, 0, f"the YAML document is larger than {MAX_YAML_BYTES} bytes, the most that is read "
                               f"({size} bytes or more)")


def alias_problem(text: str, file: str) -> Problem | None:
    """The alias at which the nodes produced by alias resolution exceed `MAX_ALIAS_NODES`, if any.

    Walks the parser's events once: every collection's expanded size (its nodes, aliases inside
    it expanded) is summed as it closes and remembered for its anchor; each alias adds its
    anchor's size to the running total. A syntax error ends the walk silently (the composer
    reports it with its position); an alias of a collection still open (a recursive alias) counts
    one node (the builder reports the recursion)."""
    loader = _Loader(text)
    sizes: dict[str | None, int] = {}
    stack: list[list[Any]] = []  # [anchor, expanded size] of each open collection
    produced = 0
    try:
        while True:
            event = loader.get_event()
            if event is None or isinstance(event, yaml.StreamEndEvent):
                return None
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                stack.append([event.anchor, 1])
                continue
            if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                anchor, size = stack.pop()
            elif isinstance(event, yaml.ScalarEvent):
                anchor, size = event.anchor, 1
            elif isinstance(event, yaml.AliasEvent):
                anchor, size = None, sizes.get(event.anchor, 1)
                produced += size
                if produced > MAX_ALIAS_NODES:
                    mark = event.start_mark
                    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
                    return Problem(file, line, column,
                                   f"alias *{event.anchor} expands the document past {MAX_ALIAS_NODES} nodes "
                                   f"(aliases nested in aliases multiply); write the values out", "$")
            else:
                continue
            if anchor is not None:
                sizes[anchor] = size
            if stack:
                stack[-1][1] += size
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def _bounds_problem(text: str, file: str) -> Problem | None:
    return size_problem(len(text.encode("utf-8", "surrogatepass")), file) or alias_problem(text, file)


def safe_load(text: str, file: str) -> Any:
    """`yaml.safe_load` within the bounds of `load_yaml`: raises ValueError naming the file,
    line and column when the document is too large or its aliases expand too far (YAML errors
    propagate as yaml.YAMLError)."""
    problem = _bounds_problem(text, file)
    if problem is not None:
        raise ValueError(str(problem))
    return yaml.load(text, Loader=_Loader)


def load_yaml(text: str, file: str) -> tuple[Any, Marks, list[Problem]]:
    """Parse one YAML document; returns (data, marks, problems). data is None on a syntax error
    or when the document is over the bounds (see the module docstring)."""
    marks = Marks(file)
    problem = _bounds_problem(text, file)
    if problem is not None:
        return None, marks, [problem]
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        what = " ".join(part for part in (exc.problem, exc.context and f"({exc.context})") if part)
        return None, marks, [Problem(file, line, col, f"YAML syntax error: {what or exc}", "$")]
    except yaml.YAMLError as exc:
        return None, marks, [Problem(file, 1, 1, f"YAML error: {exc}", "$")]
    finally:
        loader.dispose()
    if node is None:
        return None, marks, [Problem(file, 1, 1, "the file holds no YAML document", "$")]
    builder = _Builder(marks)
    data = builder.build(node, ())
    return data, marks, builder.problems
