"""The Executor and the packing of direct launch arguments in Python: the twins of
native/src/fastpath.c's Executor type and describe.c's pack_direct."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call.launch import data_pointer, packer
from opbuild.runtime.call.plans import Plan


class PyExecutor:
    """The product of phase 1: a plan bound to this call's tensors. Runs once unless repeatable.

    The pure-Python twin of `_fastpath.Executor`, the one Executor type when the extension is
    built (executor.Executor).

    `args` is the launch-argument array as bytes (native uint64 tensor addresses, workspace
    placeholder 0, tiling address) when every tensor can be passed as it is; None when phase 2 must prepare the
    arguments (non-contiguous or misaligned tensors, tensor lists), from `inputs` and `outputs`.
    """

    __slots__ = ("plan", "op", "refs", "args", "inputs", "outputs", "repeatable", "used")

    def __init__(self, plan: Plan, op: OpRuntime, refs: Any, args: bytes | None, inputs=None, outputs=None) -> None:
        self.plan = plan
        self.op = op
        self.refs = refs  # keeps the call's arrays alive while the executor lives
        self.args = args
        self.inputs = inputs
        self.outputs = outputs
        self.repeatable = False
        self.used = False

    @property
    def simplified_key(self) -> str:
        return self.plan.selected.full_key

    @property
    def binary_name(self) -> str:
        return self.plan.selected.entry.name

    @property
    def workspace_size(self) -> int:
        return self.plan.workspace_size

    def set_repeatable(self, repeatable: bool = True) -> "PyExecutor":
        """Allow phase 2 to run this executor more than once (aclSetAclOpExecutorRepeatable)."""
        self.repeatable = repeatable
        return self

    def set_arg(self, slot: int, address: int) -> bool:
        """Re-point tensor launch argument `slot` at `address` (aclSetInputTensorAddr & co); False
        when phase 2 prepares the arguments (then the tensors cannot be re-pointed)."""
        if self.args is None:
            return False
        n = len(self.args) // 8
        if not 0 <= slot < n - 2:
            raise IndexError(f"tensor slot {slot} out of range: the executor has {n - 2} tensors")
        words = list(packer(n).unpack(self.args))
        words[slot] = address
        self.args = packer(n).pack(*words)
        return True

    fast = False  # launched by the C fast path (never, without it)

    def __repr__(self) -> str:
        return f"Executor({self.simplified_key} -> {self.binary_name}, workspace={self.plan.workspace_size})"


def direct_args(arrays: Sequence[np.ndarray], tiling_addr: int) -> bytes | None:
    """The launch arguments of arrays passed as they are (packed pointers, workspace slot 0, the
    tiling address), or None if one is misaligned: the twin of describe.c's pack_direct."""
    addrs = []
    for a in arrays:
        addr = data_pointer(a)
        if addr % a.itemsize:
            return None
        addrs.append(addr)
    return packer(len(addrs) + 2).pack(*addrs, 0, tiling_addr)
