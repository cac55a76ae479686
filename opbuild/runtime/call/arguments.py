"""Phase 1's argument handling: what a call's tensors and attributes are, checked and normalized.

`normalize_tensors` / `normalize_attrs` turn the arguments of aclnnXxxGetWorkspaceSize into
(array, format) instances and a hashable attribute tuple, raising the AclnnError CANN would;
`params_key` is the cache key of normalized arguments; `simple_key` the same key of a "simple"
op called with numpy arrays or ND Tensors (the one the C fast path builds), so a hit skips
normalization. Kept apart from plan building and launching so
the key a call maps to is defined in one place.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from opbuild.abi.ge_types import FORMAT_TO_GE, dtype_name
from opbuild.abi.vocabulary import ATTR_TYPES
from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call import cache_key
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from opbuild.runtime.tensor import Tensor, as_array

_DTYPE_NAMES: dict[np.dtype, str] = {}


def _dtype_name(dtype: np.dtype) -> str:
    """ge_types.dtype_name, memoized (numpy's dtype.name is slow) for native byte order only (so
    a dtype in _DTYPE_NAMES is one a call may use as is); ValueError for unsupported."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = dtype_name(dtype)
        if dtype.isnative:
            _DTYPE_NAMES[dtype] = name
    return name


def _tensor_arg(value: Any, what: str, optional: bool, output: bool = False) -> tuple[np.ndarray | None, str]:
    if value is None and optional:
        return None, "ND"
    if value is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} is a null pointer")
    array, fmt = as_array(value, what)
    if not array.dtype.isnative:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} has non-native byte order ({array.dtype.str}); "
                                                  f"convert it with .astype('{array.dtype.newbyteorder('=').str}')")
    try:
        _dtype_name(array.dtype)
    except ValueError as exc:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: {exc}") from None
    if output and not array.flags.writeable:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} is read-only")
    return array, fmt


def normalize_tensors(op: OpRuntime, values: Sequence[Any], outputs: bool) -> list[list[tuple[np.ndarray, str]]]:
    """Per IR param, its instances as (array, format): [] absent optional, [one], or a list."""
    params = op.spec.outputs if outputs else op.spec.inputs
    if values is None or len(values) != len(params):
        kind = "outputs" if outputs else "inputs"
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.spec.op} takes {len(params)} {kind}, got {0 if values is None else len(values)}")
    result = []
    whats = op.output_what if outputs else op.input_what
    for param, value, what in zip(params, values, whats, strict=True):
        if param.param_type == "dynamic":
            if value is None:
                raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} (tensor list) is a null pointer")
            if not isinstance(value, (list, tuple)) or not value:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} must be a non-empty list of tensors")
            group = []
            for k, v in enumerate(value):
                array, fmt = _tensor_arg(v, f"{what}[{k}]", False, outputs)
                if array is not None:  # (always: a list's tensors are not optional)
                    group.append((array, fmt))
            result.append(group)
        else:
            array, fmt = _tensor_arg(value, what, param.param_type == "optional", outputs)
            result.append([] if array is None else [(array, fmt)])
    return result


def normalize_plain(op: OpRuntime, arrays: Sequence[np.ndarray]) -> tuple[list, list] | None:
    """normalize_tensors of a simple op's call given as plain arrays (simple_key's), one per
    parameter: (inputs, outputs); None when one needs the general path (an unsupported dtype or
    byte order, a read-only output: normalize_tensors says what is wrong)."""
    names = _DTYPE_NAMES
    n_in = op.n_inputs
    for a in arrays:
        if a.dtype not in names:
            return None
    for a in arrays[n_in:]:
        if not a.flags.writeable:
            return None
    return [[(a, "ND")] for a in arrays[:n_in]], [[(a, "ND")] for a in arrays[n_in:]]


_ATTR_CHECK = {t.name: t.check for t in ATTR_TYPES}
_ATTR_CONVERT = {t.name: t.convert for t in ATTR_TYPES}
"""Per attribute type, whether an argument is one and its stored value (vocabulary.AttrType)."""


def normalize_attrs(op: OpRuntime, values: Sequence[Any]) -> tuple:
    """Attribute values in spec order, defaults filled in, types checked; hashable."""
    attrs = op.spec.attrs
    if values is None or len(values) != len(attrs):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.spec.op} takes {len(attrs)} attributes, got {0 if values is None else len(values)}")
    out = []
    for attr, value in zip(attrs, values, strict=True):
        if value is None:
            if attr.required:
                raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{op.spec.op}: required attribute '{attr.name}' is missing")
            value = attr.default
        if not _ATTR_CHECK[attr.type](value):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.spec.op}: attribute '{attr.name}' must be {attr.type}, got {value!r}")
        out.append(_ATTR_CONVERT[attr.type](value))
    return tuple(out)


def params_key(op: OpRuntime, dp: int, in_params: list, out_params: list, attr_values: tuple) -> bytes | None:
    """The cache key of a call's normalized tensors and attributes: opkey.h's words as bytes, as
    simple_key's (the same words for a call both cover), for the calls simple_key does not take
    (optional or list parameters, formats other than ND, Tensors, numpy scalar attributes). None
    when the call has no key (strides not in whole elements): it is then planned on every call.
    Made in C (fastpath.c params_key) when the extension is built, else by cache_key.params_key."""
    fn = _PARAMS_KEY[0]
    if fn is None:
        fn = _PARAMS_KEY[0] = _params_key_function()
    return fn(op.key_id, dp, op.slot_kinds, in_params + out_params, FORMAT_TO_GE, op.attr_tags, attr_values)


_PARAMS_KEY: list = [None]


def _params_key_function():
    from opbuild.runtime.call.fast_wrappers import _fastpath_ready
    from opbuild.runtime.call.plan_cache import _fastpath

    return _fastpath.params_key if _fastpath is not None and _fastpath_ready() else cache_key.params_key


_ndarray = np.ndarray


def _plain_array(value: Any) -> np.ndarray | None:
    """The array of a numpy array or an ND Tensor (what simple keys take); None for anything else."""
    if type(value) is _ndarray:
        return value
    if type(value) is Tensor and value.format == "ND":
        return value.array
    return None


def simple_key(op: OpRuntime, dp: int, inputs: Sequence[Any], attrs: Sequence[Any],
               outputs: Sequence[Any]) -> tuple[bytes, list[np.ndarray]] | None:
    """(cache key, arrays) of a simple op's call given as numpy arrays or ND Tensors, else None.

    The key is the call's opkey.h words as bytes (one definition of the key): made by the op's
    key function (`op.call_key`: the C fast path's Phase1.key, or cache_key.plain_call_key
    without the extension), the key the C fast path's hits look up, so both share cached plans.
    """
    if not op.simple or len(inputs) != op.n_inputs or len(outputs) != op.n_outputs or len(attrs) != op.n_attrs:
        return None
    arrays = []
    for v in (*inputs, *outputs):
        a = v if type(v) is _ndarray else _plain_array(v)
        if a is None:
            return None
        arrays.append(a)
    call_key = op.call_key
    if call_key is None:
        from opbuild.runtime.call.fast_wrappers import key_function

        call_key = key_function(op)
    n_in = op.n_inputs
    key = call_key(dp, *arrays[:n_in], *attrs, *arrays[n_in:])
    return None if key is None else (key, arrays)
