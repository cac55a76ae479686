"""The torch ops' C++ CPU kernel (runtime/native/src/torch_kernel.cpp, runtime/torch_build.py):
built on first use, its hit path serves repeated calls (the same results as the Python kernel),
everything else goes to the Python kernel, the runtime's errors stay, and without a compiler one
warning says why and the Python kernel runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from opbuild.runtime import torch_build  # noqa: E402
from opbuild.runtime.call.plan_cache import clear_cache  # noqa: E402
from opbuild.runtime.errors import AclnnError  # noqa: E402
from opbuild.runtime.torch_ops import cpp_kernel_serves  # noqa: E402

pytestmark = pytest.mark.slow  # the first use compiles against torch's headers (a minute or more)


@pytest.fixture(scope="module")
def tops(ops, builtin_ops):
    """torch.ops.customize and torch.ops.built_in with the C++ kernel, and the same ops with the
    Python kernel only (namespaces py_customize, py_built_in) as the reference."""
    ops.register_torch()
    builtin_ops.register_torch()
    if torch_build.stats() == (0, 0) and torch_build._RESULT.get("kernel") is None:
        pytest.fail("the C++ kernel was not built (see the TorchKernelWarning)")
    from opbuild.runtime.torch_ops import register

    register(ops._OPS, "py_customize", cpp=False)
    register(builtin_ops._OPS, "py_built_in", cpp=False)
    return torch.ops.customize, torch.ops.built_in, torch.ops.py_customize, torch.ops.py_built_in


def _hits_after(fn):
    before = torch_build.stats()
    result = fn()
    after = torch_build.stats()
    return result, after[0] - before[0], after[1] - before[1]


def test_hits_equal_the_python_kernel(tops):
    custom, builtin, py_custom, py_builtin = tops
    clear_cache()  # the one-shot specs are shared with numpy calls of the same shapes: start empty
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(4, 33, generator=g), torch.randn(4, 33, generator=g)
    for dtype in (torch.float32, torch.float16):
        a, b = x.to(dtype), y.to(dtype)
        first, hits, misses = _hits_after(lambda: custom.add_custom_template(a, b))  # noqa: B023
        assert (hits, misses) == (0, 1)  # the first call: the Python kernel fills the caches
        again, hits, misses = _hits_after(lambda: custom.add_custom_template(a, b))  # noqa: B023
        assert (hits, misses) == (1, 0)  # the next one is the C++ hit path
        want = py_custom.add_custom_template(a, b)
        assert torch.equal(first, want) and torch.equal(again, want) and again.dtype == dtype
        assert again.data_ptr() != first.data_ptr()  # a new output per call
    for slope in (0.3, 0.3, 0.01):  # attrs: given, again, the default
        out, hits, _ = _hits_after(lambda: builtin.leaky_relu_custom(x, negative_slope=slope))  # noqa: B023
        torch.testing.assert_close(out, py_builtin.leaky_relu_custom(x, negative_slope=slope))
    assert hits == 0  # the default's first call (0.01) misses, then:
    out, hits, _ = _hits_after(lambda: builtin.leaky_relu_custom(x))
    assert hits == 1
    torch.testing.assert_close(out, torch.nn.functional.leaky_relu(x))
    xb = x.bfloat16()
    builtin.leaky_relu_custom(xb)
    out, hits, _ = _hits_after(lambda: builtin.leaky_relu_custom(xb))
    assert hits == 1 and out.dtype == torch.bfloat16
    torch.testing.assert_close(out, py_builtin.leaky_relu_custom(xb))


def _raw_hits() -> int:
    from opbuild.runtime.call.executor import _fastpath

    return _fastpath.stats()["oneshot_raw"]


def _served(fn):
    """(result, C++ kernel hits, its misses, launches of oneshot.c's raw hit) of one call."""
    raw = _raw_hits()
    result, hits, misses = _hits_after(fn)
    return result, hits, misses, _raw_hits() - raw


def test_a_hit_is_the_raw_entry_from_memory_to_the_plan(tops):
    custom, builtin, py_custom, py_builtin = tops
    clear_cache()
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(3, 5, generator=g), torch.randn(3, 5, generator=g)
    _, hits, misses, raw = _served(lambda: custom.add_custom_template(x, y))
    assert (hits, misses, raw) == (0, 1, 0)  # the Python kernel: specs and plan filed
    for _ in range(3):  # the first keys the call, the next ones are the remembered hit
        out, hits, misses, raw = _served(lambda: custom.add_custom_template(x, y))
        assert (hits, misses, raw) == (1, 0, 1) and torch.equal(out, py_custom.add_custom_template(x, y))
    u, v = torch.randn(7, generator=g), torch.randn(7, generator=g)  # a new shape: a miss, then hits
    assert _served(lambda: custom.add_custom_template(u, v))[1:] == (0, 1, 0)
    out, *counts = _served(lambda: custom.add_custom_template(u, v))
    assert counts == [1, 0, 1] and torch.equal(out, u + v)
    out, *counts = _served(lambda: custom.add_custom_template(x, y))  # the first shape again: keyed again
    assert counts == [1, 0, 1] and torch.equal(out, x + y) and out.shape == (3, 5)
    clear_cache()  # the specs and the plans go: a miss again, never a stale remembered plan
    assert _served(lambda: custom.add_custom_template(x, y))[1:] == (0, 1, 0)


def test_raw_hits_with_attributes_follow_each_value(tops):
    _, builtin, _, py_builtin = tops
    clear_cache()
    x = torch.randn(4, 9, generator=torch.Generator().manual_seed(3))
    for slope in (0.2, 0.5):
        builtin.leaky_relu_custom(x, negative_slope=slope)  # each value's first call fills the caches
    for slope in (0.2, 0.5, 0.2, 0.5):  # alternating values: each call keyed by its own value
        out, hits, misses, raw = _served(lambda: builtin.leaky_relu_custom(x, negative_slope=slope))  # noqa: B023
        assert (hits, misses, raw) == (1, 0, 1)
        torch.testing.assert_close(out, torch.nn.functional.leaky_relu(x, slope))
        assert torch.equal(out, py_builtin.leaky_relu_custom(x, negative_slope=slope))


def test_observed_launches_are_seen_and_transposed_inputs_stay_correct(tops):
    from opbuild.runtime.call.launch import observe_launches

    custom, *_ = tops
    clear_cache()
    x, y = torch.randn(6, 4), torch.randn(6, 4)
    custom.add_custom_template(x, y)
    seen: list = []
    stop = observe_launches(seen.append)
    try:  # an observer sees every launch: the raw hit leaves it to the phase functions
        out, hits, _, raw = _served(lambda: custom.add_custom_template(x, y))
    finally:
        stop()
    assert (hits, raw) == (1, 0) and len(seen) == 1 and torch.equal(out, x + y)
    assert _served(lambda: custom.add_custom_template(x, y))[1:] == (1, 0, 1)
    xt, yt = x.t(), y.t()  # non-contiguous: the Python kernel, the right result
    out, hits, misses, raw = _served(lambda: custom.add_custom_template(xt, yt))
    assert (hits, misses, raw) == (0, 1, 0) and torch.equal(out, xt + yt)


def test_raw_hits_across_threads_and_unaligned_views(tops):
    import threading

    custom, *_ = tops
    clear_cache()
    x = torch.arange(40, dtype=torch.float32)
    shifted = x[1:]  # contiguous, its data 4 bytes past a 16-byte boundary: launched as phase 2 launches it
    for _ in range(3):
        assert torch.equal(custom.add_custom_template(shifted, shifted), 2 * shifted)
    errors: list = []

    def worker(n: int) -> None:  # each thread has its own tables: the op's remembered hit is re-keyed
        a = torch.full((n,), float(n))
        try:
            for _ in range(50):
                out = custom.add_custom_template(a, a)
                if not torch.equal(out, 2 * a):
                    errors.append((n, out))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append((n, exc))

    threads = [threading.Thread(target=worker, args=(n,)) for n in (5, 9)]
    for t in threads:
        t.start()
    worker(7)
    for t in threads:
        t.join()
    assert errors == []


def test_ops_the_one_shot_path_does_not_serve_keep_the_python_kernel(tops, ops, builtin_ops):
    # SortCustom (AI CPU, two outputs) and AddNCustom (a list input): not registered in C++
    pkg, ns = (ops, "customize") if "SortCustom" in ops._OPS else (builtin_ops, "built_in")
    assert not cpp_kernel_serves(pkg._OPS["SortCustom"]) and not cpp_kernel_serves(ops._OPS["AddNCustom"])
    assert cpp_kernel_serves(ops._OPS["AddCustomTemplate"])
    x = torch.tensor([[3.0, 1.0, 2.0]])
    (values, indices), hits, misses = _hits_after(lambda: getattr(torch.ops, ns).sort_custom(x))
    assert (hits, misses) == (0, 0)
    assert torch.equal(values, torch.tensor([[1.0, 2.0, 3.0]])) and torch.equal(indices, torch.tensor([[1, 2, 0]]))
    y = torch.ones(2, 3)
    total, hits, misses = _hits_after(lambda: torch.ops.customize.add_n_custom([y, y, y]))
    assert (hits, misses) == (0, 0) and torch.equal(total, 3 * y)


def test_what_the_hit_path_does_not_take_goes_to_the_python_kernel(tops):
    custom, builtin, py_custom, _ = tops
    clear_cache()
    x, y = torch.randn(4, 34), torch.randn(4, 34)
    custom.add_custom_template(x, y)
    strided, hits, misses = _hits_after(lambda: custom.add_custom_template(x[:, ::2], y[:, ::2]))
    assert (hits, misses) == (0, 1) and torch.equal(strided, x[:, ::2] + y[:, ::2])
    grad = x.clone().requires_grad_()
    with torch.no_grad():
        out, hits, _ = _hits_after(lambda: custom.add_custom_template(grad, y))
    assert hits == 1 and torch.equal(out, x + y)
    empty = torch.ones(0, 3)
    assert custom.add_custom_template(empty, empty).shape == (0, 3)
    assert custom.add_custom_template(empty, empty).shape == (0, 3)


def test_errors_stay_the_runtimes(tops):
    custom, *_ = tops
    x = torch.ones(2, 3, dtype=torch.float64)
    for _ in range(2):
        with pytest.raises(AclnnError, match="AddCustomTemplate: no declared dtype combination has x=float64"):
            custom.add_custom_template(x, x)
    a = torch.ones(2, 3, requires_grad=True)
    out = custom.add_custom_template(a, a)
    with pytest.raises(RuntimeError, match=r"customize::add_custom_template \(AddCustomTemplate\) has no backward"):
        out.sum().backward()


def test_compile_uses_the_kernel(tops):
    custom, builtin, *_ = tops

    def f(a, b):
        return builtin.leaky_relu_custom(custom.add_custom_template(a, b), negative_slope=0.2)

    x, y = torch.randn(8, 16), torch.randn(8, 16)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, y), torch.nn.functional.leaky_relu(x + y, 0.2))


