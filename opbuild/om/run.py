"""Executing a loaded .om through the ordinary runtime (OpRuntime, two phases, simulator).

Each node gets an `OpRuntime` built from the op definition embedded in MODEL_DEF, bound to a
`NodeProvider`: the package-provider hook of opbuild.runtime.binaries.selection (binary_index,
tiling_library, fragment_fn) and of executor.build_plan (precomputed_tiling). Kernels are the
memfd-backed TBE_KERNELS items; tiling comes from TILING_DATA (static nodes), the SpaceRegistry
.so (dynamic models) or the OpMasterDevice .so (preprocess nodes). A static model runs through its
plan (opbuild/om/plan.py, docs/om-format.md "Static models: the run plan").
"""

from __future__ import annotations

import threading
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from opbuild.abi.ge_types import dtype_name, numpy_dtype
from opbuild.keys import KeyRuleError, check_fragment
from opbuild.nonfinite import from_json
from opbuild.om import plan as om_plan
from opbuild.om.errors import OmError, listed
from opbuild.om.loader import OmModel
from opbuild.om.static_check import check_static_node
from opbuild.runtime.binaries.package import BinaryEntry, BinaryIndex
from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call.launch import LAUNCH_OBSERVERS
from opbuild.runtime.debug.context import CURRENT_MODEL, CURRENT_NODE
from opbuild.runtime.errors import ACLNN_ERR_INNER, ACLNN_ERR_PARAM_INVALID, AclnnError
from opbuild.runtime.host.c_callbacks import TilingResult
from opbuild.spec.serialize import spec_from_dict

_FD_ROOT = Path("/proc/self/fd")


class OmEntry(BinaryEntry):
    """A kernel binary held in a memfd (its paths are /proc/self/fd/N: nothing to check)."""

    __slots__ = ()

    def checked_bin_path(self, config: Any = None) -> Path:
        return self.bin_path


