"""Binary selection: GenSimplifiedKey, full-key assembly and the O(1) lookup (seed 003).

`OpRuntime` is one op as the runtime knows it: its definition (from the package's generated
module), where its package is, and — loaded lazily, once — its key rule, tiling library and
kernels. `select()` runs steps 3-5 of the seed's flow for one call and says exactly what it did,
so the executor and `opbuild explain` share one code path.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from opbuild.abi import package_layout as layout
from opbuild.abi.vocabulary import ATTR_TYPE, DEFAULT_SOC
from opbuild.keys import KeyContext, KeyRuleError, check_fragment, describe_call, full_key, make_fragment_fn
from opbuild.runtime import fastpath_ext
from opbuild.runtime.binaries.package import (
    BinaryEntry,
    BinaryIndex,
    binary_index,
    find_op_package,
    inside_package,
    search_roots,
)
from opbuild.runtime.environ import decode, raw_reader
from opbuild.runtime.errors import ACLNN_ERR_INNER, ACLNN_ERR_PARAM_INVALID, AclnnError
from opbuild.runtime.settings import DEFAULT_P, FALLBACK_P
from opbuild.spec.model import OpSpec

_OPS: "weakref.WeakSet[OpRuntime]" = weakref.WeakSet()
"""Every OpRuntime alive (forget_selections reaches their selection memos)."""
_KEY_IDS = itertools.count(1)
"""OpRuntime.key_id: one per op runtime made in this process (word 1 of its cache keys)."""


def forget_selections() -> None:
    """Forget every op's selections kept per call signature (OpRuntime.signature_memo), and with
    them the native misses' programs made from them (native/src/signature_miss.c)."""
    for op in list(_OPS):
        op.signature_memo.clear()
    ext = fastpath_ext.load()
    if ext is not None:
        ext.forget_programs()


def _soc_reader() -> Callable[[], str]:
    """current_soc: OPBUILD_SOC read as the cache key reads the environment (environ.raw_reader;
    every miss asks), its value decoded once."""
    read = raw_reader("OPBUILD_SOC")
    last: list[Any] = [None, DEFAULT_SOC]  # the raw value last seen and its decoding

    def current_soc() -> str:
        """The SoC the runtime pretends to run on (OPBUILD_SOC, default ascend910b)."""
        (raw,) = read()
        if raw is None:
            return DEFAULT_SOC
        if raw is not last[0]:
            last[1], last[0] = decode(raw), raw
        return last[1]

    return current_soc


current_soc = _soc_reader()


@dataclass(frozen=True)
class Selection:
    """What binary selection did for one call (one per full key and package index: the index's
    selection table keeps it)."""

    fragment: str
    full_key: str
    entry: BinaryEntry
    package: Path
    impl_mode: int = 0
    """The p of the selected key (0 after the p=0 retry)."""
    stamp: tuple[int, int, int] | None = None
    """file_stamp of the entry's binary_info_config.json when the index read it (None: not a file)."""
    config: str = ""
    """That binary_info_config.json ("" if none: e.g. a package provider that is not a directory,
    an .om's nodes); cached plans compare its stamp, so a package rebuilt in place selects again."""


def nearest_keys(wanted: str, keys: tuple[str, ...], limit: int = 5) -> list[str]:
    """The op's existing keys, most similar to `wanted` first (ties by key).

    Fast for big ops: the matcher keeps `wanted` analysed, and a key whose cheap upper bounds
    cannot beat the current top `limit` is skipped before the full ratio is computed.
    """
    matcher = difflib.SequenceMatcher(None)
    matcher.set_seq2(wanted)
    best: list[tuple[float, str]] = []  # (-ratio, key), kept sorted, at most `limit`
    for k in keys:
        matcher.set_seq1(k)
        if len(best) == limit:
            worst = -best[-1][0]
            if matcher.real_quick_ratio() < worst or matcher.quick_ratio() < worst:
                continue
        item = (-matcher.ratio(), k)
        if len(best) < limit or item < best[-1]:
            bisect.insort(best, item)
            del best[limit:]
    return [k for _, k in best]


