"""A package's ops as PyTorch operators: `torch.ops.<namespace>.<op_snake>` (optional extra
`pip install 'opbuild[torch]'`).

What: `register(ops, namespace)` (called by a generated module's `register_torch()`) defines one
torch.library operator per op, with a schema derived from the spec (inputs, then attrs with
their defaults), a CPU kernel and a fake (meta) kernel:

* the CPU kernel of the ops the one-shot C path serves is C++ (native/src/torch_kernel.cpp, built
  on first use: torch_build): a cache hit goes from the tensors' memory to the runtime's one-shot
  call and plan table without Python objects; anything else calls the Python kernel below;
* the Python CPU kernel hands the tensors to the runtime's one-shot call (`api.call`) as numpy views of
  the same memory (zero-copy; bfloat16 through an int16 view) and returns the outputs as torch
  tensors over the runtime's arrays (zero-copy again). Key selection, the caches and the errors
  (AclnnError) are the runtime's own;
* the fake kernel gives each output's shape and dtype from the op's own inference
  (`runtime.infer.infer_outputs`: the package's op_proto library, what the one-shot call
  allocates by), so `torch.compile(fullgraph=True)` traces functions using the ops without graph
  breaks. A symbolic (dynamic) dim is specialized to its value first (a guard, not a break): the
  compiled inference takes concrete shapes. A data-dependent output of an AI CPU op
  (NonZeroCustom's) gets unbacked sizes bounded by its inferred bound, as torch.nonzero does;
* an autograd formula whose backward raises: the ops have no gradients, and a backward through
  one is an error naming it rather than torch's warning and a silent `x.grad = None`.

Why here: torch is optional; nothing imports this module unless `register_torch()` is called.
"""

from __future__ import annotations

import math
import re
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from opbuild.abi.vocabulary import ATTR_TYPE, ATTR_TYPES
from opbuild.runtime import api
from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call.arguments import normalize_attrs
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from opbuild.runtime.infer import infer_outputs
from opbuild.spec.model import OpSpec

_SCHEMA_TYPES = {t.name: t.torch for t in ATTR_TYPES}
"""Spec attr type -> torch schema type (vocabulary.AttrType.torch)."""

_LIBRARIES: dict[str, Any] = {}
"""namespace -> its torch.library.Library (kept alive: dropping it unregisters the ops)."""
_LOCK = threading.Lock()


def namespace_of(package: Path | None) -> str:
    """The default namespace of a package's ops: its directory name as an identifier
    (`vendors/customize` -> `customize`, `built-in` -> `built_in`)."""
    name = re.sub(r"\W", "_", package.name if package is not None else "opbuild")
    return f"_{name}" if name[:1].isdigit() else name


def _default(attr_type: str, value: Any) -> str | None:
    """A default in torch schema syntax; None when the schema cannot spell it (non-finite)."""
    if isinstance(value, (tuple, list)):
        items = [_default(ATTR_TYPE[attr_type].element, v) for v in value]
        spelled = [i for i in items if i is not None]
        return None if len(spelled) != len(items) else "[" + ", ".join(spelled) + "]"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def schema(spec: OpSpec) -> str:
    """The torch schema of an op: `(Tensor x, Tensor y, *, float negative_slope=0.01) -> Tensor`."""
    params = []
    for p in spec.inputs:
        kind = {"required": "Tensor", "optional": "Tensor?", "dynamic": "Tensor[]"}[p.param_type]
        params.append(f"{kind} {p.name}")
    for a in spec.attrs:
        text = f"{_SCHEMA_TYPES[a.type]} {a.name}"
        if not a.required:
            default = _default(a.type, a.default)
            text += f"={default}" if default is not None else "=None"
            if default is None:
                text = f"{_SCHEMA_TYPES[a.type]}? {a.name}=None"
        params.append(text)
    outs = ["Tensor[]" if p.param_type == "dynamic" else "Tensor" for p in spec.outputs]
    result = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return f"({', '.join(params)}) -> {result}"


def _to_numpy(torch: Any, t: Any, what: str) -> Any:
    """A numpy view of a CPU tensor's memory (no copy). The common case is one `t.numpy()`
    (it refuses non-CPU, grad-requiring and bfloat16 tensors, handled after it)."""
    try:
        return t.numpy()
    except (TypeError, RuntimeError, ValueError, AttributeError):
        pass
    if t is None:
        return None
    if isinstance(t, (list, tuple)):
        return [_to_numpy(torch, x, what) for x in t]
    if t.device.type != "cpu":
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: a {t.device.type} tensor; the ops take CPU tensors")
    t = t.detach()
    import ml_dtypes

    try:
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    except TypeError as exc:  # a dtype numpy has no view of
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: dtype {t.dtype} is not supported: {exc}") from None
    except (RuntimeError, ValueError) as exc:  # e.g. more than 2^63 elements or bytes (an expanded view)
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: a tensor of shape {list(t.shape)} ({t.dtype}) has no "
                                                  f"numpy view: {exc}") from None


def _to_torch(torch: Any, a: Any) -> Any:
    """A torch tensor over an output's memory (no copy)."""
    try:
        return torch.from_numpy(a)
    except TypeError:  # bfloat16 (numpy's via ml_dtypes), a list, or a runtime Tensor
        pass
    if isinstance(a, (list, tuple)):
        return [_to_torch(torch, x) for x in a]
    a = np.asarray(a)
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _binder(op: OpRuntime):
    """(args, kwargs) as torch passes them to a kernel (keywords as given, defaults left out) ->
    the positional arguments in schema order; an attr left out is None (the runtime's default)."""
    names = [p.name for p in op.spec.inputs] + [a.name for a in op.spec.attrs]
    total = len(names)

    def bind(args: tuple, kwargs: dict[str, Any]) -> tuple:
        if not kwargs and len(args) == total:
            return args
        return tuple(args) + tuple(kwargs.get(n) for n in names[len(args):])

    return bind


