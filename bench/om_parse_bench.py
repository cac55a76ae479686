"""Parsing a large .om (issue 25): `parse_om` of a static model of N nodes vs decoding its bytes.

Generates, from a real one-node static model of the sample ops (MulCustom, built from an OPP
tree), a chain of N MulCustom nodes (`t{k} = t{k-1} * y`), each with its own TILING_DATA record
and `_opbuild_selected`, sharing the one kernel. Measures, best of `--repeat`:

* `parse_om(data)` (header, checksum, partitions, MODEL_DEF decode and every check);
* the baselines of the same run: `ge.proto.ModelDef.FromString` of the MODEL_DEF bytes (protobuf
  decode alone) and `json.loads` of the model dict as JSON;
* the error of a model whose TBE_KERNELS lost its kernel (a message naming N kernels before:
  now bounded).

Times are CPU seconds of this process (time.process_time), best of `--repeat`.

    python bench/om_parse_bench.py --opp out/opp [--nodes 100000] [--repeat 3]

Goal: parse time linear in N (the per-node time flat from 10,000 to 100,000 nodes) and within a
small multiple of the protobuf decode.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from opbuild.om import format as omf
from opbuild.om import ge_ir, ge_tiling
from opbuild.om import model_def as model_def_proto
from opbuild.om.errors import OmError
from opbuild.om.loader import parse_om


def _best(fn, repeat: int) -> float:
    """The best CPU time of `fn` (process time: the machine may be shared)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def seed_model(opp: Path) -> bytes:
    from opbuild.om.build import build_om
    from opbuild.om.model import model_from_dict

    data = {"name": "chain", "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 8]},
                                        {"name": "y", "dtype": "float32", "shape": [2, 8]}],
            "nodes": [{"name": "n0", "op": "MulCustom", "inputs": ["x", "y"], "outputs": ["t0"]}], "outputs": ["t0"]}
    return build_om(model_from_dict(data, Path(tempfile.gettempdir())), opp)


def chain(seed: bytes, n: int, drop_kernels: bool = False) -> bytes:
    """The seed's one node repeated `n` times as a chain (one tiling record each)."""
    om = omf.read_om(seed)
    md, descs = model_def_proto.decode(om.get(omf.MODEL_DEF).data)
    tiling = ge_tiling.load(om.get(omf.TILING_DATA).data)
    node = md["nodes"][0]
    t = tiling.find(node["op_id"], node["tiling_ids"])
    first = model_def_proto.node_op_id(md, 0)
    nodes, tilings = [], []
    for k in range(n):
        ids = [ge_tiling.tiling_id(first + k)]
        nodes.append(dict(node, name=f"n{k}", inputs=["x" if k == 0 else f"t{k - 1}", "y"], outputs=[f"t{k}"],
                          tiling=f"n{k}", tiling_ids=ids))
        tilings.append(ge_tiling.Tiling(t.block_dim, t.tiling_key, t.workspace_size, bytes(t.data), ids))
    md = dict(md, nodes=nodes, outputs=[f"t{n - 1}"])
    parts = []
    for p in om.partitions:
        payload = bytes(p.data)
        if p.type == omf.MODEL_DEF:
            payload = model_def_proto.encode(md, descs)
        elif p.type == omf.TILING_DATA:
            payload = ge_tiling.build(tilings)
        elif p.type == omf.TBE_KERNELS and drop_kernels:
            continue
        parts.append((p.type, payload))
    return omf.write_om(parts, name="chain", ops=n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opp", required=True)
    ap.add_argument("--nodes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    seed = seed_model(Path(args.opp))
    print(f"{'nodes':>8} {'file MB':>8} {'parse s':>8} {'us/node':>8} {'pb decode s':>12} {'json s':>8} "
          f"{'parse/pb':>9} {'error chars':>12}")
    for n in args.nodes:
        data = chain(seed, n)
        md_bytes = bytes(omf.read_om(data).get(omf.MODEL_DEF).data)
        parse = _best(lambda: parse_om(data), args.repeat)
        pb = _best(lambda: ge_ir.ModelDef.FromString(md_bytes), args.repeat)
        text = json.dumps(parse_om(data).model_def)
        js = _best(lambda: json.loads(text), args.repeat)
        try:
            parse_om(chain(seed, n, drop_kernels=True))
            err = "(no error)"
        except OmError as exc:
            err = str(exc)
        print(f"{n:>8} {len(data) / 1e6:>8.1f} {parse:>8.3f} {parse / n * 1e6:>8.1f} {pb:>12.3f} {js:>8.3f} "
              f"{parse / pb:>9.1f} {len(err):>12}", flush=True)
    print(f"error: {err[:300]}")


if __name__ == "__main__":
    sys.exit(main())
