"""`opbuild om build`: compile a model against an OPP tree into a self-contained .om.

Dependency analysis (seed §3): only what the nodes use is packed —

* dynamic-shape model (an input dim is -1): each used package's tiling/infer-shape library as a
  SpaceRegistry .so named `<lib>_<os>_<arch>.so`, and every kernel binary of each used op (the
  key is computed at run time);
* static-shape model: the binary each node selects (key computed now, by the runtime itself) and
  its precomputed tiling (TILING_DATA);
* `preprocess: true` nodes: their package's device tiling library as OpMasterDevice (tiling runs
  at execution from it);
* `bin_file_path` nodes: that .so as Autofuse (it is launched instead of the selected kernel);
* AI CPU nodes (`engine: aicpu` ops): their package's libcust_aicpu_kernels.so in
  CUST_AICPU_KERNELS, once per package (nothing is selected or tiled at build time). A
  data-dependent output has no shape at build time: only AI CPU nodes may consume it in a static
  model.
"""

from __future__ import annotations

import hashlib
import math
import platform as _platform
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import opbuild
from opbuild import safefile
from opbuild.abi import package_layout as layout
from opbuild.abi.ge_types import numpy_dtype
from opbuild.abi.vocabulary import DTYPE, IMPL_MODE_INDEX, SOC
from opbuild.nonfinite import to_json
from opbuild.om import format as omf
from opbuild.om import ge_tiling, ge_weights, kernel_store, so_store, tables
from opbuild.om import model_def as model_def_proto
from opbuild.om.errors import OmError
from opbuild.om.model import Model, Node
from opbuild.runtime.binaries.package import binary_index, read_load_priority
from opbuild.runtime.call.aicpu import package_has_op
from opbuild.spec.serialize import spec_to_dict

FORMAT, FORMAT_VERSION = model_def_proto.FORMAT, model_def_proto.FORMAT_VERSION
IMPL_MODES = IMPL_MODE_INDEX
MAX_VERSION_INFO_BYTES = 64 << 10
"""A package's version.info is a few lines; a larger one is refused (opbuild/safefile.py)."""


def host_os() -> str:
    return _platform.system().lower()


def host_cpu() -> str:
    return layout.host_arch()


def opp_version() -> str:
    """The runtime ABI the packed .so files are built against (TilingContext, kernel launch)."""
    return f"opbuild-{opbuild.version()}"


def space_registry_name(os_name: str | None = None, cpu: str | None = None) -> str:
    stem = layout.TILING_LIB_NAME[:-3]
    return f"{stem}_{os_name or host_os()}_{cpu or host_cpu()}.so"


def _version_info(package: Path) -> str:
    try:
        text = safefile.read_text(package / layout.VERSION_INFO, MAX_VERSION_INFO_BYTES)
    except FileNotFoundError:
        return "unknown"
    except safefile.UnsafeFileError as exc:
        raise OmError(f"cannot read the package's {exc}") from None
    for line in text.splitlines():
        if "=" in line:
            return line.split("=", 1)[1].strip()
    return "unknown"


def device_so_name(vendor: str, package: Path) -> str:
    """Name of a package's device tiling .so: built-in by type and version, custom by vendor."""
    if vendor == "built-in":
        return f"libopmaster_device_{_version_info(package)}.so"
    return f"libcust_opmaster_device_{vendor.split('/', 1)[1]}.so"


