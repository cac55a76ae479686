"""Loading an .om: parse and check every structure, check SoInOmInfo against the host, load each
.so from memory (memfd_create + dlopen of /proc/self/fd/N) and route it by type, and bind the
model's ops to the runtime through per-node package providers (no op package needed).

Stages: `parse_om(buf)` parses and routes zero-copy (memoryviews of the buffer); `OmModel.load()`
materializes (memfds, dlopen). A memfd stays open while anything loaded from it may be used
(for the life of the process: kernels are cached by path in the executor).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opbuild.abi.vocabulary import DTYPE_NAMES, IMPL_MODE_BY_INDEX
from opbuild.nonfinite import dumps
from opbuild.om import build as ombuild
from opbuild.om import format as omf
from opbuild.om import ge_tiling, ge_weights, kernel_store, schema_check, so_store, tables
from opbuild.om import model_def as model_def_proto
from opbuild.om.elf_check import check_elf
from opbuild.om.errors import OmCompatError, OmError, OmTrustError, listed, shown
from opbuild.om.so_store import OpSoBin, SoBinType

# ---- MODEL_DEF structure --------------------------------------------------------------------------

_NAME = {"type": "string", "minLength": 1, "maxLength": 256}
_SHAPE = {"type": "array", "maxItems": 8, "items": {"type": "integer", "minimum": 0}}
_MODEL_DEF_SCHEMA = {
    "type": "object",
    "required": ["format", "format_version", "name", "soc", "dynamic", "deterministic", "impl_mode", "so_in_om_flag",
                 "so_in_om_info", "inputs", "weights", "outputs", "ops", "nodes"],
    "properties": {
        "format": {"const": ombuild.FORMAT}, "format_version": {"enum": list(model_def_proto.FORMATS_READ)},
        "name": {"type": "string"}, "soc": _NAME, "dynamic": {"type": "boolean"},
        "deterministic": {"enum": [0, 1]}, "impl_mode": {"enum": sorted(IMPL_MODE_BY_INDEX)},
        "so_in_om_flag": {"type": "integer", "minimum": 0, "maximum": 0xFFFF},
        "sha256": {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": {
            "type": "array", "items": {"type": "string"}}}]},
        "so_in_om_info": {"type": "object", "required": ["cpu_info", "os_info", "opp_version", "compiler_version"],
                          "additionalProperties": {"type": "string"}},
        "inputs": {"type": "array", "items": {"type": "object", "required": ["name", "dtype", "shape"], "properties": {
            "name": _NAME, "dtype": {"enum": list(DTYPE_NAMES)},
            "shape": {"type": "array", "maxItems": 8, "items": {"type": "integer", "minimum": -1}}}}},
        "weights": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": _NAME}}},
        "outputs": {"type": "array", "items": _NAME},
        "ops": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["package", "op", "definition", "binaries"],
            "properties": {"package": {"type": "string"}, "op": _NAME, "definition": {"type": "object"},
                           "key_rule_source": {"type": ["string", "null"]},
                           "binaries": {"type": "object", "additionalProperties": {"type": "string"}}}}},
        "nodes": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "op", "type", "inputs", "outputs", "attrs", "preprocess"],
            "properties": {
                "name": _NAME, "op": _NAME, "type": _NAME,
                "inputs": {"type": "array", "items": {"anyOf": [_NAME, {"type": "null"},
                                                                {"type": "array", "minItems": 1, "items": _NAME}]}},
                "outputs": {"type": "array", "items": _NAME}, "attrs": {"type": "object"},
                "preprocess": {"type": "boolean"}, "autofuse_so": {"type": ["string", "null"]},
                "tiling": {"type": ["string", "null"]},
                "selected": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["full_key", "fragment", "binary"],
                                                          "properties": {"full_key": {"type": "string"},
                                                                         "fragment": {"type": "string"},
                                                                         "binary": {"type": "string"},
                                                                         "input_shapes": {"type": "array", "items": {
                                                                             "type": "array", "items": _SHAPE}},
                                                                         "output_dtypes": {"type": "array", "items": {
                                                                             "enum": list(DTYPE_NAMES)}},
                                                                         "output_shapes": {"type": "array",
                                                                                           "items": _SHAPE},
                                                                         "tiling_sha256": {"type": "string"}}}]}}}},
    },
}


_VALID_MODEL_DEF = schema_check.compile_predicate(_MODEL_DEF_SCHEMA)
_CHECK_MODEL_DEF = schema_check.compile_schema(_MODEL_DEF_SCHEMA)
"""The schema compiled (linear and fast: a 100,000-node model; schema_check.py): a predicate
for the common valid case, the check that says where the first problem is."""


# ---- memory-loaded .so files ----------------------------------------------------------------------

@dataclass
class MemFile:
    """Bytes in an anonymous memory file; `path` (/proc/self/fd/N) is what dlopen/open take."""

    fd: int
    name: str

    @property
    def path(self) -> Path:
        return Path(f"/proc/self/fd/{self.fd}")


def memfile(name: str, data: bytes | memoryview) -> MemFile:
    fd = os.memfd_create(name[:200], os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while len(view):
            written = os.write(fd, view)
            view = view[written:]
    except OSError:
        os.close(fd)
        raise
    return MemFile(fd, name)


@dataclass
class LoadedSo:
    """A .so of SO_BINS loaded from memory: its library handle (tiling functions, key callbacks)."""

    name: str
    vendor: str
    type: SoBinType
    sha256: str
    file: MemFile
    library: Any


class _DeviceRegistry:
    """OpMasterDevice .so files shared by every loaded model: built-in ones by name, custom ones by
    content (the whole binary: the same library under another name is reused)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_name: dict[str, LoadedSo] = {}
        self.by_content: dict[bytes, tuple[bytes, LoadedSo]] = {}
        self.loads = 0

    def get(self, b: OpSoBin) -> LoadedSo:
        with self.lock:
            if b.vendor == "built-in":
                hit = self.by_name.get(b.name)
                if hit is not None:
                    return hit
                so = _load_so(b)
                self.by_name[b.name] = so
            else:
                digest = hashlib.sha256(b.data).digest()
                same = self.by_content.get(digest)
                if same is not None and same[0] == bytes(b.data):
                    return same[1]
                so = _load_so(b)
                self.by_content[digest] = (bytes(b.data), so)
            self.loads += 1
            return so

    def count(self) -> int:
        return self.loads


