"""The execution context of op_fallback: gert::OpExecuteContext, OpApiParams and AclStream.

What: OpExecuteContext (workspace, stream, workspace sizes, the async OpApiParams slot and
`launch()`, GE's phase 2), OpApiParams (what asyn_exec_aclnn leaves for phase 2), AclStream (an
aclrtCreateStream stream as a device Stream), PHASE2_PROTO, GRAPH_SUCCESS / GRAPH_FAILED and
`_fail`, which logs a failure (logger "opbuild.fallback", and ctx.last_error).
Why its own module: the context is the state a call runs in, independent of how symbols are
found (search.py) or arguments converted (convert.py); execute.py only drives it.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any, Callable, Sequence

from opbuild.runtime.device import Stream
from opbuild.runtime.errors import ACLNN_ERR_INNER, AclnnError
from opbuild.runtime.fallback import acllib
from opbuild.runtime.fallback.acllib import _VP, _get_acl, _recent_error
from opbuild.runtime.fallback.convert import OpApiAnyValue, _release

log = logging.getLogger("opbuild.fallback")

GRAPH_SUCCESS = 0
GRAPH_FAILED = 0xFFFFFFFF
"""ge::GRAPH_SUCCESS / ge::GRAPH_FAILED."""

class AclStream(Stream):
    """A stream made by aclrtCreateStream (the only streams aclnn phase 2 accepts) as a device
    Stream: `OpExecuteContext(stream=AclStream())`. destroy() (or collection) calls
    aclrtDestroyStream; synchronize() and the rest are the device Stream's."""

    __slots__ = ()

    def __init__(self) -> None:
        acl = _get_acl()
        handle = _VP()
        rc = acl.create_stream(ctypes.byref(handle))
        if rc:
            raise AclnnError(ACLNN_ERR_INNER, f"aclrtCreateStream failed ({rc}): {_recent_error(acl)}")
        self._ptr = handle.value
        self._host_errors = []

    def __repr__(self) -> str:
        return f"<AclStream 0x{self._ptr:x}>" if self._ptr else "<AclStream destroyed>"

    def destroy(self) -> None:
        if self._ptr is None:
            return
        ptr, self._ptr = self._ptr, None
        acl = _get_acl()
        if acl.destroy_stream(ptr):
            raise AclnnError(ACLNN_ERR_INNER, f"aclrtDestroyStream: {_recent_error(acl)}")
        self._raise_host_error()

    def __del__(self) -> None:
        if self._ptr is not None and acllib._acl is not None:
            ptr, self._ptr = self._ptr, None
            acllib._acl.destroy_stream(ptr)



# ---- OpApiParams and the context -----------------------------------------------------------------

PHASE2_PROTO = ctypes.CFUNCTYPE(ctypes.c_int32, _VP, ctypes.c_uint64, _VP, _VP)
"""OpApiFunc2Stage: int (*)(void *workspace, uint64_t size, aclOpExecutor *, const aclrtStream)."""


class OpApiParams:
    """What asyn_exec_aclnn leaves for phase 2: the converted objects with their deleters, the
    executor and the phase-2 function (plus the Python objects whose memory they describe)."""

    __slots__ = ("api", "converted_params", "executor", "op_api_func", "keepalive", "released")

    def __init__(self, api: str, converted_params: list[OpApiAnyValue], executor: int | None,
                 op_api_func: Callable[..., int], keepalive: list[Any]) -> None:
        self.api = api
        self.converted_params = converted_params
        self.executor = executor
        self.op_api_func = op_api_func
        self.keepalive = keepalive
        self.released = False

    def __repr__(self) -> str:
        return (f"<OpApiParams {self.api}: {len(self.converted_params)} params, executor "
                f"{'0x%x' % self.executor if self.executor else None}{', released' if self.released else ''}>")

    def release(self) -> None:
        """Destroy the converted objects, and the executor if phase 2 never ran (idempotent)."""
        if self.released:
            return
        self.released = True
        _release(self.converted_params)
        if self.executor:
            executor, self.executor = self.executor, None
            _get_acl().destroy_executor(executor)
        self.keepalive = []

    def __del__(self) -> None:
        if not self.released and acllib._acl is not None:
            try:
                self.release()
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass



