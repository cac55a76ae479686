"""Plans: what a cache miss of phase 1 computes once per call signature.

`build_plan` checks the call's shapes, selects the binary by simplified key and runs tiling (or
takes a package's precomputed tiling); the resulting `Plan` holds everything phase 2 needs to
launch (kernel, block_dim, tiling buffer, workspace size). `KernelInfo` / `load_kernel_info`
load each kernel binary once per path with what its descriptor JSON says about launching it.
Kept apart from the cache (plan_cache) and from launching (launch), which only read plans.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opbuild import safefile
from opbuild.abi.ge_types import dtype_name
from opbuild.abi.kernel_launch import kernel_list_keys, tiling_argument_packer, tiling_data_size, tiling_key_offset
from opbuild.abi.platform import platform
from opbuild.codegen.op_proto import infer_shape_symbol
from opbuild.runtime import device, fastpath_ext
from opbuild.runtime.binaries.package import STAMP_INTERVAL_NS, file_stamp
from opbuild.runtime.binaries.selection import OpRuntime, Selection, current_soc
from opbuild.runtime.call.arguments import _DTYPE_NAMES
from opbuild.runtime.call.tiling_bounds import check_tiling_result, tiling_limits
from opbuild.runtime.errors import ACLNN_ERR_INNER, ACLNN_ERR_PARAM_INVALID, AclnnError
from opbuild.runtime.host import c_callbacks as _c_callbacks
from opbuild.runtime.host.c_callbacks import TilingResult
from opbuild.runtime.host.op_proto import InferError, infer_on_block
from opbuild.runtime.host.tiling_context import fill_block
from opbuild.runtime.infer import infer_instances, infer_with
from opbuild.runtime.reference import describe as reference_describe

_fastpath = fastpath_ext.load()

# ---- kernels --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KernelInfo:
    """A loaded kernel binary and what its descriptor JSON says about launching it."""

    binary: Any
    op_para_size: int
    intercore_sync: bool
    name: str
    tiling_keys: tuple[int, ...]
    """The tiling keys its descriptor's kernelList declares (kernel_launch.kernel_list_keys)."""
    fn: Any = None
    """The kernel's entry as the c_void_p every plan of it launches (made once)."""


_KERNELS: dict[Path, KernelInfo] = {}
_KERNELS_LOCK = threading.Lock()


def kernel_arg_names(spec: Any) -> list[str]:
    """The kernel's arguments in launch order (inputs, outputs, workspace, tiling), named for the
    memory checker's reports."""
    return ([f"input {p.name}" for p in spec.inputs] + [f"output {p.name}" for p in spec.outputs]
            + ["workspace", "tiling"])


def load_kernel_info(selection: Selection, spec: Any) -> KernelInfo:
    """Open the selected binary (once per path) and read its descriptor JSON."""
    op = spec.op
    path = selection.entry.bin_path
    info = _KERNELS.get(path)
    if info is not None:
        return info
    with _KERNELS_LOCK:
        info = _KERNELS.get(path)
        if info is None:
            json_path = selection.entry.json_path
            try:
                try:
                    desc = safefile.read_json(json_path)
                except safefile.UnsafeFileError as exc:
                    raise ValueError(exc.reason) from None
                op_para_size = int(desc["opParaSize"])
                if op_para_size < 0:
                    raise ValueError(f"opParaSize {op_para_size} is negative")
                sync = bool(desc.get("intercoreSync", 0))
                tiling_keys = kernel_list_keys(desc)
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise AclnnError(ACLNN_ERR_INNER, f"{op}: kernel descriptor {json_path} unusable: {exc}") from None
            try:
                binary = device.load_kernel(path, label=f"op {op}, binary {selection.entry.name} ({path})",
                                            arg_names=kernel_arg_names(spec))
            except device.DeviceError as exc:
                raise AclnnError(ACLNN_ERR_INNER, f"{op}: cannot load kernel {path}: {exc}") from None
            info = KernelInfo(binary, op_para_size, sync, selection.entry.name, tiling_keys, ctypes.c_void_p(binary.fn))
            _KERNELS[path] = info
    return info


# ---- plans ----------------------------------------------------------------------------------------

