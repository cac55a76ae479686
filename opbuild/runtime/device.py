"""Python bindings of the device simulator (opbuild/runtime/native/src/sim.c, see sim.h).

The simulated device shares the host address space: a `DeviceBuffer` is host memory with the
alignment of aclrtMalloc, readable and writable as a numpy view. Kernels are shared objects that
export `opbuild_kernel_launch` (opbuild/kernel.h); `launch` runs their blocks on the simulator's
thread pool, on the default stream (synchronous) or on a `Stream` (an in-order queue).

Buffers must stay allocated until the kernels using them finished: after a launch on a created
stream, keep them (or free them with `buf.free(stream=s)`, ordered after the launch) until
`synchronize()`.

The native library is built by `pip install -e .` (setup.py) as
`opbuild/runtime/_opbuild_sim*.so`; env `OPBUILD_SIM_LIB` may name another build of it (for
example one compiled with -fsanitize=thread).
"""

from __future__ import annotations

import ctypes
import itertools
import operator
import os
import threading
import time
from collections.abc import Callable, Sequence
from importlib.machinery import EXTENSION_SUFFIXES
from math import prod
from pathlib import Path

import numpy as np

__all__ = [
    "DeviceError",
    "DeviceBuffer",
    "KernelBinary",
    "Stream",
    "default_stream",
    "malloc",
    "upload",
    "load_kernel",
    "make_args",
    "launch",
    "set_threads",
    "set_isolation",
    "threads",
    "mem_in_use",
    "mem_peak",
    "mem_blocks",
    "allocation",
    "library_path",
    "MEM_ALIGN",
    "MAX_SYNC_BLOCKS",
    "LAUNCH_SYMBOL",
]

MEM_ALIGN = 512
MAX_SYNC_BLOCKS = 1024
LAUNCH_SYMBOL = "opbuild_kernel_launch"
_SIM_ABI_VERSION = 1

# sim.h status codes
SIM_EINVAL, SIM_EKERNEL, SIM_ENOMEM, SIM_ESTATE, SIM_EINTR, SIM_EBUSY = 1, 2, 3, 4, 5, 6
_CODE_NAMES = {SIM_EINVAL: "invalid argument", SIM_EKERNEL: "kernel failed", SIM_ENOMEM: "out of resources",
               SIM_ESTATE: "invalid state", SIM_EINTR: "interrupted", SIM_EBUSY: "busy"}
_WAIT_SLICE_MS = 50  # Stream.synchronize waits in slices: signals (Ctrl-C) are handled between them


class DeviceError(RuntimeError):
    """A failure reported by the device simulator; `code` is the sim.h status (SIM_E*)."""

    def __init__(self, message: str, code: int = SIM_EINVAL):
        super().__init__(message)
        self.code = code


# ---- loading the library -------------------------------------------------------------------------

_lib: ctypes.CDLL | None = None
_lib_path: Path | None = None
_load_lock = threading.Lock()


def _find_library() -> Path:
    env = os.environ.get("OPBUILD_SIM_LIB")
    if env:
        path = Path(env)
        if not path.is_file():
            raise DeviceError(f"OPBUILD_SIM_LIB={env} does not exist")
        return path
    here = Path(__file__).resolve().parent
    found = sorted(here.glob("_opbuild_sim*.so"))
    if not found:
        raise DeviceError(
            f"the device simulator library is not built: no _opbuild_sim*.so in {here}; "
            "run `pip install -e .` in the repository root"
        )
    # Prefer the build for this interpreter when several are present.
    for suffix in EXTENSION_SUFFIXES:
        for path in found:
            if path.name == "_opbuild_sim" + suffix:
                return path
    return found[0]