DEVICE_SO = _DeviceRegistry()


def _load_so(b: OpSoBin) -> LoadedSo:
    from opbuild.runtime.host.c_callbacks import CallbackError, TilingLibrary

    f = memfile(f"om:{b.name}", b.data)
    try:
        lib = TilingLibrary(f.path)
    except CallbackError as exc:
        os.close(f.fd)
        raise OmError(f"{b.name} ({b.vendor}): {exc}", "SO_BINS") from None
    return LoadedSo(b.name, b.vendor, b.type, hashlib.sha256(b.data).hexdigest(), f, lib)


# ---- the parsed model -----------------------------------------------------------------------------

@dataclass
class OmModel:
    """A parsed .om: header, partitions, MODEL_DEF, the packed .so files routed by type, kernels,
    tiling and weights (memoryviews of `buffer` until `load()`)."""

    buffer: Any
    om: omf.OmFile
    model_def: dict[str, Any]
    so_bins: list[OpSoBin]
    kernels: dict[str, tables.Item]
    tilings: dict[str, tables.Item]
    weights: dict[str, tables.Item]
    routed: dict[SoBinType, list[OpSoBin]] = field(default_factory=dict)
    aicpu_kernels: dict[str, Any] = field(default_factory=dict)         # CUST_AICPU_KERNELS: item -> .so bytes
    # after load()
    space_registry: dict[str, LoadedSo] = field(default_factory=dict)   # vendor -> library
    device: dict[str, LoadedSo] = field(default_factory=dict)           # vendor -> library
    autofuse: dict[str, MemFile] = field(default_factory=dict)          # so name -> memfd
    kernel_files: dict[str, tuple[MemFile, MemFile]] = field(default_factory=dict)
    aicpu_files: dict[str, MemFile] = field(default_factory=dict)       # CUST_AICPU_KERNELS item -> memfd
    loaded: bool = False
    trusted: bool = False  # set by load(): the caller accepted the code the model carries
    source: str | None = None  # the file it was read from (messages name it), None: bytes

    @property
    def name(self) -> str:
        return self.model_def["name"]

    @property
    def label(self) -> str:
        """The model as messages name it: `model 'm' (path/m.om)`."""
        return f"model {self.name!r}" + (f" ({self.source})" if self.source else "")

    def check_compat(self, host: dict[str, str] | None = None) -> None:
        """SoInOmInfo against the host; OmCompatError naming each mismatch."""
        host = host or host_info()
        info = self.model_def["so_in_om_info"]
        problems = []
        for key in ("cpu_info", "os_info", "opp_version"):
            if info.get(key) != host[key]:
                problems.append(f"{key}: model built with {info.get(key)!r}, host has {host[key]!r}")
        for part in (info.get("compiler_version") or "").split(","):
            if part and not part.startswith("host-"):
                problems.append(f"compiler_version: {shown(part, 80)} is not a host toolchain ('host-...'), "
                                f"the CPU simulator cannot run its binaries")
        if problems:
            raise OmCompatError("the .om does not fit this host: " + listed(problems, 4).replace(", ", "; "),
                                "MODEL_DEF.so_in_om_info")
        suffix = ombuild.space_registry_name(host["os_info"], host["cpu_info"])
        for b in self.routed.get(SoBinType.SpaceRegistry, []):
            if b.name != suffix:
                raise OmCompatError(f"SpaceRegistry .so {b.name!r} ({b.vendor}) is not for this host "
                                    f"(expected {suffix!r})", "SO_BINS")

    def code_carried(self) -> list[str]:
        """What in the model runs as code in this process, one description per kind (empty: none).

        Kernels count: on the CPU simulator a TBE_KERNELS item is a host shared object, dlopened
        (its constructors run) and called like any .so.
        """
        found = []
        for t in SoBinType:
            names = [f"{b.name} of {b.vendor}" for b in self.routed.get(t, [])]
            if names:
                found.append(f"{len(names)} {t.name} .so file(s) in SO_BINS ({listed(sorted(names))})")
        if self.aicpu_kernels:
            found.append(f"{len(self.aicpu_kernels)} AI CPU kernel libraries in CUST_AICPU_KERNELS "
                         f"({listed(sorted(self.aicpu_kernels))})")
        if self.kernels:
            found.append(f"{len(self.kernels)} kernel binaries in TBE_KERNELS, host .so files on the CPU simulator "
                         f"({listed(sorted(self.kernels))})")
        rules = sorted(ref for ref, op in self.model_def["ops"].items() if op.get("key_rule_source"))
        if rules:
            found.append(f"Python key rule source of {listed(rules)} (MODEL_DEF key_rule_source)")
        return found

    def check_trust(self, trust: bool) -> None:
        """OmTrustError naming what the model carries, unless trusted or it carries no code."""
        carried = self.code_carried()
        if carried and not trust:
            raise OmTrustError(
                f"model {self.name!r} carries code that would run in this process: {'; '.join(carried)}. "
                f"Run it only if you trust where the file came from: `opbuild om run --trust`, or trust=True "
                f"(load_om, OmModel.load, OmRunner)", "trust")

    def check_native(self) -> None:
        """Every shared object of the model checked as ELF before any is loaded (elf_check.py),
        and each kernel against the sha256 its descriptor JSON records (as the package built it)."""
        digests = self.model_def.get("sha256")  # (files built since issue 25; None: not recorded)

        def check_digest(data, partition: str, what: str) -> None:
            if digests is not None and hashlib.sha256(data).hexdigest() not in digests.get(partition, ()):
                raise OmError(f"item {what}: its {len(data)} bytes match none of the sha256 MODEL_DEF records for "
                              f"{partition} (altered after the build)", partition)

        for b in self.so_bins:
            what = f"{b.name} ({b.vendor}, {b.type.name})"
            check_elf(b.data, "SO_BINS", what)
            check_digest(b.data, "SO_BINS", what)
        for name, data in self.aicpu_kernels.items():
            check_elf(data, "CUST_AICPU_KERNELS", name)
            check_digest(data, "CUST_AICPU_KERNELS", name)
        for name, item in self.kernels.items():
            check_elf(item.data, "TBE_KERNELS", name)
            want = item.meta.get("sha256") if isinstance(item.meta, dict) else None
            if want is not None and hashlib.sha256(item.data).hexdigest() != want:
                raise OmError(f"item {name}: its {len(item.data)} bytes do not match its kernel descriptor's sha256 "
                              f"(altered after the build)", "TBE_KERNELS")

    def load(self, check_compat: bool = True, *, trust: bool = False) -> "OmModel":
        """Materialize: trust check, compat check, .so files from memory routed by type, kernels as
        memfds. Nothing of the model is loaded unless `trust` (when it carries code, see
        check_trust)."""
        if self.loaded:
            return self
        self.check_trust(trust)
        self.trusted = True
        if check_compat and (self.om.header.need_check_os_cpu_info or self.so_bins or self.aicpu_kernels):
            self.check_compat()
        self.check_native()
        for b in self.routed.get(SoBinType.SpaceRegistry, []):
            self.space_registry[b.vendor] = _load_so(b)
        for b in self.routed.get(SoBinType.OpMasterDevice, []):
            self.device[b.vendor] = DEVICE_SO.get(b)
        for b in self.routed.get(SoBinType.Autofuse, []):
            self.autofuse[b.name] = memfile(f"om:{b.name}", b.data)
        for name, data in self.aicpu_kernels.items():
            self.aicpu_files[name] = memfile(f"om:{name}", data)
        for name, item in self.kernels.items():
            self.kernel_files[name] = (memfile(f"om:{name}", item.data),
                                       memfile(f"om:{name}.json", dumps(item.meta).encode()))
        self.loaded = True
        return self


