"""A mutation fuzzer of real `.om` files through `opbuild om inspect` and `opbuild om run --trust`
under process isolation (issue 25): every case is one forked child with a timeout and an address
space limit (RLIMIT_AS), classified as

    ok        the run succeeded (the mutation changed nothing that matters)
    error     exit 1 with one line `opbuild om ...: error: ...` (a clean OmError / AclnnError)
    signal    the child died of a signal (a crash the caller would die of)
    exit      any other exit status (a kernel's exit()/_exit() reaching the caller, a usage error)
    hang      still running after the timeout (killed)
    foreign   an exception other than OmError/AclnnError escaped (a traceback a user would see)
    memory    MemoryError, or a peak RSS over the limit's half (a memory blow-up)

and by what the mutation touched: `native` (the bytes of a kernel or packed .so: what trust is
for), `tiling` (the tiling bytes a static node passes to its kernel unread; checked against their
digest, docs/om-format.md "Trust") or `data` (everything else: header, tables, MODEL_DEF,
descriptors, tiling records' fields, weights). Issue 25's goal: in `data` and `tiling`, only ok
and error.

Mutations (1 to 3 per case, from a per-case seeded RNG, so a case is reproduced by its number):
byte flips, byte/word stores, truncation, insertion (anywhere or in the first KiB), each resealed
or not; the checksum zeroed (GE's unverified files); field edits of MODEL_DEF (descriptor shape,
dims, dtype, Const value/offset/size, node attributes, the `_opbuild_selected` record, kernel
descriptor JSON, op definitions, edges, tiling ids), of TILING_DATA records (block_dim,
tiling_key, workspace, sizes) and of SO_BINS / KernelStore item heads, all resealed.

    python -m opbuild.om.fuzz --opp out/opp --cases 100000 [--jobs 2] [--seed 1] [--timeout 5]

builds its seed models from the OPP tree (the sample ops) and prints the counts and cases/s;
tests/om/test_om_fuzz.py runs a bounded number in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from opbuild.om import format as omf
from opbuild.om import ge_ir, ge_tiling, kernel_store, so_store
from opbuild.om.errors import OmError

OUTCOMES = ("ok", "error", "signal", "exit", "hang", "foreign", "memory")
TOUCHES = ("data", "tiling", "native")
_FOREIGN_EXIT, _MEMORY_EXIT = 86, 87
PROGRESS_EVERY = 5000
"""Cases between two progress tables of a long run."""
KERNEL_TIMEOUT = "1"
"""OPBUILD_KERNEL_TIMEOUT of every case: a kernel looping on a mutated value is a clean error."""


@dataclass
class Seed:
    """A real model to mutate: its bytes, the inputs it runs with (.npy files in `directory`) and
    where its native code and its raw tiling bytes are (file offsets)."""

    name: str
    data: bytes
    directory: Path
    inputs: list[str]
    native: list[tuple[int, int]] = field(default_factory=list)
    tiling: list[tuple[int, int]] = field(default_factory=list)


def _ranges(data: bytes) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(native byte ranges, tiling byte ranges) of a well-formed .om, as file offsets."""
    om = omf.read_om(data)
    native, tiling = [], []
    for p in om.partitions:
        base = p.file_offset
        if p.type in (omf.TBE_KERNELS, omf.CUST_AICPU_KERNELS):
            pos = 0
            while pos < p.size:
                _, name_len, bin_len = struct.unpack_from("<III", p.data, pos)
                start = pos + kernel_store.ITEM_HEAD_SIZE + name_len
                native.append((base + start, base + start + bin_len))
                pos = start + bin_len
        elif p.type == omf.SO_BINS:
            pos = 4
            for _ in range(struct.unpack_from("<I", p.data, 0)[0]):
                _, name_len, _, vendor_len, bin_len = struct.unpack_from("<IHHII", p.data, pos)
                start = pos + so_store.ITEM_HEAD_SIZE + name_len + vendor_len
                native.append((base + start, base + start + bin_len))
                pos = start + bin_len
        elif p.type == omf.TILING_DATA and ge_tiling.is_ge_layout(p.data):
            pos = 12
            while pos < p.size:
                rtype, length = struct.unpack_from("<BI", p.data, pos)
                if rtype == ge_tiling.TILING_BYTES:
                    tiling.append((base + pos + 5, base + pos + 5 + length))
                pos += 5 + length
    return native, tiling


