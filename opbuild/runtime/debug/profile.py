"""The profiler: every launch's host-side phases and its blocks on the simulator, as a Chrome trace.

While on (`OPBUILD_PROFILE=FILE` when opbuild.runtime is imported, `opbuild prof -o FILE -- cmd`,
or `start()`/`stop()`), it records

  - per launch, on the launching host thread: "launch" (from handing the launch to the simulator
    until it finished: the wait of a synchronous launch included; on a created stream, until the
    stream ran it), named by op, with binary, simplified key, block dim, tiling key and whether
    its phase 1 was a cache hit or miss;
  - per cache miss: "phase1 miss" (shape check, selection, tiling) and "tiling" (plans.PHASE_HOOKS);
    phase-1 hits run in C and are not timed;
  - per `Stream.synchronize()` from Python: "stream wait" (device.WAIT_HOOKS);
  - per block, on the simulator thread that ran it: "<Op> block <i>" (sim_profile_blocks), so the
    trace shows how the pool spread the blocks and which block was slow.

The trace is Chrome's Trace Event format (`{"traceEvents": [{"ph": "X", "ts", "dur" (µs), "pid",
"tid", "name", "cat", "args"}]}`), which chrome://tracing and ui.perfetto.dev open. `summary()`
reads one back into the per-op table `opbuild prof` prints.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opbuild.runtime import device
from opbuild.runtime.call import launch, plans

ENV_FILE = "OPBUILD_PROFILE"
ENV_PER_PROCESS = "OPBUILD_PROFILE_PER_PROCESS"
"""Set by `opbuild prof`: each process writes FILE.<pid>.json (merged by the command), not FILE."""
ENV_QUIET = "OPBUILD_PROFILE_QUIET"
"""Set by `opbuild prof`: the process does not print the summary (the command prints it once)."""

CAT_LAUNCH, CAT_PHASE, CAT_BLOCK = "launch", "phase", "block"


class BlockTime(ctypes.Structure):
    """sim_block_time of native/src/sim.h."""
    _fields_ = [("fn", ctypes.c_uint64), ("idx", ctypes.c_uint32), ("tid", ctypes.c_uint32),
                ("start_ns", ctypes.c_int64), ("end_ns", ctypes.c_int64)]


class _Sim:
    """The simulator's block-timing functions, bound once."""

    lib: Any = None

    @classmethod
    def get(cls) -> Any:
        if cls.lib is None:
            lib = ctypes.CDLL(str(device.library_path()), mode=os.RTLD_NOW | os.RTLD_LOCAL)
            lib.sim_profile_blocks.argtypes = [ctypes.c_int]
            lib.sim_profile_blocks.restype = None
            lib.sim_profile_take.argtypes = [ctypes.POINTER(BlockTime), ctypes.c_size_t]
            lib.sim_profile_take.restype = ctypes.c_size_t
            lib.sim_aicpu_block_fn.restype = ctypes.c_uint64
            lib.sim_profile_dropped.restype = ctypes.c_uint64
            cls.lib = lib
        return cls.lib


def _us(ns: int) -> float:
    return ns / 1000.0