def _declare(lib: ctypes.CDLL) -> None:
    vp, u32, u64, i32 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int
    sigs = {
        "sim_abi_version": (u32, []),
        "sim_last_error": (ctypes.c_char_p, []),
        "sim_malloc": (vp, [ctypes.c_size_t]),
        "sim_free": (i32, [vp]),
        "sim_mem_in_use": (u64, []),
        "sim_mem_peak": (u64, []),
        "sim_mem_blocks": (u64, []),
        "sim_allocation": (i32, [vp, ctypes.POINTER(u64), ctypes.POINTER(u64)]),
        "sim_set_threads": (i32, [u32]),
        "sim_threads": (u32, []),
        "sim_launch": (i32, [vp, vp, vp, u32, u32, i32, ctypes.c_char_p, u32]),
        "sim_stream_create": (vp, []),
        "sim_stream_synchronize": (i32, [vp, ctypes.c_char_p, u32]),
        "sim_stream_destroy": (i32, [vp, ctypes.c_char_p, u32]),
        "sim_stream_enqueue_host": (i32, [vp, vp, vp]),
        "sim_stream_pending": (u64, [vp]),
        "sim_register_kernel": (i32, [vp, ctypes.c_char_p]),
        "sim_register_kernel_args": (i32, [vp, ctypes.c_char_p]),
        "sim_set_isolation": (i32, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]),
        "sim_isolated": (i32, []),
        "sim_install_interrupt": (i32, [ctypes.c_ulong]),
        "sim_stream_wait": (i32, [vp, u32]),
        "sim_aicpu_launch": (i32, [vp, vp, vp, vp, ctypes.c_char_p, u32]),
        "sim_aicpu_tasks": (u64, []),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _load() -> ctypes.CDLL:
    global _lib, _lib_path, _sim_launch, _last_error_fn
    with _load_lock:
        if _lib is not None:
            return _lib
        path = _find_library()
        try:
            lib = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as e:
            raise DeviceError(f"cannot load the device simulator {path}: {e}; rebuild it with `pip install -e .`") from e
        try:
            _declare(lib)
        except AttributeError as e:
            raise DeviceError(f"{path} is not a device simulator library ({e}); rebuild it with `pip install -e .`") from e
        version = lib.sim_abi_version()
        if version != _SIM_ABI_VERSION:
            raise DeviceError(
                f"{path} has simulator ABI version {version}, expected {_SIM_ABI_VERSION}; "
                "rebuild it with `pip install -e .`"
            )
        # Ctrl-C interrupts synchronous launches of the main thread (sim.h, sim_install_interrupt).
        lib.sim_install_interrupt(threading.main_thread().ident or 0)
        _sim_launch = lib.sim_launch
        _last_error_fn = lib.sim_last_error
        _lib_path = path
        _lib = lib
        return lib


def _L() -> ctypes.CDLL:
    return _lib if _lib is not None else _load()


def library_path() -> Path:
    """Path of the loaded simulator library."""
    _L()
    assert _lib_path is not None
    return _lib_path


def _last_error() -> str:
    msg = _last_error_fn()
    return msg.decode("utf-8", "replace") if msg else "unknown error"


_check_signals = ctypes.pythonapi.PyErr_CheckSignals
_check_signals.restype = ctypes.c_int
_check_signals.argtypes = []


def interrupted() -> None:
    """After SIM_EINTR: run the pending signal handlers now (Ctrl-C raises KeyboardInterrupt here)."""
    _check_signals()


def _raise(code: int, context: str = "") -> None:
    msg = _last_error()
    if code == SIM_EINTR:
        interrupted()
    raise DeviceError(f"{context}{msg}" if context else msg, code)


# Bound by _load(); placeholders make the first call load the library.
def _sim_launch(*args):  # replaced by the ctypes function
    _load()
    return _sim_launch(*args)


def _last_error_fn():
    _load()
    return _last_error_fn()


# ---- memory --------------------------------------------------------------------------------------


