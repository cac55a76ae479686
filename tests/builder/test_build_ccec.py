"""TOOLCHAIN=ccec: kernels compiled by the CANN toolkit's asc_opc (a fake one here, in a temporary
ASCEND_HOME_PATH/bin) into .o binaries; tiling compiled by the host compiler with the CANN headers."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from build_helpers import CUSTOM_WHERE, SAMPLE_BINARIES, SOC

FAKE_ASC_OPC = '''#!{python}
"""A stand-in for CANN's asc_opc: records its command line, checks its parameter JSON, writes
<output>/<bin_filename>.o (and .json) like the real compiler."""
import hashlib, json, os, sys
from pathlib import Path
args = sys.argv[1:]
home = Path(__file__).resolve().parent.parent
with open(home / "asc_opc.log", "a") as log:
    log.write(json.dumps({{"argv": sys.argv, "cwd": os.getcwd()}}) + "\\n")
opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--"))
source = [a for a in args if not a.startswith("--")][0]
param = json.loads(Path(opts["input_param"]).read_text())
entry = param["op_list"][0]
out = Path(opts["output"])
out.mkdir(parents=True, exist_ok=True)
blob = b"\\x7fELF fake ascend kernel\\n" + hashlib.sha256(Path(source).read_bytes()).hexdigest().encode() + b"\\n"
blob += json.dumps(param, sort_keys=True).encode() + opts["soc_version"].encode()
(out / (entry["bin_filename"] + ".o")).write_bytes(blob)
(out / (entry["bin_filename"] + ".json")).write_text(json.dumps({{"binFileName": entry["bin_filename"]}}))
'''


def _ascend_home(tmp_path: Path) -> Path:
    home = tmp_path / "Ascend" / "latest"
    (home / "bin").mkdir(parents=True)
    (home / "include").mkdir()
    (home / "compiler").mkdir()
    (home / "compiler" / "version.info").write_text("Version=8.0.RC3.fake\n")
    tool = home / "bin" / "asc_opc"
    tool.write_text(FAKE_ASC_OPC.format(python=sys.executable))
    tool.chmod(0o755)
    return home


def test_ccec_builds_o_kernels_with_asc_opc_command_lines(project, tmp_path):
    home = _ascend_home(tmp_path)
    p = project()
    result = p.build("TOOLCHAIN=ccec", "OPS=AddCustomTemplate", env={"ASCEND_HOME_PATH": str(home)})
    calls = [json.loads(line) for line in (home / "asc_opc.log").read_text().splitlines()]
    binaries = SAMPLE_BINARIES["AddCustomTemplate"]
    assert sorted(Path(c["argv"][0]).name for c in calls) == ["asc_opc"] * len(binaries)
    assert sorted(r.split()[2] for r in result.steps if r.startswith("CC kernel ")) == sorted(binaries)
    pkg = p.pkg
    kernel_dir = pkg / "op_impl/ai_core/tbe/kernel" / SOC / "add_custom_template"
    for call in calls:
        argv = call["argv"]
        assert argv[0] == str(home / "bin" / "asc_opc")
        assert argv[1] == "ops/add_custom_template/kernel.c"
        opts = dict(a[2:].split("=", 1) for a in argv[2:])
        assert sorted(opts) == ["impl_mode", "input_param", "main_func", "op_mode", "output", "simplified_key_mode",
                                "soc_version"], shlex.join(argv)
        assert opts["soc_version"] == "Ascend910B1"
        assert opts["impl_mode"] == "high_performance,optional" and opts["op_mode"] == "dynamic"
        assert opts["simplified_key_mode"] in ("0", "2")
        assert opts["input_param"].endswith("_param.json")
        param = json.loads((p.root / opts["input_param"]).read_text())
        assert param["op_type"] == "AddCustomTemplate"
        [entry] = param["op_list"]
        assert sorted(entry) == ["attrs", "bin_filename", "inputs", "outputs"]
        assert entry["bin_filename"] in binaries and Path(opts["input_param"]).name == f"{entry['bin_filename']}_param.json"
        assert [t["name"] for t in entry["inputs"]] == ["x", "y"] and [t["name"] for t in entry["outputs"]] == ["z"]
        dtype = "float16" if entry["bin_filename"].endswith("FP16") else "float32"
        assert {t["dtype"] for t in entry["inputs"] + entry["outputs"]} == {dtype}
    for b in binaries:
        assert (kernel_dir / f"{b}.o").read_bytes().startswith(b"\x7fELF fake ascend kernel")
        assert not (kernel_dir / f"{b}.so").exists()
        kernel_json = json.loads((kernel_dir / f"{b}.json").read_text())
        assert kernel_json["binFileSuffix"] == ".o"
    config = json.loads((pkg / "op_impl/ai_core/tbe/kernel/config" / SOC / "binary_info_config.json").read_text())
    bin_paths = [e["binPath"] for op in config.values() for e in op["binaryList"]]
    assert bin_paths and all(b.endswith(".o") for b in bin_paths), bin_paths
    assert (pkg / "version.info").read_text().strip() == "custom_opp_compiler_version=8.0.RC3.fake"
    assert (pkg / "op_impl/ai_core/tbe/op_tiling/liboptiling.so").exists()  # tiling: the host compiler
    assert f"CC tiling AddCustomTemplate" in result.steps
    assert f"LINK libcust_opmaster_rt2.0.so ({CUSTOM_WHERE})" in result.steps

    # incremental: nothing to do; a new asc_opc (another identity) rebuilds every kernel
    assert p.build("TOOLCHAIN=ccec", "OPS=AddCustomTemplate", env={"ASCEND_HOME_PATH": str(home)}).steps == []
    tool = home / "bin" / "asc_opc"
    tool.write_text(tool.read_text() + "# patched\n")
    again = p.build("TOOLCHAIN=ccec", "OPS=AddCustomTemplate", env={"ASCEND_HOME_PATH": str(home)})
    assert sorted(again.kernels()) == sorted(binaries), again.steps


def test_ccec_without_ascend_home_path_says_what_to_set(project, tmp_path):
    p = project()
    result = p.scons("ops", "TOOLCHAIN=ccec", env={"ASCEND_HOME_PATH": ""})
    assert result.rc != 0
    assert "ASCEND_HOME_PATH" in result.stderr and "set_env.sh" in result.stderr, str(result)
    assert not p.out.joinpath("opp").exists()
    result = p.scons("ops", "TOOLCHAIN=ccec", env={"ASCEND_HOME_PATH": str(tmp_path / "nowhere")})
    assert result.rc != 0 and "is not a directory" in result.stderr


def test_ccec_ops_come_back_whole_from_the_cache(project, tmp_path):
    """A second checkout restores the .o kernels and their JSONs from the op's bundle: asc_opc
    does not run again, and the package is the first checkout's."""
    from build_helpers import tree

    home = _ascend_home(tmp_path)
    env = {"ASCEND_HOME_PATH": str(home), "OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    first = project()
    first.build("TOOLCHAIN=ccec", "OPS=AddCustomTemplate", env=env)
    runs = len((home / "asc_opc.log").read_text().splitlines())
    second = project()
    result = second.build("TOOLCHAIN=ccec", "OPS=AddCustomTemplate", env=env)
    assert list(result.bundles()) == ["AddCustomTemplate"]
    assert len((home / "asc_opc.log").read_text().splitlines()) == runs
    assert tree(second.out / "opp") == tree(first.out / "opp")
    assert sorted(p.name for p in (second.pkg / "op_impl/ai_core/tbe/kernel" / SOC / "add_custom_template").glob("*.o")) \
        == sorted(f"{b}.o" for b in SAMPLE_BINARIES["AddCustomTemplate"])