def make_seed(name: str, data: bytes, directory: Path) -> Seed:
    """A seed of the model `data`: writes m.om's inputs (from its MODEL_DEF; -1 dims as 2) to `directory`."""
    from opbuild.abi.ge_types import numpy_dtype
    from opbuild.om.loader import parse_om

    directory.mkdir(parents=True, exist_ok=True)
    md = parse_om(data).model_def
    rng = np.random.default_rng(1)
    inputs = []
    for i in md["inputs"]:
        shape = [2 if d == -1 else d for d in i["shape"]]
        path = directory / f"{name}.{i['name']}.npy"
        np.save(path, (rng.random(shape) * 4 - 2).astype(numpy_dtype(i["dtype"])))
        inputs.append(f"{i['name']}={path}")
    native, tiling = _ranges(data)
    return Seed(name, data, directory, inputs, native, tiling)


# ---- mutations -------------------------------------------------------------------------------------

def _overlap(ranges: list[tuple[int, int]], lo: int, hi: int) -> bool:
    return any(a < hi and lo < b for a, b in ranges)


class _Case:
    """One mutated file under construction: its bytes, whether to reseal, what it touched."""

    def __init__(self, seed: Seed, rng: random.Random) -> None:
        self.seed = seed
        self.rng = rng
        self.data = bytearray(seed.data)
        self.reseal = rng.random() < 0.8
        self.zero_checksum = False
        self.kinds: list[str] = []
        self.touched: set[str] = set()
        self.native, self.tiling = seed.native, seed.tiling
        self.shifted = False  # bytes were inserted/removed: the ranges no longer apply

    def touch(self, lo: int, hi: int) -> None:
        if self.shifted:  # (where the bytes went is unknown: count it as touching code, never as data)
            self.touched.add("native")
        elif _overlap(self.native, lo, hi):
            self.touched.add("native")
        elif _overlap(self.tiling, lo, hi):
            self.touched.add("tiling")

    def rewritten(self) -> None:
        """The container was rewritten from its parsed partitions: find the ranges again."""
        try:
            self.native, self.tiling = _ranges(bytes(self.data))
            self.shifted = False
        except Exception:  # noqa: BLE001 - a file the mutation broke: its ranges are unknown (shifted)
            self.shifted = True

    def position(self) -> int:
        limit = min(len(self.data), 1024) if self.rng.random() < 0.3 else len(self.data)
        return self.rng.randrange(max(limit, 1))

    def touches(self) -> str:
        return "native" if "native" in self.touched else "tiling" if "tiling" in self.touched else "data"

    def result(self) -> bytes:
        out = bytes(self.data)
        if self.reseal:
            out = omf.reseal(out)
        if self.zero_checksum and len(out) >= omf.HEADER_SIZE:
            b = bytearray(out)
            b[12:76] = omf.NO_CHECKSUM
            out = bytes(b)
        return out


_WORDS = (0, 1, 2, 7, 0xFF, 0x100, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x5D776EFD, 16, 256, 4096)


def _m_flip(c: _Case) -> None:
    pos = c.position()
    if pos < len(c.data):
        c.data[pos] ^= 1 << c.rng.randrange(8)
        c.touch(pos, pos + 1)


def _m_byte(c: _Case) -> None:
    pos = c.position()
    if pos < len(c.data):
        c.data[pos] = c.rng.randrange(256)
        c.touch(pos, pos + 1)


def _m_word(c: _Case) -> None:
    pos = c.position()
    if pos + 4 <= len(c.data):
        struct.pack_into("<I", c.data, pos, c.rng.choice(_WORDS))
        c.touch(pos, pos + 4)