class DeviceBuffer:
    """`nbytes` of device memory at `address` (512-byte aligned); freed by `free()` or when collected.

    Views returned by `as_array` keep the buffer alive; an explicit `free()` invalidates them.
    """

    __slots__ = ("address", "nbytes", "_freed", "__weakref__")

    def __init__(self, address: int, nbytes: int):
        self.address = address
        self.nbytes = nbytes
        self._freed = False

    def __repr__(self) -> str:
        state = "freed" if self._freed else f"{self.nbytes} bytes"
        return f"<DeviceBuffer 0x{self.address:x} {state}>"

    def __int__(self) -> int:
        return self.address

    __index__ = __int__

    @property
    def freed(self) -> bool:
        return self._freed

    def free(self, stream: Stream | None = None) -> None:
        """Free now, or (given a created stream) after the work already enqueued on it."""
        if self._freed:
            raise DeviceError(f"device buffer 0x{self.address:x} was freed already")
        self._freed = True
        lib = _L()
        if stream is not None and stream._ptr is not None:
            rc = lib.sim_stream_enqueue_host(stream._ptr, ctypes.cast(lib.sim_free_host_fn, ctypes.c_void_p),
                                             self.address)
        else:
            rc = lib.sim_free(self.address)
        if rc:
            _raise(rc)

    def __del__(self):
        if not self._freed and _lib is not None:
            self._freed = True
            _lib.sim_free(self.address)

    def _check(self) -> None:
        if self._freed:
            raise DeviceError(f"device buffer 0x{self.address:x} was freed")

    def as_array(self, dtype, shape: Sequence[int] | int | None = None) -> np.ndarray:
        """A numpy view of the buffer (the whole buffer as 1-D when shape is None)."""
        self._check()
        dtype = np.dtype(dtype)
        if shape is None:
            if self.nbytes % dtype.itemsize:
                raise ValueError(f"{self.nbytes} bytes is not a whole number of {dtype} elements")
            shape = (self.nbytes // dtype.itemsize,)
        elif isinstance(shape, int):
            shape = (shape,)
        else:
            shape = tuple(shape)
        need = prod(shape) * dtype.itemsize
        if need > self.nbytes:
            raise ValueError(f"shape {shape} of {dtype} needs {need} bytes; the buffer has {self.nbytes}")
        if need == 0:
            return np.empty(shape, dtype)
        raw = (ctypes.c_char * need).from_address(self.address)
        raw._owner = self  # the view's base chain keeps the buffer alive
        return np.frombuffer(raw, dtype=dtype).reshape(shape)

    def copy_from(self, array: np.ndarray) -> None:
        """Copy a host array's bytes to the start of the buffer."""
        src = np.ascontiguousarray(array)
        if src.nbytes > self.nbytes:
            raise ValueError(f"array of {src.nbytes} bytes does not fit the buffer of {self.nbytes}")
        self._check()
        if src.nbytes:
            ctypes.memmove(self.address, src.ctypes.data, src.nbytes)

    def to_numpy(self, dtype, shape: Sequence[int] | int | None = None) -> np.ndarray:
        """A host copy of the buffer's contents."""
        return self.as_array(dtype, shape).copy()


def malloc(nbytes: int) -> DeviceBuffer:
    """Allocate device memory (512-byte aligned, uninitialised)."""
    if nbytes < 0:
        raise ValueError(f"cannot allocate {nbytes} bytes")
    address = _L().sim_malloc(nbytes)
    if not address:
        _raise(SIM_ENOMEM)
    return DeviceBuffer(address, nbytes)


def upload(array: np.ndarray) -> DeviceBuffer:
    """A new device buffer holding a copy of the array's bytes."""
    src = np.ascontiguousarray(array)
    buf = malloc(src.nbytes)
    buf.copy_from(src)
    return buf


def mem_in_use() -> int:
    """Bytes currently allocated on the device."""
    return _L().sim_mem_in_use()


def mem_peak() -> int:
    return _L().sim_mem_peak()


def mem_blocks() -> int:
    """Number of live device allocations."""
    return _L().sim_mem_blocks()


def allocation(address: int) -> tuple[int, int] | None:
    """(start, size) of the live device allocation holding `address`, or None when the address
    is in none (host memory, or device memory already freed). What lets a caller check that a
    tensor or workspace given by address fits in the buffer `malloc`/aclrtMalloc handed out."""
    start, size = ctypes.c_uint64(), ctypes.c_uint64()
    if not _L().sim_allocation(address, ctypes.byref(start), ctypes.byref(size)):
        return None
    return start.value, size.value


# ---- thread pool ---------------------------------------------------------------------------------


def set_threads(n: int) -> None:
    """Size the simulator's thread pool (0: default, env OPBUILD_SIM_THREADS or the CPU count).

    A running pool is stopped and recreated with the new size on the next launch.
    """
    if n < 0:
        raise ValueError(f"thread count {n} is negative")
    rc = _L().sim_set_threads(n)
    if rc:
        _raise(rc)


def set_isolation(mode: str | None = None, timeout: str | float | None = None,
                  memcheck: str | int | None = None) -> None:
    """Set how launches run, as the environment variables do (None: the variable's value):
    `mode` OPBUILD_ISOLATION ("process" or "in-process"), `timeout` OPBUILD_KERNEL_TIMEOUT
    (seconds), `memcheck` OPBUILD_MEMCHECK (1 or 0). See docs/runtime.md, "Buggy kernels".
    A bad value raises DeviceError (and launches fail with it until set again)."""
    def arg(value: object) -> bytes | None:
        return None if value is None else str(value).encode()

    rc = _L().sim_set_isolation(arg(mode), arg(timeout), arg(memcheck))
    if rc:
        _raise(rc)


def threads() -> int:
    """Threads that run blocks (the launching thread included)."""
    n = _L().sim_threads()
    if n == 0:
        raise DeviceError(f"OPBUILD_SIM_THREADS={os.environ.get('OPBUILD_SIM_THREADS')!r} is not an integer in 1..1024")
    return n


# ---- streams -------------------------------------------------------------------------------------

_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_host_calls: dict[int, tuple[Callable[[], object], list[BaseException]]] = {}
_host_ids = itertools.count(1)


def _host_trampoline(key: int | None) -> None:
    if key is None:  # (a void* argument; the ids start at 1, so the simulator never passes NULL)
        return
    fn, errors = _host_calls.pop(key)
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - reported by the stream's next synchronize()
        errors.append(e)


_host_trampoline_c = _HOST_FN(_host_trampoline)


WAIT_HOOKS: list = []
"""Functions called as fn(stream, start_ns, end_ns) after Stream.synchronize waited for a stream
(time.monotonic_ns): the profiler's "wait" events."""


class Stream:
    """An in-order queue of launches and host functions served by one simulator thread.

    `launch(..., stream=s)` returns at once; errors surface at `synchronize()` (or `destroy()`).
    Usable as a context manager (destroyed on exit).
    """

    __slots__ = ("_ptr", "_host_errors", "_abandoned", "__weakref__")

    def __init__(self) -> None:
        lib = _L()
        ptr = lib.sim_stream_create()
        if not ptr:
            _raise(SIM_ENOMEM, "cannot create a stream: ")
        self._ptr: int | None = ptr
        self._host_errors: list[BaseException] = []
        self._abandoned = False  # a wait for it was interrupted: garbage collection must not block on it

    def __repr__(self) -> str:
        return f"<Stream 0x{self._ptr:x}>" if self._ptr else "<Stream destroyed>"

    @property
    def handle(self) -> int | None:
        """The sim_stream* (None for the default stream)."""
        return self._ptr

    @classmethod
    def from_handle(cls, handle: int | None) -> Stream:
        """A Stream over an existing sim_stream* that it does not own (an aclrtStream made by
        aclrtCreateStream): destroy() only detaches it, garbage collection leaves it alone.
        None or 0 gives the default stream."""
        if not handle:
            return default_stream
        return _BorrowedStream(handle)

    def _live(self) -> int:
        if self._ptr is None:
            raise DeviceError("stream was destroyed", SIM_ESTATE)
        return self._ptr

    def synchronize(self) -> None:
        """Wait for everything enqueued; raise the first error since the last synchronize.
        Waits in slices: Ctrl-C (KeyboardInterrupt) interrupts the wait."""
        lib = _L()
        ptr = self._live()
        if WAIT_HOOKS:  # the profiler: the host's wait for the stream
            start = time.monotonic_ns()
            self._wait(lib, ptr)
            for hook in list(WAIT_HOOKS):
                hook(self, start, time.monotonic_ns())
        else:
            self._wait(lib, ptr)
        rc = lib.sim_stream_synchronize(ptr, None, 0)
        if rc:
            _raise(rc)
        self._raise_host_error()

    def _wait(self, lib: ctypes.CDLL, ptr: int) -> None:
        """Wait for the stream to drain in slices (signal handlers run between them)."""
        try:
            while lib.sim_stream_wait(ptr, _WAIT_SLICE_MS) == SIM_EBUSY:
                pass
        except BaseException:  # KeyboardInterrupt: the work keeps running; never wait for it again
            self._abandoned = True
            raise

    def _raise_host_error(self) -> None:
        if self._host_errors:
            first = self._host_errors[0]
            self._host_errors.clear()
            raise DeviceError(f"host function on stream failed: {first!r}", SIM_EKERNEL) from first

    def enqueue_host(self, fn: Callable[[], object]) -> None:
        """Run fn() on the stream's thread after the work enqueued before it."""
        key = next(_host_ids)
        _host_calls[key] = (fn, self._host_errors)
        rc = _L().sim_stream_enqueue_host(self._live(), ctypes.cast(_host_trampoline_c, ctypes.c_void_p), key)
        if rc:
            del _host_calls[key]
            _raise(rc)

    def pending(self) -> int:
        """Tasks enqueued and not finished (those of a batch the stream's thread runs count until
        the batch is done: sim.h)."""
        return _L().sim_stream_pending(self._live())

    def destroy(self) -> None:
        """Drain and destroy the stream; raises an error that was not reported yet."""
        if self._ptr is None:
            return
        lib = _L()
        self._wait(lib, self._ptr)  # interruptible, like synchronize
        ptr, self._ptr = self._ptr, None
        rc = lib.sim_stream_destroy(ptr, None, 0)
        if rc:
            _raise(rc)
        self._raise_host_error()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.destroy()
        else:  # do not mask the exception in flight
            try:
                self.destroy()
            except DeviceError:
                pass

    def __del__(self):
        if self._ptr is not None and _lib is not None and not self._abandoned:
            ptr, self._ptr = self._ptr, None
            _lib.sim_stream_destroy(ptr, None, 0)
        # an abandoned stream (interrupted wait) is left running: its thread ends with the process


class _DefaultStream(Stream):
    """The NULL stream: launches on it are synchronous."""

    __slots__ = ()

    def __init__(self) -> None:
        self._ptr = None
        self._host_errors = []
        self._abandoned = False

    def __repr__(self) -> str:
        return "<Stream default>"

    def synchronize(self) -> None:
        pass

    def enqueue_host(self, fn: Callable[[], object]) -> None:
        fn()

    def pending(self) -> int:
        return 0

    def destroy(self) -> None:
        pass

    def __del__(self):
        pass


default_stream: Stream = _DefaultStream()


class _BorrowedStream(Stream):
    """A created stream owned by someone else (see Stream.from_handle)."""

    __slots__ = ()

    def __init__(self, handle: int) -> None:
        _L()
        self._ptr = handle
        self._host_errors = []
        self._abandoned = False

    def destroy(self) -> None:
        self._ptr = None  # the owner destroys the native stream

    def __del__(self):
        pass


# ---- kernels and launch --------------------------------------------------------------------------


class KernelBinary:
    """A loaded kernel shared object and its launch function."""

    __slots__ = ("path", "symbol", "_dll", "fn")

    def __init__(self, path: Path, symbol: str, dll: ctypes.CDLL, fn: int):
        self.path = path
        self.symbol = symbol
        self._dll = dll  # keeps the library loaded
        self.fn = fn  # address of the opbuild_kernel_launch_fn

    def __repr__(self) -> str:
        return f"<KernelBinary {self.path}:{self.symbol}>"


def load_kernel(path: str | os.PathLike, symbol: str = LAUNCH_SYMBOL, label: str | None = None,
                arg_names: Sequence[str] = ()) -> KernelBinary:
    """dlopen a kernel binary (RTLD_NOW | RTLD_LOCAL) and find its launch function.

    `label` ("op X, binary Y (path)"; default: the path) names the kernel in the one line the
    simulator writes to stderr when one of its blocks crashes the process (sim_register_kernel).
    `arg_names` ("input x", "output y", "workspace", "tiling") name its arguments in the memory
    checker's reports. A kernel built with the memory checker (AddressSanitizer) is refused unless
    the sanitizer's runtime is loaded (dlopen would abort the process).
    Note that dlopen returns the already loaded library for a path loaded before, even if the file
    changed since.
    """
    path = Path(path)
    if not path.is_file():
        raise DeviceError(f"kernel binary {path} does not exist")
    if _MEMCHECK_PACKAGES in os.environ:  # under `opbuild memcheck`: the instrumented build's binary
        path = instrumented_binary(path)
    check_sanitizer(path, "kernel binary")
    try:
        dll = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as e:
        raise DeviceError(f"cannot load kernel binary {path}: {e}") from e
    try:
        fn = getattr(dll, symbol)
    except AttributeError:
        raise DeviceError(f"kernel binary {path} does not export {symbol}") from None
    address = ctypes.cast(fn, ctypes.c_void_p).value
    if address is None:
        raise DeviceError(f"kernel binary {path}: {symbol} is at address 0")
    _L().sim_register_kernel(address, (label or f"binary {path}").encode("utf-8", "replace"))
    if arg_names:
        _L().sim_register_kernel_args(address, ",".join(arg_names).encode("utf-8", "replace"))
    return KernelBinary(path, symbol, dll, address)


from opbuild.runtime.debug.variant import ENV as _MEMCHECK_PACKAGES  # noqa: E402 - kept with the memcheck section below


def instrumented_binary(path: Path) -> Path:
    """The memory checker's build of a kernel or AI CPU library (runtime/debug/variant.py);
    DeviceError when that build lacks it."""
    from opbuild.runtime.debug.variant import instrumented, warn_unchecked

    try:
        loaded = instrumented(path)
    except ValueError as exc:
        raise DeviceError(str(exc)) from None
    if loaded is path:
        warn_unchecked(path)
    return loaded


def check_sanitizer(path: Path, what: str) -> None:
    """DeviceError when `path` (a kernel binary, an AI CPU kernel library) is built with the memory
    checker (AddressSanitizer) and its runtime is not loaded: dlopen would abort the process."""
    if _needs_sanitizer(path):
        raise DeviceError(f"{what} {path} is built with the memory checker (AddressSanitizer), whose runtime "
                          "is not loaded: run with LD_PRELOAD=$(cc -print-file-name=libasan.so) "
                          "ASAN_OPTIONS=halt_on_error=0:suppress_equal_pcs=0:detect_leaks=0 OPBUILD_MEMCHECK=1 "
                          "(docs/runtime.md, kernel memory checker)")


def _needs_sanitizer(path: Path) -> bool:
    """Is `path` linked against AddressSanitizer's runtime while this process has none loaded?"""
    if _sanitizer_loaded():
        return False
    try:
        return b"libasan.so" in path.read_bytes()
    except OSError:
        return False


def _sanitizer_loaded() -> bool:
    return hasattr(ctypes.CDLL(None), "__asan_init")


_ARRAY_TYPES = [ctypes.c_void_p * n for n in range(65)]


def make_args(addresses: Sequence[int | DeviceBuffer | None]) -> ctypes.Array:
    """The native argument array of a launch; pass it to `launch` to skip rebuilding it."""
    n = len(addresses)
    try:
        return (_ARRAY_TYPES[n] if n < 65 else ctypes.c_void_p * n)(*addresses)  # type: ignore[misc]  # a DeviceBuffer entry raises TypeError: handled below
    except TypeError:
        return (_ARRAY_TYPES[n] if n < 65 else ctypes.c_void_p * n)(
            *(None if a is None else operator.index(a) for a in addresses)
        )


def launch(
    kernel: KernelBinary,
    args: Sequence[int | DeviceBuffer | None] | ctypes.Array,
    block_dim: int,
    stream: Stream | None = None,
    intercore_sync: bool = False,
) -> None:
    """Run blocks 0..block_dim-1 of the kernel with the given argument addresses.

    On the default stream (stream None or `default_stream`) this returns when the kernel finished
    and raises DeviceError("block <i>: <message>") if a block failed. On a created stream it
    enqueues (args are copied) and errors surface at `Stream.synchronize()`.
    """
    if isinstance(args, ctypes.Array):
        arr = args
        n = len(args)
    else:
        n = len(args)
        try:
            arr = (_ARRAY_TYPES[n] if n < 65 else ctypes.c_void_p * n)(*args)  # type: ignore[misc]  # (as make_args)
        except TypeError:  # DeviceBuffer or other objects with __index__
            arr = make_args([None if a is None else operator.index(a) for a in args])
    if block_dim < 0 or block_dim > 0xFFFFFFFF:
        raise DeviceError(f"block_dim {block_dim} is out of range", SIM_EINVAL)
    sp = _stream_pointer(stream)
    rc = _sim_launch(sp, kernel.fn, arr, n, block_dim, 1 if intercore_sync else 0, None, 0)
    if rc:
        if rc == SIM_EINTR:
            interrupted()
        raise DeviceError(f"{_last_error()} [kernel {kernel.path}]", rc)


def _stream_pointer(stream: Stream | None) -> int | None:
    """The sim_stream* to pass for `stream` (None: the default stream)."""
    if stream is None:
        return None
    sp = stream._ptr
    if sp is None and stream is not default_stream:
        raise DeviceError("stream was destroyed", SIM_ESTATE)
    return sp


def aicpu_launch(fn: int, ctx: int, errmsg: int, stream: Stream | None = None) -> None:
    """Run the AI CPU task `fn(ctx)` (addresses) on the simulator's AI CPU, in order with the
    stream's kernel launches. Default stream: returns when it ran, DeviceError if it failed
    (the message includes the C string at `errmsg`, e.g. AicpuContext.error); created stream:
    enqueued, errors surface at `Stream.synchronize()`."""
    rc = _L().sim_aicpu_launch(_stream_pointer(stream), fn, ctx, errmsg, None, 0)
    if rc:
        raise DeviceError(_last_error(), rc)


def aicpu_tasks() -> int:
    """AI CPU tasks the simulator has run in this process."""
    return _L().sim_aicpu_tasks()
