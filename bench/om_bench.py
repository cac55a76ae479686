"""SO-in-OM pack and load throughput (not a test).

Packs a set of .so-sized blobs totalling ~500 MB into SO_BINS + an .om container and loads them
back. "load" = parse + route: the header, partition table and every SO_BINS item checked, each
binary routed by type as a zero-copy memoryview (no dlopen; see docs/om-format.md). Reported with
and without the header checksum (sha256 over the body), which dominates when on.

    python bench/om_bench.py [--total-mb 500] [--count 400]

Goals (issue 5): load >= 2 GB/s, pack >= 1 GB/s.
"""

from __future__ import annotations

import argparse
import os
import time

from opbuild.om import format as omf
from opbuild.om import so_store
from opbuild.om.so_store import OpSoBin, SoBinType


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--total-mb", type=int, default=500)
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size = args.total_mb * 1024 * 1024 // args.count
    block = os.urandom(size)
    bins = [OpSoBin(f"lib_op_{i}_linux_x86_64.so", "built-in" if i % 2 else "vendors/customize",
                    block[i % 97:] + block[:i % 97], SoBinType(i % 3)) for i in range(args.count)]
    total = sum(b.size for b in bins)

    def pack(checksum: bool = True):
        payload = so_store.build_chunks(bins)
        return omf.write_om([(omf.MODEL_DEF, b"{}"), (omf.SO_BINS, payload)], name="bench", checksum=checksum)

    om = pack()
    t_pack = _best(pack, args.repeat)
    t_pack_nosum = _best(lambda: pack(False), args.repeat)

    def load(verify: bool):
        f = omf.read_om(om, verify_checksum=verify)
        p = f.get(omf.SO_BINS)
        routed: dict[SoBinType, list[OpSoBin]] = {}
        for b in so_store.load(p.data, p.file_offset):
            routed.setdefault(b.type, []).append(b)
        return routed

    routed = load(True)
    assert sum(len(v) for v in routed.values()) == args.count
    t_load = _best(lambda: load(False), args.repeat)
    t_load_sum = _best(lambda: load(True), args.repeat)
    gb = total / 1e9
    print(f"{args.count} .so files, {total / 2**20:.0f} MiB total ({size / 2**20:.2f} MiB each)")
    print(f"pack (SO_BINS build + .om write, incl. sha256): {t_pack * 1e3:8.1f} ms  {gb / t_pack:6.2f} GB/s   (goal >= 1 GB/s)")
    print(f"pack (no checksum, is_checksum=1):              {t_pack_nosum * 1e3:8.1f} ms  {gb / t_pack_nosum:6.2f} GB/s")
    print(f"load (parse + route, zero-copy, no checksum):   {t_load * 1e3:8.1f} ms  {gb / t_load:6.2f} GB/s   (goal >= 2 GB/s)")
    print(f"load (parse + route + sha256 checksum):         {t_load_sum * 1e3:8.1f} ms  {gb / t_load_sum:6.2f} GB/s")


if __name__ == "__main__":
    main()