class OpExecuteContext:
    """gert::OpExecuteContext as op_fallback uses it: workspace, stream, workspace sizes and the
    async OpApiParams slot.

    `stream`: a device Stream (for aclnn phase 2 one made by aclrtCreateStream, e.g.
    `AclStream()`), or None for the synchronous default stream. `launch()` plays GE's
    OpExecuteLaunchContext: phase 2 of the stored OpApiParams."""

    __slots__ = ("node_name", "_stream", "_workspaces", "_workspace_sizes", "_params", "last_error", "__weakref__")

    def __init__(self, stream: Any = None, node_name: str = "fallback") -> None:
        self.node_name = node_name
        self._stream = stream
        self._workspaces: list[Any] = []
        self._workspace_sizes: list[int] = []
        self._params: OpApiParams | None = None
        self.last_error: str | None = None

    def __repr__(self) -> str:
        return f"<OpExecuteContext {self.node_name} stream={self._stream!r} params={self._params!r}>"

    # ---- workspace
    def malloc_workspace(self, size: int) -> int | None:
        """MallocWorkspace: device memory of `size` bytes (its address), None on failure."""
        from opbuild.runtime import device

        try:
            buf = device.malloc(size)
        except (device.DeviceError, ValueError) as exc:
            log.error("%s: MallocWorkspace(%d) failed: %s", self.node_name, size, exc)
            return None
        self._workspaces.append(buf)
        return buf.address

    def free_workspace(self) -> None:
        """FreeWorkspace: free what malloc_workspace gave (ordered after the stream's work)."""
        stream = self._stream
        workspaces, self._workspaces = self._workspaces, []
        for buf in workspaces:
            buf.free(stream if stream is not None and getattr(stream, "handle", None) else None)

    # ---- stream
    def get_stream(self) -> Any:
        """GetStream: the device Stream, or None (the default stream)."""
        return self._stream

    # ---- async state
    def set_workspace_sizes(self, sizes: Sequence[int]) -> None:
        self._workspace_sizes = [int(s) for s in sizes]

    def get_workspace_sizes(self) -> list[int]:
        return list(self._workspace_sizes)

    def set_op_api_params(self, params: OpApiParams | None) -> None:
        """SetOpApiParamsWithDefaultDeleter: the context owns `params` now; params it held and
        did not launch are released."""
        old, self._params = self._params, params
        if old is not None and old is not params:
            old.release()

    def get_op_api_params(self) -> OpApiParams | None:
        return self._params

    def launch(self) -> int:
        """Phase 2 of the stored OpApiParams: allocate the recorded workspace, call the phase-2
        function with the context's stream, release the converted objects, free the workspace.
        GRAPH_SUCCESS, or GRAPH_FAILED (logged) when nothing is stored or a step fails."""
        params = self._params
        if params is None or params.released:
            return _fail(self, "launch",
                         "no OpApiParams to launch (asyn_exec_aclnn did not succeed, or it ran already)")
        self._params = None
        size = self._workspace_sizes[0] if self._workspace_sizes else 0
        workspace = None
        if size > 0:
            workspace = self.malloc_workspace(size)
            if not workspace:
                params.release()
                return _fail(self, params.api, f"MallocWorkspace({size}) failed")
        stream = self._stream
        executor, params.executor = params.executor, None  # phase 2 consumes it, whatever it returns
        status = params.op_api_func(workspace, size, executor, stream.handle if stream is not None else None)
        params.release()
        self.free_workspace()
        if status != 0:
            return _fail(self, params.api, f"{params.api} (phase 2) returned {status}: {_recent_error(_get_acl())}")
        return GRAPH_SUCCESS

    def close(self) -> None:
        """Release un-launched OpApiParams and free the workspace."""
        self.set_op_api_params(None)
        self.free_workspace()

    def __enter__(self) -> OpExecuteContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _fail(ctx: Any, api: str, message: str) -> int:
    node = getattr(ctx, "node_name", "fallback")
    text = f"{api}: {message}"
    log.error("%s: aclnnfallback: %s", node, text)
    if isinstance(ctx, OpExecuteContext):
        ctx.last_error = text
    return GRAPH_FAILED