class OpRuntime:
    """One op of one package (or of the package search path when `package` is None)."""

    def __init__(self, spec: OpSpec, package: Any) -> None:
        """`package`: a package directory (Path), a provider object (duck-typed: see resolve_package),
        or None (the package search path)."""
        self.spec = spec
        self.package = package
        self._lock = threading.Lock()
        self._fragment_fn: Callable[[KeyContext], str] | None = None
        self._tiling_libs: dict[tuple[Path, str], Any] = {}
        self._package_type: type | None = None  # resolve_package: whether `package` is a provider
        self._provider = False
        # Precomputed once, read by the executor on every call.
        self.name = spec.op
        self.n_inputs = len(spec.inputs)
        self.n_outputs = len(spec.outputs)
        self.n_attrs = len(spec.attrs)
        self.input_what = tuple(f"{spec.op} input '{p.name}'" for p in spec.inputs)
        self.output_what = tuple(f"{spec.op} output '{p.name}'" for p in spec.outputs)
        self.has_dynamic = any(p.param_type == "dynamic" for p in spec.inputs + spec.outputs)
        self.list_attrs = any(a.type.startswith("list_") for a in spec.attrs)
        # simple: every tensor is one required tensor and every attribute a scalar, so a call's cache
        # key can be built from the arguments as given (executor.simple_key, the fast wrappers).
        self.simple = (all(p.param_type == "required" for p in spec.inputs + spec.outputs) and not self.list_attrs)
        # The op in the op-parameter cache key (opkey.h): its id, per parameter (inputs, outputs)
        # whether it is a tensor list, per attribute its key tag (call/cache_key.py, fastpath.c).
        self.key_id = next(_KEY_IDS)
        self.slot_kinds = bytes(p.param_type == "dynamic" for p in spec.inputs + spec.outputs)
        self.attr_tags = bytes(ATTR_TYPE[a.type].key_tag for a in spec.attrs)
        # key(dp, *args) of a simple call: its cache key (opkey.h words as bytes) or None; made on
        # first use (arguments.simple_key, fast_wrappers.key_function).
        self.call_key: Callable[..., bytes | None] | None = None
        # The op's aclnn functions, set when the package's generated module makes them.
        self.phase1: Callable[..., Any] | None = None
        self.phase2: Callable[..., Any] | None = None
        # What the plans of one call signature share (plans.Prepared: the selection, the kernel...),
        # kept when the key rule cannot see shapes, so a new shape runs no GenSimplifiedKey.
        self.selection_by_signature = spec.key_rule is not None and not spec.key_rule.reads_shapes
        self.signature_memo: dict[tuple, Any] = {}
        _OPS.add(self)

    # ---- package ------------------------------------------------------------------------------
    def resolve_package(self, soc: str) -> tuple[Path, BinaryIndex]:
        """The package to take binaries from: the explicit one, else resolved now by search order.

        `package` may also be a provider object (e.g. an op package embedded in an .om) with
        `binary_index(soc)` and `tiling_library()`, and optionally `fragment_fn(spec)` and
        `precomputed_tiling(...)`; it is then used instead of a package directory.
        """
        package = self.package
        if package is not None:
            if type(package) is not self._package_type:  # (hasattr of a Path raises inside: once per type)
                self._package_type, self._provider = type(package), hasattr(package, "binary_index")
            return package, package.binary_index(soc) if self._provider else binary_index(package, soc)
        root, roots = find_op_package(self.spec.op, soc)
        if root is None:
            searched = ", ".join(str(r) for r in roots) or "(nothing: set ASCEND_CUSTOM_OPP_PATH or ASCEND_OPP_PATH)"
            raise AclnnError(ACLNN_ERR_INNER, f"{self.spec.op}: no package with this op for {soc}; searched {searched}")
        return root, binary_index(root, soc)

    def proto_package(self, soc: str):
        """The package (or provider) whose op_proto library infers this op's outputs: an AI CPU
        op's package has no binaries to resolve by (opbuild/runtime/call/aicpu.py finds it)."""
        if self.spec.is_aicpu:
            from opbuild.runtime.call.aicpu import package_of

            return package_of(self)
        return self.resolve_package(soc)[0]

    def tiling_library(self, package: Path):
        """The package's tiling library (tiling functions and C key callbacks), opened once."""
        if hasattr(package, "tiling_library"):  # a provider (see resolve_package)
            return package.tiling_library()
        return self._library(package, layout.tiling_lib, "tiling library")

    def op_proto_library(self, package: Path):
        """The package's op_proto library (each op's shape and dtype inference), opened once; a
        provider's `op_proto_library()` (None: it has none, see runtime/infer.py)."""
        if hasattr(package, "op_proto_library"):
            return package.op_proto_library()
        return self._library(package, layout.op_proto_lib, "op_proto library")

    def _library(self, package: Path, relative: Callable[[], Any], what: str):
        """A library of the package at `relative()` (checked to stay inside it), opened once per
        package (a miss asks on every call: nothing but the dict lookup runs then)."""
        key = (package, what)
        lib = self._tiling_libs.get(key)
        if lib is None:
            from opbuild.runtime.host.c_callbacks import CallbackError, TilingLibrary

            with self._lock:
                lib = self._tiling_libs.get(key)
                if lib is None:
                    path = package / relative()
                    if not path.is_file():
                        raise AclnnError(ACLNN_ERR_INNER, f"{self.spec.op}: {what} missing: {path}")
                    inside_package(package, path, what, self.spec.op)
                    try:
                        lib = TilingLibrary(path)
                    except CallbackError as exc:
                        raise AclnnError(ACLNN_ERR_INNER, f"{self.spec.op}: {exc}") from None
                    self._tiling_libs[key] = lib
        return lib

    # ---- key ----------------------------------------------------------------------------------
    def fragment_fn(self, package: Path) -> Callable[[KeyContext], str]:
        if self._fragment_fn is None:
            rule = self.spec.key_rule
            provided = getattr(package, "fragment_fn", None)  # a provider may supply the key rule
            if provided is not None:
                fn = provided(self.spec)
                if fn is not None:
                    self._fragment_fn = fn
                    return fn
            try:
                if rule.callback == "c":
                    from opbuild.runtime.host.c_callbacks import CKeyCallback

                    callback = CKeyCallback(self.tiling_library(package), rule.c_symbol, self.spec)
                    self._fragment_fn = make_fragment_fn(self.spec, c_callback=callback)
                else:
                    self._fragment_fn = make_fragment_fn(self.spec)
            except AclnnError:
                raise
            except Exception as exc:  # noqa: BLE001 - no usable GenSimplifiedKey
                raise AclnnError(ACLNN_ERR_INNER, f"{self.spec.op} has no usable gen_simplifiedkey func: {exc}") from None
        return self._fragment_fn

    def check_declared_dtypes(self, ctx: KeyContext) -> None:
        """161002 with op_proto's wrong-dtype message when no declared column has the call's input
        dtypes: a call whose key cannot be built or found says the same as one whose outputs were
        inferred (the one-shot path), not "the table has no entry" or "no binary for key"."""
        dtypes = [ctx.input_dtype(i) if i < ctx.num_inputs else None for i in range(len(self.spec.inputs))]
        message = self.spec.undeclared_dtypes_message(dtypes)
        if message is not None:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, message)

    def fragment(self, ctx: KeyContext, package: Path) -> str:
        """The key tail for this call: the callback's fragment (checked) or the default groups."""
        fn = self.fragment_fn(package)
        try:
            fragment = fn(ctx)
        except KeyRuleError as exc:
            self.check_declared_dtypes(ctx)
            # The table rule is the declared binaries themselves: no row means the op has no binary
            # for these parameters (invalid parameter); a callback that fails is an inner error.
            status = ACLNN_ERR_PARAM_INVALID if self.spec.key_rule.callback == "table" else ACLNN_ERR_INNER
            raise AclnnError(status, f"{self.spec.op}: GenSimplifiedKey failed for {describe_call(self.spec, ctx)}: {exc}") from None
        except AclnnError:
            raise
        except Exception as exc:  # noqa: BLE001 - a user callback raised
            raise AclnnError(ACLNN_ERR_INNER, f"{self.spec.op}: GenSimplifiedKey raised {type(exc).__name__}: {exc} "
                                              f"(call: {describe_call(self.spec, ctx)})") from None
        if self.spec.key_rule.mode == "customized":
            problem = check_fragment(fragment) if isinstance(fragment, str) else "is not a string"
            if problem:
                raise AclnnError(ACLNN_ERR_INNER, f"{self.spec.op}: GenSimplifiedKey fragment {fragment!r} {problem}")
        return fragment

    def lookup(self, ctx: KeyContext, package: Path, index: BinaryIndex,
               fallback: bool = False) -> tuple[KeyContext, str, str, BinaryEntry | None, list[str]]:
        """Fragment, full key and entry of a call (entry None: no binary has it), and the keys tried.

        With `fallback` (the caller set no impl mode) a p=1 key without a binary is retried as the
        same call with p=0 (fragment recomputed, since a customized rule may look at p).
        """
        fragment = self.fragment(ctx, package)
        key = full_key(self.spec.op, ctx.deterministic, ctx.impl_mode, fragment)
        entry = index.by_key.get(key)
        tried = [key]
        if entry is None and fallback and ctx.impl_mode == DEFAULT_P:
            retry = ctx.with_impl_mode(FALLBACK_P)
            fragment0 = self.fragment(retry, package)
            key0 = full_key(self.spec.op, retry.deterministic, FALLBACK_P, fragment0)
            tried.append(key0)
            entry = index.by_key.get(key0)
            if entry is not None:
                return retry, fragment0, key0, entry, tried
        return ctx, fragment, key, entry, tried

    def select(self, ctx: KeyContext, soc: str, fallback: bool = False) -> Selection:
        """Steps 3-5: fragment, full key `Op/d=..,p=../...`, lookup in the binary index."""
        package, index = self.resolve_package(soc)
        if not index.config_files:
            raise AclnnError(ACLNN_ERR_INNER, f"{self.spec.op}: package {package} has no binary_info_config.json for "
                                              f"{soc} (looked for {package / layout.binary_info_config(soc)})")
        used, fragment, key, entry, tried = self.lookup(ctx, package, index, fallback)
        selection = index.selections.get(key) if entry is not None else None
        if selection is not None and selection.entry is entry and (selection.package is package or
                                                                   selection.package == package):
            return selection  # the selection table (package.BinaryIndex.selections)
        if entry is None:
            for k in tried:
                if k in index.skipped_keys:  # the entry with this key was skipped: its path left the package
                    raise index.skipped_keys[k]
            self.check_declared_dtypes(used)
            message = self.miss_message(tried[0], index, package, used)
            if len(tried) > 1:
                message += f"\n(no impl mode set: {tried[1]} was tried too)"
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, message)
        config = ", ".join(str(f) for f in index.config_files)
        bin_path = entry.checked_bin_path(config)
        if not bin_path.is_file():
            raise AclnnError(ACLNN_ERR_INNER, f"{self.spec.op}: key {key} selects {entry.name}, but its binary is missing: {bin_path}")
        config_file = getattr(entry, "config", None)
        config = str(config_file) if config_file is not None else ""
        selection = Selection(fragment, key, entry, package, used.impl_mode,
                              index.file_stamps.get(config) if config_file is not None else None, config)
        index.selections[key] = selection  # checked once per package index (a rebuilt package is a new index)
        return selection

    def select_call(self, inputs: Sequence[Sequence[tuple]], outputs: Sequence[Sequence[tuple]],
                    attr_values: tuple, d: int, p: int, soc: str, fallback: bool = False) -> Selection:
        """select() for one call given as instances ((dtype name, format name, shape, ...) per
        tensor, per IR parameter) and normalized attribute values."""
        ctx = KeyContext([[i[:3] for i in g] for g in inputs], [[i[:3] for i in g] for g in outputs],
                         {a.name: v for a, v in zip(self.spec.attrs, attr_values, strict=True)}, d, p, soc)
        return self.select(ctx, soc, fallback)

    def miss_message(self, key: str, index: BinaryIndex, package: Path, ctx: KeyContext | None = None) -> str:
        existing = index.keys_by_op.get(self.spec.op, ())
        skipped = "".join(f"\n  ({note})" for note in index.skipped.get(self.spec.op, ()))
        if not existing:
            where = ", ".join(str(f) for f in index.config_files) or f"no binary_info_config.json under {package / layout.kernel_config_dir(index.soc)}"
            return f"no binary for key {key}: op {self.spec.op} is not in {where}{skipped}"
        nearest = "\n    ".join(nearest_key_lines(self.spec, key, existing, index, ctx))
        files = ", ".join(str(f) for f in index.config_files)
        return (f"no binary for key {key} in package {package} ({files}); nearest existing keys of {self.spec.op}:\n    {nearest}"
                f"{skipped}")