class Profiler(launch.LaunchHook):
    """Collects trace events (see the module docstring)."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.pid = os.getpid()  # a forked child's own (forked)
        self._lock = threading.Lock()
        self._pending: list[BlockTime] = []  # block records of launches not finished yet
        self._buf = (BlockTime * 4096)()
        self._missed = threading.local()  # .op: the op of this thread's last phase-1 miss
        self._aicpu_fn = _Sim.get().sim_aicpu_block_fn()

    def forked(self) -> None:
        """In a forked child: its trace starts empty (the parent writes what it recorded)."""
        self.events = []
        self._pending = []
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._missed = threading.local()

    def _add(self, event: dict) -> None:
        with self._lock:
            self.events.append(event)

    def phase(self, phase: str, op: str, start: int, end: int) -> None:
        if phase == "phase1 miss":
            self._missed.op = op  # this thread's next launch of `op` follows a miss
        self._add({"name": f"{op} {phase}", "cat": CAT_PHASE, "ph": "X", "ts": _us(start), "dur": _us(end - start),
                   "pid": self.pid, "tid": threading.get_native_id(), "args": {"op": op, "phase": phase}})

    def wait(self, stream: Any, start: int, end: int) -> None:
        self._add({"name": "stream wait", "cat": CAT_PHASE, "ph": "X", "ts": _us(start), "dur": _us(end - start),
                   "pid": self.pid, "tid": threading.get_native_id(),
                   "args": {"phase": "wait", "stream": hex(stream.handle or 0)}})

    def _blocks(self, fn: int) -> list[BlockTime]:
        """The recorded blocks of launch function `fn` (others stay pending for their launch)."""
        lib = _Sim.get()
        with self._lock:
            while True:
                n = lib.sim_profile_take(self._buf, len(self._buf))
                self._pending.extend(BlockTime.from_buffer_copy(self._buf[i]) for i in range(n))
                if n < len(self._buf):
                    break
            mine = [b for b in self._pending if b.fn == fn]
            self._pending = [b for b in self._pending if b.fn != fn]
        return mine

    def _launch(self, op: str, fn: int, args: dict, stream: Any) -> Any:
        tid = threading.get_native_id()
        missed = getattr(self._missed, "op", None) == op
        self._missed.op = None
        if args["engine"] == "aicore":  # (AI CPU ops have no plan cache: no hit or miss)
            args = dict(args, phase1="miss" if missed else "hit")
        start = time.monotonic_ns()

        def after(ok: bool) -> None:
            end = time.monotonic_ns()
            blocks = self._blocks(fn)
            durations = [b.end_ns - b.start_ns for b in blocks]
            info = dict(args, ok=ok, stream="default" if stream is None or stream.handle is None else hex(stream.handle),
                        blocks=len(blocks))
            if durations:
                mean = sum(durations) / len(durations)
                info["block_max_us"] = _us(max(durations))
                info["block_mean_us"] = _us(mean)
                info["imbalance"] = round(max(durations) / mean, 3) if mean > 0 else 1.0
            self._add({"name": op, "cat": CAT_LAUNCH, "ph": "X", "ts": _us(start), "dur": _us(end - start),
                       "pid": self.pid, "tid": tid, "args": info})
            for b in blocks:
                self._add({"name": f"{op} block {b.idx}", "cat": CAT_BLOCK, "ph": "X", "ts": _us(b.start_ns),
                           "dur": _us(b.end_ns - b.start_ns), "pid": self.pid, "tid": b.tid,
                           "args": {"op": op, "block": b.idx}})

        return after

    def kernel(self, plan: Any, executor: Any, stream: Any) -> Any:
        sel = plan.selection
        args = {"op": plan.op.name, "engine": "aicore", "binary": sel.entry.name if sel else None,
                "simplified_key": sel.full_key if sel else None, "block_dim": plan.block_dim,
                "tiling_key": plan.tiling_key}
        return self._launch(plan.op.name, plan.fn.value if plan.fn is not None else 0, args, stream)

    def aicpu(self, executor: Any, stream: Any) -> Any:
        args = {"op": executor.op.name, "engine": "aicpu", "binary": executor.library.path.name, "block_dim": 1}
        return self._launch(executor.op.name, self._aicpu_fn, args, stream)

    def trace(self) -> dict:
        with self._lock:
            events = sorted(self.events, key=lambda e: e["ts"])
        meta = [{"name": "process_name", "ph": "M", "pid": self.pid, "tid": 0,
                 "args": {"name": f"opbuild {' '.join(sys.argv[:1]) or 'python'} (pid {self.pid})"}}]
        return {"traceEvents": meta + events, "displayTimeUnit": "ns",
                "otherData": {"tool": "opbuild prof", "clock": "CLOCK_MONOTONIC"}}


# ---- on and off -------------------------------------------------------------------------------------

_active: dict[str, Any] = {"profiler": None, "unregister": None}


def _after_fork() -> None:
    profiler = _active["profiler"]
    if profiler is not None:
        profiler.forked()


os.register_at_fork(after_in_child=_after_fork)


def start() -> Profiler:
    """Record from now on (a profile already on goes on)."""
    if _active["profiler"] is not None:
        return _active["profiler"]
    profiler = Profiler()
    _Sim.get().sim_profile_blocks(1)
    plans.PHASE_HOOKS.append(profiler.phase)
    device.WAIT_HOOKS.append(profiler.wait)
    _active["profiler"] = profiler
    _active["unregister"] = launch.add_launch_hook(profiler)
    return profiler


def stop() -> Profiler | None:
    """Stop recording; the profiler (its events), or None if none was on."""
    profiler = _active["profiler"]
    if profiler is None:
        return None
    _active["unregister"]()
    _active["profiler"] = _active["unregister"] = None
    if profiler.phase in plans.PHASE_HOOKS:
        plans.PHASE_HOOKS.remove(profiler.phase)
    if profiler.wait in device.WAIT_HOOKS:
        device.WAIT_HOOKS.remove(profiler.wait)
    _Sim.get().sim_profile_blocks(0)
    return profiler


def write_trace(trace: dict, path: Path) -> None:
    """Write a trace as JSON (whole or not at all)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.part")
    tmp.write_text(json.dumps(trace))
    os.replace(tmp, path)


