"""The build-time check that GenSimplifiedKey and the declared binaries agree (docs/package-format.md §2.4).

Before anything is built, `opbuild.validate.validate_op` (what `opbuild validate` runs) checks
every key rule, C callbacks included (from the tiling source compiled alone), and the tiling
symbols. These checks run again on the linked tiling library, which is what ships: a last
guard, which a spec that passed `opbuild validate` does not fail.
"""

from __future__ import annotations

from pathlib import Path

from opbuild.keys import check_key_consistency, make_fragment_fn
from opbuild.spec.model import OpSpec


def _located(spec: OpSpec, problems: list[str]) -> list[str]:
    return [f"{spec.spec_path}: {p}" for p in problems]


def check_c_callbacks(specs: list[OpSpec], tiling_lib: Path) -> list[str]:
    """Problems of every spec whose GenSimplifiedKey is a C symbol in the linked tiling library."""
    c_specs = [s for s in specs if s.key_rule.callback == "c"]
    if not c_specs:
        return []
    from opbuild.runtime.host.c_callbacks import CKeyCallback, TilingLibrary

    library = TilingLibrary(tiling_lib)
    problems: list[str] = []
    for spec in c_specs:
        try:
            callback = CKeyCallback(library, spec.key_rule.c_symbol, spec)
        except Exception as exc:  # noqa: BLE001 - every failure is a problem of the op
            problems.append(f"{spec.spec_path}: {spec.op}: {exc}")
            continue
        problems += _located(spec, check_key_consistency(spec, make_fragment_fn(spec, c_callback=callback)))
    return problems


def check_tiling_symbols(specs: list[OpSpec], tiling_lib: Path) -> list[str]:
    """Every tiling function (and C infer-shape function) the specs name must be exported by the
    linked tiling library; otherwise the package would build and fail at the first call."""
    import ctypes

    lib = ctypes.CDLL(str(tiling_lib), mode=ctypes.RTLD_LOCAL)
    problems: list[str] = []
    for spec in specs:
        wanted = [("tiling function", spec.tiling_ref.symbol, spec.tiling_ref.source)]
        if spec.infer_shape:
            wanted.append(("infer-shape function", spec.infer_shape, spec.tiling_ref.source))
        for what, symbol, source in wanted:
            if not hasattr(lib, symbol):
                problems.append(f"{spec.spec_path}: {spec.op}: {what} {symbol!r} is not exported by "
                                f"{tiling_lib.name}: define it in {source} with OPBUILD_API")
    return problems