def _m_truncate(c: _Case) -> None:
    pos = c.position()
    c.touch(pos, len(c.data))
    del c.data[pos:]
    c.shifted = True


def _m_insert(c: _Case) -> None:
    pos = c.position()
    c.touch(pos, pos + 1)
    c.data[pos:pos] = bytes(c.rng.randrange(256) for _ in range(c.rng.choice((1, 4, 8, 100))))
    c.shifted = True


def _m_zero_checksum(c: _Case) -> None:
    c.zero_checksum = True


def _rewrite(c: _Case, ptype: int, edit: Callable[[bytes], bytes | None]) -> None:
    """Replace partition `ptype`'s payload by `edit(payload)` (None: unchanged), rewriting the
    container (sealed): a well-formed file carrying the field edit."""
    try:
        om = omf.read_om(bytes(c.data), verify_checksum=False)
    except Exception:  # noqa: BLE001 - an earlier mutation broke the container: nothing to edit
        return
    parts = []
    changed = False
    for p in om.partitions:
        payload = bytes(p.data)
        if p.type == ptype:
            new = edit(payload)
            if new is not None:
                payload, changed = new, True
        parts.append((p.type, payload))
    if not changed:
        return
    h = om.header
    try:
        c.data = bytearray(omf.write_om(parts, name=h.text("name"), ops=h.ops,
                                        need_check_os_cpu_info=bool(h.need_check_os_cpu_info),
                                        is_unknow_model=bool(h.is_unknow_model)))
    except OmError:  # an earlier mutation made a container the writer refuses (a GE-only partition type)
        return
    c.reseal = True
    c.rewritten()


def _int(rng: random.Random) -> int:
    return rng.choice((0, 1, -1, 2, 3, 7, 15, 16, 17, 31, 1023, 1024, 1025, 4096, 1 << 20, 1 << 31, (1 << 31) - 1,
                       1 << 40, -(1 << 40), (1 << 63) - 1, -(1 << 63), rng.randrange(-5, 5000)))


def _pick_desc(model, rng: random.Random):
    descs = []
    for op in model.graph[0].op:
        descs += list(op.input_desc) + list(op.output_desc)
        if op.type == "Const":
            descs.append(op.attr["value"].t.desc)
    return rng.choice(descs) if descs else None


def _edit_json_attr(attr, rng: random.Random) -> None:
    try:
        value = json.loads(attr.s)
    except ValueError:
        return
    attr.s = json.dumps(_mutate_json(value, rng, 0)).encode()


def _mutate_json(value: Any, rng: random.Random, depth: int) -> Any:
    """`value` with one random leaf or member changed (a JSON field edit)."""
    if isinstance(value, dict) and value and depth < 6:
        key = rng.choice(sorted(value))
        r = rng.random()
        out = dict(value)
        if r < 0.1:
            del out[key]
        elif r < 0.15:
            out[key + "_"] = out.pop(key)
        else:
            out[key] = _mutate_json(value[key], rng, depth + 1)
        return out
    if isinstance(value, list) and value and depth < 6:
        items = list(value)
        k = rng.randrange(len(items))
        r = rng.random()
        if r < 0.1:
            del items[k]
        elif r < 0.2:
            items.append(items[k])
        else:
            items[k] = _mutate_json(items[k], rng, depth + 1)
        return items
    return rng.choice([_int(rng), None, "", "x", [], {}, True, 0.5, "float16", "float32", "int8", [_int(rng)],
                       str(value) + "x" if isinstance(value, str) else -1])


