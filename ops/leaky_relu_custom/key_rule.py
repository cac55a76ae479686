"""GenSimplifiedKey for LeakyReluCustom: the fragment depends on the dtype and on the attribute.

negative_slope == 0 is plain ReLU and has its own binaries (no multiply in the inner loop).
"""

_SUFFIX = {"float16": "fp16", "float32": "fp32", "bfloat16": "bf16"}


def gen_simplified_key(ctx) -> str:
    """Return the customized key fragment, e.g. `leaky_fp16` or `relu_bf16`."""
    dtype = ctx.input_dtype(0)
    if dtype not in _SUFFIX:
        raise ValueError(f"LeakyReluCustom has no binary for dtype {dtype}")
    kind = "relu" if ctx.attr("negative_slope") == 0.0 else "leaky"
    return f"{kind}_{_SUFFIX[dtype]}"
