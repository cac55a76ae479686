"""SoC platform table: what a tiling function sees as core_num and ub_size for each SoC.

core_num is the core count a vector kernel tiles for (the AIV cores on 910B-class SoCs, which have
two vector cores per cube core); cube_core_num is given for completeness.

The limits a tiling result is checked against before any launch (runtime/call/tiling_bounds.py)
are here too: `max_block_dim`, the most blocks one launch may have (CANN's launch limit, 65535 on
every SoC: blocks beyond core_num run in waves), and `device_memory`, the device's HBM bytes (no
workspace can be larger).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PlatformInfo", "platform", "known_socs"]


@dataclass(frozen=True)
class PlatformInfo:
    soc: str
    core_num: int
    ub_size: int
    cube_core_num: int
    vector_core_num: int
    device_memory: int = 64 << 30
    max_block_dim: int = 65535


_TABLE: dict[str, PlatformInfo] = {
    info.soc: info
    for info in (
        PlatformInfo("ascend910b", core_num=40, ub_size=196608, cube_core_num=20, vector_core_num=40,
                     device_memory=64 << 30),
        PlatformInfo("ascend910_93", core_num=40, ub_size=196608, cube_core_num=20, vector_core_num=40,
                     device_memory=64 << 30),
        PlatformInfo("ascend310p", core_num=8, ub_size=262144, cube_core_num=8, vector_core_num=8,
                     device_memory=24 << 30),
    )
}


def known_socs() -> list[str]:
    return sorted(_TABLE)


def platform(soc: str) -> PlatformInfo:
    """The platform of a SoC name (case-insensitive: `Ascend910B` = `ascend910b`)."""
    info = _TABLE.get(soc.lower())
    if info is None:
        raise ValueError(f"unknown SoC {soc!r}; known: {', '.join(known_socs())}")
    return info