def _m_model_def(c: _Case) -> None:
    rng = c.rng

    def edit(payload: bytes) -> bytes | None:
        try:
            model = ge_ir.ModelDef.FromString(payload)
        except Exception:  # noqa: BLE001 - not a ModelDef (format 1): no field edit
            return None
        if not len(model.graph):
            return None
        ops = list(model.graph[0].op)
        what = rng.randrange(10)
        if what == 0:  # a descriptor's shape
            d = _pick_desc(model, rng)
            if d is None:
                return None
            dims = list(d.shape.dim)
            r = rng.random()
            if r < 0.5 and dims:
                dims[rng.randrange(len(dims))] = _int(rng)
            elif r < 0.7:
                dims.append(_int(rng))
            elif r < 0.85 and dims:
                dims.pop()
            else:
                dims = [rng.choice((1, 2, 16))]
            del d.shape.dim[:]
            d.shape.dim.extend(dims)
        elif what == 1:  # a descriptor's dtype
            d = _pick_desc(model, rng)
            if d is None:
                return None
            d.dtype = rng.choice((0, 1, 2, 3, 4, 7, 8, 11, 12, 27, 28, 99))
        elif what == 2:  # the same edit on a producer and every consumer (consistent)
            op = rng.choice(ops)
            if not op.output_desc:
                return None
            k = rng.randrange(len(op.output_desc))
            dims = [rng.choice((1, 2, 16, 1024, 1 << 20))] * rng.choice((1, 2))
            dtype = rng.choice((None, 1, 2, 3, 12))
            targets = [op.output_desc[k]] + [d for o in ops for e, d in zip(o.input, o.input_desc, strict=False)
                                             if e == f"{op.name}:{k}"]
            if op.type == "Const":
                targets.append(op.attr["value"].t.desc)
            for d in targets:
                del d.shape.dim[:]
                d.shape.dim.extend(dims)
                if dtype is not None:
                    d.dtype = dtype
        elif what == 3:  # Const value placement
            consts = [o for o in ops if o.type == "Const"]
            if not consts:
                return None
            d = rng.choice(consts).attr["value"].t.desc
            if rng.random() < 0.5:
                d.data_offset = _int(rng)
            else:
                d.weight_size = _int(rng)
        elif what == 4:  # a JSON attribute: selected record, kernel descriptor, op definition
            node_ops = [o for o in ops if "_opbuild_selected" in o.attr]
            choice = rng.random()
            if choice < 0.4 and node_ops:
                _edit_json_attr(rng.choice(node_ops).attr["_opbuild_selected"], rng)
            elif choice < 0.7:
                kernels = model.attr["_opbuild_kernels"].func.attr
                if not kernels:
                    return None
                _edit_json_attr(kernels[rng.choice(sorted(kernels))], rng)
            else:
                defs = list(model.attr["_opbuild_ops"].list.na)
                if not defs:
                    return None
                _edit_json_attr(rng.choice(defs).attr["definition"], rng)
        elif what == 5:  # a node attribute value
            op = rng.choice(ops)
            names = [n for n in op.attr if not n.startswith("_")]
            if not names:
                return None
            a = op.attr[rng.choice(names)]
            field_ = a.WhichOneof("value")
            if field_ == "f":
                a.f = rng.choice((float("nan"), float("inf"), -1e38, 0.0, 1e38))
            elif field_ == "i":
                a.i = _int(rng)
            elif field_ == "list":
                a.list.i.append(_int(rng))
            else:
                a.s = rng.choice((b"", b"\xff\xfe", b"x" * 300))
        elif what == 6:  # an edge
            op = rng.choice(ops)
            if not op.input:
                return None
            k = rng.randrange(len(op.input))
            op.input[k] = rng.choice((f"{rng.choice(ops).name}:{rng.randrange(3)}", "nope:0", ":", "x:\u00b2", ""))
        elif what == 7:  # tiling ids, private flags, names
            op = rng.choice(ops)
            r = rng.random()
            if r < 0.4:
                op.attr["_op_tiling_ids"].list.i.append(_int(rng))
            elif r < 0.6:
                op.attr["_opbuild_preprocess"].b = not op.attr["_opbuild_preprocess"].b
            elif r < 0.8:
                op.name = rng.choice(("", "\u00e9" * 300, ops[0].name, op.name + "_"))
            else:
                op.attr["_opbuild_input_counts"].list.i.append(rng.randrange(3))
        elif what == 8:  # a model attribute
            names = sorted(model.attr)
            a = model.attr[rng.choice(names)]
            field_ = a.WhichOneof("value")
            if field_ == "i":
                a.i = _int(rng)
            elif field_ == "b":
                a.b = not a.b
            elif field_ == "s":
                a.s = rng.choice((b"", b"\xff", b"x" * 40, a.s + b"x"))
            else:
                return None
        else:  # remove something
            op = rng.choice(ops)
            r = rng.random()
            if r < 0.3 and op.output_desc:
                del op.output_desc[-1]
            elif r < 0.6 and op.input_desc:
                del op.input_desc[-1]
            elif r < 0.8 and op.attr:
                del op.attr[rng.choice(sorted(op.attr))]
            else:
                model.graph[0].op.remove(op)
        return model.SerializeToString(deterministic=True)

    c.kinds.append("model_def")
    _rewrite(c, omf.MODEL_DEF, edit)


