"""The torch kernel's build key (runtime/torch_build.py): by the contents of what the build
reads of opbuild and torch's version, never a checkout's or install's path (decision 0007)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from opbuild.compilers import cxx_command
from opbuild.runtime import torch_build


def _torch_at(root: Path) -> SimpleNamespace:
    """What the key reads of torch, installed under `root` (a checkout's virtualenv, say)."""
    return SimpleNamespace(__version__="2.13.0+cpu", __file__=str(root / "site-packages" / "torch" / "__init__.py"),
                           _C=SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=True))


@pytest.fixture()
def cxx() -> list[str]:
    command = cxx_command()
    if shutil.which(command[0]) is None:
        pytest.skip(f"no C++ compiler ({command[0]})")
    return command


def test_two_checkouts_share_the_key(tmp_path, monkeypatch, cxx):
    keys = []
    for name in ("one", "two"):
        src = tmp_path / name / "opbuild" / "runtime" / "native" / "src"
        shutil.copytree(torch_build.SOURCE_DIR, src)
        monkeypatch.setattr(torch_build, "SOURCE_DIR", src)
        assert str(tmp_path / name) in " ".join(torch_build._compile_flags(_torch_at(tmp_path / name / ".venv")))
        keys.append(torch_build.cache_key(_torch_at(tmp_path / name / ".venv"), cxx))
    assert keys[0] == keys[1]


def test_the_key_follows_the_included_header_and_torch(tmp_path, monkeypatch, cxx):
    src = tmp_path / "src"
    shutil.copytree(torch_build.SOURCE_DIR, src)
    monkeypatch.setattr(torch_build, "SOURCE_DIR", src)
    assert {"torch_kernel.cpp", "oneshot_api.h"} <= set(torch_build.sources())
    assert "fastpath.h" not in torch_build.sources()  # read by _fastpath's build, not this one
    torch = _torch_at(tmp_path)
    before = torch_build.cache_key(torch, cxx)
    (src / "fastpath.h").write_text("/* not included by the kernel */\n")
    assert torch_build.cache_key(torch, cxx) == before
    header = src / "oneshot_api.h"
    header.write_text(header.read_text() + "\n/* changed */\n")
    assert torch_build.cache_key(torch, cxx) != before
    changed = torch_build.cache_key(torch, cxx)
    torch.__version__ = "2.14.0+cpu"
    assert torch_build.cache_key(torch, cxx) != changed
