"""The run plan of static .om models (opbuild/om/plan.py): executors made once, intermediates in
buffers allocated once and reused, outputs new at each run; dynamic models unplanned."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from omtools import build, model_dict, reference
from opbuild.om import plan as om_plan
from opbuild.om.loader import load_om
from opbuild.om.run import OmRunner
from opbuild.runtime.call.launch import LaunchHook, add_launch_hook
from opbuild.runtime.debug.context import CURRENT_MODEL, CURRENT_NODE

SHAPE = (16, 1024)  # 64 KiB a tensor: model outputs copied out of planned buffers (COPY_OUT_BYTES)
BIG = (17, 1024)    # above it: a new output array each run, the executors re-pointed at it


def _chain(shape=SHAPE) -> dict:
    """x*y -> leaky(0.2) -> (.)*y -> leaky(0.2); outputs t3 and t1 (t1 is also read by mul1)."""
    nodes = [{"name": "mul0", "op": "MulCustom", "inputs": ["x", "y"], "outputs": ["t0"]},
             {"name": "act0", "op": "LeakyReluCustom", "inputs": ["t0"], "outputs": ["t1"],
              "attrs": {"negative_slope": 0.2}},
             {"name": "mul1", "op": "MulCustom", "inputs": ["t1", "y"], "outputs": ["t2"]},
             {"name": "act1", "op": "LeakyReluCustom", "inputs": ["t2"], "outputs": ["t3"],
              "attrs": {"negative_slope": 0.2}}]
    return {"name": "chain", "inputs": [{"name": "x", "dtype": "float32", "shape": list(shape)},
                                        {"name": "y", "dtype": "float32", "shape": list(shape)}],
            "nodes": nodes, "outputs": ["t3", "t1"]}


def _leaky(t: np.ndarray) -> np.ndarray:
    return np.where(t >= 0, t, t * np.float32(0.2))


def _want(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    t1 = _leaky(x * y)
    return {"t1": t1, "t3": _leaky(t1 * y)}


def _inputs(seed: int, shape=SHAPE) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(shape).astype(np.float32), "y": rng.standard_normal(shape).astype(np.float32)}


@pytest.fixture(scope="module")
def chain_om(opp) -> bytes:
    return build(opp, _chain())


@pytest.fixture(scope="module", params=[SHAPE, BIG], ids=["copied-out", "new-arrays"])
def chain_of(opp, request) -> tuple[bytes, tuple[int, int]]:
    return build(opp, _chain(request.param)), request.param


def _check(got: dict[str, np.ndarray], inputs: dict[str, np.ndarray]) -> None:
    want = _want(inputs["x"], inputs["y"])
    assert sorted(got) == ["t1", "t3"]
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_static_model_is_planned_and_reuses_its_buffers(chain_of):
    om, shape = chain_of
    runner = OmRunner(load_om(om, trust=True))
    assert runner.plan is None  # made at the first run
    a = _inputs(1, shape)
    _check(runner.run(a), a)
    plan = runner.plan
    assert plan is not None and plan.planned == 4 and plan.calls == 0
    nbytes = 4 * shape[0] * shape[1]
    # six tensors (x, y, t0..t3), at most three live at once: x, y, t0 at mul0; then each output
    # takes a buffer its node's input gave back
    assert plan.pool_bytes == 3 * nbytes
    if nbytes <= om_plan.COPY_OUT_BYTES:  # t1, t3 in planned buffers, copied out
        assert (sorted(plan.copied), plan.fresh) == (["t1", "t3"], [])
        assert sorted(plan.slots) == ["x", "y"]
    else:  # t1, t3 new arrays each run: re-pointed, as x and y are
        assert (plan.copied, sorted(f[0] for f in plan.fresh)) == ([], ["t1", "t3"])
        assert sorted(plan.slots) == ["t1", "t3", "x", "y"]


def test_two_runs_give_independent_outputs(chain_of):
    om, shape = chain_of
    runner = OmRunner(load_om(om, trust=True))
    a, b = _inputs(2, shape), _inputs(3, shape)
    first = runner.run(a)
    kept = {k: v.copy() for k, v in first.items()}
    second = runner.run(b)
    _check(second, b)
    for name in first:  # the second run wrote none of the first run's outputs
        np.testing.assert_array_equal(first[name], kept[name], err_msg=name)
        assert not np.shares_memory(first[name], second[name])
    first["t1"][...] = np.nan  # the caller owns what run() returned: writing it changes no later run
    first["t3"][...] = np.nan
    _check(runner.run(a), a)


def test_same_input_array_changed_in_place(chain_om):
    """An input array given again (the executors still point at it) with new contents."""
    runner = OmRunner(load_om(chain_om, trust=True))
    a = _inputs(4)
    _check(runner.run(a), a)
    a["x"][...] = _inputs(5)["x"]
    _check(runner.run(a), a)


def test_inputs_not_contiguous_or_not_aligned(chain_om):
    runner = OmRunner(load_om(chain_om, trust=True))
    a = _inputs(6)
    runner.run(a)
    fortran = {"x": np.asfortranarray(a["x"]), "y": a["y"]}
    _check(runner.run(fortran), fortran)
    raw = np.empty(a["y"].nbytes + 4, np.uint8)
    odd = raw[4:].view(np.float32).reshape(SHAPE)  # 4 bytes past an aligned start: not 16-aligned
    odd[...] = a["y"]
    assert odd.ctypes.data % om_plan.ARG_ALIGN
    shifted = {"x": a["x"], "y": odd}
    _check(runner.run(shifted), shifted)


def test_concurrent_run_takes_the_one_shot_path(chain_om):
    runner = OmRunner(load_om(chain_om, trust=True))
    a, b = _inputs(7), _inputs(8)
    first = runner.run(a)
    got: list[dict[str, np.ndarray]] = []
    with runner._lock:  # a run in progress in another thread: this one may not use the plan
        t = threading.Thread(target=lambda: got.append(runner.run(b)))
        t.start()
        t.join()
    _check(got[0], b)
    assert not np.shares_memory(got[0]["t3"], first["t3"])
    _check(runner.run(a), a)


def test_launch_hooks_see_model_and_node(chain_om):
    """A dump or profiler (a launch hook) reads which model and node each planned launch is."""
    runner = OmRunner(load_om(chain_om, trust=True))
    a = _inputs(9)
    runner.run(a)  # planned without the hook

    class Seen(LaunchHook):
        def __init__(self) -> None:
            self.nodes: list[tuple[str | None, str | None]] = []

        def kernel(self, plan, executor, stream):
            self.nodes.append((CURRENT_MODEL.get(), CURRENT_NODE.get()))

    seen = Seen()
    remove = add_launch_hook(seen)
    try:
        _check(runner.run(a), a)
    finally:
        remove()
    assert seen.nodes == [("chain", n) for n in ("mul0", "act0", "mul1", "act1")]
    assert CURRENT_NODE.get() is None and CURRENT_MODEL.get() is None


def test_dynamic_model_is_not_planned(dynamic_om):
    runner = OmRunner(load_om(dynamic_om, trust=True))
    rng = np.random.default_rng(10)
    for n in (3, 5):
        x, y = rng.random((n, 1024), np.float32) - 0.5, rng.random((n, 1024), np.float32)
        np.testing.assert_allclose(runner.run({"x": x, "y": y})["t2"], reference(x, y), rtol=1e-5)
    assert runner.plan is None


def test_static_sample_model_planned(opp, inputs):
    """The three-node sample: ReduceSumCustom (a list attribute: not a simple op) keeps its one-shot
    call inside the plan, reading a planned tensor; same result as the unplanned run."""
    runner = OmRunner(load_om(build(opp, model_dict("static3p", [16, 1024])), trust=True))
    got = runner.run(inputs)["t2"]
    plan = runner.plan
    assert plan is not None and (plan.planned, plan.calls) == (2, 1)
    assert [a[0] for a in plan.actions] == [om_plan.LAUNCH, om_plan.LAUNCH, om_plan.CALL]
    unplanned = runner._run_calls(runner._checked_inputs(inputs))["t2"]
    np.testing.assert_allclose(got, unplanned, rtol=1e-6)  # d=0: the reduction's order may differ
    np.testing.assert_allclose(got, reference(inputs["x"], inputs["y"]), rtol=1e-5)
    again = runner.run(inputs)["t2"]
    np.testing.assert_allclose(again, unplanned, rtol=1e-6)
    assert not np.shares_memory(again, got)


def test_aligned_copies_only_what_it_must():
    a = np.arange(64, dtype=np.float32)
    assert om_plan.aligned(a) is a or a.ctypes.data % om_plan.ARG_ALIGN
    raw = np.frombuffer(bytes(260), np.uint8)[4:].view(np.float32)  # read-only, 4 bytes off
    assert raw.ctypes.data % om_plan.ARG_ALIGN
    fixed = om_plan.aligned(raw)
    assert fixed is not raw and fixed.ctypes.data % om_plan.ARG_ALIGN == 0
    assert not fixed.flags.writeable and np.array_equal(fixed, raw)
    e = om_plan.aligned_empty((3, 5), np.float32)
    assert e.shape == (3, 5) and e.flags.c_contiguous and e.ctypes.data % om_plan.ALIGN == 0


def test_pool_reuses_a_freed_buffer_only():
    pool = om_plan._Pool()
    a = pool.take("a", (256,), np.float32)
    b = pool.take("b", (256,), np.float32)
    assert not np.shares_memory(a, b)
    pool.give("a")
    c = pool.take("c", (128,), np.float32)  # fits in a's buffer
    assert np.shares_memory(a, c) and not np.shares_memory(b, c)
    d = pool.take("d", (512,), np.float32)  # larger than every free buffer: a new one
    assert not np.shares_memory(d, a) and not np.shares_memory(d, b)
    assert pool.total == 4 * (256 + 256 + 512)


def test_docs_state_the_copy_out_size():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "om-format.md").read_text()
    assert f"at most {om_plan.COPY_OUT_BYTES // 1024} KiB (`plan.COPY_OUT_BYTES`)" in doc
