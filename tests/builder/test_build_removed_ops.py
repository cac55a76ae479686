"""Removing an op removes its outputs (issue 26): the build deletes what it recorded writing for
ops no longer under ops/ (bundles.py's ops record; package files of its last complete build), so
out/opp and `opbuild pack` hold exactly what a clean build of the remaining ops makes."""

from __future__ import annotations

import shutil
import tarfile
import io

from opbuild.abi import package_layout as layout

KEEP = ("add_custom_template", "non_zero_custom", "sort_custom")
"""A small project: one AI Core op and both AI CPU sample ops."""


def _small(project):
    p = project()
    for d in (p.root / "ops").iterdir():
        if d.name not in KEEP:
            shutil.rmtree(d)
    return p


def _files(root) -> set[str]:
    return {f.relative_to(root).as_posix() for f in root.rglob("*") if f.is_file() or f.is_symlink()}


def test_removed_ops_leave_no_outputs_and_pack_ships_the_current_set(project):
    p = _small(project)
    p.build()
    header = p.pkg / "op_api" / "include" / "aclnn_sort_custom.h"
    assert header.is_file()

    shutil.rmtree(p.root / "ops" / "sort_custom")
    result = p.build()
    assert "opbuild: removed the outputs of ops no longer under ops/: SortCustom" in result.stdout
    clean = _small(project)
    shutil.rmtree(clean.root / "ops" / "sort_custom")
    clean.build()
    assert _files(p.out / "opp") == _files(clean.out / "opp")  # nothing of SortCustom left
    assert not header.exists()

    from opbuild.deploy.pack import pack

    run = pack(p.pkg, p.root / "x.run")
    data = run.read_bytes()
    names = tarfile.open(fileobj=io.BytesIO(data[data.index(b"\x1f\x8b\x08"):]), mode="r:gz").getnames()
    assert not [n for n in names if "sort_custom" in n.lower()]
    assert any(n.endswith("aclnn_non_zero_custom.h") for n in names)

    shutil.rmtree(p.root / "ops" / "non_zero_custom")  # the last AI CPU op: its package files go too
    result = p.build()
    assert "no longer under ops/: NonZeroCustom" in result.stdout
    assert not (p.pkg / layout.aicpu_kernel_lib()).exists() and not (p.pkg / layout.aicpu_op_info()).exists()
    assert not [f for f in _files(p.out / "opp") if "non_zero" in f or "aicpu" in f]
    assert p.build().stdout.count("removed the outputs") == 0  # (said once)
