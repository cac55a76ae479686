"""GenSimplifiedKey of ScaleCustom: the key follows x's dtype."""

_SUFFIX = {"float16": "fp16", "float32": "fp32"}


def gen_simplified_key(ctx) -> str:
    dtype = ctx.input_dtype(0)
    if ctx.attr("scale") == 0.0:
        return f"zero_{_SUFFIX[dtype]}"
    if dtype == "float16":
        return f"scale_{_SUFFIX[dtype]}"
