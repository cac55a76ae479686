"""The per-thread plan table in Python: the twin of native/src/plancache.c's table.

Same rules as the native one: a plan is filed under its key (opkey.h words as bytes); a lookup
makes it the most recently used; inserting into a full table evicts the least recently used; a
plan whose package was rebuilt since is dropped at its lookup (`fresh`, plans.plan_fresh).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable


class PlanTable:
    """One thread's plans, least recently used first."""

    __slots__ = ("_plans", "_fresh")

    def __init__(self, fresh: Callable[[Any], bool]) -> None:
        self._plans: OrderedDict[bytes, Any] = OrderedDict()
        self._fresh = fresh

    def find(self, key: bytes) -> Any:
        plan = self._plans.get(key)
        if plan is None:
            return None
        if not self._fresh(plan):
            del self._plans[key]
            return None
        self._plans.move_to_end(key)
        return plan

    def store(self, key: bytes, plan: Any, capacity: int) -> None:
        plans = self._plans
        plans[key] = plan
        plans.move_to_end(key)
        while len(plans) > max(capacity, 1):
            plans.popitem(last=False)

    def clear(self) -> None:
        self._plans.clear()

    def __len__(self) -> int:
        return len(self._plans)

    def keys(self) -> list[bytes]:
        """The keys, least recently used first (for tests)."""
        return list(self._plans)