class Plan:
    """Everything phase 2 needs, computed once per call signature (unchanged after the build but
    for its stamp's `checked_ns` and its native `record`, both made on first use)."""

    __slots__ = ("op", "selection", "kernel", "block_dim", "tiling_key", "workspace_size", "tiling_buffer", "empty",
                 "contiguous", "nargs", "ws_index", "tiling_addr", "fn", "sync", "stamp_path", "stamp",
                 "checked_ns", "attrs", "record", "record_parts", "signature")

    def __init__(self, op: OpRuntime, selection: Selection | None, kernel: KernelInfo | None, block_dim: int,
                 tiling_key: int, workspace_size: int, tiling_buffer: Any, empty: bool, contiguous: bool,
                 nargs: int) -> None:
        self.op = op
        self.selection = selection
        self.kernel = kernel
        self.block_dim = block_dim
        self.tiling_key = tiling_key
        self.workspace_size = workspace_size
        self.tiling_buffer = tiling_buffer
        self.empty = empty
        self.contiguous = contiguous  # every tensor of calls with this key is C-contiguous
        self.nargs = nargs
        self.ws_index = nargs - 2
        self.tiling_addr = ctypes.addressof(tiling_buffer) if tiling_buffer is not None else 0
        self.fn = kernel.fn if kernel is not None else None
        self.sync = 1 if kernel is not None and kernel.intercore_sync else 0
        # the package's binary_info_config.json and its stamp when selected: a hit checks it, so a
        # package rebuilt in place selects again (plan_fresh)
        self.stamp_path = selection.config if selection is not None else ""
        self.stamp = selection.stamp if selection is not None else None
        self.checked_ns = time.monotonic_ns()
        self.attrs: tuple = ()  # the normalized attribute values it was planned for (part of its key): the dump's index
        self.record: bytes | None = None  # its native_record, made at its first registration in C
        self.record_parts: tuple | None = None  # record_parts(self), when its call signature keeps them
        self.signature: SignatureTiling | None = None  # its kept call signature's (signature_program)

    @property
    def selected(self) -> Selection:
        """The binary selection of the plan (every plan phase 1 returns has one)."""
        if self.selection is None:
            raise ValueError(f"{self.op.name}: the plan selected no binary")
        return self.selection

    @property
    def launched(self) -> KernelInfo:
        """The kernel of a plan that launches (an empty plan has none: ValueError)."""
        if self.kernel is None:
            raise ValueError(f"{self.op.name}: an empty plan launches no kernel")
        return self.kernel

    @property
    def tiling_data(self) -> bytes:
        """The tiling data part of the tiling argument (without the tiling key after it)."""
        if self.tiling_buffer is None or self.kernel is None:
            return b""
        return bytes(self.tiling_buffer)[:tiling_data_size(self.kernel.op_para_size)]

    def __repr__(self) -> str:
        name = self.selection.entry.name if self.selection else None
        return f"Plan({name}, block_dim={self.block_dim}, workspace={self.workspace_size}, empty={self.empty})"


# ---- the plan record: how a miss hands its plan to the native cache ------------------------------

RECORD_MAGIC = 0x31304E414C50504F
"""= PLANCACHE_RECORD_MAGIC of native/src/plancache.h ("OPPLAN01"); tests/capi/test_plan_cache_unified.py
parses records built here with the C parser."""
_RECORD_HEAD = struct.Struct("=7Q3q5Q")  # plancache.h: PLANCACHE_RECORD_WORDS words, then five byte strings
_SYNC, _EMPTY = 1, 2  # PLANCACHE_SYNC, PLANCACHE_EMPTY


def record_parts(plan: Plan) -> tuple:
    """What of a plan's record (native_record) every plan of its call signature shares: the
    kernel's entry, the flags, the package stamp and its path, the full key, the kernel's name."""
    stamp = plan.stamp
    path = plan.stamp_path.encode() if stamp is not None and plan.stamp_path else b""
    stamp_words = tuple(stamp) if stamp is not None and path else (0, 0, 0)
    key = plan.selection.full_key.encode() if plan.selection is not None else b""
    kernel = plan.kernel.name.encode() if plan.kernel is not None else b""
    fn = (plan.fn.value or 0) if plan.fn is not None else 0
    flags = (_SYNC if plan.sync else 0) | (_EMPTY if plan.empty else 0)
    return fn, flags, stamp_words, path, key, kernel


