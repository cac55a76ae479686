"""The host compilers' rule (opbuild/compilers.py), shared by the builder and the torch kernel."""

from __future__ import annotations

import pytest

from opbuild.compilers import cc_command, cxx_command, cxx_for


@pytest.mark.parametrize(("cc", "cxx"), [("gcc", "g++"), ("cc", "c++"), ("clang", "clang++"),
                                         ("/usr/bin/gcc", "/usr/bin/g++"), ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++"),
                                         ("x86_64-w64-clang", "x86_64-w64-clang++"), ("icx", "c++")])
def test_the_cxx_beside_a_c_compiler(cc, cxx):
    assert cxx_for(cc) == cxx


def test_cxx_then_cc_from_the_environment(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("CC", "/opt/x/bin/clang -m64")
    assert cc_command() == ["/opt/x/bin/clang", "-m64"] and cxx_command() == ["/opt/x/bin/clang++"]
    monkeypatch.setenv("CXX", "g++ -O0")
    assert cxx_command() == ["g++", "-O0"] and cxx_command("clang") == ["g++", "-O0"]
    monkeypatch.delenv("CC")
    monkeypatch.delenv("CXX")
    assert cxx_command() == ["c++"] and cxx_command("gcc-13") == ["c++"]
