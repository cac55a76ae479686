"""The per-call environment reads (runtime/environ.py): what the cache key's search environment
and current_soc see follows os.environ at once."""

from __future__ import annotations

from opbuild.abi.vocabulary import DEFAULT_SOC
from opbuild.runtime.binaries.selection import current_soc
from opbuild.runtime.call.cache_key import ENV_VARS, search_env
from opbuild.runtime.environ import decode, raw_reader


def test_raw_reader_follows_the_environment(monkeypatch):
    read = raw_reader("OPBUILD_TEST_A", "OPBUILD_TEST_B")
    monkeypatch.delenv("OPBUILD_TEST_A", raising=False)
    monkeypatch.setenv("OPBUILD_TEST_B", "b")
    a, b = read()
    assert a is None and decode(b) == "b"
    monkeypatch.setenv("OPBUILD_TEST_A", "é")
    assert [decode(v) for v in read()] == ["é", "b"]


def test_search_env_and_current_soc_read_the_same_variable(monkeypatch):
    assert ENV_VARS[0] == "OPBUILD_SOC"
    monkeypatch.delenv("OPBUILD_SOC", raising=False)
    assert current_soc() == DEFAULT_SOC and search_env()[0] is None
    for soc in ("ascend310p", "ascend910b"):
        monkeypatch.setenv("OPBUILD_SOC", soc)
        assert current_soc() == soc == decode(search_env()[0])