def native_record(plan: Plan, itemsizes: bytes) -> bytes:
    """The plan record (native/src/plancache.h) of `plan` for calls whose tensors have these item
    sizes: the one form in which both native front ends (the aclnn C ABI, the _fastpath wrappers)
    receive a Python miss's plan, parsed by the one C parser (plancache_plan_from_record). A
    change to what a native plan holds is made here (and record_parts) and there."""
    tiling = bytes(plan.tiling_buffer) if plan.tiling_buffer is not None else b""
    fn, flags, stamp_words, path, key, kernel = plan.record_parts or record_parts(plan)
    head = _RECORD_HEAD.pack(RECORD_MAGIC, fn, plan.block_dim, plan.nargs, flags, plan.workspace_size or 0,
                             plan.tiling_addr, *stamp_words, len(tiling), len(itemsizes),
                             len(path), len(key), len(kernel))
    return b"".join((head, tiling, itemsizes, path, key, kernel))


def executor_record(executor: Any) -> bytes | None:
    """The plan record of an executor whose launch arguments are the call's arrays as they are
    (`args`), for the cache the next call of its key hits in C; None when its plan's calls cannot
    be launched from the key alone (a tensor not C-contiguous, tensor lists). Made once per plan."""
    plan = executor.plan
    record = plan.record
    if record is None:
        refs = executor.refs
        if executor.args is None or not plan.contiguous or len(refs) != plan.nargs - 2:
            return None
        record = plan.record = native_record(plan, bytes([a.itemsize for a in refs]))
    return record


def plan_fresh(plan: Plan) -> bool:
    """Whether the package a cached plan was selected from is unchanged (a stat at most every
    STAMP_INTERVAL_NS; plans are per thread, so `checked_ns` needs no lock)."""
    if plan.stamp is None:
        return True
    now = time.monotonic_ns()
    if now - plan.checked_ns < STAMP_INTERVAL_NS:
        return True
    if file_stamp(plan.stamp_path) != plan.stamp:
        return False
    plan.checked_ns = now
    return True


describe_call = _fastpath.describe_call if _fastpath is not None else reference_describe.describe_call
"""describe_call(inputs, outputs, names) -> (in_inst, out_inst, signature, contiguous, nonempty).

What a miss needs to know of a call's normalized tensors (per IR parameter, lists of (array,
format)), read in one pass (in C: native/src/describe.c; opbuild.runtime.reference.describe is the
reference): per parameter the instances (dtype name, format name, shape, None) that tiling,
inference and the key rule see (strides None: the kernel reads C-contiguous tensors, phase 2
copies the others, and the context fills contiguous strides for None); the (dtype, format) of
every instance, what a shape-blind key rule sees; whether every tensor is C-contiguous; whether
any output has elements. `names` maps numpy dtypes to dtype names."""


def _check_dynamic_lists(spec: Any, inputs) -> None:
    """The tensors of one dynamic input all have the first one's dtype (one dtype column holds a
    list; its shapes are the op's business: its shape rule and tiling say what they may be)."""
    for param, instances in zip(spec.inputs, inputs, strict=True):
        if param.param_type == "dynamic":
            first = instances[0][0]
            for k, (a, _) in enumerate(instances[1:], 1):
                if a.dtype != first.dtype:
                    raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                                     f"{spec.op}: {param.name}[{k}] is {dtype_name(a.dtype)}{list(a.shape)}, "
                                     f"{param.name}[0] is {dtype_name(first.dtype)}{list(first.shape)}")


def _check_output_shapes(op: OpRuntime, outputs, inferred) -> None:
    """Each output tensor has the shape the op's rules gave (op_proto), where they give one."""
    if inferred is None:
        return
    for param, instances, (expected, _) in zip(op.spec.outputs, outputs, inferred, strict=True):
        if expected is not None and instances and instances[0][0].shape != expected:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"{op.spec.op}: output '{param.name}' has shape {list(instances[0][0].shape)}, expected {list(expected)}")


SIGNATURE_MEMO_CAPACITY = 1024
"""Call signatures an op keeps a Prepared for; emptied when full (attribute values are part of a
signature, so their number is not bounded by the op's binaries)."""


