"""opbuild.abi.tensor_list: the words of CANN's tensor-list layout (the kernels' reading of them
is tested in tests/ascendc/test_ascendc_pipeline.py::test_list_layout_read_by_kernels)."""

from __future__ import annotations

import pytest

from opbuild.abi.tensor_list import pack_tensor_list, tensor_list_words


def test_words():
    assert tensor_list_words([], []) == [8]
    assert tensor_list_words([0x1000], [(3, 4)]) == [32, 2 | 1 << 32, 3, 4, 0x1000]
    words = tensor_list_words([0xA0, 0xB0], [(5,), ()])
    assert words == [32, 1 | 2 << 32, 5, 0 | 2 << 32, 0xA0, 0xB0]
    assert list(pack_tensor_list([0xA0, 0xB0], [(5,), ()])) == words


def test_pointer_and_shape_counts_must_agree():
    with pytest.raises(ValueError, match="2 data pointers for 1 shapes"):
        tensor_list_words([1, 2], [(1,)])