def start_from_env() -> None:
    """OPBUILD_PROFILE=FILE: record the whole process, write FILE (and print the summary) at exit."""
    target = os.environ.get(ENV_FILE)
    if not target:
        return
    start()
    per_process = bool(os.environ.get(ENV_PER_PROCESS))
    quiet = bool(os.environ.get(ENV_QUIET))

    def finish() -> None:
        profiler = stop()
        if profiler is None:
            return
        trace = profiler.trace()
        path = Path(f"{target}.{os.getpid()}.json") if per_process else Path(target)
        try:
            write_trace(trace, path)
        except OSError as exc:
            print(f"opbuild: {ENV_FILE}: cannot write {path}: {exc.strerror}", file=sys.stderr)
            return
        if not quiet:
            print(format_summary(summary(trace)), file=sys.stderr)
            print(f"opbuild: profile written to {path}", file=sys.stderr)

    atexit.register(finish)


# ---- the summary --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpSummary:
    op: str
    calls: int
    misses: int  # launches whose phase 1 was a cache miss (the others hit)
    total_us: float
    mean_us: float
    p50_us: float
    p99_us: float
    blocks: int
    imbalance: float  # the largest max/mean block duration of the op's launches (1.0: even)
    slowest_block: int | None  # that launch's slowest block


def _percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile of sorted `values`."""
    if not values:
        return 0.0
    rank = max(1, -(-len(values) * q // 100))
    return values[int(rank) - 1]


def summary(trace: dict) -> list[OpSummary]:
    """Per op (most total time first): its launches' host durations and its block imbalance."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    launches: dict[str, list[dict]] = {}
    for e in events:
        if e.get("cat") == CAT_LAUNCH:
            launches.setdefault(e["name"], []).append(e)
    blocks: dict[tuple, list[dict]] = {}
    for e in events:
        if e.get("cat") == CAT_BLOCK:
            blocks.setdefault((e["pid"], e["args"]["op"]), []).append(e)
    rows = []
    for op, items in launches.items():
        durs = sorted(e["dur"] for e in items)
        worst = max(items, key=lambda e: e["args"].get("imbalance", 1.0))
        imbalance = worst["args"].get("imbalance", 1.0)
        slowest = None
        if "block_max_us" in worst["args"]:
            start, end = worst["ts"], worst["ts"] + worst["dur"]
            inside = [b for b in blocks.get((worst["pid"], op), []) if start <= b["ts"] <= end]
            if inside:
                slowest = max(inside, key=lambda b: b["dur"])["args"]["block"]
        misses = sum(e["args"].get("phase1") == "miss" for e in items)
        rows.append(OpSummary(op, len(items), misses, sum(durs), sum(durs) / len(durs), _percentile(durs, 50),
                              _percentile(durs, 99), sum(e["args"].get("blocks", 0) for e in items), imbalance, slowest))
    return sorted(rows, key=lambda r: -r.total_us)


def format_summary(rows: list[OpSummary]) -> str:
    """The table `opbuild prof` prints (times in µs)."""
    head = f"{'op':<24} {'calls':>6} {'misses':>6} {'total us':>10} {'mean us':>9} {'p50 us':>9} {'p99 us':>9} {'blocks':>7} {'imbalance':>9}  slowest block"
    lines = [head]
    for r in rows:
        slow = "-" if r.slowest_block is None else str(r.slowest_block)
        lines.append(f"{r.op:<24} {r.calls:>6} {r.misses:>6} {r.total_us:>10.1f} {r.mean_us:>9.1f} {r.p50_us:>9.1f} {r.p99_us:>9.1f} "
                     f"{r.blocks:>7} {r.imbalance:>9.2f}  {slow}")
    if not rows:
        lines.append("(no launches recorded)")
    return "\n".join(lines)


def merge_traces(paths: list[Path]) -> dict:
    """One trace of the per-process traces `opbuild prof` collected (an unreadable one is skipped
    with a line on stderr: the process died before writing it whole)."""
    events: list[dict] = []
    for path in paths:
        try:
            events.extend(json.loads(path.read_text()).get("traceEvents", []))
        except (OSError, ValueError, AttributeError) as exc:
            print(f"opbuild prof: {path.name}: unreadable trace skipped: {exc}", file=sys.stderr)
    meta = [e for e in events if e.get("ph") == "M"]
    rest = sorted((e for e in events if e.get("ph") != "M"), key=lambda e: e.get("ts", 0))
    return {"traceEvents": meta + rest, "displayTimeUnit": "ns",
            "otherData": {"tool": "opbuild prof", "clock": "CLOCK_MONOTONIC"}}