class NodeProvider:
    """The op package of one node of an .om (see opbuild.runtime.binaries.selection.OpRuntime.resolve_package)."""

    def __init__(self, model: OmModel, node: dict[str, Any]) -> None:
        self.model = model
        self.node = node
        self.op_def = model.model_def["ops"][node["op"]]
        self.vendor = self.op_def["package"]
        self._index: BinaryIndex | None = None
        self._aicpu = None  # the AI CPU kernel library, loaded on first use
        self.label = Path(f"<om {model.name}>/{self.vendor}")

    def __str__(self) -> str:
        return str(self.label)

    def _entry(self, key: str, item: str) -> OmEntry:
        bin_file, json_file = self.model.kernel_files[item]
        af = self.node.get("autofuse_so")
        if af is not None:
            bin_file = self.model.autofuse[af]
        return OmEntry(self.op_def["op"], item.split(":", 1)[1], str(bin_file.fd), str(json_file.fd), 2, (key,), _FD_ROOT)

    def binary_index(self, soc: str) -> BinaryIndex:
        if soc != self.model.model_def["soc"]:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"model {self.model.name} was built for {self.model.model_def['soc']}, "
                                                      f"the runtime SoC is {soc} (OPBUILD_SOC)")
        if self._index is None:
            op = self.op_def["op"]
            by_key: dict[str, BinaryEntry] = {key: self._entry(key, item)
                                              for key, item in sorted(self.op_def["binaries"].items())}
            self._index = BinaryIndex(self.label, soc, (Path(f"<om {self.model.name}>/TBE_KERNELS"),), by_key,
                                      {op: tuple(by_key)}, {})
        return self._index

    def aicpu_library(self):
        """The package's libcust_aicpu_kernels.so from CUST_AICPU_KERNELS (an AI CPU node)."""
        from opbuild.om.build import aicpu_item_name
        from opbuild.runtime.call.aicpu import AicpuLibrary

        if self._aicpu is None:
            f = self.model.aicpu_files.get(aicpu_item_name(self.vendor))
            if f is None:
                raise AclnnError(ACLNN_ERR_INNER, f"node {self.node['name']}: no AI CPU kernels of {self.vendor} in "
                                                  f"the model")
            self._aicpu = AicpuLibrary(f.path)
        return self._aicpu

    def tiling_library(self):
        if self.node["preprocess"]:
            return self.model.device[self.vendor].library
        lib = self.model.space_registry.get(self.vendor)
        if lib is None:
            raise AclnnError(ACLNN_ERR_INNER, f"node {self.node['name']} ({self.op_def['op']}): static model without a "
                                              f"tiling library, and the call differs from the one tiled at build time")
        return lib.library

    def op_proto_library(self):
        """Dynamic models: the packed SpaceRegistry .so (the package's tiling library, which holds
        the generated inference functions too); static models carry none (inferred_outputs).
        Format-1 models: built from their embedded definitions (opbuild/om/legacy.py)."""
        md = self.model.model_def
        if md["format_version"] == 1:
            from opbuild.om import legacy

            specs = [self._spec(op) for op in md["ops"].values() if op["package"] == self.vendor]
            try:
                return legacy.op_proto_library(specs, self.vendor)
            except OmError as exc:
                raise AclnnError(ACLNN_ERR_INNER, f"model {self.model.name}: {exc}") from None
        lib = self.model.space_registry.get(self.vendor)
        return lib.library if lib is not None else None

    @staticmethod
    def _spec(op_def):
        return spec_from_dict(op_def["definition"], Path(f"/nonexistent/om/{op_def['op']}/op.yaml"))

    def inferred_outputs(self, spec, inputs):
        """Static nodes: the outputs the op_proto library gave when the model was built, for the
        inputs it was built with (other inputs: None)."""
        sel = self.node.get("selected")
        shapes = self.node.get("output_shapes")
        if sel is None or shapes is None or self.model.model_def["dynamic"]:
            return None
        if [[list(i[2]) for i in g] for g in inputs] != sel.get("input_shapes"):
            return None
        if sel.get("output_shapes") is not None:  # what the tiling covers (static_check: the descriptors agree)
            shapes, dtypes = sel["output_shapes"], sel["output_dtypes"]
        else:
            dtypes = self.node["output_dtypes"]
        return [(tuple(s), dt) for s, dt in zip(shapes, dtypes, strict=False)]  # (read from the model file)

    def fragment_fn(self, spec):
        sel = self.node.get("selected")
        if sel is not None and not self.model.model_def["dynamic"]:
            fixed = sel["fragment"]
            return lambda ctx: fixed
        source = self.op_def.get("key_rule_source")
        if spec.key_rule.callback != "python":
            return None
        if source is None:
            raise AclnnError(ACLNN_ERR_INNER, f"{spec.op}: its Python key rule is not in the model")
        if not self.model.trusted:  # load() checks trust first; never exec source of an untrusted model
            raise AclnnError(ACLNN_ERR_INNER, f"{spec.op}: model {self.model.name} is not trusted, its Python key "
                                              f"rule does not run")
        module = types.ModuleType(f"opbuild_om_keyrule_{spec.snake}_{id(self):x}")
        try:
            exec(compile(source, f"<om {self.model.name}: {spec.snake}/{spec.key_rule.py_module}.py>", "exec"),
                 module.__dict__)
            fn = getattr(module, spec.key_rule.py_function)
        except Exception as exc:  # noqa: BLE001 - a broken packed key rule
            raise AclnnError(ACLNN_ERR_INNER, f"{spec.op}: packed key rule unusable: {type(exc).__name__}: {exc}") from None

        def fragment(ctx):
            try:
                result = fn(ctx)
            except Exception as exc:
                raise KeyRuleError(f"{spec.op}: GenSimplifiedKey callback raised {type(exc).__name__}: {exc}") from exc
            problem = check_fragment(result)
            if problem is not None:
                raise KeyRuleError(f"{spec.op}: GenSimplifiedKey callback returned an invalid fragment: {problem}")
            return result

        return fragment

    def precomputed_tiling(self, spec, full_key, in_inst, out_inst, attrs):
        ref = self.node.get("tiling")
        sel = self.node.get("selected")
        if ref is None or sel is None:
            return None
        item = self.model.tilings[ref]
        meta = item.meta
        shapes = [[list(i[2]) for i in g] for g in in_inst]
        if meta.get("full_key") != full_key or shapes != sel.get("input_shapes"):
            return None
        try:
            values = [meta["block_dim"], meta["tiling_key"], meta["workspace_size"]]
            if not all(type(v) is int and 0 <= v < 1 << 64 for v in values):
                raise ValueError(f"bad values {values}")
        except (KeyError, ValueError) as exc:
            raise AclnnError(ACLNN_ERR_INNER, f"TILING_DATA item {ref!r}: {exc}") from None
        return TilingResult(values[0], values[1], values[2], bytes(item.data))


