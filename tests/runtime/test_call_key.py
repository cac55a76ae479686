"""One cache key: a simple call's key is opkey.h's words, made by the C fast path's Phase1.key
when the extension is built and by cache_key.plain_call_key without it; the two agree on every
call, including which calls they do not key (None: the generic path takes those)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call import cache_key, fast_wrappers
from opbuild.spec.loader import load_spec
from opbuild.spec.model import Attr

fastpath = pytest.importorskip("opbuild.runtime._fastpath")

REPO = Path(__file__).resolve().parents[2]
KINDS = ("int", "float", "bool", "str")


@pytest.fixture(scope="module")
def keyed_op():
    """AddCustomTemplate with one attribute of each scalar type: its C key function and its
    pure-Python one."""
    spec = load_spec(REPO / "ops/add_custom_template/op.yaml")
    attrs = tuple(Attr(f"a_{kind}", k, kind, None) for k, kind in enumerate(KINDS))
    op = OpRuntime(dataclasses.replace(spec, attrs=attrs), None)
    c_key = fast_wrappers.key_function(op)
    assert c_key.__self__.__class__ is fastpath.Phase1  # the extension's: built in this environment
    py_key = lambda dp, *args: cache_key.plain_call_key(op.key_id, op.n_inputs, op.attr_tags,  # noqa: E731
                                                         dp, *args)
    return c_key, py_key


DTYPES = [np.float32, np.float16, np.int8, np.int64, np.bool_, np.complex64, np.dtype(">f4"), np.dtype("<i4")]


@st.composite
def arrays(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    dims = draw(st.lists(st.integers(0, 4), max_size=3))
    a = np.zeros([d * 2 for d in dims], dtype)
    if draw(st.booleans()) and dims:
        a = a[tuple(slice(None, None, 2) for _ in dims)]  # strided view
    if draw(st.booleans()) and a.ndim:
        a = a.T
    if draw(st.booleans()) and a.dtype.itemsize > 1 and a.size:  # strides not in whole elements
        raw = np.zeros(a.size * a.itemsize + 1, np.uint8)[1:]
        a = np.lib.stride_tricks.as_strided(raw[: a.itemsize].view(a.dtype), shape=(a.size,), strides=(1,))
    return a


ODD = st.sampled_from([np.float32(1.5), np.int64(3), None, [1, 2], "\udcff", 2**63, -2**63 - 1, 2**1100, True, 1, 1.5, "s"])
"""Values a key may decline (or take: the one that fits the attribute's type)."""
ATTR_VALUES = {"int": st.integers(-2**63, 2**63 - 1), "float": st.one_of(st.floats(), st.integers(-2**60, 2**60)),
               "bool": st.booleans(), "str": st.text(max_size=20)}


@st.composite
def attr_values(draw):
    """One value per attribute: mostly of its type, sometimes an odd one."""
    return [draw(ODD if draw(st.integers(0, 9)) == 0 else ATTR_VALUES[kind]) for kind in KINDS]


keyed: list[bool] = []


@hsettings(max_examples=300, deadline=None)
@given(tensors=st.lists(arrays(), min_size=3, max_size=3), attrs=attr_values(),
       dp=st.integers(0, 7), env=st.sampled_from([None, "ascend910b", "ascend310p", ""]))
def test_c_key_equals_python_key(keyed_op, tensors, attrs, dp, env):
    import os

    c_key, py_key = keyed_op
    saved = os.environ.get("OPBUILD_SOC")
    try:
        if env is None:
            os.environ.pop("OPBUILD_SOC", None)
        else:
            os.environ["OPBUILD_SOC"] = env
        x, y, z = tensors
        args = (x, y, *attrs, z)
        key = c_key(dp, *args)
        assert key == py_key(dp, *args)
        keyed.append(key is not None)
    finally:
        if saved is None:
            os.environ.pop("OPBUILD_SOC", None)
        else:
            os.environ["OPBUILD_SOC"] = saved


def test_the_property_test_saw_both_outcomes():
    if keyed:  # after test_c_key_equals_python_key (not when run alone with -k)
        assert any(keyed) and not all(keyed)


def test_keys_cover_the_plain_calls_and_decline_the_rest(keyed_op):
    c_key, _ = keyed_op
    x = np.ones(3, np.float32)
    good = (x, x, 1, 0.5, True, "s", x)
    key = c_key(0, *good)
    assert isinstance(key, bytes) and len(key) % 8 == 0
    assert c_key(0, *good) == key and c_key(1, *good) != key  # deterministic; dp is part of it
    assert c_key(0, x, x, 1, 1, True, "s", x) == c_key(0, x, x, 1, 1.0, True, "s", x)  # an int for a float
    for bad in ((x, x, True, 0.5, True, "s", x),  # a bool is not an int attribute
                (x, x, 1, 0.5, 1, "s", x),  # nor an int a bool one
                (x, x, np.int64(1), 0.5, True, "s", x),  # numpy scalars: the generic path converts them
                (x, x, 2**63, 0.5, True, "s", x),  # out of int64
                (x, x.astype(">f4"), 1, 0.5, True, "s", x),  # byte-swapped
                (x, x, 1, 0.5, True, "s")):  # an argument short
        assert c_key(0, *bad) is None


# ---- the key of normalized arguments (the calls simple_key does not take) ---------------------------

from opbuild.abi.ge_types import FORMAT_TO_GE  # noqa: E402
from opbuild.abi.vocabulary import ATTR_TYPES  # noqa: E402
from opbuild.runtime.call.arguments import normalize_attrs, normalize_tensors, params_key  # noqa: E402

FORMATS = sorted(FORMAT_TO_GE)
ITEMS = {"int": st.integers(-2**64, 2**64), "float": st.one_of(st.floats(), st.integers(-2**1030, 2**1030)),
         "bool": st.booleans(), "str": st.text(max_size=12) | st.just("\udcff")}


@st.composite
def normalized_call(draw):
    """(slot kinds, params, attribute tags, attribute values) as normalize_tensors/attrs give them."""
    kinds, params = [], []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["single", "absent", "list"]))
        n = {"single": 1, "absent": 0, "list": draw(st.integers(1, 3))}[kind]
        kinds.append(kind == "list")
        params.append([(draw(arrays()), draw(st.sampled_from(FORMATS))) for _ in range(n)])
    tags, values = [], []
    for t in draw(st.lists(st.sampled_from(ATTR_TYPES), max_size=5)):
        item = ITEMS[t.element]
        tags.append(t.key_tag)
        values.append(tuple(draw(st.lists(item, max_size=4))) if t.is_list else draw(item))
    return bytes(kinds), params, bytes(tags), tuple(values)