def test_cxx_is_the_builders_rule(monkeypatch):
    from opbuild.builder.toolchain import HostToolchain

    for cc, cxx in ((None, None), ("gcc", None), ("/usr/bin/gcc", None), ("clang", None), ("cc", "g++ -O0")):
        for name, value in (("CC", cc), ("CXX", cxx)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        if cc is not None and not os.path.exists(cc) and not any(
                os.path.exists(os.path.join(d, cc)) for d in os.environ.get("PATH", "").split(os.pathsep)):
            continue  # HostToolchain checks the C compiler exists
        assert torch_build.cxx_command() == HostToolchain().cxx


def test_no_compiler_warns_once_and_the_python_kernel_runs(package, tmp_path):
    script = textwrap.dedent(f"""
        import warnings, torch
        import opbuild.runtime as rt
        from opbuild.runtime import torch_build
        ops = rt.import_ops({str(package)!r})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ops.register_torch()
        msgs = [str(w.message) for w in caught if issubclass(w.category, torch_build.TorchKernelWarning)]
        assert len(msgs) == 1, msgs
        print(msgs[0])
        a = torch.ones(3)
        assert torch.equal(torch.ops.customize.add_custom_template(a, a), a + a)
        assert torch_build.stats() == (0, 0)
    """)
    env = dict(os.environ, CXX=str(tmp_path / "no-such-g++"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "no-such-g++' not found on PATH" in done.stdout and "install g++" in done.stdout
    assert "Python kernel" in done.stdout
