"""Default-mode keys against nnopbase, field by field (golden values from the real formats).

The golden keys are copied from opbase's kernel JSON mock
`nnopbase/mock/built-in/op_impl/ai_core/tbe/kernel/ascend910/quant_batch_matmul_v3/
QuantBatchMatmulV3_fail.json` (what asc_opc writes): QuantBatchMatmulV3 has three required
inputs (x1, x2, scale), three optional ones (offset, pertoken_scale, bias) and one output, and
its keys have four groups. The byte forms follow nnopbase's two converters: the text key of a
binary (NnopbaseCollectorConvertDynamicVerbKey) and the key of a call
(NnopbaseExecutorGenDynamicKey), which must be equal byte for byte for the lookup to hit.
"""

from __future__ import annotations

import pytest

from opbuild.keys import (
    KeyRuleError,
    binary_full_keys,
    call_key_bytes,
    context_for_choices,
    default_groups,
    full_key_of,
    key_bytes,
    keyed_params,
    make_fragment_fn,
)
from opbuild.spec.model import Binary, TensorChoice
from opbuild_spec_factory import make_spec, when

REAL_QBMM_KEYS = [  # supportInfo.simplifiedKey of the mock, verbatim
    "QuantBatchMatmulV3/d=0,p=1/2,2/2,2/27,2/27,2",
    "QuantBatchMatmulV3/d=0,p=0/2,2/2,2/27,2/27,2",
    "QuantBatchMatmulV3/d=1,p=1/2,2/2,2/27,2/27,2",
    "QuantBatchMatmulV3/d=1,p=0/2,2/2,2/27,2/27,2",
]


def qbmm():
    return make_spec(
        "QuantBatchMatmulV3",
        inputs=[("x1", ["int8"]), ("x2", ["int8"]), ("scale", ["bfloat16"]), ("offset", ["float32"], "optional"),
                ("pertoken_scale", ["float32"], "optional"), ("bias", ["int32"], "optional")],
        outputs=[("y", ["bfloat16"])],
        binaries=[Binary("QuantBatchMatmulV3_int8", when(x1="int8", x2="int8", scale="bfloat16", y="bfloat16"),
                         deterministic="ignore")],
    )


def test_binary_keys_equal_the_real_ones():
    spec = qbmm()
    assert [p.name for _, _, p in keyed_params(spec)] == ["x1", "x2", "scale", "y"]
    assert binary_full_keys(spec, spec.binaries[0]) == REAL_QBMM_KEYS


@pytest.mark.parametrize("optionals", [{}, {"offset": "float32"}, {"bias": "int32", "pertoken_scale": "float32"},
                                       {"offset": "float32", "pertoken_scale": "float32", "bias": "int32"}])
def test_call_key_with_optionals_absent_and_present(optionals):
    spec = qbmm()
    choices = {"x1": "int8", "x2": "int8", "scale": "bfloat16", "y": "bfloat16", **optionals}
    ctx = context_for_choices(spec, {k: TensorChoice(v, "ND") for k, v in choices.items()}, None, 0, 1)
    text = full_key_of(spec, ctx, make_fragment_fn(spec))
    assert text == REAL_QBMM_KEYS[0]
    # bytes: the call's (NnopbaseExecutorGenDynamicKey) equal the text key's (ConvertDynamicVerbKey)
    call = call_key_bytes(spec.op, ctx.deterministic, ctx.impl_mode, default_groups(spec, ctx))
    assert call == key_bytes(text) == b"QuantBatchMatmulV3" + bytes([0, 1, 2, 2, 2, 2, 27, 2, 27, 2])


def test_key_bytes_of_real_keys():
    # opbase Mul mock keys (bf16 = 27, float32 = 0, ND = 2)
    assert key_bytes("Mul/d=1,p=0/27,2/0,2/0,2") == b"Mul" + bytes([1, 0, 27, 2, 0, 2, 0, 2])
    assert key_bytes("Mul/d=0,p=0/1,2/1,2/1,2") == b"Mul" + bytes([0, 0, 1, 2, 1, 2, 1, 2])


def test_dynamic_input_counts_once_and_empty_list_has_no_group():
    spec = make_spec("AddN", inputs=[("x", ["float16"], "dynamic")], outputs=[("y", ["float16"])],
                     binaries=[Binary("AddN_fp16", when(x="float16", y="float16"))])
    f16 = TensorChoice("float16", "ND")
    ctx = context_for_choices(spec, {"x": f16, "y": f16}, list_len=3)
    assert full_key_of(spec, ctx, make_fragment_fn(spec)) == "AddN/d=0,p=0/1,2/1,2"
    empty = context_for_choices(spec, {"x": f16, "y": f16}, list_len=0)
    with pytest.raises(KeyRuleError, match="input 'x' has no tensor"):
        make_fragment_fn(spec)(empty)
