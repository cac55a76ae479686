"""The op API libraries of the sample build (importable: tests/capi is on sys.path)."""

from __future__ import annotations

OPAPI_LIBS: dict[tuple[str, str], tuple[str, ...]] = {
    ("vendors/customize", "libcust_opapi.so"): ("AddCustomTemplate", "AddNCustom", "MulCustom", "NonZeroCustom",
                                                   "SortCustom"),
    ("built-in", "libopapi.so"): (),
    ("built-in", "libopapi_math.so"): ("MulCustom", "ReduceSumCustom"),
    ("built-in", "libopapi_nn.so"): ("LeakyReluCustom",),
}
"""Every op API library `scons ops` makes for the sample ops (package directory under out/opp,
file name) and the ops whose aclnn functions it exports, in op_fallback's search order (custom
first; issue 4: MulCustom is in both packages, ReduceSumCustom in the built-in math domain,
LeakyReluCustom in nn)."""