@dataclass(frozen=True)
class _Step:
    """What running one node needs, read from the model definition once (not at every run): the
    call (AI Core or AI CPU one-shot), its tensor names (an input a name, a list of names for a
    dynamic input, or None) and its attribute values in spec order."""

    name: str
    op: OpRuntime
    call: Any
    inputs: tuple[Any, ...]
    attrs: list[Any]
    outputs: tuple[str, ...]
    single: bool

    @classmethod
    def of(cls, node: dict[str, Any], op: OpRuntime) -> "_Step":
        from opbuild.runtime import api

        inputs = tuple(tuple(t) if isinstance(t, list) else t for t in node["inputs"])
        attrs = [from_json(a.type, node["attrs"].get(a.name)) for a in op.spec.attrs]
        call = api.call_aicpu if op.spec.is_aicpu else api.call
        return cls(node["name"], op, call, inputs, attrs, tuple(node["outputs"]), len(op.spec.outputs) == 1)


class OmRunner:
    """Runs a loaded model: `run({input name: array}) -> {output name: array}`.

    A static model runs through its plan (opbuild/om/plan.py), made at the first run: executors
    made once, intermediates in buffers allocated once. The arrays `run` returns are new at each
    run (never a buffer a later run writes). Dynamic models, and a run while another thread runs
    the same runner, take the one-shot call per node.
    """

    def __init__(self, model: OmModel, *, trust: bool = False) -> None:
        model.load(trust=trust)  # a model loaded (trusted) before is kept as it is
        self.model = model
        md = model.model_def
        self.d = bool(md["deterministic"])
        self.p = md["impl_mode"]
        self.steps: list[_Step] = []
        descs: dict[str, tuple[str, Any]] = {t["name"]: (t["dtype"], t["shape"]) for t in md["inputs"] + md["weights"]}
        for node in md["nodes"]:
            op_def = md["ops"][node["op"]]
            try:
                spec = spec_from_dict(op_def["definition"], Path(f"/nonexistent/om/{op_def['op']}/op.yaml"))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise OmError(f"op {node['op']}: definition unusable: {type(exc).__name__}: {exc}", "MODEL_DEF") from None
            if spec.op != op_def["op"] or spec.op != node["type"]:
                raise OmError(f"node {node['name']}: op type {node['type']} disagrees with its definition", "MODEL_DEF")
            if len(node["inputs"]) != len(spec.inputs) or len(node["outputs"]) != len(spec.outputs):
                raise OmError(f"node {node['name']}: wrong number of inputs/outputs for {spec.op}", "MODEL_DEF")
            if not md["dynamic"] and not spec.is_aicpu and node.get("selected") is not None:
                groups = [[] if t is None else [descs[x] for x in (t if isinstance(t, list) else [t])]
                          for t in node["inputs"]]
                item = model.kernels[op_def["binaries"][node["selected"]["full_key"]]]
                check_static_node(model.label, node, spec.op, item.meta, groups)
            shapes = node.get("output_shapes") or [None] * len(node["outputs"])
            descs.update(zip(node["outputs"], zip(node["output_dtypes"], shapes, strict=False), strict=False))
            self.steps.append(_Step.of(node, OpRuntime(spec, NodeProvider(model, node))))
        self.weights: dict[str, np.ndarray] = {}
        for name, item in model.weights.items():
            try:
                dt = numpy_dtype(item.meta["dtype"])
                shape = tuple(int(x) for x in item.meta["shape"])
                arr = np.frombuffer(item.data, dtype=dt)
                self.weights[name] = om_plan.aligned(arr.reshape(shape))  # the C fast path wants aligned data
            except (KeyError, TypeError, ValueError) as exc:
                raise OmError(f"weight {name}: {exc}", "WEIGHTS_DATA") from None

        self._input_checks = [(t["name"], np.dtype(numpy_dtype(t["dtype"])), tuple(t["shape"])) for t in md["inputs"]]
        self._plan: om_plan.StaticPlan | None = None
        self._planned = bool(md["dynamic"])  # True once the plan was made (or is not to be made)
        self._lock = threading.Lock()

    @property
    def plan(self) -> om_plan.StaticPlan | None:
        """The plan of a static model (None before the first run, and for a dynamic model)."""
        return self._plan

    def run(self, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
        given = self._checked_inputs(inputs)
        if not self._lock.acquire(blocking=False):
            return self._run_calls(given)
        try:
            if not self._planned:
                self._plan = om_plan.build(self.steps, self.model.model_def, self.weights, self.d, self.p)
                self._planned = True
            if self._plan is None:
                return self._run_calls(given)
            return self._run_plan(self._plan, given)
        finally:
            self._lock.release()

    def _checked_inputs(self, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
        """The model inputs as arrays, each checked against the model's dtype and shape."""
        tensors: dict[str, np.ndarray] = {}
        for name, dt, shape in self._input_checks:
            a = inputs.get(name)
            if type(a) is not np.ndarray or a.dtype != dt or a.shape != shape:
                break  # not the model's exact dtype and static shape: the full check says what differs
            tensors[name] = a
        else:
            if len(inputs) == len(tensors):
                return tensors
        md = self.model.model_def
        tensors = {}
        for spec_in in md["inputs"]:
            name = spec_in["name"]
            if name not in inputs:
                raise OmError(f"model input {name!r} is missing (inputs: {listed(i['name'] for i in md['inputs'])})")
            a = np.asarray(inputs[name])
            try:
                given = dtype_name(a.dtype)
            except ValueError:
                given = str(a.dtype)
            if given != spec_in["dtype"]:
                raise OmError(f"input {name}: dtype {given}, the model wants {spec_in['dtype']}")
            want = spec_in["shape"]
            if len(a.shape) != len(want) or any(w != -1 and w != s for w, s in zip(want, a.shape, strict=True)):
                raise OmError(f"input {name}: shape {list(a.shape)}, the model wants {want}")
            tensors[name] = a
        extra = set(inputs) - {i["name"] for i in md["inputs"]}
        if extra:
            raise OmError(f"unknown model input(s) {listed(sorted(extra))}")
        return tensors

    def _run_plan(self, plan: om_plan.StaticPlan, given: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One run of a planned static model (the caller holds the runner's lock)."""
        tensors: dict[str, Any] = dict(plan.fixed) if plan.calls else {}
        for name, a in given.items():
            tensors[name] = plan.bind_input(name, a)
        for name, shape, dtype in plan.fresh:
            a = np.empty(shape, dtype)
            tensors[name] = a
            plan.rebind(name, a)
        observed = bool(LAUNCH_OBSERVERS)  # a dump or profiler: it reads which model and node launched
        if not observed and not plan.calls:  # nothing reads the debug context: no ContextVar set
            for action in plan.actions:
                action[1](None, 0, action[2])
        else:
            self._run_actions(plan, tensors, observed)
        fixed = plan.fixed
        for name in plan.copied:
            tensors[name] = fixed[name].copy()
        return {name: tensors[name] if name in tensors else fixed[name] for name in plan.outputs}

    def _run_actions(self, plan: om_plan.StaticPlan, tensors: dict[str, Any], observed: bool) -> None:
        """The plan's actions with the debug context set (the model; the node: while observed, and
        for one-shot calls), and the one-shot calls of unplanned nodes."""
        token = CURRENT_MODEL.set(self.model.name)
        node_token = CURRENT_NODE.set(None)
        try:
            d, p = self.d, self.p
            for action in plan.actions:
                if action[0] is om_plan.LAUNCH:
                    if observed:
                        CURRENT_NODE.set(action[3])
                    action[1](None, 0, action[2])
                    continue
                step = action[1]
                CURRENT_NODE.set(step.name)
                args = [None if t is None else tensors[t] if type(t) is str else [tensors[x] for x in t]
                        for t in step.inputs]
                result = step.call(step.op, args, step.attrs, d, p)
                for name, value in zip(step.outputs, (result,) if step.single else result, strict=True):
                    tensors[name] = value
                    plan.rebind(name, value)
        finally:
            CURRENT_NODE.reset(node_token)
            CURRENT_MODEL.reset(token)

    def _run_calls(self, given: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One run by the one-shot call of each node (a dynamic model, or a concurrent run)."""
        md = self.model.model_def
        tensors: dict[str, Any] = dict(self.weights)
        tensors.update(given)
        token, node_token = CURRENT_MODEL.set(self.model.name), CURRENT_NODE.set(None)  # the dump's selection and index
        try:
            d, p = self.d, self.p
            for step in self.steps:
                args = [None if t is None else tensors[t] if type(t) is str else [tensors[x] for x in t]
                        for t in step.inputs]
                CURRENT_NODE.set(step.name)
                result = step.call(step.op, args, step.attrs, d, p)
                if step.single:
                    tensors[step.outputs[0]] = result
                else:
                    for name, value in zip(step.outputs, result, strict=True):
                        tensors[name] = value
        finally:
            CURRENT_NODE.reset(node_token)
            CURRENT_MODEL.reset(token)
        return {name: tensors[name] for name in md["outputs"]}
