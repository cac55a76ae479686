"""The binary_info_config.json reader on a config in the real format (opbase's Mul mock: only
p=0 keys, d=0 and d=1), with one malformed entry and one repeated key: the good entries still
serve, the bad one is skipped with one warning naming op and entry, the first of a repeated key
wins, and a call that names no impl mode finds the p=0 binary after its p=1 key missed."""

from __future__ import annotations

import json

import pytest

from opbuild.abi import package_layout as layout
from opbuild.keys import context_for_choices
from opbuild.runtime.binaries.package import binary_index
from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from opbuild.spec.model import Binary, TensorChoice
from opbuild_spec_factory import make_spec, when

SOC = "ascend910b"


def real_mul_config() -> dict:
    """binary_info_config.json as asc-devkit's ascendc_ops_config.py writes it for opbase's Mul."""
    def item(digest: str, tail: str) -> dict:
        return {"coreType": 2, "simplifiedKey": [f"Mul/d=0,p=0/{tail}", f"Mul/d=1,p=0/{tail}"],
                "binPath": f"{SOC}/mul/Mul_{digest}_high_performance.o",
                "jsonPath": f"{SOC}/mul/Mul_{digest}_high_performance.json"}

    param = {"index": 0, "paramType": "required", "formatMode": "static_nd_agnostic"}
    return {"Mul": {
        "dynamicRankSupport": True,
        "simplifiedKeyMode": 0,
        "params": {"inputs": [{"name": "x1", **param}, {"name": "x2", **param, "index": 1}],
                   "outputs": [{"name": "y", **param}]},
        "binaryList": [
            item("93b3f8e9594b4018902b635fff3a83c5", "1,2/1,2/1,2"),
            {"coreType": 2, "binPath": f"{SOC}/mul/Mul_broken_high_performance.o"},  # no simplifiedKey
            item("ee98c6628030785f610b924ab1557b31", "0,2/0,2/0,2"),
            item("0123456789abcdef0123456789abcdef", "1,2/1,2/1,2"),  # repeats the first entry's keys
        ],
    }}


@pytest.fixture()
def package(tmp_path):
    config = tmp_path / layout.binary_info_config(SOC)
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps(real_mul_config(), indent="  "))
    for item in real_mul_config()["Mul"]["binaryList"]:
        binary = tmp_path / layout.KERNEL_ROOT / item["binPath"]
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_bytes(b"\x7fELF")
    return tmp_path


def mul_spec():
    return make_spec("Mul", inputs=[("x1", ["float16", "float32"]), ("x2", ["float16", "float32"])],
                     outputs=[("y", ["float16", "float32"])],
                     binaries=[Binary("Mul_fp16", when(x1="float16", x2="float16", y="float16"))])


def test_bad_entry_skipped_first_duplicate_kept(package, caplog):
    with caplog.at_level("WARNING", logger="opbuild.runtime"):
        index = binary_index(package, SOC)
    assert sorted(index.by_key) == ["Mul/d=0,p=0/0,2/0,2/0,2", "Mul/d=0,p=0/1,2/1,2/1,2",
                                    "Mul/d=1,p=0/0,2/0,2/0,2", "Mul/d=1,p=0/1,2/1,2/1,2"]
    assert index.by_key["Mul/d=0,p=0/1,2/1,2/1,2"].name == "Mul_93b3f8e9594b4018902b635fff3a83c5_high_performance"
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "op Mul: binaryList[1] has no simplifiedKey; skipped" in messages[0]
    assert "op Mul: binaryList[3] (Mul_0123456789abcdef0123456789abcdef_high_performance) repeats key(s)" in messages[1]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_p0_retry_when_no_impl_mode_is_set(package, dtype):
    op = OpRuntime(mul_spec(), package)
    t = TensorChoice(dtype, "ND")
    ctx = context_for_choices(mul_spec(), {"x1": t, "x2": t, "y": t}, None, 0, 1, SOC)
    selection = op.select(ctx, SOC, fallback=True)
    group = "1,2" if dtype == "float16" else "0,2"
    assert selection.full_key == f"Mul/d=0,p=0/{group}/{group}/{group}"
    assert selection.impl_mode == 0
    with pytest.raises(AclnnError) as err:  # an explicit p=1 gets no retry
        op.select(ctx, SOC, fallback=False)
    assert err.value.status == ACLNN_ERR_PARAM_INVALID and "no binary for key Mul/d=0,p=1/" in err.value.message
    assert "binaryList[1] has no simplifiedKey" in err.value.message


def test_settings_fallback_only_while_no_impl_mode_is_set():
    from opbuild.runtime import settings

    saved = settings._state["impl_mode"]
    try:
        settings.set_impl_mode(None)
        assert settings.resolve(None, None)[1:] == (1, True)
        assert settings.resolve(None, "high_performance")[1:] == (1, False)  # per call: explicit
        auto = settings.DP[0]
        settings.set_impl_mode("high_performance")
        assert settings.resolve(None, None)[1:] == (1, False) and settings.DP[0] != auto  # its own cache code
        assert settings.impl_mode_is_set()
    finally:
        settings._state["impl_mode"] = saved
        settings._update()