class Prepared:
    """What every plan of one call signature shares: the selected binary (GenSimplifiedKey, full
    key, lookup), its kernel, the SoC's platform and the op_proto library. Found on the
    signature's first miss; kept per op (OpRuntime.signature_memo) when the key rule cannot see
    shapes (KeyRule.reads_shapes), so a new shape of a known signature only infers and tiles.
    Valid while `index` is the package's current index (a rebuilt package is a new index)."""

    __slots__ = ("index", "selection", "proto", "_kernel", "_tiling")

    def __init__(self, index: Any, selection: Selection, proto: Any) -> None:
        self.index = index
        self.selection = selection
        self.proto = proto  # the op_proto library to infer with (None: the general path, e.g. an .om node)
        self._kernel: KernelInfo | None = None
        self._tiling: SignatureTiling | None = None

    def kernel(self, spec: Any) -> KernelInfo:
        """The selected kernel, loaded on first use (an all-empty call launches nothing)."""
        kernel = self._kernel
        if kernel is None:
            kernel = self._kernel = load_kernel_info(self.selection, spec)
        return kernel

    def tiling(self, op: OpRuntime, soc: str, attrs: tuple, d: int) -> "SignatureTiling":
        """The signature's SignatureTiling, made on its first launching call (soc, attrs and d are
        part of the signature: the same on every call that finds this Prepared)."""
        tiling = self._tiling
        if tiling is None:
            tiling = self._tiling = SignatureTiling(op, self, soc, attrs, d)
        return tiling


class SignatureTiling:
    """What inference and tiling take on every new shape of one call signature, found once: the
    SoC's platform, the kernel, the tiling function and the op_proto shape function by address,
    and the tiling context's fixed fields (op, SoC, attributes, d, p, tiling data capacity).
    `context` fills a call's TilingBlock (None without the extension: then `infer` and
    `run_tiling` take the ctypes path of the same functions); `plan` makes its plans. Of a kept
    signature (`kept`: its Prepared is in the op's signature memo), the same as numbers is what
    its misses take in C (signature_program)."""

    __slots__ = ("op", "spec", "soc", "attrs", "d", "p", "info", "kernel", "package", "precomputed",
                 "fill_args", "tiling_fn", "symbol", "proto", "shape_fns", "shape_symbols", "pack_argument", "argument_type",
                 "record_parts", "selection", "nargs", "kept", "instances")

    def __init__(self, op: OpRuntime, prepared: Prepared, soc: str, attrs: tuple, d: int) -> None:
        spec = op.spec
        self.selection = prepared.selection
        self.nargs = len(spec.inputs) + len(spec.outputs) + 2
        self.kept = prepared.index is not None
        self.instances: tuple | None = None  # the (in_inst, out_inst) of its first context
        try:
            info = platform(soc)
        except ValueError as exc:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: {exc} (OPBUILD_SOC)") from None
        self.op, self.spec, self.soc, self.attrs, self.d = op, spec, soc, attrs, d
        self.p = prepared.selection.impl_mode
        self.info = info
        self.kernel = kernel = prepared.kernel(spec)
        self.package = package = prepared.selection.package
        # A package provider (an .om) may hold the tiling result computed when it was built.
        self.precomputed = getattr(package, "precomputed_tiling", None)
        self.fill_args = (spec.op, _c_callbacks._attr_items(spec, attrs), soc, info.core_num, info.ub_size, d, self.p, kernel.op_para_size)
        self.tiling_fn: int | None = None  # the tiling function's address, found on first use
        self.symbol = spec.tiling_ref.symbol  # the tiling function's name
        self.proto = prepared.proto
        self.shape_symbols = (infer_shape_symbol(spec),)
        self.shape_fns = None if prepared.proto is None else prepared.proto.addresses(self.shape_symbols)
        # the tiling argument's layout for this kernel, and what its plans' records share: worked out once
        self.pack_argument = tiling_argument_packer(kernel.op_para_size)
        self.argument_type = ctypes.c_uint8 * len(self.pack_argument(b"", 0))
        self.record_parts: tuple | None = None  # (made from its first plan: record_parts)

    def context(self, in_inst, out_inst) -> Any:
        """The call's filled TilingBlock (tiling_context.fill_block), or None."""
        op_type, items, soc, core_num, ub_size, d, p, capacity = self.fill_args
        if self.instances is None:
            self.instances = (in_inst, out_inst)
        return fill_block(op_type, in_inst, out_inst, items, soc, core_num, ub_size, d, p, capacity)

    def plan(self, block_dim: int, tiling_key: int, workspace_size: int, argument: bytes, contiguous: bool = True) -> Plan:
        """The plan of a launching call of this signature from its tiling result (`argument`: the
        packed tiling argument): how a Python miss makes its plan, and, called from C, a native
        miss (signature_miss.c: C-contiguous arrays)."""
        plan = Plan(self.op, self.selection, self.kernel, block_dim, tiling_key, workspace_size,
                    self.argument_type.from_buffer_copy(argument), False, contiguous, self.nargs)
        plan.attrs = self.attrs
        parts = self.record_parts
        if parts is None:
            parts = self.record_parts = record_parts(plan)
        plan.record_parts = parts
        if self.kept:
            plan.signature = self
        return plan

    def infer(self, in_inst, block: Any) -> list | None:
        """The outputs' shapes (dtypes: None; the selection fixed them) by the op_proto library."""
        if block is None or self.shape_fns is None:
            if self.proto is None:
                return infer_instances(self.op, self.soc, in_inst, self.attrs, dtypes=False)
            return infer_with(self.proto, self.op, self.soc, in_inst, self.attrs, dtypes=False)
        try:
            return infer_on_block(block, self.shape_fns, self.shape_symbols, self.spec.op, len(self.spec.outputs),
                                  True, False)
        except InferError as exc:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID if exc.invalid else ACLNN_ERR_INNER, str(exc)) from None

    def tile(self, in_inst, out_inst, block: Any, full_key: str) -> TilingResult:
        """The tiling result of the call (run_tiling), checked against the kernel and the SoC."""
        result = self.run_tiling(in_inst, out_inst, block, full_key)
        self.check(result)
        return result

    def run_tiling(self, in_inst, out_inst, block: Any, full_key: str) -> TilingResult:
        """The tiling function's result for the call (or a package provider's precomputed one);
        `block`: the call's context when the shape check filled one (else filled here; through
        ctypes without the extension)."""
        spec = self.spec
        symbol = self.symbol
        if self.precomputed is not None:
            result = self.precomputed(spec, full_key, in_inst, out_inst, self.attrs)
            if result is not None:
                return result
        if block is None:
            block = self.context(in_inst, out_inst)
        try:
            if block is not None:
                fn = self.tiling_fn
                if fn is None:
                    fn = self.tiling_fn = self.op.tiling_library(self.package).address(symbol)
                return _c_callbacks.tiling_on_block(block, fn, spec.op, symbol, self.kernel.op_para_size)
            info = self.info
            return _c_callbacks.run_tiling(self.op.tiling_library(self.package), symbol, spec, in_inst, out_inst,
                                           self.attrs, soc=self.soc, core_num=info.core_num, ub_size=info.ub_size,
                                           deterministic=self.d, impl_mode=self.p, capacity=self.kernel.op_para_size)
        except _c_callbacks.CallbackError as exc:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID if exc.invalid else ACLNN_ERR_INNER, str(exc)) from None

    def check(self, result: TilingResult) -> None:
        """AclnnError 561000 when the result is out of what the kernel and the SoC take
        (tiling_bounds.check_tiling_result)."""
        kernel = self.kernel
        check_tiling_result(self.spec.op, self.symbol, result.block_dim, result.workspace_size, self.info,
                            kernel.intercore_sync, result.tiling_key, kernel.tiling_keys)