@hsettings(max_examples=300, deadline=None)
@given(call=normalized_call(), dp=st.integers(0, 7))
def test_c_params_key_equals_python_params_key(keyed_op, call, dp):
    kinds, params, tags, values = call
    params = [[(a, f) for a, f in g if a.dtype.isnative and a.dtype in cache_key.numpy_dtype_codes()]
              for g in params]  # normalized: native, supported dtypes
    params = [g if k or len(g) <= 1 else g[:1] for k, g in zip(kinds, params)]
    args = (99, dp, kinds, params, FORMAT_TO_GE, tags, values)
    assert fastpath.params_key(*args) == cache_key.params_key(*args)


def test_simple_and_normalized_calls_have_one_key(keyed_op):
    # the same call through simple_key (the C path's words) and through params_key (normalized
    # arguments): the same bytes, so both find the same cached plan
    c_key, _ = keyed_op
    op = c_key.__self__.op
    x = np.ones((2, 3), np.float32)
    z = np.empty((2, 3), np.float32)
    args = (x, x.T.copy().T, 3, 2, False, "mode", z)
    inputs, outputs = normalize_tensors(op, args[:2], False), normalize_tensors(op, [z], True)
    attrs = normalize_attrs(op, args[2:6])
    assert c_key(5, *args) == params_key(op, 5, inputs, outputs, attrs)
    assert params_key(op, 5, inputs, [[(z, "NCHW")]], attrs) != c_key(5, *args)  # the format is in it


_WITHOUT_EXTENSION = r"""
import sys
import numpy as np
import opbuild.runtime as rt
from opbuild.runtime.call import arguments, cache_key, executor
from opbuild.runtime.tensor import Tensor

assert executor._fastpath is None  # OPBUILD_NO_FASTPATH=1: the pure-Python key builders
ops = rt.import_ops(sys.argv[1])
op = ops._OPS["AddCustomTemplate"]
x = np.arange(6, dtype=np.float32).reshape(2, 3)
z = np.empty_like(x)
for _ in range(2):
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    ops.aclnnAddCustomTemplate(None, size, ex)
assert (z == 2 * x).all() and executor.cache_size() == 1
assert op.call_key.func is cache_key.plain_call_key  # made on first use
(key,) = executor._CACHE.table.keys()
assert type(key) is bytes
# an ND Tensor and numpy arrays are one call: the generic key (params_key) is the same bytes
ops.aclnnAddCustomTemplate(None, *ops.aclnnAddCustomTemplateGetWorkspaceSize(Tensor(x), x, z))
assert executor.cache_size() == 1
print("ok")
"""


@pytest.mark.slow
def test_the_same_keys_without_the_extension(package, tmp_path):
    import subprocess
    import sys

    script = tmp_path / "no_ext.py"
    script.write_text(_WITHOUT_EXTENSION)
    env = {**os.environ, "OPBUILD_NO_FASTPATH": "1"}
    run = subprocess.run([sys.executable, str(script), str(package)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
