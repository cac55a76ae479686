"""`opbuild new`: opbuild.codegen.scaffold.scaffold_op creates an op that validates, builds and runs."""

from __future__ import annotations

import numpy as np
import pytest

from opbuild.codegen.scaffold import SCAFFOLD_FILES, ScaffoldError, scaffold_op

from .harness import Desc, OpRunner, build_ops, sim_available


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory):
    ops_dir = tmp_path_factory.mktemp("scaffold_ops")
    op_dir = scaffold_op("MyScaleCustom", ops_dir)
    return ops_dir, op_dir


@pytest.mark.parametrize(
    "name, snake",
    [("MyScaleCustom", "my_scale_custom"), ("AddNCustom", "add_n_custom"), ("Conv2DGrad", "conv2_d_grad"),
     ("HTTPProbe", "http_probe"), ("X", "x")],
)
def test_directory_is_the_snake_case_name(tmp_path, name, snake):
    op_dir = scaffold_op(name, tmp_path)
    assert op_dir == tmp_path / snake
    assert sorted(p.name for p in op_dir.iterdir()) == sorted(SCAFFOLD_FILES)
    assert f"op: {name}\n" in (op_dir / "op.yaml").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [snake]  # no temporary directory left behind


def test_scaffold_validates(scaffolded):
    pytest.importorskip("opbuild.spec.loader")
    from opbuild.spec import load_spec

    _, op_dir = scaffolded
    spec = load_spec(op_dir / "op.yaml")
    assert spec.op == "MyScaleCustom" and spec.snake == "my_scale_custom"
    assert spec.key_rule.mode == "default"
    assert [b.name for b in spec.binaries] == ["MyScaleCustom_FP16", "MyScaleCustom_FP32"]
    assert spec.kernel.symbol == "my_scale_custom" and spec.tiling.symbol == "my_scale_custom_tiling"


@pytest.mark.parametrize("generator", ["hand", "real"])
def test_scaffold_builds_and_computes(scaffolded, tmp_path, generator):
    if generator == "real":
        pytest.importorskip("opbuild.codegen.kernel_src")
    _, op_dir = scaffolded
    build = build_ops([op_dir], tmp_path / "build", generator=generator)  # -Wall -Wextra -Werror
    backends = ["threads"] + (["sim"] if sim_available() else [])
    rng = np.random.default_rng(9)
    for backend in backends:
        r = OpRunner(build, "MyScaleCustom", backend)
        for dtype, binary in [(np.float16, "MyScaleCustom_FP16"), (np.float32, "MyScaleCustom_FP32")]:
            for shape in [(1,), (1009,), (), (123, 457)]:
                x = rng.uniform(-100, 100, size=shape).astype(dtype)
                (y,), t = r.run(binary, [x], [shape])  # default scale 2.0: exact
                np.testing.assert_array_equal(y, x * 2)
                (y,), t = r.run(binary, [x], [shape], attrs={"scale": -0.3})
                np.testing.assert_array_equal(y, (x.astype(np.float32) * np.float32(-0.3)).astype(dtype))
                assert 1 <= t.block_dim <= 48
        bad = r.tiling([Desc("float16", (4,))], [Desc("float16", (5,))])
        assert bad.status != 0 and bad.error.startswith("MyScaleCustom: dim 0")
        bad = r.tiling([Desc("int32", (4,))], [Desc("int32", (4,))])
        assert bad.status != 0 and "x dtype 3 is not float16" in bad.error


def test_keyword_op_name_gets_a_valid_entry(tmp_path):
    op_dir = scaffold_op("Int", tmp_path)
    assert "entry: int_kernel" in (op_dir / "op.yaml").read_text()
    build = build_ops([op_dir], tmp_path / "build")
    x = np.arange(5, dtype=np.float32)
    (y,), _ = OpRunner(build, "Int").run("Int_FP32", [x], [x.shape])
    np.testing.assert_array_equal(y, 2 * x)


def test_refuses_to_overwrite(scaffolded):
    ops_dir, op_dir = scaffolded
    before = {p.name: p.read_bytes() for p in op_dir.iterdir()}
    with pytest.raises(ScaffoldError, match=f"{op_dir} already exists"):
        scaffold_op("MyScaleCustom", ops_dir)
    assert {p.name: p.read_bytes() for p in op_dir.iterdir()} == before


def test_refuses_an_existing_file_or_empty_directory(tmp_path):
    (tmp_path / "taken_op").write_text("mine")
    with pytest.raises(ScaffoldError, match="taken_op already exists"):
        scaffold_op("TakenOp", tmp_path)
    (tmp_path / "empty_op").mkdir()
    with pytest.raises(ScaffoldError, match="empty_op already exists"):
        scaffold_op("EmptyOp", tmp_path)
    assert (tmp_path / "taken_op").read_text() == "mine" and not any((tmp_path / "empty_op").iterdir())


@pytest.mark.parametrize("name", ["myOp", "my_op", "My_Op", "My-Op", "", "1Op", "My Op", "Op.", "Ünï"])
def test_rejects_names_that_are_not_camel_case(tmp_path, name):
    with pytest.raises(ScaffoldError, match="is not CamelCase"):
        scaffold_op(name, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_creates_the_ops_directory(tmp_path):
    op_dir = scaffold_op("FreshOp", tmp_path / "new" / "ops")
    assert op_dir == tmp_path / "new" / "ops" / "fresh_op" and (op_dir / "kernel.c").is_file()


def test_accepts_a_string_path(tmp_path):
    assert scaffold_op("StrPathOp", str(tmp_path)).is_dir()  # type: ignore[arg-type]


def test_ai_cpu_scaffold_validates(tmp_path):
    """`opbuild new --engine aicpu` (issue 26): op.yaml + compute.c of an AI CPU op with a
    data-dependent output, which validates at once (its attribute read checked against the spec)."""
    from opbuild.codegen.scaffold import AICPU_SCAFFOLD_FILES
    from opbuild.spec import load_spec

    op_dir = scaffold_op("GreaterCustom", tmp_path, engine="aicpu")
    assert sorted(p.name for p in op_dir.iterdir()) == sorted(AICPU_SCAFFOLD_FILES)
    spec = load_spec(op_dir / "op.yaml")
    assert spec.is_aicpu and spec.data_dependent and spec.compute.symbol == "greater_custom_compute"
    assert [a.name for a in spec.attrs] == ["threshold"]
