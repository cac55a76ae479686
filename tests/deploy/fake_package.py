"""Where the installer tests' fake package keeps its tiling library (importable: tests/deploy's
conftest puts this directory on sys.path)."""

TILING_LIB = "op_impl/ai_core/tbe/op_tiling/lib/linux/x86_64/libcust_opmaster_rt2.0.so"