def host_info() -> dict[str, str]:
    return {"cpu_info": ombuild.host_cpu(), "os_info": ombuild.host_os(), "opp_version": ombuild.opp_version()}


def _check_model_def(m: OmModel, base: int) -> None:
    md = m.model_def
    where = "MODEL_DEF"
    problem = None if _VALID_MODEL_DEF(md) else (schema_check.first_problem(_CHECK_MODEL_DEF, md)
                                                 or ([], "does not match the MODEL_DEF schema"))
    if problem is not None:
        path, message = problem
        raise OmError(f"$.{'.'.join(str(p) for p in path)}: {message[:200]}", where, base)
    flag = md["so_in_om_flag"]
    have = so_store.flag_of(b.type for b in m.so_bins)
    if flag != have:
        raise OmError(f"so_in_om_flag 0x{flag:04x} disagrees with the SO_BINS types (0x{have:04x})", where, base)
    if bool(m.om.header.need_check_os_cpu_info) != bool(m.so_bins):
        raise OmError(f"need_check_os_cpu_info is {m.om.header.need_check_os_cpu_info} but the model has "
                      f"{len(m.so_bins)} packed .so files", "need_check_os_cpu_info",
                      omf.HEADER_FIELDS["need_check_os_cpu_info"][1])
    if bool(m.om.header.is_unknow_model) != md["dynamic"]:
        raise OmError("is_unknow_model disagrees with MODEL_DEF dynamic", "is_unknow_model",
                      omf.HEADER_FIELDS["is_unknow_model"][1])
    vendors_by_type: dict[SoBinType, set[str]] = {}
    for b in m.so_bins:
        vendors_by_type.setdefault(b.type, set()).add(b.vendor)
    so_names = {b.name for b in m.so_bins if b.type == SoBinType.Autofuse}
    for ref, op in md["ops"].items():
        if ref != f"{op['package']}:{op['op']}" or so_store.check_vendor(op["package"]):
            raise OmError(f"op {ref!r}: bad package or name", where, base)
        for key, item in op["binaries"].items():
            if item not in m.kernels:
                raise OmError(f"op {ref}: binary {item!r} of key {key} is not in TBE_KERNELS", where, base)
        if _is_aicpu(op) and ombuild.aicpu_item_name(op["package"]) not in m.aicpu_kernels:
            raise OmError(f"op {ref}: AI CPU op, but CUST_AICPU_KERNELS has no {ombuild.aicpu_item_name(op['package'])}",
                          where, base)
    weights = {w["name"] for w in md["weights"]}
    if weights != set(m.weights):
        raise OmError("weights listed in MODEL_DEF and WEIGHTS_DATA differ", where, base)
    defined = {i["name"] for i in md["inputs"]} | weights
    for node in md["nodes"]:
        nwhere = f"node {node['name']}"
        op = md["ops"].get(node["op"])
        if op is None:
            raise OmError(f"{nwhere}: op {node['op']!r} is not defined", where, base)
        for t in node["inputs"]:
            for name in (t if isinstance(t, list) else [t]):
                if name is not None and name not in defined:
                    raise OmError(f"{nwhere}: input {name!r} is not defined before it", where, base)
        defined.update(node["outputs"])
        if node.get("tiling") is not None and node["tiling"] not in m.tilings:
            raise OmError(f"{nwhere}: tiling {node['tiling']!r} is not in TILING_DATA", where, base)
        if node.get("autofuse_so") is not None and node["autofuse_so"] not in so_names:
            raise OmError(f"{nwhere}: autofuse .so {node['autofuse_so']!r} is not in SO_BINS", where, base)
        sel = node.get("selected")
        if sel is not None and sel["full_key"] not in op["binaries"]:
            raise OmError(f"{nwhere}: selected key {sel['full_key']} has no packed binary", where, base)
        if _is_aicpu(op):
            continue  # (no binary, no tiling, no SpaceRegistry: its package's AI CPU kernels, checked above)
        if sel is None and not md["dynamic"]:
            raise OmError(f"{nwhere}: static model node without a selected binary", where, base)
        if node["preprocess"] and op["package"] not in vendors_by_type.get(SoBinType.OpMasterDevice, ()):
            raise OmError(f"{nwhere}: preprocess node but no OpMasterDevice .so of {op['package']}", where, base)
        if md["dynamic"] and op["package"] not in vendors_by_type.get(SoBinType.SpaceRegistry, ()):
            raise OmError(f"{nwhere}: dynamic model but no SpaceRegistry .so of {op['package']}", where, base)
    for o in md["outputs"]:
        if o not in defined:
            raise OmError(f"output {o!r} is not produced by the model", where, base)


