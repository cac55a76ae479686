"""libcust_aicpu_kernels.so is linked with `-z defs` (issue 26): a compute source calling a function
no object defines fails the build at the link, naming the symbol, and the package keeps the
library of the previous build, which still serves the package's other AI CPU ops."""

from __future__ import annotations

import shutil
import subprocess
import sys

KEEP = ("non_zero_custom", "sort_custom")


def test_an_undefined_function_in_a_compute_source_fails_the_link(project):
    p = project()
    for d in (p.root / "ops").iterdir():
        if d.name not in KEEP:
            shutil.rmtree(d)
    p.build()
    compute = p.root / "ops" / "sort_custom" / "compute.c"
    compute.write_text(compute.read_text().replace(
        "uint32_t sort_custom_compute(AicpuContext *ctx) {",
        "uint32_t opbuild_test_missing_helper(void);\n\n"
        "uint32_t sort_custom_compute(AicpuContext *ctx) {\n    if (ctx == NULL) return opbuild_test_missing_helper();", 1))
    result = p.scons("ops")
    assert result.rc != 0
    assert "undefined reference to `opbuild_test_missing_helper'" in result.output, str(result)
    assert "LINK libcust_aicpu_kernels.so (vendors/customize)" in result.output
    script = ("import numpy as np, opbuild.runtime as rt\n"
              f"ops = rt.import_ops({str(p.pkg)!r})\n"
              "print(ops.non_zero_custom(np.array([0, 2, 0, 3], np.int32)).tolist())\n")
    run = subprocess.run([sys.executable, "-c", script], env=p.env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout == "[[1, 3]]\n", run.stdout + run.stderr
