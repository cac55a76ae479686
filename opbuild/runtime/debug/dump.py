"""Data dump: the inputs and/or outputs of selected launches as `.npy` files plus a JSON index.

Layout under the dump path, one directory per dumped launch (`seq` counts the launches of the
process, dumped or not, from 0):

    <dump_path>/<seq:06d>.<Op>/input.<i>.<name>.npy      (dump_mode input or all)
    <dump_path>/<seq:06d>.<Op>/output.<i>.<name>.npy     (dump_mode output or all)
    <dump_path>/<seq:06d>.<Op>/launch.json               the index: op, engine, binary, simplified
                                                          key, attrs, tiling key, block dim, workspace
                                                          size, stream, sequence, model and node,
                                                          tensors (file, shape, dtype), status

Turned on by `aclInit(acl.json)` with a "dump" object (CANN's fields: `dump_path`, `dump_mode`,
`dump_list` of `{"model_name"?, "layer"?: [op names]}`, `dump_op_switch`, `dump_data`), by
`OPBUILD_DUMP=<dir>` (+ `OPBUILD_DUMP_MODE`, `OPBUILD_DUMP_OPS=A,B`) when opbuild.runtime is
imported, or by `opbuild.runtime.dump(path, mode, ops)`. Selection is by op type (a model node's
name matches too). A bfloat16 tensor (no numpy dtype of its own in .npy) is stored as its uint16
bits; its index entry says `"dtype": "bfloat16"` (compare reads it back).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from opbuild.runtime.call import launch
from opbuild.runtime.debug.context import CURRENT_MODEL, CURRENT_NODE

DUMP_MODES = ("input", "output", "all")
DEFAULT_MODE = "output"  # CANN's default dump_mode
SWITCH_VALUES = ("on", "off")
DUMP_DATA_VALUES = ("tensor",)
ENV_PATH, ENV_MODE, ENV_OPS = "OPBUILD_DUMP", "OPBUILD_DUMP_MODE", "OPBUILD_DUMP_OPS"
INDEX_NAME = "launch.json"


class DumpConfigError(ValueError):
    """A dump configuration that cannot be used: the message names the file (or variable) and field."""


@dataclass(frozen=True)
class Selection:
    """Which launches are dumped. `single_ops`: op names selected outside models (None: all);
    `model_entries`: (model name or None for any model, op/node names or None for all)."""

    single_ops: frozenset[str] | None
    dump_single: bool
    model_entries: tuple[tuple[str | None, frozenset[str] | None], ...]

    def selects(self, op: str, model: str | None, node: str | None = None) -> bool:
        if model is None:
            return self.dump_single and (self.single_ops is None or op in self.single_ops)
        for name, layers in self.model_entries:
            if (name is None or name == model) and (layers is None or op in layers or node in layers):
                return True
        return False


ALL = Selection(None, True, ((None, None),))


@dataclass(frozen=True)
class DumpConfig:
    path: Path
    mode: str
    selection: Selection


def _names(value: Any, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise DumpConfigError(f"{where} must be a list of op names (non-empty strings)")
    return frozenset(value)


def parse_dump_object(dump: Any, source: str, base: Path | None = None) -> DumpConfig:
    """The DumpConfig of acl.json's "dump" object; DumpConfigError naming `source` and the field.
    A relative dump_path is taken from the current directory (as CANN's)."""
    where = f"{source}: dump"
    if not isinstance(dump, dict):
        raise DumpConfigError(f"{where} must be an object")
    path = dump.get("dump_path")
    if not isinstance(path, str) or not path.strip():
        raise DumpConfigError(f"{where}.dump_path is required: the directory to write the dump to (a non-empty string)")
    mode = dump.get("dump_mode", DEFAULT_MODE)
    if mode not in DUMP_MODES:
        raise DumpConfigError(f"{where}.dump_mode must be one of {', '.join(DUMP_MODES)}, not {mode!r}")
    switch = dump.get("dump_op_switch", "off")
    if switch not in SWITCH_VALUES:
        raise DumpConfigError(f"{where}.dump_op_switch must be \"on\" or \"off\", not {switch!r}")
    data = dump.get("dump_data", "tensor")
    if data not in DUMP_DATA_VALUES:
        raise DumpConfigError(f"{where}.dump_data must be \"tensor\" (the only kind this runtime writes), not {data!r}")
    if "dump_list" not in dump:
        raise DumpConfigError(f"{where}.dump_list is required (a list; [] with dump_op_switch \"on\" dumps every single op)")
    entries = dump["dump_list"]
    if not isinstance(entries, list):
        raise DumpConfigError(f"{where}.dump_list must be a list of objects")
    single: set[str] = set()
    model_entries = []
    for i, entry in enumerate(entries):
        at = f"{where}.dump_list[{i}]"
        if not isinstance(entry, dict):
            raise DumpConfigError(f"{at} must be an object with model_name and/or layer")
        unknown = sorted(set(entry) - {"model_name", "layer"})
        if unknown:
            raise DumpConfigError(f"{at}.{unknown[0]} is not a dump_list field (model_name, layer)")
        model = entry.get("model_name")
        if model is not None and (not isinstance(model, str) or not model):
            raise DumpConfigError(f"{at}.model_name must be a non-empty string")
        layers = _names(entry["layer"], f"{at}.layer") if "layer" in entry else None
        if model is None and layers is None:
            raise DumpConfigError(f"{at} names neither model_name nor layer")
        model_entries.append((model, layers))
        if model is None and layers is not None:
            single |= layers
    if switch == "on":
        selection = Selection(None, True, tuple(model_entries))
    else:
        selection = Selection(frozenset(single), bool(single), tuple(model_entries))
    target = Path(path)
    if not target.is_absolute() and base is not None:
        target = base / target
    return DumpConfig(target, mode, selection)


def parse_acl_json(text: str, source: str) -> DumpConfig | None:
    """The dump configuration of an acl.json's text (None: it has no "dump")."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise DumpConfigError(f"{source}: invalid JSON: {exc}") from None
    if not isinstance(doc, dict) or "dump" not in doc:
        return None
    return parse_dump_object(doc["dump"], source)


def config_from_env(environ: dict[str, str] | os._Environ = os.environ) -> DumpConfig | None:
    """OPBUILD_DUMP=<dir> [OPBUILD_DUMP_MODE=input|output|all] [OPBUILD_DUMP_OPS=A,B]; None if unset."""
    path = environ.get(ENV_PATH)
    if not path:
        return None
    mode = environ.get(ENV_MODE) or DEFAULT_MODE
    if mode not in DUMP_MODES:
        raise DumpConfigError(f"{ENV_MODE} must be one of {', '.join(DUMP_MODES)}, not {mode!r}")
    ops = environ.get(ENV_OPS)
    return DumpConfig(Path(path), mode, _selection(ops.split(",") if ops else None))


def _selection(ops: Iterable[str] | None) -> Selection:
    if ops is None:
        return ALL
    names = frozenset(o.strip() for o in ops if o.strip())
    return Selection(names, True, ((None, names),))


# ---- the writer ---------------------------------------------------------------------------------

def _save(path: Path, a: np.ndarray) -> str:
    """Write `a` as .npy; returns its dtype name (bfloat16 is stored as its uint16 bits)."""
    name = a.dtype.name
    data = np.ascontiguousarray(a)
    if data.dtype.kind == "V" or name == "bfloat16":
        data = data.view(np.uint16) if data.dtype.itemsize == 2 else data.view(np.uint8)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as f:
        np.save(f, data, allow_pickle=False)
    os.replace(tmp, path)
    return name


def _kernel_tensors(plan: Any, executor: Any) -> tuple[list, list]:
    """[(name, array)] of the inputs and the outputs of an AI Core launch, in spec order."""
    spec = plan.op.spec
    if executor.inputs is not None:
        ins = [(f"{p.name}{'' if len(inst) == 1 else f'_{k}'}", a) for p, inst in zip(spec.inputs, executor.inputs, strict=True)
               for k, (a, *_) in enumerate(inst)]
        outs = [(p.name, inst[0][0]) for p, inst in zip(spec.outputs, executor.outputs, strict=True) if inst]
        return ins, outs
    arrays = executor.refs
    n = plan.op.n_inputs
    return ([(p.name, a) for p, a in zip(spec.inputs, arrays[:n], strict=True)],
            [(p.name, a) for p, a in zip(spec.outputs, arrays[n:], strict=True)])


def _attrs(spec: Any, values: Any) -> dict:
    """{attribute name: value} as JSON values (a compare reference function gets them)."""
    from opbuild.nonfinite import to_json

    out = {}
    for attr, value in zip(spec.attrs, values or (), strict=False):
        try:
            json.dumps(to_json(value), allow_nan=False)
            out[attr.name] = to_json(value)
        except (TypeError, ValueError):
            out[attr.name] = repr(value)
    return out


class Dumper(launch.LaunchHook):
    """Writes the selected launches (see the module docstring)."""

    def __init__(self, config: DumpConfig) -> None:
        self.config = config
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self.written = 0

    def _next(self) -> int:
        with self._lock:
            return next(self._seq)

    def _record(self, op: str, stream: Any, record: dict, ins: list, outs: list | Callable[[], list]) -> Any:
        seq = self._next()
        if stream is not None and stream.handle is None:
            stream = None  # the default stream: synchronous
        model, node = CURRENT_MODEL.get(), CURRENT_NODE.get()
        if not self.config.selection.selects(op, model, node):
            return None
        mode = self.config.mode
        directory = self.config.path / f"{seq:06d}.{op}"
        index = {"op": op, **record, "stream": "default" if stream is None or stream.handle is None else hex(stream.handle),
                 "sequence": seq, "model": model, "node": node, "dump_mode": mode, "inputs": [], "outputs": []}

        def write(kind: str, tensors: list) -> None:
            directory.mkdir(parents=True, exist_ok=True)
            for i, (name, a) in enumerate(tensors):
                if a is None:
                    continue
                file = f"{kind}.{i}.{name}.npy"
                dtype = _save(directory / file, a)
                index[f"{kind}s"].append({"name": name, "file": file, "shape": list(a.shape), "dtype": dtype})

        def before() -> None:
            if mode in ("input", "all"):
                write("input", ins)

        if stream is None:
            before()
        else:
            stream.enqueue_host(before)  # read the inputs when the stream reaches the launch

        def after(ok: bool) -> None:
            if ok and mode in ("output", "all"):
                write("output", outs() if callable(outs) else outs)
            index["status"] = "ok" if ok else "failed"
            directory.mkdir(parents=True, exist_ok=True)
            tmp = directory / (INDEX_NAME + ".part")
            tmp.write_text(json.dumps(index, indent=1) + "\n")
            os.replace(tmp, directory / INDEX_NAME)
            with self._lock:
                self.written += 1

        return after

    def kernel(self, plan: Any, executor: Any, stream: Any) -> Any:
        ins, outs = _kernel_tensors(plan, executor)
        sel = plan.selection
        record = {"engine": "aicore", "binary": sel.entry.name if sel is not None else None,
                  "simplified_key": sel.full_key if sel is not None else None, "tiling_key": plan.tiling_key,
                  "block_dim": plan.block_dim, "workspace_size": plan.workspace_size,
                  "attrs": _attrs(plan.op.spec, plan.attrs)}
        return self._record(plan.op.name, stream, record, ins, outs)

    def aicpu(self, executor: Any, stream: Any) -> Any:
        spec = executor.op.spec
        ins = [(p.name, a) for p, a in zip(spec.inputs, executor.inputs, strict=True)]

        def outs() -> list:  # after the run: data-dependent outputs at their real shape
            shapes = executor.view_shapes or [None] * len(executor.outputs)
            return [(p.name, a if s is None or tuple(s) == a.shape else a.reshape(-1)[:prod(s)].reshape(s))
                    for p, a, s in zip(spec.outputs, executor.outputs, shapes, strict=True)]

        record = {"engine": "aicpu", "binary": executor.library.path.name, "simplified_key": None,
                  "tiling_key": None, "block_dim": 1, "workspace_size": 0, "attrs": _attrs(spec, executor.attrs)}
        return self._record(executor.op.name, stream, record, ins, outs)


# ---- turning it on and off ------------------------------------------------------------------------

_active: dict[str, Any] = {"dumper": None, "unregister": None}


def start(config: DumpConfig, source: str = "dump") -> Dumper:
    """Dump from now on with `config` (replacing a dump already on). DumpConfigError naming
    `source` (the file or variable it came from) when the dump directory cannot be made."""
    stop()
    try:
        config.path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DumpConfigError(f"{source}: cannot create the dump directory {config.path}: {exc.strerror}") from None
    dumper = Dumper(config)
    _active["dumper"] = dumper
    _active["unregister"] = launch.add_launch_hook(dumper)
    return dumper


def stop() -> None:
    """Stop dumping (nothing is written after)."""
    unregister = _active["unregister"]
    _active["dumper"] = _active["unregister"] = None
    if unregister is not None:
        unregister()


def active() -> Dumper | None:
    return _active["dumper"]


class DumpSession:
    """What `opbuild.runtime.dump()` returns: dumping is on until `stop()` or the end of a `with`."""

    def __init__(self, dumper: Dumper) -> None:
        self.dumper = dumper
        self.path = dumper.config.path

    def stop(self) -> None:
        if _active["dumper"] is self.dumper:
            stop()

    def __enter__(self) -> "DumpSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def dump(path: str | os.PathLike, mode: str = DEFAULT_MODE, ops: Iterable[str] | None = None) -> DumpSession:
    """Dump every launch (or those of the op types `ops`) under `path`: its inputs (mode "input"),
    outputs ("output") or both ("all"). Use as `with rt.dump("d"): ...` or call `.stop()`."""
    from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError

    if mode not in DUMP_MODES:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"dump mode must be one of {', '.join(DUMP_MODES)}, not {mode!r}")
    if isinstance(ops, str):
        ops = [ops]
    return DumpSession(start(DumpConfig(Path(path), mode, _selection(ops)), "rt.dump"))


def configure_acl(config_path: str, dump_text: str) -> tuple[int, str]:
    """aclInit's dump: (0, "") with dumping started, or (ACL_ERROR_INVALID_DUMP_CONFIG, one line
    naming the file and the field; aclInit prefixes it with its name)."""
    from opbuild.runtime.acl_errors import ACL_ERROR_INVALID_DUMP_CONFIG

    try:
        doc = json.loads(dump_text)
        start(parse_dump_object(doc, config_path), f"{config_path}: dump.dump_path")
        return 0, ""
    except DumpConfigError as exc:
        return ACL_ERROR_INVALID_DUMP_CONFIG, str(exc)
    except ValueError as exc:  # the C parser accepted it: should not happen
        return ACL_ERROR_INVALID_DUMP_CONFIG, f"{config_path}: dump: {exc}"


def finalize_acl() -> tuple[int, str]:
    """aclFinalize: the dump aclInit started ends."""
    stop()
    return 0, ""
