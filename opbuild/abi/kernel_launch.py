"""The kernel launch ABI shared by the generated launch shim (codegen) and the runtime (plans).

A kernel's last argument, `tiling`, points at the op's tiling data (opParaSize bytes, at least 1)
followed, at the next 8-byte boundary, by the launch's tiling key (uint64, little-endian as the
host): the tiling function's `tiling_set_tiling_key` value. The launch shim reads it before calling
the kernel entry, so `TILING_KEY_IS(k)` / `GetTilingKey()` (opbuild/kernel.h) work like Ascend C's
(whose CPU twin sets it with ICPU_SET_TILING_KEY). Kernels that ignore the key see their tiling
data exactly as before.
"""

from __future__ import annotations

import struct


def tiling_data_size(op_para_size: int) -> int:
    """Bytes of the tiling data part of the tiling argument (a kernel without tiling data still
    gets one byte: the pointer must point somewhere)."""
    return max(op_para_size, 1)


def tiling_key_offset(op_para_size: int) -> int:
    """Offset of the tiling key in the tiling argument."""
    return (tiling_data_size(op_para_size) + 7) // 8 * 8


def tiling_argument(tiling_data: bytes, op_para_size: int, tiling_key: int) -> bytes:
    """The bytes of the tiling argument: the data, zero-padded, then the key."""
    size = tiling_data_size(op_para_size)
    if len(tiling_data) > size:
        raise ValueError(f"{len(tiling_data)} bytes of tiling data, more than the kernel's {size}")
    return tiling_data.ljust(tiling_key_offset(op_para_size), b"\0") + struct.pack("=Q", tiling_key)
