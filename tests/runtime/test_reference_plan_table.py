"""The Python twin of the native plan table (runtime/reference/plan_table.py): the rules of
native/src/plancache.c (LRU at the capacity, a stale plan dropped at its lookup), without the
extension."""

from __future__ import annotations

from opbuild.runtime.reference.plan_table import PlanTable


class P:
    def __init__(self, name: str, fresh: bool = True) -> None:
        self.name, self.fresh = name, fresh


def test_a_full_table_evicts_its_least_recently_used_plan():
    t = PlanTable(lambda p: p.fresh)
    a, b, c = P("a"), P("b"), P("c")
    t.store(b"a", a, 2)
    t.store(b"b", b, 2)
    assert t.find(b"a") is a  # a is now the most recently used
    t.store(b"c", c, 2)  # evicts b
    assert t.keys() == [b"a", b"c"] and t.find(b"b") is None and len(t) == 2


def test_the_plan_just_stored_stays_at_capacity_one_and_replaces_its_key():
    t = PlanTable(lambda p: p.fresh)
    t.store(b"a", P("a"), 0)  # a capacity below 1 holds one plan
    new = P("a2")
    t.store(b"a", new, 1)
    assert t.keys() == [b"a"] and t.find(b"a") is new
    t.store(b"b", P("b"), 1)
    assert t.keys() == [b"b"]


def test_a_stale_plan_is_dropped_at_its_lookup():
    t = PlanTable(lambda p: p.fresh)
    stale = P("s", fresh=False)
    t.store(b"s", stale, 4)
    assert t.find(b"s") is None and len(t) == 0
    t.store(b"x", P("x"), 4)
    t.clear()
    assert len(t) == 0