class _Packages:
    """The packages of an OPP tree, in runtime search order: the vendor packages `custom_roots`
    (ASCEND_CUSTOM_OPP_PATH's entries, each named `vendors/<its directory name>`), the OPP tree's
    vendors by load_priority, built-in."""

    def __init__(self, opp: Path, soc: str, custom_roots: Sequence[Path] = ()) -> None:
        self.opp = opp
        self.soc = soc
        self.custom: dict[str, Path] = {}
        for root in custom_roots:
            self.custom.setdefault(f"vendors/{Path(root).resolve().name}", Path(root))
        self.order: list[str] = list(self.custom)
        self.order += [v for v in (f"vendors/{v}" for v in read_load_priority(opp / "vendors" / "config.ini"))
                       if v not in self.custom]
        if (opp / "built-in").is_dir():
            self.order.append("built-in")
        self._modules: dict[str, Any] = {}

    def root(self, vendor: str) -> Path:
        return self.custom.get(vendor) or self.opp / vendor

    def find(self, op: str, wanted: str | None) -> str:
        candidates = [wanted] if wanted else self.order
        for vendor in candidates:
            root = self.root(vendor)
            if root.is_dir() and (op in binary_index(root, self.soc).keys_by_op or package_has_op(root, op)):
                return vendor
        where = ", ".join(str(self.root(v)) for v in candidates) or f"(no packages under {self.opp})"
        raise OmError(f"op {op} is in no package for {self.soc}; searched {where}")

    def op_runtime(self, vendor: str, op: str):
        from opbuild.runtime.api import import_ops

        module = self._modules.get(vendor)
        if module is None:
            module = self._modules[vendor] = import_ops(self.root(vendor))
        return module._OPS[op]


def aicpu_item_name(vendor: str) -> str:
    """The CUST_AICPU_KERNELS item of a package's libcust_aicpu_kernels.so."""
    return f"{vendor.replace('vendors/', '')}:{layout.AICPU_KERNELS_LIB}"


def _attr_values(op_rt, node: Node) -> list[Any]:
    known = {a.name for a in op_rt.spec.attrs}
    unknown = set(node.attrs) - known
    if unknown:
        raise OmError(f"node {node.label}: {op_rt.spec.op} has no attribute(s) {sorted(unknown)} (has {sorted(known)})")
    return [node.attrs.get(a.name) for a in op_rt.spec.attrs]


def _key_rule_source(spec) -> str | None:
    if spec.key_rule.callback != "python":
        return None
    from opbuild.keys.rules import callback_path

    try:
        return callback_path(spec).read_text(encoding="utf-8")
    except OSError as exc:
        raise OmError(f"{spec.op}: cannot read its Python key rule: {exc}") from None


