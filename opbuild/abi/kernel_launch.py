"""The kernel launch ABI shared by the generated launch shim (codegen) and the runtime (plans).

A kernel's last argument, `tiling`, points at the op's tiling data (opParaSize bytes, at least 1)
followed, at the next 8-byte boundary, by the launch's tiling key (uint64, little-endian as the
host): the tiling function's `tiling_set_tiling_key` value. The launch shim reads it before calling
the kernel entry, so `TILING_KEY_IS(k)` / `GetTilingKey()` (opbuild/kernel.h) work like Ascend C's
(whose CPU twin sets it with ICPU_SET_TILING_KEY). Kernels that ignore the key see their tiling
data exactly as before.

Which keys a kernel serves is declared in its descriptor JSON's `kernelList`: one
`{"kernelName": "<kernelName>_<key>"}` per key, the entries asc_opc writes for the kernel
functions it emits per `TILING_KEY_IS` branch (opbase's nnopbase looks a function up by that name;
a MIX entry with taskRation "tilingKey" also carries `tilingKey`). `kernel_list` writes them
(codegen), `kernel_list_keys` reads them back (the runtime, for packages and .om files alike).
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Iterable

TILING_KEY_MAX = (1 << 64) - 1
"""The largest tiling key: a key is a uint64 (the last 8 bytes of the tiling argument)."""


def tiling_data_size(op_para_size: int) -> int:
    """Bytes of the tiling data part of the tiling argument (a kernel without tiling data still
    gets one byte: the pointer must point somewhere)."""
    return max(op_para_size, 1)


def tiling_key_offset(op_para_size: int) -> int:
    """Offset of the tiling key in the tiling argument."""
    return (tiling_data_size(op_para_size) + 7) // 8 * 8


def tiling_argument(tiling_data: bytes, op_para_size: int, tiling_key: int) -> bytes:
    """The bytes of the tiling argument: the data, zero-padded, then the key."""
    return tiling_argument_packer(op_para_size)(tiling_data, tiling_key)


def tiling_argument_packer(op_para_size: int) -> Callable[[bytes, int], bytes]:
    """tiling_argument for kernels of one op_para_size, its sizes worked out once (a call
    signature's cache misses keep one: runtime/call/plans.SignatureTiling)."""
    size = tiling_data_size(op_para_size)
    offset = tiling_key_offset(op_para_size)
    pack_key = _TILING_KEY.pack

    def pack(tiling_data: bytes, tiling_key: int) -> bytes:
        if len(tiling_data) > size:
            raise ValueError(f"{len(tiling_data)} bytes of tiling data, more than the kernel's {size}")
        return tiling_data.ljust(offset, b"\0") + pack_key(tiling_key)

    return pack


_TILING_KEY = struct.Struct("=Q")


def kernel_list(kernel_name: str, keys: Iterable[int]) -> list[dict[str, str]]:
    """A kernel JSON's `kernelList`: one `{"kernelName": "<kernel_name>_<key>"}` per tiling key."""
    return [{"kernelName": f"{kernel_name}_{key}"} for key in keys]


def kernel_list_keys(desc: dict[str, Any]) -> tuple[int, ...]:
    """The tiling keys a kernel descriptor declares in its `kernelList`: each entry's `tilingKey`,
    else the decimal suffix of its `kernelName` after `<kernelName>_` (the descriptor's own
    kernelName). ValueError naming the entry when the list is missing, empty or malformed."""
    entries = desc.get("kernelList")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"kernelList is {entries!r:.60}, expected a non-empty list of "
                         "{\"kernelName\": \"<kernelName>_<tiling key>\"}")
    prefix = f"{desc.get('kernelName')}_"
    keys: list[int] = []
    for i, entry in enumerate(entries):
        name = entry.get("kernelName") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise ValueError(f"kernelList[{i}] is {entry!r:.60}, expected {{\"kernelName\": \"{prefix}<tiling key>\"}}")
        key = entry.get("tilingKey")
        if key is None:
            suffix = name[len(prefix):] if name.startswith(prefix) else ""
            if not (suffix.isascii() and suffix.isdigit()):
                raise ValueError(f"kernelList[{i}] kernelName {name!r} is not {prefix}<tiling key>")
            key = int(suffix)
        if type(key) is not int or not 0 <= key <= TILING_KEY_MAX:
            raise ValueError(f"kernelList[{i}] tiling key {key!r:.60} is not a uint64")
        if key in keys:
            raise ValueError(f"kernelList[{i}] repeats tiling key {key}")
        keys.append(key)
    return tuple(keys)

