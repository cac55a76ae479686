"""The Ascend C front end: ops whose kernel is Ascend C (`op_kernel/*.cpp`, kernel_operator.h)
and whose host code is a CANN op_host C++ source (an `ops::OpDef`, a tiling class, tiling and
infer functions), compiled unchanged against opbuild's clean-room headers
(opbuild/runtime/native/include/ascendc) and run on the CPU twin.

Lower layers only: this package may import opbuild.abi, opbuild.spec and the build's toolchain,
never opbuild.runtime. The spec stays the single source of truth: `check.check_ascendc_op` reads
the host source back (`host`, `description`), checks op.yaml against it and lowers the spec
(`lower`, `kernel_keys`) to the form every later stage knows. `importer` writes op.yaml from a
CANN op project (`opbuild import ascendc`); `ir_json`, `skeleton` and `msopgen` are CANN's
op-project front end (msopgen's IR JSON, the project skeleton, `msopgen gen`,
`opbuild import msopgen`). docs/ascendc.md, docs/ascendc-host.md, docs/toolkit.md.
"""