def _cpu_kernel(torch: Any, op: OpRuntime):
    n_inputs = op.n_inputs
    whats = op.input_what
    call = api.call_aicpu if op.spec.is_aicpu else api.call  # (as the generated wrappers choose)
    multi = op.n_outputs > 1
    bind = _binder(op)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        args = bind(args, kwargs)
        inputs = tuple([_to_numpy(torch, t, w) for t, w in zip(args[:n_inputs], whats, strict=True)])
        result = call(op, inputs, args[n_inputs:])
        if multi:
            return tuple(_to_torch(torch, r) for r in result)
        return _to_torch(torch, result)

    return kernel


def _fake_kernel(torch: Any, op: OpRuntime):
    spec = op.spec
    n_inputs = op.n_inputs
    bind = _binder(op)
    formats = [p.format_at(0) for p in spec.inputs]

    def fake(*args: Any, **kwargs: Any) -> Any:
        args = bind(args, kwargs)
        inputs, attrs = args[:n_inputs], args[n_inputs:]
        attr_values = normalize_attrs(op, list(attrs))
        groups, like = [], None
        for t, fmt in zip(inputs, formats, strict=True):
            tensors = list(t) if isinstance(t, (list, tuple)) else ([] if t is None else [t])
            like = like if like is not None or not tensors else tensors[0]
            groups.append([(str(x.dtype).removeprefix("torch."), fmt, tuple(int(d) for d in x.shape))
                           for x in tensors])
        inferred = infer_outputs(op, groups, attr_values)
        outs = []
        for index, p in enumerate(spec.outputs):
            shape, dtype = inferred[index] if inferred is not None else (None, None)
            if shape is None:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: output '{p.name}' has no shape rule in the "
                                                          f"spec, so torch cannot trace it")
            if dtype is None:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: output '{p.name}' has no dtype for these "
                                                          f"inputs, so torch cannot trace it")
            dims: Sequence[Any] = shape
            if p.shape is not None and p.shape.kind == "data_dependent":
                # op_proto gives the bound; the real dims are known after the run: torch's
                # unbacked sizes, each at most its bound (as for torch.nonzero)
                ctx = torch.library.get_ctx()
                dims = [ctx.new_dynamic_size(min=0, max=int(b)) for b in shape]
            if like is None:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: no input tensor to make the outputs like")
            outs.append(like.new_empty(dims, dtype=getattr(torch, dtype)))
        return outs[0] if len(outs) == 1 else tuple(outs)

    return fake


def no_backward_message(qualified: str, op: OpRuntime) -> str:
    """What a backward through an op says (its Python and its C++ autograd kernel)."""
    return (f"{qualified} ({op.spec.op}) has no backward: opbuild ops are forward-only, so no gradient flows "
            f"through it. Call it under torch.no_grad(), or on detached inputs, when no gradient is needed")


def _no_backward(qualified: str, op: OpRuntime):
    """The op's autograd formula: a backward that says the op has none. Without one torch only
    warns and leaves the inputs' .grad None, a silently wrong training step; with it, a backward
    through the op is a RuntimeError naming it (the forward, and anything under no_grad, run as
    before)."""

    message = no_backward_message(qualified, op)

    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError(message)

    return backward


def cpp_kernel_serves(op: OpRuntime) -> bool:
    """Whether the op's CPU kernel is the C++ one (torch_kernel.cpp): the ops the one-shot C path
    serves -- simple (required tensors, scalar attrs), not AI CPU (api.call_aicpu is Python)."""
    return bool(op.simple) and not op.spec.is_aicpu


def register(ops: dict[str, OpRuntime], namespace: str | None = None, cpp: bool = True) -> Any:
    """Define every op of `ops` (one package's) as torch.ops.<namespace>.<op_snake>; the
    namespace defaults to the package's directory name. Registering a namespace again returns
    the library made the first time.

    The CPU kernel of an op `cpp_kernel_serves` is the C++ one (built on first use,
    torch_build.kernel_library) unless `cpp` is false or it cannot be built (one warning says
    why); it calls the Python kernel for what its hit path does not serve. Other ops, and every
    op then, have the Python kernel."""
    try:
        import torch
    except ImportError:
        raise ImportError("the torch ops need PyTorch: pip install 'opbuild[torch]'") from None
    if namespace is None:
        first = next(iter(ops.values()), None)
        namespace = namespace_of(first.package if first is not None else None)
    with _LOCK:
        lib = _LIBRARIES.get(namespace)
        if lib is not None:
            return lib
        lib = torch.library.Library(namespace, "FRAGMENT")
        native = None
        if cpp and any(cpp_kernel_serves(op) for op in ops.values()):
            from opbuild.runtime import torch_build

            native = torch_build.kernel_library(torch)
        for op in ops.values():
            name = op.spec.snake
            lib.define(f"{name}{schema(op.spec)}")
            qualified = f"{namespace}::{name}"
            torch.library.register_fake(qualified, _fake_kernel(torch, op), lib=lib)
            if native is not None and cpp_kernel_serves(op):  # the CPU and autograd kernels in C++
                native.opbuild_torch_register(namespace.encode(), name.encode(), op, _cpu_kernel(torch, op),
                                              op.n_inputs, op.n_attrs, op.n_outputs,
                                              no_backward_message(qualified, op).encode())
            else:
                lib.impl(name, _cpu_kernel(torch, op), "CPU")
                torch.library.register_autograd(qualified, _no_backward(qualified, op), lib=lib)
        _LIBRARIES[namespace] = lib
        return lib
