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


def _explained(result, op: str) -> str:
    """The EXPLAIN=1 line of `op` (the layer that decided what the build did with it)."""
    lines = [line for line in result.stdout.splitlines() if line.startswith(f"opbuild: explain: {op}: ")]
    assert len(lines) == 1, result.stdout
    return lines[0][len(f"opbuild: explain: {op}: "):]


def test_explain_names_the_layer_that_decided_for_each_op(project, tmp_path):
    cache = {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    ops = "OPS=AddCustomTemplate"
    p = project()
    first = _explained(p.build(ops, "EXPLAIN=1", env=cache), "AddCustomTemplate")
    assert first.startswith("rebuilt: not built yet (ops record); no bundle in the shared bundle cache"), first
    assert first.endswith("; spec: checked now"), first
    assert _explained(p.build(ops, "EXPLAIN=1", env=cache), "AddCustomTemplate") == "up to date (manifest)"
    full = {**cache, "OPBUILD_FULL_CHECK": "1"}  # past the manifest: the ops record decides
    assert _explained(p.build(ops, "EXPLAIN=1", env=full), "AddCustomTemplate") == \
        "up to date (ops record); spec: local spec cache"

    edit(p.op_dir("AddCustomTemplate") / "tiling.c", "/* edited */\n")
    result = p.build(ops, "EXPLAIN=1", env=cache)
    assert _explained(result, "AddCustomTemplate").startswith(
        "rebuilt: ops/add_custom_template/tiling.c changed (fingerprint); no bundle in the shared bundle cache; "
        "its steps: as SCons decides (SCons signatures)"), result.stdout
    assert "because: ops/add_custom_template/tiling.c changed" in result.stdout  # the step's own reason

    second = project()  # another checkout (another path), the same cache: restored, nothing compiled
    edit(second.op_dir("AddCustomTemplate") / "tiling.c", "/* edited */\n")
    result = second.build(ops, "EXPLAIN=1", env=cache)
    assert _explained(result, "AddCustomTemplate") == (
        "restored (shared bundle cache); out/ was not current: not built yet (ops record); spec: shared spec cache")
    assert summary(result)[4] == 0
