"""SoC platform table: what a tiling function sees as core_num and ub_size for each SoC.

The numbers are the SoC records of `opbuild.abi.vocabulary` (see `Soc` there for what core_num
and cube_core_num mean, and for the tiling-result bounds device_memory and max_block_dim); this
module is the lookup by (case-insensitive) name.
"""

from __future__ import annotations

from dataclasses import dataclass

from opbuild.abi.vocabulary import SOCS, Soc

__all__ = ["PlatformInfo", "platform", "known_socs"]


@dataclass(frozen=True)
class PlatformInfo:
    soc: str
    core_num: int
    ub_size: int
    cube_core_num: int
    vector_core_num: int
    device_memory: int = Soc.device_memory  # the defaults are the vocabulary's
    max_block_dim: int = Soc.max_block_dim


_TABLE: dict[str, PlatformInfo] = {
    s.name: PlatformInfo(s.name, s.core_num, s.ub_size, s.cube_core_num, s.vector_core_num, s.device_memory,
                         s.max_block_dim) for s in SOCS
}


def known_socs() -> list[str]:
    return sorted(_TABLE)


def platform(soc: str) -> PlatformInfo:
    """The platform of a SoC name (case-insensitive: `Ascend910B` = `ascend910b`)."""
    info = _TABLE.get(soc.lower())
    if info is None:
        raise ValueError(f"unknown SoC {soc!r}; known: {', '.join(known_socs())}")
    return info
