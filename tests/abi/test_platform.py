from __future__ import annotations

import pytest

from opbuild.abi.platform import PlatformInfo, known_socs, platform


def test_known_socs():
    assert platform("ascend910b") == PlatformInfo("ascend910b", 40, 196608, 20, 40)
    assert platform("Ascend910B").core_num == 40
    assert platform("ascend910_93").ub_size == 196608
    assert (platform("ascend310p").core_num, platform("ascend310p").ub_size) == (8, 262144)
    assert known_socs() == ["ascend310p", "ascend910_93", "ascend910b"]


def test_unknown_soc_lists_known():
    with pytest.raises(ValueError, match=r"unknown SoC 'ascend999'; known: ascend310p, ascend910_93, ascend910b"):
        platform("ascend999")
