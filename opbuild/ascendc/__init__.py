"""The Ascend C front end: op packages written as CANN's Ascend C samples are (an op_host source
with an `ops::OpDef`, a tiling class and tiling/infer functions; an op_kernel source).

Lower layers only: this package may import opbuild.abi and opbuild.spec, never opbuild.runtime.
`host` builds an op_host source against opbuild's clean-room headers
(opbuild/runtime/native/include/ascendc) and reads back what it registered.
"""
