"""C symbol names generated code defines and other stages look up, named once.

The code generator writes functions by these names; the spec's checks across ops (which library
defines which name), the runtime (op_proto's ctypes calls) and the .om runner find them by the
same names. The Ascend C host bridge's symbols are in ascendc_bridge.py.
"""

from __future__ import annotations


def infer_shape_symbol(op: str) -> str:
    """`<Op>InferShape`: GE's name of an op's infer-shape function (IMPLEMT_COMMON_INFERFUNC)."""
    return f"{op}InferShape"


def infer_dtype_symbol(op: str) -> str:
    """`<Op>InferDataType`: as registered with IMPL_OP(...).InferDataType in CANN."""
    return f"{op}InferDataType"


AICPU_FUNCTION_NAME = "RunCpuKernel"
"""The entry the AI CPU calls for every op of the library (opInfo.functionName)."""
AICPU_REGISTRY_SYMBOL = "opbuild_aicpu_kernels"
"""`opbuild_aicpu_kernels(&count)`: the table of an AI CPU kernels library, one entry per op (for tools, tests and the runtime)."""