def _prepare(op: OpRuntime, soc: str, in_inst, out_inst, signature: tuple, outputs, attrs: tuple, d: int, p: int,
             fallback: bool, nonempty: bool) -> tuple[Prepared, Any]:
    """The call's Prepared, after checking its output shapes: from the op's memo when its
    signature was seen with the current package index, else selected now (and kept); and, on a
    kept signature that launches, the call's tiling context (a TilingBlock, None otherwise),
    filled once for the shape check and the tiling function."""
    memo = None
    if op.selection_by_signature:
        index = op.resolve_package(soc)[1]
        memo = (d, p, fallback, soc, attrs, signature,
                None if op.simple else (tuple(map(len, in_inst)), tuple(map(len, out_inst))))
        found = op.signature_memo.get(memo)
        if found is not None and found.index is index:
            block = None
            if nonempty:
                tiling = found.tiling(op, soc, attrs, d)
                block = tiling.context(in_inst, out_inst)
                inferred = tiling.infer(in_inst, block)
            elif found.proto is None:
                inferred = infer_instances(op, soc, in_inst, attrs, dtypes=False)
            else:
                inferred = infer_with(found.proto, op, soc, in_inst, attrs, dtypes=False)
            _check_output_shapes(op, outputs, inferred)
            return found, block
    # dtypes are not inferred: the key selection says which combinations exist
    _check_output_shapes(op, outputs, infer_instances(op, soc, in_inst, attrs, dtypes=False))
    selection = op.select_call(in_inst, out_inst, attrs, d, p, soc, fallback)
    if memo is None:
        return Prepared(None, selection, None), None
    package = op.proto_package(soc)
    proto = None if hasattr(package, "inferred_outputs") else op.op_proto_library(package)
    prepared = Prepared(index, selection, proto)
    if len(op.signature_memo) >= SIGNATURE_MEMO_CAPACITY:
        op.signature_memo.clear()
    op.signature_memo[memo] = prepared
    return prepared, None


