"""The launch argument of a dynamic (tensor list) input: CANN's GM list layout.

A dynamic input is passed to the kernel as one address holding uint64 words (the layout Ascend C's
`ListTensorDesc` parses, kernel_operator_list_tensor_intf.h; C kernels read it with
opbuild/kernel.h's `opbuild_list_count` / `opbuild_list_item`):

    [0]                     dataPtrOffset: byte offset of the data pointers from the start
    per tensor i            dim_i | (count << 32), then the dim_i sizes of its shape
    at dataPtrOffset        the count data pointers

`count` is the number of tensors (repeated in every tensor's first word); an empty list is the
single word 8.
"""

from __future__ import annotations

import ctypes
from typing import Sequence


def tensor_list_words(pointers: Sequence[int], shapes: Sequence[Sequence[int]]) -> list[int]:
    """The uint64 words of the list of tensors at `pointers` with `shapes`."""
    if len(pointers) != len(shapes):
        raise ValueError(f"{len(pointers)} data pointers for {len(shapes)} shapes")
    count = len(pointers)
    desc: list[int] = []
    for shape in shapes:
        desc.append(len(shape) | count << 32)
        desc.extend(int(d) for d in shape)
    return [8 * (1 + len(desc)), *desc, *(int(p) for p in pointers)]


def pack_tensor_list(pointers: Sequence[int], shapes: Sequence[Sequence[int]]) -> ctypes.Array:
    """The list as a native uint64 array (keep it alive while the kernel runs)."""
    words = tensor_list_words(pointers, shapes)
    return (ctypes.c_uint64 * len(words))(*words)
