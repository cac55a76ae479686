"""The summary line of `scons ops` (ops, binaries, steps, compiled / from cache / remote, seconds)
and EXPLAIN=1 (why each step runs)."""

from __future__ import annotations

import re

from build_helpers import edit

SUMMARY = re.compile(r"^opbuild: ok: (\d+) ops, (\d+) kernel binaries, (\d+)/(\d+) steps run "
                     r"\((?:nothing changed: )?(\d+) compiled, (\d+) from cache, (\d+) remote\), [\d.]+ s$")


def summary(result) -> tuple[int, ...]:
    last = result.stdout.strip().splitlines()[-1]
    m = SUMMARY.match(last)
    assert m, f"malformed summary line: {last!r}"
    return tuple(int(g) for g in m.groups())


def test_summary_counts_compiles_and_explain_names_the_edited_source(project):
    p = project()
    result = p.build("OPS=AddNCustom")
    ops, binaries, run, total, compiled, cached, remote = summary(result)
    assert (ops, binaries, cached, remote) == (1, 3, 0, 0)
    assert run == total == len(result.steps)
    # 3 kernels (kernel and launch objects, link), 1 tiling object, the tiling library, the aclnn library
    assert compiled == sum(s.startswith(("CC ", "LINK lib", "LINK kernel ")) and "liboptiling" not in s for s in result.steps)
    assert summary(p.build("OPS=AddNCustom"))[2:5] == (0, total, 0)  # no-op (manifest)

    edit(p.op_dir("AddNCustom") / "kernel.c", "/* edited */\n")
    result = p.build("OPS=AddNCustom", "EXPLAIN=1")
    assert sorted(result.kernels()) == ["AddNCustom_FP16", "AddNCustom_FP32", "AddNCustom_INT32"]
    lines = result.stdout.splitlines()
    for i, line in enumerate(lines):
        if " CC kernel " in line:
            assert lines[i + 1].strip() == "because: ops/add_n_custom/kernel.c changed", result.stdout
    assert "scons: rebuilding" not in result.stdout  # SCons's own text is replaced
    assert summary(result)[4] == 3

    result = p.build("OPS=AddNCustom", "VENDOR=acme", "EXPLAIN=1")  # a new package: nothing existed
    assert "because: not built yet" in result.stdout
