"""`opbuild om inspect`: the header, partitions, flags and every packed .so / kernel of an .om."""

from __future__ import annotations

import hashlib

from opbuild.om import format as omf
from opbuild.om.loader import OmModel
from opbuild.om.so_store import flag_types


def describe(m: OmModel) -> str:
    h = m.om.header
    md = m.model_def
    encoding = "JSON (format 1)" if md["format_version"] == 1 else f"ge.proto.ModelDef, format {md['format_version']}"
    lines = [f"model {md['name']} ({'dynamic' if md['dynamic'] else 'static'} shape, soc {md['soc']}, "
             f"{len(md['nodes'])} nodes, MODEL_DEF {encoding})", "header:"]
    for name, (_fmt, off) in omf.HEADER_FIELDS.items():
        if name in ("padd", "reserved", "userdefineinfo"):
            continue
        value = getattr(h, name)
        if name == "checksum":
            shown = value[:32].hex() if value != omf.NO_CHECKSUM else "none (zeros: not verified)"
        elif isinstance(value, bytes):
            shown = repr(h.text(name))
        elif name in ("magic", "version"):
            shown = f"0x{value:08x}"
        else:
            shown = str(value)
        lines.append(f"  @{off:<3} {name:<24} {shown}")
    lines.append(f"partitions ({len(m.om.partitions)}, table at {m.om.table_offset}, data at {m.om.data_offset}):")
    for p in m.om.partitions:
        lines.append(f"  {p.name:<13} type {p.type:<2} offset {p.offset:<10} size {p.size:<10} (file offset {p.file_offset})")
    flag = md["so_in_om_flag"]
    if md.get("soc_version"):
        lines.append(f"soc_version: {md['soc_version']}")
    lines.append(f"so_in_om_flag: 0x{flag:04x} ({', '.join(t.name for t in flag_types(flag)) or 'none'})")
    info = md["so_in_om_info"]
    lines.append("so_in_om_info: " + ", ".join(f"{k}={info[k]}" for k in sorted(info)))
    lines.append(f"SO_BINS ({len(m.so_bins)}):")
    for b in m.so_bins:
        lines.append(f"  {b.name}  vendor={b.vendor}  type={b.type.name}  size={b.size}  sha256={b.sha256()}")
    lines.append(f"TBE_KERNELS ({len(m.kernels)}):")
    for name, item in sorted(m.kernels.items()):
        lines.append(f"  {name}  size={len(item.data)}  sha256={hashlib.sha256(item.data).hexdigest()}")
    lines.append(f"CUST_AICPU_KERNELS ({len(m.aicpu_kernels)}):")
    for name, data in sorted(m.aicpu_kernels.items()):
        lines.append(f"  {name}  size={len(data)}  sha256={hashlib.sha256(data).hexdigest()}")
    lines.append(f"TILING_DATA ({len(m.tilings)}):")
    for name, item in m.tilings.items():
        meta = item.meta
        lines.append(f"  {name}  key={meta.get('full_key')}  block_dim={meta.get('block_dim')}  "
                     f"tiling_key={meta.get('tiling_key')}  workspace={meta.get('workspace_size')}  bytes={len(item.data)}")
    carried = m.code_carried()
    lines.append("carries code (runs only when trusted): " + ("; ".join(carried) if carried else "none"))
    lines.append("nodes:")
    for node in md["nodes"]:
        sel = node.get("selected") or {}
        extra = [x for x, on in (("preprocess", node["preprocess"]), (f"autofuse={node.get('autofuse_so')}", node.get("autofuse_so")))
                 if on]
        lines.append(f"  {node['name']}: {node['op']} {node['inputs']} -> {node['outputs']}"
                     + (f"  key={sel['full_key']} binary={sel['binary']}" if sel else "")
                     + (f"  [{', '.join(extra)}]" if extra else ""))
    return "\n".join(lines) + "\n"
