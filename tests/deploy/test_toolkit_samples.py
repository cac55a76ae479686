"""Opt-in: the public Ascend samples' own scripts, unchanged, against `opbuild toolkit install --prefix T`.

Set OPBUILD_ASCENDC_SAMPLES to a directory laid out like the samples' `operator/ascendc`
(holding `0_introduction/`). For each sample: `install.sh -v Ascend910B1` (setenv.bash, msopgen,
the sample's op_host/ + op_kernel/ copied in, build.sh), the `.run` into T/opp, then
each of the sample's apps' `run.sh` (AclNNInvocationNaive, AclNNInvocation, AclOfflineModel --
`atc --singleop` + `aclopExecuteV2` --, AclOnlineModel) must print "test pass". The shell is a
plain one (`env -i`, no virtualenv); the samples' own prerequisite, a `python3` with numpy (their
gen_data.py and verify_result.py), is this test's Python, put first on PATH."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.cli import main

SAMPLES = os.environ.get("OPBUILD_ASCENDC_SAMPLES")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SAMPLES, reason="set OPBUILD_ASCENDC_SAMPLES to the samples' operator/ascendc"),
    pytest.mark.skipif(importlib.util.find_spec("opbuild.ascendc.importer") is None,
                       reason="needs the Ascend C front end (opbuild.ascendc.importer)"),
    pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake"),
]


def _plain_bash(script: str, cwd: Path, t: Path) -> subprocess.CompletedProcess[str]:
    python_dir = t.parent.parent / "python3-with-numpy"
    if not python_dir.is_dir():
        python_dir.mkdir(parents=True)
        (python_dir / "python3").symlink_to(sys.executable)
    env = [f"PATH={python_dir}:/usr/bin:/bin", f"HOME={os.environ.get('HOME', '/tmp')}", f"ASCEND_INSTALL_PATH={t}"]
    return subprocess.run(["env", "-i", *env, "bash", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=1800)


APPS = {
    "1_add_frameworklaunch": ("AclNNInvocationNaive", "AclNNInvocation", "AclOfflineModel", "AclOnlineModel"),
    "14_reduce_frameworklaunch": ("AclNNInvocationNaive",),
}


@pytest.mark.parametrize("sample", sorted(APPS))
def test_sample_scripts_run_unchanged(tmp_path: Path, sample: str) -> None:
    src = Path(SAMPLES) / "0_introduction" / sample
    if not src.is_dir():
        pytest.skip(f"{src} is missing")
    t = tmp_path / "Ascend" / "latest"
    assert main(["toolkit", "install", "--prefix", str(t)]) == 0
    work = tmp_path / sample
    shutil.copytree(src, work)
    # as the samples' README says: the toolkit's environment, the sample's install.sh, then its .run
    proc = _plain_bash('source "$ASCEND_INSTALL_PATH/bin/setenv.bash" && bash install.sh -v Ascend910B1 && '
                       './CustomOp/build_out/custom_opp_*.run --quiet', work, t)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for app in APPS[sample]:
        proc = _plain_bash("bash run.sh", work / app, t)
        assert proc.returncode == 0, f"{app}: {proc.stdout}{proc.stderr}"
        assert "test pass" in proc.stdout, f"{app}: {proc.stdout}"