def _m_tiling(c: _Case) -> None:
    rng = c.rng

    def edit(payload: bytes) -> bytes | None:
        if not ge_tiling.is_ge_layout(payload) or len(payload) < 17 + ge_tiling.RUN_INFO_SIZE:
            return None
        out = bytearray(payload)
        # the first record group: OpRunInfoMsg at 12+5
        base = 17
        offsets = {"tiling_key": (base, "<Q"), "tiling_size": (base + 8, "<Q"), "block_dim": (base + 16, "<I"),
                   "workspace_num": (base + 32, "<I"), "len": (13, "<I"), "data_len": (8, "<I")}
        name = rng.choice(sorted(offsets))
        off, fmt = offsets[name]
        value = _int(rng) & ((1 << (8 * struct.calcsize(fmt))) - 1)
        struct.pack_into(fmt, out, off, value)
        if name == "data_len" or rng.random() < 0.5:
            return bytes(out)
        struct.pack_into("<I", out, 8, len(out) - 12)  # keep the header's length consistent
        return bytes(out)

    c.kinds.append("tiling_fields")
    _rewrite(c, omf.TILING_DATA, edit)


def _m_tiling_bytes(c: _Case) -> None:
    if not c.tiling or c.shifted:
        return
    lo, hi = c.rng.choice(c.tiling)
    if lo < hi <= len(c.data):
        pos = c.rng.randrange(lo, hi)
        c.data[pos] = c.rng.randrange(256)
        c.touch(pos, pos + 1)
        c.kinds.append("tiling_bytes")


def _m_item_heads(c: _Case) -> None:
    rng = c.rng
    ptype = rng.choice((omf.SO_BINS, omf.TBE_KERNELS, omf.CUST_AICPU_KERNELS, omf.WEIGHTS_DATA))

    def edit(payload: bytes) -> bytes | None:
        if len(payload) < 16:
            return None
        out = bytearray(payload)
        if ptype == omf.SO_BINS:
            off = rng.choice((0, 4, 8, 10, 12, 16))
        elif ptype == omf.WEIGHTS_DATA:
            out = out[:rng.randrange(len(out))] if rng.random() < 0.5 else out + b"\0" * 64
            return bytes(out)
        else:
            off = rng.choice((0, 4, 8))
        if off == 8 and ptype == omf.SO_BINS:
            struct.pack_into("<H", out, off, rng.choice((0, 1, 2, 3, 0xFFFF)))
        else:
            struct.pack_into("<I", out, off, _int(rng) & 0xFFFFFFFF)
        return bytes(out)

    c.kinds.append(f"heads_{ptype}")
    _rewrite(c, ptype, edit)


MUTATORS: dict[str, Callable[[_Case], None]] = {
    "flip": _m_flip, "byte": _m_byte, "word": _m_word, "truncate": _m_truncate, "insert": _m_insert,
    "zero_checksum": _m_zero_checksum, "model_def": _m_model_def, "tiling_fields": _m_tiling,
    "tiling_bytes": _m_tiling_bytes, "item_heads": _m_item_heads,
}
WEIGHTS = {"flip": 3, "byte": 2, "word": 2, "truncate": 1, "insert": 1, "zero_checksum": 1, "model_def": 8,
           "tiling_fields": 2, "tiling_bytes": 1, "item_heads": 2}
