"""An op package's host-side C functions, called through ctypes: the tiling function and its
TilingContext (tiling_context), the tiling and simplified-key libraries (c_callbacks), shape and
dtype inference (op_proto). The runtime calls them on a miss; the build and `opbuild validate`
call the same bindings to check a package by running it (docs/architecture.md)."""