PHASE_HOOKS: list = []
"""Functions called as fn(phase, op_name, start_ns, end_ns) (time.monotonic_ns) for the host-side
phases of a cache miss: "phase1 miss" (the whole build_plan: shape check, selection, tiling) and
"tiling" (the tiling function). The profiler registers one; misses only, so hits pay nothing."""


def _phase_done(phase: str, op: OpRuntime, start: int) -> None:
    end = time.monotonic_ns()
    for hook in list(PHASE_HOOKS):
        hook(phase, op.name, start, end)


def build_plan(op: OpRuntime, inputs, outputs, attrs: tuple, d: int, p: int, fallback: bool = False) -> Plan:
    """Cache miss: check shapes, select the binary by simplified key (with the p=0 retry when
    `fallback`: no impl mode set), run tiling with the selected key's p."""
    if PHASE_HOOKS:
        start = time.monotonic_ns()
        plan = _build_plan(op, inputs, outputs, attrs, d, p, fallback)
        _phase_done("phase1 miss", op, start)
    else:
        plan = _build_plan(op, inputs, outputs, attrs, d, p, fallback)
    plan.attrs = attrs
    return plan


def _build_plan(op: OpRuntime, inputs, outputs, attrs: tuple, d: int, p: int, fallback: bool) -> Plan:
    spec = op.spec
    if op.has_dynamic:
        _check_dynamic_lists(spec, inputs)
    soc = current_soc()
    in_inst, out_inst, signature, contiguous, nonempty = describe_call(inputs, outputs, _DTYPE_NAMES)
    prepared, block = _prepare(op, soc, in_inst, out_inst, signature, outputs, attrs, d, p, fallback, nonempty)
    selection = prepared.selection
    nargs = len(inputs) + len(outputs) + 2
    if not nonempty:
        # Nothing to compute (an empty input with a non-empty output, e.g. a sum over an empty
        # axis, still runs: the kernel writes the identity).
        return Plan(op, selection, None, 0, 0, 0, None, True, contiguous, nargs)
    tiling = prepared.tiling(op, soc, attrs, d)
    if PHASE_HOOKS:
        start = time.monotonic_ns()
        result = tiling.tile(in_inst, out_inst, block, selection.full_key)
        _phase_done("tiling", op, start)
    else:
        result = tiling.tile(in_inst, out_inst, block, selection.full_key)
    try:
        argument = tiling.pack_argument(result.tiling_data, result.tiling_key)
    except ValueError as exc:
        raise AclnnError(ACLNN_ERR_INNER, f"{spec.op}: tiling function {tiling.symbol}: {exc}") from None
    return tiling.plan(result.block_dim, result.tiling_key, result.workspace_size, argument, contiguous)


def signature_program(plan: Plan) -> tuple | None:
    """What the native miss of `plan`'s call signature takes (native/src/signature_miss.c), or
    None when its misses must run here: (a TilingBlock filled for the signature, the shape
    function's address, the tiling function's address, the tiling keys the kernel declares, the
    most blocks and workspace bytes a result may set (tiling_limits), the tiling key's offset in
    the tiling argument, the plan factory). Only a kept signature (its binary selected once) whose
    shape rule and tiling run on a filled context (no package-precomputed tiling), while no phase
    hooks time misses here; asked by the C Phase1 after a Python miss filed a launchable plan."""
    tiling = plan.signature
    if (tiling is None or PHASE_HOOKS or tiling.precomputed is not None or tiling.shape_fns is None
            or tiling.tiling_fn is None or tiling.instances is None):
        return None
    block = tiling.context(*tiling.instances)  # (a fresh one: the program runs functions on it)
    if block is None:
        return None
    kernel = tiling.kernel
    max_blocks, max_workspace = tiling_limits(tiling.info, kernel.intercore_sync)
    return (block, tuple(tiling.shape_fns), tiling.tiling_fn, kernel.tiling_keys, max_blocks, max_workspace,
            tiling_key_offset(kernel.op_para_size), tiling.plan)
