"""The dump's configuration without a build: acl.json's dump object (CANN's fields) and what it
selects, OPBUILD_DUMP and its errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.runtime.debug.dump import DumpConfigError, config_from_env, parse_acl_json, parse_dump_object

REPO = Path(__file__).resolve().parents[2]


def test_selection_of_single_ops_and_model_nodes():
    c = parse_dump_object({"dump_path": "d", "dump_list": [{"layer": ["A"]}, {"model_name": "m", "layer": ["n1"]},
                                                           {"model_name": "all_of_me"}]}, "acl.json")
    assert c.mode == "output" and c.path == Path("d")
    s = c.selection
    assert s.selects("A", None) and not s.selects("B", None)  # single ops: by layer of entries without model
    assert s.selects("X", "m", "n1") and not s.selects("X", "m", "n2") and s.selects("A", "m", "n9")
    assert s.selects("Any", "all_of_me", "k") and not s.selects("X", "other", "n1")


def test_op_switch_on_dumps_every_single_op():
    s = parse_dump_object({"dump_path": "d", "dump_list": [], "dump_op_switch": "on"}, "a.json").selection
    assert s.selects("Anything", None) and not s.selects("Anything", "m", "n")
    off = parse_dump_object({"dump_path": "d", "dump_list": []}, "a.json").selection
    assert not off.selects("Anything", None)  # CANN's default: dump_op_switch off, empty list


def test_acl_json_without_dump_and_bad_json():
    assert parse_acl_json('{"other": 1}', "a.json") is None
    with pytest.raises(DumpConfigError, match=r"^a\.json: invalid JSON"):
        parse_acl_json("{", "a.json")
    with pytest.raises(DumpConfigError, match=r"^a\.json: dump\.dump_list\[0\] names neither model_name nor layer$"):
        parse_dump_object({"dump_path": "d", "dump_list": [{}]}, "a.json")


def test_environment():
    assert config_from_env({}) is None
    c = config_from_env({"OPBUILD_DUMP": "/tmp/x", "OPBUILD_DUMP_MODE": "all", "OPBUILD_DUMP_OPS": "A, B"})
    assert c.mode == "all" and c.selection.selects("B", None) and not c.selection.selects("C", None)
    assert config_from_env({"OPBUILD_DUMP": "/tmp/x"}).selection.selects("C", None)
    with pytest.raises(DumpConfigError, match="^OPBUILD_DUMP_MODE must be one of input, output, all, not 'x'$"):
        config_from_env({"OPBUILD_DUMP": "/tmp/x", "OPBUILD_DUMP_MODE": "x"})


def test_bad_environment_fails_the_import_with_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPBUILD_DUMP": str(blocker / "sub")}
    r = subprocess.run([sys.executable, "-c", "import opbuild.runtime"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (f"opbuild.runtime.debug.dump.DumpConfigError: OPBUILD_DUMP: cannot create "
                                         f"the dump directory {blocker / 'sub'}: Not a directory")