def build_om(model: Model, opp: str | Path, *, so_info_override: dict[str, str] | None = None,
             soc_version: str | None = None, atc_cmdline: str = "", framework_type: str = "",
             custom_roots: Sequence[Path] = ()) -> bytes:
    """The .om bytes of `model`, built against the OPP tree `opp` (e.g. out/opp) and the vendor
    packages `custom_roots` (ASCEND_CUSTOM_OPP_PATH's entries, searched first).

    soc_version: the full SoC name the model attribute `soc_version` records (default: the
    model's SoC's, vocabulary.Soc.soc_version); atc_cmdline, framework_type: the model attributes
    `atc --mode=6` prints (the atc command line; GE's framework number, "5" for ONNX)."""
    from opbuild.runtime.call import executor as ex
    from opbuild.runtime.errors import AclnnError
    from opbuild.runtime.infer import infer_outputs

    opp = Path(opp)
    soc = model.soc
    packages = _Packages(opp, soc, custom_roots)
    d = 1 if model.deterministic else 0
    p = IMPL_MODES[model.impl_mode]
    dynamic = model.dynamic
    # tensor name -> (dtype name, shape or None)
    tensors: dict[str, tuple[str, tuple[int, ...] | None]] = {}
    for name, dtype, shape in model.inputs:
        tensors[name] = (dtype, None if dynamic else shape)
    from opbuild.abi.ge_types import dtype_name

    for name, arr in model.weights.items():
        tensors[name] = (dtype_name(arr.dtype), tuple(arr.shape))

    ops: dict[str, dict[str, Any]] = {}
    kernels: dict[str, tables.Item] = {}
    tilings: list[ge_tiling.Tiling] = []
    so_bins: list[so_store.OpSoBin] = []
    so_names: set[tuple[str, str]] = set()
    aicpu_kernels: dict[str, bytes] = {}
    node_defs = []
    used_vendors: list[str] = []
    aicore_vendors: set[str] = set()
    aicpu_vendors: set[str] = set()

    def add_so(name: str, vendor: str, data: bytes, so_type: so_store.SoBinType) -> None:
        if (name, vendor) not in so_names:
            so_names.add((name, vendor))
            so_bins.append(so_store.OpSoBin(name, vendor, data, so_type))

    def add_kernel(vendor: str, entry) -> str:
        item_name = f"{vendor.replace('vendors/', '')}:{entry.name}"
        if item_name not in kernels:
            try:
                data = entry.checked_bin_path().read_bytes()
                desc = safefile.read_json(entry.json_path)
            except (OSError, ValueError) as exc:
                raise OmError(f"{entry.op}: cannot read kernel {entry.name}: {exc}") from None
            kernels[item_name] = tables.Item(item_name, desc, data)
        return item_name

    first_node_id = len(model.inputs) + len(model.weights)  # model_def.node_op_id
    for node_index, node in enumerate(model.nodes):
        vendor = packages.find(node.op, node.package)
        if vendor not in used_vendors:
            used_vendors.append(vendor)
        root = packages.root(vendor)
        op_rt = packages.op_runtime(vendor, node.op)
        spec = op_rt.spec
        op_ref = f"{vendor}:{node.op}"
        index = binary_index(root, soc)
        if op_ref not in ops:
            ops[op_ref] = {"package": vendor, "op": node.op, "definition": spec_to_dict(spec),
                           "key_rule_source": _key_rule_source(spec), "binaries": {}}
        op_def = ops[op_ref]
        if len(node.inputs) != len(spec.inputs) or len(node.outputs) != len(spec.outputs):
            raise OmError(f"node {node.label}: {node.op} takes {len(spec.inputs)} inputs and {len(spec.outputs)} "
                          f"outputs, the node has {len(node.inputs)} and {len(node.outputs)}")
        attrs = _attr_values(op_rt, node)
        try:
            attr_values = ex.normalize_attrs(op_rt, attrs)
        except AclnnError as exc:
            raise OmError(f"node {node.label}: {exc}") from None
        in_groups = []
        unknown = []  # inputs whose shape is known only at run time (a data-dependent output)
        for param, t in zip(spec.inputs, node.inputs, strict=True):
            names = t if isinstance(t, list) else ([] if t is None else [t])
            in_groups.append([(tensors[n][0], param.format_at(0), tensors[n][1] or ()) for n in names])
            unknown += [n for n in names if not dynamic and tensors[n][1] is None and n not in unknown]
        if unknown and not spec.is_aicpu:
            raise OmError(f"node {node.label}: input(s) {', '.join(unknown)} have a data-dependent shape (an AI CPU "
                          f"node's output), but {node.op} is an AI Core op of a static model: build it with dynamic "
                          f"inputs (-1 dims), or let only AI CPU nodes consume it")
        try:  # the package's op_proto library: the same inference the runtime uses
            inferred = infer_outputs(op_rt, in_groups, attr_values, shapes=not (dynamic or unknown))
        except AclnnError as exc:
            raise OmError(f"node {node.label}: {exc}") from None
        if inferred is None:  # (a package always has its op_proto library; only a model's nodes may not)
            raise OmError(f"node {node.label}: {node.op} of {vendor} has no shape and dtype inference")
        out_meta: list[tuple[str, tuple[int, ...] | None]] = []
        for param, (out_shape, out_dtype) in zip(spec.outputs, inferred, strict=True):
            if out_dtype is None:
                raise OmError(f"node {node.label}: output {param.name} of {node.op} has no dtype rule")
            if param.shape is not None and param.shape.kind == "data_dependent":
                out_shape = None  # (op_proto gives its bound; the real shape is known after the run)
            elif not (dynamic or unknown) and out_shape is None:
                raise OmError(f"node {node.label}: output {param.name} of {node.op} has no shape rule")
            out_meta.append((out_dtype, out_shape))
        for t, meta in zip(node.outputs, out_meta, strict=True):
            tensors[t] = meta

        selected = None
        tiling_ref = None
        tiling_ids: list[int] = []
        kernelname = None
        if spec.is_aicpu:
            aicpu_vendors.add(vendor)
            item = aicpu_item_name(vendor)
            if item not in aicpu_kernels:
                lib = root / layout.aicpu_kernel_lib()
                try:
                    aicpu_kernels[item] = lib.read_bytes()
                except OSError as exc:
                    raise OmError(f"{vendor}: cannot read its AI CPU kernels {lib}: {exc.strerror}") from None
        elif dynamic:
            aicore_vendors.add(vendor)
            for key in index.keys_by_op.get(node.op, ()):
                op_def["binaries"][key] = add_kernel(vendor, index.by_key[key])
        else:
            aicore_vendors.add(vendor)

            def placeholder(name):
                if name in model.weights:
                    return model.weights[name]
                dt, shape = tensors[name]
                return np.zeros(shape, numpy_dtype(dt))

            call_inputs = [[placeholder(x) for x in t] if isinstance(t, list) else (None if t is None else placeholder(t))
                           for t in node.inputs]
            static_meta = [(dt, shape) for dt, shape in out_meta if shape is not None]
            if len(static_meta) != len(out_meta):  # (data-dependent outputs are of AI CPU ops only)
                raise OmError(f"node {node.label}: an output of AI Core op {node.op} has no static shape")
            outputs = [np.empty(shape, numpy_dtype(dt)) for dt, shape in static_meta]
            try:
                _, executor = ex.get_workspace_size(op_rt, call_inputs, attrs, outputs, bool(d), p)
            except AclnnError as exc:
                raise OmError(f"node {node.label}: {exc}") from None
            plan = executor.plan
            sel = plan.selection
            item = kernelname = add_kernel(vendor, sel.entry)
            op_def["binaries"][sel.full_key] = item
            selected = {"full_key": sel.full_key, "fragment": sel.fragment, "binary": sel.entry.name,
                        "input_shapes": [[list(a.shape) for a in (x if isinstance(x, list) else [x])] if x is not None else []
                                         for x in call_inputs],
                        # what the tiling was computed for, so what the kernel may write (om/static_check.py)
                        "output_dtypes": [dt for dt, _ in out_meta],
                        "output_shapes": [list(shape) for _, shape in static_meta]}
            if not node.preprocess and not plan.empty:
                selected["tiling_sha256"] = hashlib.sha256(plan.tiling_data).hexdigest()  # (loader checks it)
                tiling_ref = node.name
                tiling_ids = [ge_tiling.tiling_id(first_node_id + node_index)]
                tilings.append(ge_tiling.Tiling(plan.block_dim, plan.tiling_key, plan.workspace_size, plan.tiling_data,
                                                tiling_ids))
        autofuse = None
        if node.bin_file_path is not None:
            autofuse = node.bin_file_path.name
            add_so(autofuse, vendor, node.bin_file_path.read_bytes(), so_store.SoBinType.Autofuse)
        if node.preprocess:
            add_so(device_so_name(vendor, root), vendor, (root / layout.tiling_lib()).read_bytes(),
                   so_store.SoBinType.OpMasterDevice)
        node_defs.append({
            "name": node.name, "op": op_ref, "type": node.op, "inputs": node.inputs, "outputs": node.outputs,
            "attrs": {a.name: to_json(v) for a, v in zip(spec.attrs, attr_values, strict=True)},
            "preprocess": node.preprocess, "autofuse_so": autofuse, "selected": selected, "tiling": tiling_ref,
            "kernelname": kernelname, "tiling_ids": tiling_ids,
            "output_dtypes": [dt for dt, _ in out_meta],
            "output_shapes": None if dynamic else [None if shape is None else list(shape) for _, shape in out_meta],
        })
    # SpaceRegistry: a dynamic model's packages' tiling libraries (tiling and inference), and the
    # inference of every package with AI CPU nodes (their outputs' bounds are inferred at run time):
    # its tiling library when it has AI Core ops (it holds every op's inference), else its op_proto library.
    for vendor in (v for v in used_vendors if (dynamic and v in aicore_vendors) or v in aicpu_vendors):
        root = packages.root(vendor)
        lib = root / (layout.tiling_lib() if (root / layout.tiling_lib()).is_file() else layout.op_proto_lib())
        try:
            add_so(space_registry_name(), vendor, lib.read_bytes(), so_store.SoBinType.SpaceRegistry)
        except OSError as exc:
            raise OmError(f"{vendor}: cannot read its SpaceRegistry library {lib}: {exc.strerror}") from None

    compiler = sorted({_version_info(packages.root(v)) for v in used_vendors})
    info = {"cpu_info": host_cpu(), "os_info": host_os(), "opp_version": opp_version(),
            "compiler_version": ",".join(compiler)}
    info.update(so_info_override or {})
    flag = so_store.flag_of(b.type for b in so_bins)
    weights_data, places = ge_weights.build(model.weights.items())
    items = sorted(kernels.values(), key=lambda i: i.name)
    tail: list[tuple[int, Any]] = []  # the partitions after MODEL_DEF, whose sizes MODEL_DEF records
    if model.weights:
        tail.append((omf.WEIGHTS_DATA, weights_data))
    tail.append((omf.TBE_KERNELS, kernel_store.build((i.name, i.data) for i in items)))
    if aicpu_kernels:
        tail.append((omf.CUST_AICPU_KERNELS, kernel_store.build(sorted(aicpu_kernels.items()), "CUST_AICPU_KERNELS")))
    if so_bins:
        tail.append((omf.SO_BINS, so_store.build(so_bins)))
    if tilings:
        tail.append((omf.TILING_DATA, ge_tiling.build(tilings)))
    sizes = {t: sum(len(c) for c in b) if isinstance(b, (list, tuple)) else len(b) for t, b in tail}
    model_def = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "name": model.name, "soc": soc,
        "soc_version": soc_version or (SOC[soc].soc_version if soc in SOC else soc), "dynamic": dynamic,
        "deterministic": d, "impl_mode": p, "so_in_om_flag": flag, "so_in_om_info": info,
        "inputs": [{"name": n, "dtype": dt, "shape": list(s)} for n, dt, s in model.inputs],
        "weights": [{"name": n, "dtype": dtype_name(a.dtype), "shape": list(a.shape), "data_offset": off,
                     "weight_size": size} for (n, a), (off, size) in zip(model.weights.items(), places, strict=True)],
        "outputs": model.outputs, "packages": {v: {"version": _version_info(packages.root(v))} for v in used_vendors},
        "sha256": native_digests(so_bins, aicpu_kernels),
        "ops": ops, "nodes": node_defs,
        "model_info": {
            "om_info_list": [sizes.get(omf.WEIGHTS_DATA, 0), sizes.get(omf.TBE_KERNELS, 0),
                             sizes.get(omf.CUST_AICPU_KERNELS, 0), 0, sizes.get(omf.SO_BINS, 0)],
            "memory_size": 0 if dynamic else _feature_map_bytes(tensors, model.weights),
            "weight_size": len(weights_data), "stream_num": 1, "event_num": 0,
            "atc_version": opp_version(), "atc_cmdline": atc_cmdline, "framework_type": framework_type,
        },
    }
    parts = [(omf.MODEL_DEF, model_def_proto.encode(model_def, {i.name: i.meta for i in items})), *tail]
    return omf.write_om(parts, name=model.name, ops=len(model.nodes), platform_version=soc,
                        need_check_os_cpu_info=bool(so_bins), is_unknow_model=dynamic)


def native_digests(so_bins, aicpu_kernels: dict[str, Any]) -> dict[str, list[str]]:
    """sha256 of every packed .so that no kernel descriptor covers, by partition (SO_BINS,
    CUST_AICPU_KERNELS): the loader checks each item's against its partition's list before
    anything is loaded (a kernel's is its descriptor's `sha256`). By content, not by name: an item
    renamed in SO_BINS still matches."""
    return {"SO_BINS": sorted({hashlib.sha256(b.data).hexdigest() for b in so_bins}),
            "CUST_AICPU_KERNELS": sorted({hashlib.sha256(d).hexdigest() for d in aicpu_kernels.values()})}


def _feature_map_bytes(tensors: dict[str, tuple[str, tuple[int, ...] | None]], weights: dict[str, Any]) -> int:
    """`memory_size` of a static model: the bytes of every tensor that is not a weight (the model
    inputs and every node output), as if none shared memory; a data-dependent shape counts 0."""
    return sum(DTYPE[dt].itemsize * math.prod(shape) for name, (dt, shape) in tensors.items()
               if name not in weights and shape is not None)
