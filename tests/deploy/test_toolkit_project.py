"""The CANN sample flow end to end against `opbuild toolkit install --prefix T`, from a plain shell
(`env -i`, no virtualenv): `source T/bin/setenv.bash`, `msopgen gen -i X.json -c ai_core-<SoC>
-lan cpp -out CustomOp`, a C-API op put into the project (ops/<op>/op.yaml: the Ascend C front end
is not needed for that), `bash build.sh` -> build_out/custom_opp_<os>_<arch>.run, the .run
installed into $ASCEND_OPP_PATH (T/opp) and into --install-path=DIR; then an app built like the
samples' AclNNInvocationNaive (CMake: $DDK_PATH/include, $NPU_HOST_LIB, -lascendcl -lcust_opapi
-lacl_op_compiler -lnnopbase, -DCMAKE_SKIP_RPATH=TRUE) runs the op from T/opp, and Python runs
it from DIR."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from opbuild.cli import main
from opbuild.deploy import toolkit

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")]

REPO = Path(__file__).resolve().parents[2]
ARCH = toolkit.lib_dir_name()

IR = [{"op": "AddCustomTemplate",
       "input_desc": [{"name": "x", "param_type": "required", "format": ["ND", "ND"], "type": ["fp16", "float"]},
                      {"name": "y", "param_type": "required", "format": ["ND", "ND"], "type": ["fp16", "float"]}],
       "output_desc": [{"name": "z", "param_type": "required", "format": ["ND", "ND"], "type": ["fp16", "float"]}]}]

APP_CMAKE = """cmake_minimum_required(VERSION 3.5.1)
project(execute_add_op C CXX)
set(INC_PATH $ENV{DDK_PATH})
set(CUST_PKG_PATH "${INC_PATH}/opp/vendors/customize/op_api")
set(LIB_PATH $ENV{NPU_HOST_LIB})
include_directories(${INC_PATH}/include ${CUST_PKG_PATH}/include)
link_directories(${LIB_PATH} ${CUST_PKG_PATH}/lib)
add_executable(execute_add_op main.c)
target_link_libraries(execute_add_op ascendcl cust_opapi acl_op_compiler nnopbase stdc++)
"""

RUN_SH = """set -e
source "$T/bin/setenv.bash"
export DDK_PATH=$T
export NPU_HOST_LIB=$T/$(arch)-$(uname -s | tr '[:upper:]' '[:lower:]')/lib64
cmake -B build -DCMAKE_SKIP_RPATH=TRUE >/dev/null
cmake --build build >/dev/null
cd build
export LD_LIBRARY_PATH=$T/opp/vendors/customize/op_api/lib:$LD_LIBRARY_PATH
./execute_add_op
"""


def _plain_bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), **env}
    return subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in base.items()), "bash", "-c", script],
                          cwd=cwd, capture_output=True, text=True, timeout=900)


def test_msopgen_project_build_install_and_run(tmp_path: Path) -> None:
    t = tmp_path / "Ascend" / "latest"
    assert main(["toolkit", "install", "--prefix", str(t)]) == 0
    work = tmp_path / "work"
    work.mkdir()
    (work / "AddCustomTemplate.json").write_text(json.dumps(IR, indent=4))
    proc = _plain_bash(
        'set -e; source "$T/bin/setenv.bash"\n'
        "msopgen gen -i AddCustomTemplate.json -c ai_core-Ascend910B1 -lan cpp -out CustomOp\n"
        f"mkdir -p CustomOp/ops && cp -r {REPO / 'ops' / 'add_custom_template'} CustomOp/ops/\n"
        "(cd CustomOp && bash build.sh -j1)\n"
        "./CustomOp/build_out/custom_opp_*.run --quiet\n"
        f"./CustomOp/build_out/custom_opp_*.run --quiet --install-path={work / 'opp'}\n",
        work, T=str(t))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = list((work / "CustomOp" / "build_out").glob("custom_opp_*_*.run"))
    assert len(runs) == 1
    assert (work / "CustomOp" / "out" / "opp" / "vendors" / "customize" / "op_api" / "lib" / "libcust_opapi.so").is_file()
    assert (t / "opp" / "vendors" / "customize" / "op_api" / "include" / "aclnn_add_custom_template.h").is_file()

    app = tmp_path / "AclNNInvocationNaive"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(APP_CMAKE)
    shutil.copy(REPO / "tests" / "capi" / "sample_add.c", app / "main.c")
    proc = _plain_bash(RUN_SH, app, T=str(t))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = [float(line.split("=")[1]) for line in proc.stdout.splitlines() if line.startswith("result[")]
    assert results == [1.5 * i + 1.0 for i in range(8)]
    assert proc.stdout.rstrip().endswith("done")

    import opbuild.runtime as rt

    ops = rt.import_ops(str(work / "opp" / "vendors" / "customize"))
    x = np.arange(2048, dtype=np.float32).reshape(2, 1024)
    y = np.full_like(x, 0.25)
    np.testing.assert_array_equal(ops.add_custom_template(x, y), x + y)

    # uninstall keeps the vendor package the .run installed into T/opp
    assert main(["toolkit", "uninstall", "--prefix", str(t)]) == 0
    assert (t / "opp" / "vendors" / "customize" / "op_api" / "lib" / "libcust_opapi.so").is_file()
    assert not (t / "bin").exists()
