"""Bounds of a tiling result, checked once per plan before anything is launched.

A tiling function is op-author C code: its block_dim, workspace size, tiling key and tiling data
size are untrusted numbers. Each must fit the SoC (vocabulary.Soc holds the limits) and the
kernel, or the call fails with 561000 naming the value, instead of a launch of 2^31 blocks, an
allocation of 2^64 bytes or a kernel run with a key it has no branch for (the key must be one its
kernel JSON's kernelList declares: CANN finds no kernel function `<kernelName>_<key>` for any other).
"""

from __future__ import annotations

from opbuild.abi.platform import PlatformInfo
from opbuild.runtime import device
from opbuild.runtime.errors import ACLNN_ERR_INNER, AclnnError

_INT64_LIMIT = 1 << 63


def tiling_limits(info: PlatformInfo, intercore_sync: bool) -> tuple[int, int]:
    """(most blocks, most workspace bytes) of a result check_tiling_result accepts, as numbers: the
    native miss (native/src/signature_miss.c tiling_accepts) takes these; a test holds the two equal."""
    max_blocks = min(info.max_block_dim, device.MAX_SYNC_BLOCKS) if intercore_sync else info.max_block_dim
    return max_blocks, min(info.device_memory, _INT64_LIMIT - 1)


def check_tiling_result(op: str, symbol: str, block_dim: int, workspace_size: int, info: PlatformInfo,
                        intercore_sync: bool, tiling_key: int, tiling_keys: tuple[int, ...]) -> None:
    """AclnnError 561000 naming the op, the tiling function and the value out of bounds
    (`tiling_keys`: the keys the selected kernel declares)."""
    where = f"{op}: tiling function {symbol}"
    if tiling_key not in tiling_keys:
        raise AclnnError(ACLNN_ERR_INNER, f"{where} set tiling key {tiling_key}, which the kernel does not declare "
                                          f"(declared tiling keys: {', '.join(map(str, tiling_keys))}; "
                                          f"spec field tiling.keys)")
    if block_dim == 0:
        raise AclnnError(ACLNN_ERR_INNER, f"{where} set block_dim 0")
    if block_dim > info.max_block_dim:
        raise AclnnError(ACLNN_ERR_INNER, f"{where} set block_dim {block_dim}, more than {info.max_block_dim}, "
                                          f"the most blocks of one launch on {info.soc}")
    if intercore_sync and block_dim > device.MAX_SYNC_BLOCKS:
        raise AclnnError(ACLNN_ERR_INNER, f"{where} set block_dim {block_dim}, more than {device.MAX_SYNC_BLOCKS} "
                                          f"for an intercore_sync kernel")
    if workspace_size >= _INT64_LIMIT:
        raise AclnnError(ACLNN_ERR_INNER, f"{where} set workspace_size {workspace_size} "
                                          f"({workspace_size - (1 << 64)} as int64: negative)")
    if workspace_size > info.device_memory:
        raise AclnnError(ACLNN_ERR_INNER, f"{where} set workspace_size {workspace_size} bytes, more than the "
                                          f"{info.device_memory} bytes of device memory of {info.soc}")