"""Relative frequency of each mutation (field edits reach the deepest code)."""


def mutate(seed: Seed, case: int, base_seed: int = 0) -> tuple[bytes, str, list[str]]:
    """(mutated bytes, what it touched, the mutations) of case number `case` of `seed`."""
    rng = random.Random(f"{base_seed}:{seed.name}:{case}")
    c = _Case(seed, rng)
    names = list(WEIGHTS)
    for name in rng.choices(names, weights=[WEIGHTS[n] for n in names], k=rng.choice((1, 1, 2, 3))):
        if name not in ("model_def", "tiling_fields", "item_heads", "tiling_bytes"):
            c.kinds.append(name)
        MUTATORS[name](c)
    return c.result(), c.touches(), c.kinds


# ---- running a case --------------------------------------------------------------------------------

@dataclass
class Outcome:
    outcome: str
    detail: str = ""
    rss_kib: int = 0


def _child(data: bytes, seed: Seed, work: Path, mem_limit: int) -> None:
    """In the forked child: `om inspect` then `om run --trust` of `data`; never returns."""
    code = _FOREIGN_EXIT
    try:
        # isolation in the child only: the caller's settings (a test runner's) stay its own; set,
        # not only exported, since the simulator keeps what it read before the fork
        os.environ["OPBUILD_ISOLATION"] = "process"
        os.environ["OPBUILD_KERNEL_TIMEOUT"] = KERNEL_TIMEOUT
        from opbuild.runtime import device

        device.set_isolation("process", KERNEL_TIMEOUT)
        import faulthandler

        faulthandler.disable()  # (a test runner's: it would print every native crash to the runner's stderr)
        os.chdir(work)
        (work / "m.om").write_bytes(data)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        sys.stdout = open(1, "w", closefd=False)
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
        from opbuild import cli

        argv = ["om", "run", "m.om", "--output-dir", "o", "--trust"]
        for text in seed.inputs:
            argv += ["-i", text]
        for stage, args in (("inspect", ["om", "inspect", "m.om"]), ("run", argv)):
            sys.stderr.flush()
            out = os.open(work / f"stderr.{stage}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, 2)
            os.close(out)
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # (a test runner may have replaced it)
            code = cli.main(args)
            sys.stderr.flush()
            if code not in (0, 1):
                break
    except MemoryError:
        code = _MEMORY_EXIT
    except BaseException as exc:  # noqa: BLE001 - what the fuzz is looking for
        try:
            (work / "foreign").write_text(f"{type(exc).__name__}: {str(exc)[:300]}\n"
                                          + "".join(traceback.format_tb(exc.__traceback__)[-3:]))
        except BaseException:  # noqa: BLE001 - recording the finding must not change the child's exit code
            pass
        code = _MEMORY_EXIT if isinstance(exc, MemoryError) else _FOREIGN_EXIT
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - flushing must not change the child's exit code
            pass
        os._exit(code if isinstance(code, int) and 0 <= code < 256 else 2)


def _classify(status: int, work: Path, rss_kib: int, mem_limit: int) -> Outcome:
    if os.WIFSIGNALED(status):
        return Outcome("signal", signal.Signals(os.WTERMSIG(status)).name, rss_kib)
    code = os.WEXITSTATUS(status)
    if rss_kib * 1024 > mem_limit // 2:
        return Outcome("memory", f"peak RSS {rss_kib // 1024} MiB", rss_kib)
    if code == _FOREIGN_EXIT:
        text = (work / "foreign").read_text() if (work / "foreign").exists() else ""
        return Outcome("foreign", text, rss_kib)
    if code == _MEMORY_EXIT:
        return Outcome("memory", "MemoryError", rss_kib)
    result = Outcome("ok", "", rss_kib)
    for stage in ("inspect", "run"):  # each stage: nothing on stderr, or exit 1 with one error line
        path = work / f"stderr.{stage}"
        err = path.read_text(errors="replace") if path.exists() else ""
        lines = err.strip().splitlines()
        if not lines:
            continue
        if len(lines) == 1 and lines[0].startswith(f"opbuild om {stage}: error: "):
            if "MemoryError" in lines[0] or "Cannot allocate memory" in lines[0]:
                return Outcome("memory", lines[0][:300], rss_kib)
            result = Outcome("error", lines[0][:300], rss_kib)
            continue
        if code in (0, 1):
            return Outcome("foreign", f"{stage}: exit {code} with {len(lines)} lines: {err[-600:]}", rss_kib)
    if code not in (0, 1):
        return Outcome("exit", f"exit {code}: {err[-300:]}", rss_kib)
    return result


@dataclass
class Report:
    cases: int = 0
    seconds: float = 0.0
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (touches, outcome) -> n
    examples: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def add(self, touches: str, outcome: Outcome, label: str) -> None:
        key = (touches, outcome.outcome)
        self.counts[key] = self.counts.get(key, 0) + 1
        ex = self.examples.setdefault(key, [])
        if len(ex) < 5:
            ex.append(f"{label}: {outcome.detail}".rstrip())
        self.cases += 1

    def count(self, touches: str, outcome: str) -> int:
        return self.counts.get((touches, outcome), 0)

    def bad(self, touches: tuple[str, ...] = ("data",)) -> dict[tuple[str, str], list[str]]:
        """The examples of every outcome but ok/error among `touches`."""
        return {k: v for k, v in self.examples.items() if k[0] in touches and k[1] not in ("ok", "error")}

    def table(self) -> str:
        rate = self.cases / self.seconds if self.seconds else 0.0
        lines = [f"{self.cases} cases in {self.seconds:.1f} s ({rate:.1f} cases/s)",
                 f"{'touches':<8}" + "".join(f"{o:>9}" for o in OUTCOMES)]
        for t in TOUCHES:
            lines.append(f"{t:<8}" + "".join(f"{self.count(t, o):>9}" for o in OUTCOMES))
        for (t, o), ex in sorted(self.examples.items()):
            if o not in ("ok", "error"):
                lines.append(f"{t}/{o}:")
                lines.extend(f"  {e[:400]}" for e in ex)
        return "\n".join(lines)


def fuzz(seeds: list[Seed], cases: int, *, base_seed: int = 0, timeout: float = 5.0, mem_limit: int = 4 << 30,
         jobs: int = 1, progress: Callable[[Report], None] | None = None) -> Report:
    """Run `cases` mutated files (round robin over `seeds`), `jobs` children at a time."""
    import opbuild.cli  # imported once here, not in every child
    import opbuild.om.inspect
    import opbuild.om.run  # noqa: F401 - (as the two above: the children fork with them imported)
    root = Path(tempfile.mkdtemp(prefix="opbuild-om-fuzz-"))
    report = Report()
    running: dict[int, tuple[float, Path, str, str]] = {}
    t0 = time.monotonic()
    try:
        case = 0
        while case < cases or running:
            while case < cases and len(running) < jobs:
                seed = seeds[case % len(seeds)]
                data, touches, kinds = mutate(seed, case, base_seed)
                work = root / str(case)
                work.mkdir()
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(data, seed, work, mem_limit)
                running[pid] = (time.monotonic(), work, touches, f"case {case} {seed.name} {'+'.join(kinds)}")
                case += 1
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                now = time.monotonic()
                for p, (start, work, touches, label) in list(running.items()):
                    if now - start > timeout:
                        os.kill(p, signal.SIGKILL)
                        os.wait4(p, 0)
                        del running[p]
                        report.add(touches, Outcome("hang", f"killed after {timeout} s"), label)
                        shutil.rmtree(work, ignore_errors=True)
                time.sleep(0.001)
                continue
            if pid not in running:
                continue
            _, work, touches, label = running.pop(pid)
            report.add(touches, _classify(status, work, usage.ru_maxrss, mem_limit), label)
            shutil.rmtree(work, ignore_errors=True)
            if progress is not None and report.cases % PROGRESS_EVERY == 0:
                report.seconds = time.monotonic() - t0
                progress(report)
    finally:
        for p in running:
            os.kill(p, signal.SIGKILL)
            os.waitpid(p, 0)
        shutil.rmtree(root, ignore_errors=True)
    report.seconds = time.monotonic() - t0
    return report


def sample_seeds(opp: Path, directory: Path) -> list[Seed]:
    """Seed models of the sample ops in `opp`: static (3 nodes), static with a weight, dynamic
    with a preprocess node and a packed key rule, and AI CPU nodes when the tree has them."""
    from opbuild.om.build import build_om
    from opbuild.om.model import model_from_dict

    def model(name, shape, nodes, outputs, weights=None):
        data = {"name": name, "inputs": [{"name": "x", "dtype": "float32", "shape": shape},
                                         {"name": "y", "dtype": "float32", "shape": shape}],
                "nodes": nodes, "outputs": outputs}
        if weights:
            data["weights"] = [{"name": n, "file": str(p)} for n, p in weights.items()]
        return build_om(model_from_dict(data, directory), opp)

    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "w.npy", np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64))
    chain: list[dict[str, Any]] = [{"name": "mul0", "op": "MulCustom", "inputs": ["x", "y"], "outputs": ["t0"]},
             {"name": "act0", "op": "LeakyReluCustom", "inputs": ["t0"], "outputs": ["t1"],
              "attrs": {"negative_slope": 0.2}},
             {"name": "sum0", "op": "ReduceSumCustom", "inputs": ["t1"], "outputs": ["t2"], "attrs": {"axes": [1]}}]
    seeds = [make_seed("static3", model("static3", [4, 64], chain, ["t2"]), directory)]
    weighted = [{"name": "mul0", "op": "MulCustom", "inputs": ["x", "w"], "outputs": ["t0"]},
                {"name": "add0", "op": "AddCustomTemplate", "inputs": ["t0", "y"], "outputs": ["t1"]}]
    try:
        seeds.append(make_seed("weight", model("weight", [4, 64], weighted, ["t1"], {"w": directory / "w.npy"}),
                               directory))
    except Exception:  # noqa: BLE001 - an OPP tree without these ops: fewer seeds
        pass
    dyn = [dict(chain[0]), dict(chain[1], preprocess=True)]
    seeds.append(make_seed("dynamic", model("dynamic", [-1, 64], dyn, ["t1"]), directory))
    aicpu = [dict(chain[0]), {"name": "nz0", "op": "NonZeroCustom", "inputs": ["t0"], "outputs": ["nz"]}]
    try:
        seeds.append(make_seed("aicpu", model("aicpu", [4, 64], aicpu, ["nz"]), directory))
    except Exception:  # noqa: BLE001 - no AI CPU op in the tree
        pass
    return seeds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m opbuild.om.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--opp", required=True, help="an OPP tree with the sample ops (scons ops: out/opp)")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0, help="base seed of the per-case RNGs")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--mem-gib", type=float, default=4.0, help="RLIMIT_AS of each case")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="opbuild-om-fuzz-seeds-") as tmp:
        seeds = sample_seeds(Path(args.opp), Path(tmp))
        print(f"seeds: {', '.join(f'{s.name} ({len(s.data)} bytes)' for s in seeds)}", flush=True)
        report = fuzz(seeds, args.cases, base_seed=args.seed, timeout=args.timeout,
                      mem_limit=int(args.mem_gib * (1 << 30)), jobs=args.jobs,
                      progress=lambda r: print(f"--- after {r.table()}", flush=True))
    print(report.table())
    return 0 if not report.bad(("data", "tiling")) else 1


if __name__ == "__main__":
    raise SystemExit(main())
