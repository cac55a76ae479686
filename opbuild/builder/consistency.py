"""The build-time check that GenSimplifiedKey and the declared binaries agree (docs/package-format.md §2.4).

Before anything is built, `opbuild.validate.validate_op` (what `opbuild validate` runs) checks
every key rule, C callbacks included (from the tiling source compiled alone), and the tiling
symbols. These checks run again on the linked tiling library, which is what ships: a last
guard, which a spec that passed `opbuild validate` does not fail.
"""

from __future__ import annotations

import os
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
    from opbuild.abi.c_callbacks import CKeyCallback, TilingLibrary

    library = TilingLibrary(tiling_lib)
    problems: list[str] = []
    for spec in c_specs:
        try:
            callback = CKeyCallback(library, spec.key_rule.c_symbol, spec)
        except Exception as exc:  # noqa: BLE001
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
        wanted = [("tiling function", spec.tiling.symbol, spec.tiling.source)]
        if spec.infer_shape:
            wanted.append(("infer-shape function", spec.infer_shape, spec.tiling.source))
        for what, symbol, source in wanted:
            if not hasattr(lib, symbol):
                problems.append(f"{spec.spec_path}: {spec.op}: {what} {symbol!r} is not exported by "
                                f"{tiling_lib.name}: define it in {source} with OPBUILD_API")
    return problems


PROBE_SHAPE = (4, 64)
"""The small shape every input gets when the build runs each tiling function once per declared
dtype combination (`check_tiling_overruns`); outputs get the op's inferred shapes."""


def check_tiling_overruns(specs: list[OpSpec], tiling_lib: Path) -> list[str]:
    """Run every tiling function once per declared dtype combination on a small call (PROBE_SHAPE,
    attribute defaults) with a guard region after its tiling data buffer (the kernel's struct,
    opParaSize bytes: what the runtime gives it), and report each one that writes past the
    struct or declares more bytes than it has. The exact write is not known (the guard only sees
    that it changed), so a problem is placed at the tiling function's definition:
    `<tiling source>:line:col: Op: ...`. A tiling function that refuses the probe call is not a
    problem here (it may need other shapes); what it wrote before refusing is still checked."""
    from opbuild.abi.c_callbacks import _TILING_FN, TilingLibrary, _attr_items
    from opbuild.abi.op_proto import InferError, infer_outputs
    from opbuild.abi.platform import platform
    from opbuild.abi.tiling_context import TilingContextError, build_tiling_context
    from opbuild.codegen.tiling import tiling_struct_size
    from opbuild.keys.check import attr_samples
    from opbuild.spec import csource

    library = TilingLibrary(tiling_lib)
    problems: list[str] = []
    for spec in specs:
        if spec.tiling is None:
            continue
        soc = spec.socs[0]
        info = platform(soc)
        capacity = tiling_struct_size(spec)
        attrs = [attr_samples(spec, a)[0] for a in spec.attrs]
        fn = library.symbol(spec.tiling.symbol, _TILING_FN)
        for column, choice in enumerate(spec.combinations()):
            inputs = [[(choice[p.name].dtype, choice[p.name].format, PROBE_SHAPE, None)] for p in spec.inputs]
            try:
                shapes = [s for s, _ in infer_outputs(library, spec, inputs, attrs, soc=soc, core_num=info.core_num,
                                                      ub_size=info.ub_size, dtypes=False)]
            except (InferError, OSError, AttributeError):
                shapes = [None] * len(spec.outputs)
            outputs = [[(choice[p.name].dtype, choice[p.name].format, shape or PROBE_SHAPE, None)]
                       for p, shape in zip(spec.outputs, shapes)]
            try:
                holder = build_tiling_context(spec.op, inputs, outputs, _attr_items(spec, attrs), soc, info.core_num,
                                              info.ub_size, 0, 0, capacity)
            except TilingContextError:
                continue
            fn(holder.ptr)
            overrun = holder.overrun()
            size = holder.tiling_data_size
            if overrun is None and size <= capacity:
                continue
            what = (f"wrote past the end of its {capacity}-byte tiling data (struct {spec.tiling_data_struct}, the "
                    f"kernel's opParaSize): byte {capacity + overrun} changed" if overrun is not None else
                    f"declared {size} bytes of tiling data; its struct {spec.tiling_data_struct} has {capacity}")
            call = ", ".join(f"{p.name}={choice[p.name].dtype}{list(g[0][2])}" for p, g in
                             zip([*spec.inputs, *spec.outputs], [*inputs, *outputs]))
            source = spec.op_dir / spec.tiling.source
            try:
                found = csource.definition(csource.c_functions(source.read_text(errors="replace")), spec.tiling.symbol)
            except OSError:
                found = None
            shown = os.path.relpath(source)  # (the build runs in the project root: named as the author sees it)
            shown = str(source) if shown.startswith("..") else shown
            where = f"{shown}:{found.line}:{found.col}" if found else shown
            problems.append(f"{where}: {spec.op}: tiling function {spec.tiling.symbol} {what}, on the build's probe "
                            f"call ({call}; declared combination {column + 1} of {spec.combination_count})")
            break  # (one report per op)
    return problems