def call_dtypes(spec, ctx: KeyContext) -> dict[str, str]:
    """Tensor name -> dtype of a call (a list by its first element; absent tensors left out)."""
    dtypes = {}
    for params, count, dtype_of in ((spec.inputs, ctx.num_inputs, ctx.input_dtype),
                                    (spec.outputs, ctx.num_outputs, ctx.output_dtype)):
        for i, param in enumerate(params):
            dt = dtype_of(i) if i < count else None
            if dt:
                dtypes[param.name] = dt
    return dtypes


def nearest_key_lines(spec, key: str, existing: tuple[str, ...], index: BinaryIndex,
                      ctx: KeyContext | None) -> list[str]:
    """`KEY  ->  BINARY (x=float16, ...)` for the existing keys nearest to `key`: first those whose
    binary's `when` takes this call's dtypes (a key that differs by an attr, a format or d/p: the
    likely fix), then the most similar by spelling. A bf16 call building `ssp_bfp16` is not sent to
    `ssp_fp16`, whose binary takes float16: its dtypes are printed beside it."""
    whens = {b.name: b.when for b in spec.binaries}
    given = call_dtypes(spec, ctx) if ctx is not None else {}

    def takes_call(k: str) -> bool:
        when = whens.get(index.by_key[k].name, ())
        return bool(given) and bool(when) and all(given.get(t) == c.dtype for t, c in when if t in given)

    serving = [k for k in existing if takes_call(k)]
    ranked = nearest_keys(key, tuple(serving)) + [k for k in nearest_keys(key, existing) if k not in serving]
    lines = []
    for k in ranked[:5]:
        name = index.by_key[k].name
        when = ", ".join(f"{t}={c.dtype}" for t, c in whens.get(name, ()))
        lines.append(f"{k}  ->  {name}" + (f" ({when})" if when else "")
                     + ("  [takes this call's dtypes]" if k in serving else ""))
    return lines


def searched_roots_text(explicit: Path | None) -> str:
    return ", ".join(str(r) for r in search_roots(explicit))