def _is_aicpu(op: dict[str, Any]) -> bool:
    definition = op.get("definition")
    return isinstance(definition, dict) and definition.get("engine") == "aicpu"


def parse_om(data: bytes | bytearray | memoryview, verify_checksum: bool = True, *,
             source: str | None = None) -> OmModel:
    """Parse and route (zero-copy); OmError naming the field and offset of any problem.
    `source`: the file the bytes came from (OmModel.label).

    The cyclic garbage collector is paused meanwhile: a large model is millions of new
    containers and no cycles, and each collection would scan all of them again (a third of a
    100,000-node parse)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_om(data, verify_checksum, source)
    finally:
        if enabled:
            gc.enable()


def _parse_om(data: bytes | bytearray | memoryview, verify_checksum: bool, source: str | None) -> OmModel:
    om = omf.read_om(data, verify_checksum=verify_checksum)
    md_part = om.require(omf.MODEL_DEF)
    part = om.get(omf.TBE_KERNELS)
    is_json = bytes(md_part.data[:1]) == b"{"
    if is_json:  # format 1: JSON MODEL_DEF, TBE_KERNELS as our item table
        try:
            model_def = json.loads(bytes(md_part.data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise OmError(f"not UTF-8 JSON: {str(exc)[:200]}", "MODEL_DEF", md_part.file_offset) from None
        kernels = ({i.name: i for i in tables.load(part.data, tables.KERNEL_MAGIC, "TBE_KERNELS", part.file_offset,
                                                    allow_empty=False, check_name=_check_item_name)}
                   if part is not None else {})
    else:  # GE's ge.proto.ModelDef; kernels in the KernelStore, their descriptors in MODEL_DEF
        try:
            model_def, descs = model_def_proto.decode(md_part.data)
        except OmError as exc:
            raise OmError(exc.detail, "MODEL_DEF", md_part.file_offset) from None
        binaries = kernel_store.load(part.data, part.file_offset, _check_item_name) if part is not None else {}
        if set(binaries) != set(descs):
            raise OmError(f"TBE_KERNELS items and MODEL_DEF kernel descriptors differ: "
                          f"{listed(sorted(set(binaries) ^ set(descs)))}", "MODEL_DEF", md_part.file_offset)
        kernels = {name: tables.Item(name, descs[name], data) for name, data in binaries.items()}
    part = om.get(omf.SO_BINS)
    so_bins = so_store.load(part.data, part.file_offset) if part is not None else []
    if not is_json and model_def["format_version"] >= 3:  # (an int: decode read it from the ModelDef)
        tilings, weights = _ge_tilings_weights(om, model_def)
    else:  # formats 1 and 2: our item tables
        part = om.get(omf.TILING_DATA)
        tilings = ({i.name: i for i in tables.load(part.data, tables.TILING_MAGIC, "TILING_DATA", part.file_offset,
                                                    check_name=None)} if part is not None else {})
        part = om.get(omf.WEIGHTS_DATA)
        weights = ({i.name: i for i in tables.load(part.data, tables.WEIGHT_MAGIC, "WEIGHTS_DATA", part.file_offset,
                                                    check_name=None)} if part is not None else {})
    part = om.get(omf.CUST_AICPU_KERNELS)
    aicpu = (kernel_store.load(part.data, part.file_offset, _check_item_name, "CUST_AICPU_KERNELS")
             if part is not None else {})
    m = OmModel(data, om, model_def, so_bins, kernels, tilings, weights, aicpu_kernels=aicpu, source=source)
    seen: set[tuple[str, str]] = set()
    for i, b in enumerate(so_bins):
        if (b.name, b.vendor) in seen:
            raise OmError(f"{b.name!r} of {b.vendor} appears twice", f"SO_BINS item {i}")
        seen.add((b.name, b.vendor))
        m.routed.setdefault(b.type, []).append(b)
    if not isinstance(model_def, dict):
        raise OmError("not a JSON object", "MODEL_DEF", md_part.file_offset)
    _check_model_def(m, md_part.file_offset)
    return m


def _ge_tilings_weights(om: omf.OmFile, md: dict[str, Any]) -> tuple[dict[str, tables.Item], dict[str, tables.Item]]:
    """Format 3: TILING_DATA in GE's layout, bound to the nodes by their op ids (an item per node
    with the meta the runner reads), and the weights located by their Const descriptors."""
    part = om.get(omf.TILING_DATA)
    data = ge_tiling.load(part.data, part.file_offset) if part is not None else ge_tiling.TilingData(2, {})
    offset = part.file_offset if part is not None else 0
    tilings: dict[str, tables.Item] = {}
    for node in md.get("nodes", []):
        if not isinstance(node, dict) or node.get("tiling") is None:
            continue
        t = data.find(node["op_id"], node["tiling_ids"])
        sel = node.get("selected")
        if t is None or not isinstance(sel, dict):
            raise OmError(f"node {node.get('name')}: no tiling result in TILING_DATA for it (op id {node['op_id']}, "
                          f"_op_tiling_ids {node['tiling_ids']}) or it has no selected binary", "TILING_DATA",
                          offset)
        want = sel.get("tiling_sha256")  # (since issue 25: the kernel reads these bytes unchecked)
        if want is not None and hashlib.sha256(t.data).hexdigest() != want:
            raise OmError(f"node {node.get('name')}: its {len(t.data)} tiling bytes do not match "
                          f"_opbuild_selected.tiling_sha256 (altered after the build)", "TILING_DATA", offset)
        tilings[node["tiling"]] = tables.Item(node["tiling"], {
            "block_dim": t.block_dim, "tiling_key": t.tiling_key, "workspace_size": t.workspace_size,
            "full_key": sel.get("full_key")}, t.data)
    part = om.get(omf.WEIGHTS_DATA)
    listed = md.get("weights", [])
    if part is None and listed:
        raise OmError(f"{len(listed)} weights in MODEL_DEF but no WEIGHTS_DATA partition", "partition_table")
    weights = ge_weights.locate(part.data, listed, part.file_offset) if part is not None else {}
    return tilings, weights


def _check_item_name(name: str) -> str | None:
    pkg, sep, rest = name.partition(":")
    if not sep:
        return "is not <package>:<binary>"
    return so_store.check_so_name(pkg) or so_store.check_so_name(rest)


def read_om_file(path: str | Path) -> bytes:
    """The bytes of the .om file `path`: a regular file only (a FIFO would block, a device such as
    /dev/zero never end), read to the size it has when opened; OmError naming the path otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise OmError(f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OmError(f"cannot read {path}: not a regular file")
        chunks, left = [], st.st_size
        while left:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise OmError(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def load_om(path_or_bytes: str | Path | bytes, *, check_compat: bool = True, trust: bool = False) -> OmModel:
    """Read, parse, check and load an .om file (or its bytes); `trust`: see OmModel.check_trust."""
    source = None
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = path_or_bytes
    else:
        source = str(path_or_bytes)
        data = read_om_file(path_or_bytes)
    return parse_om(data, source=source).load(check_compat=check_compat, trust=trust)
