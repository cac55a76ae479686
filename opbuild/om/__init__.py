"""SO in OM: self-contained offline models (.om) that carry the op .so files they need.

    format.py     ModelFileHeader + partition table (GE layout)
    so_store.py   OpSoStore: the SO_BINS partition, SoBinType, so_in_om_flag
    tables.py     our item tables (TILING_DATA / WEIGHTS_DATA of formats 1-2, TBE_KERNELS of format 1)
    ge_tiling.py  TILING_DATA in GE's layout (TilingHeader + records)
    ge_weights.py WEIGHTS_DATA as raw bytes located by the Const descriptors
    model.py      the YAML model format (schemas/model.schema.json)
    build.py      `om build`: dependency analysis and packing
    loader.py     parse + check + route, compat check, memfd loading, OpMasterDevice de-dup
    run.py        execution through the runtime (package provider per node)
    inspect.py    `om inspect`
    single_op.py  `om single-op`; `signature` of a single-op model
    atc.py        the `atc` command line (CANN's options)
    singleop_json.py  CANN's single-op description files (atc --singleop): read, check, name
    aclop.py      AscendCL's single-op API (aclopExecuteV2 & co), called by the C library (acl_op.c)
    aclmdl.py     AscendCL's model API (aclmdlLoadFromFile & co), called by the C library (acl_op.c)

See docs/om-format.md.
"""

from opbuild.om.errors import OmCompatError, OmError

__all__ = ["OmCompatError", "OmError"]
