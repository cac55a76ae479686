"""Property-based corruption of real .om files: parsing either succeeds or raises OmError (never
another exception, a hang or a huge allocation). `resealed` corruptions get a valid checksum and
length, so they reach the partition, SO_BINS, table and MODEL_DEF parsers.

The CI variant runs a bounded number of examples; the `fuzz`-marked long variant runs only with
OPBUILD_FUZZ_LONG=1.

`test_mutation_fuzz_through_run` (issue 25) runs the mutation fuzzer of opbuild/om/fuzz.py: 2,000
mutated files through `om inspect` and `om run --trust` under process isolation, each in a forked
child with a timeout and an RLIMIT_AS. Its long run: `python -m opbuild.om.fuzz --opp out/opp
--cases 100000` (docs/om-format.md, "Trust").
"""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opbuild.om import format as omf
from opbuild.om.errors import OmError
from opbuild.om.loader import parse_om


def _mutations():
    flip = st.tuples(st.just("flip"), st.integers(0, 1 << 30), st.integers(0, 7))
    byte = st.tuples(st.just("byte"), st.integers(0, 1 << 30), st.integers(0, 255))
    word = st.tuples(st.just("word"), st.integers(0, 1 << 30),
                     st.sampled_from([0, 1, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x5D776EFD, 16, 256]))
    trunc = st.tuples(st.just("trunc"), st.integers(0, 1 << 30), st.just(0))
    insert = st.tuples(st.just("insert"), st.integers(0, 1 << 30), st.integers(0, 255))
    return st.lists(st.one_of(flip, byte, word, trunc, insert), min_size=1, max_size=4)


def _apply(data: bytes, mutations, reseal: bool, focus_header: bool) -> bytes:
    out = bytearray(data)
    for kind, pos, value in mutations:
        if not out:
            break
        # half of the positions land in the header, table and the first partition heads
        limit = min(len(out), 1024) if focus_header else len(out)
        pos %= limit
        if kind == "flip":
            out[pos] ^= 1 << value
        elif kind == "byte":
            out[pos] = value
        elif kind == "word":
            if pos + 4 <= len(out):
                struct.pack_into("<I", out, pos, value)
        elif kind == "trunc":
            del out[pos:]
        else:
            out[pos:pos] = bytes([value])
    return omf.reseal(out) if reseal else bytes(out)


def _check(data: bytes) -> None:
    try:
        parse_om(data)
    except OmError as exc:
        assert str(exc)


def _property(static_om, dynamic_om, which, mutations, reseal, focus):
    _check(_apply(dynamic_om if which else static_om, mutations, reseal, focus))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.booleans(), mutations=_mutations(), reseal=st.booleans(), focus=st.booleans())
def test_corruptions_ci(static_om, dynamic_om, which, mutations, reseal, focus):
    _property(static_om, dynamic_om, which, mutations, reseal, focus)


@pytest.mark.fuzz
@pytest.mark.skipif(os.environ.get("OPBUILD_FUZZ_LONG") != "1", reason="long fuzz run: set OPBUILD_FUZZ_LONG=1")
@settings(max_examples=20000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.booleans(), mutations=_mutations(), reseal=st.booleans(), focus=st.booleans())
def test_corruptions_long(static_om, dynamic_om, which, mutations, reseal, focus):
    _property(static_om, dynamic_om, which, mutations, reseal, focus)


def test_every_single_byte_of_the_header_and_table(static_om):
    """Each byte of header + partition table set to 0xFF (resealed): OmError or a valid parse."""
    om = omf.read_om(static_om)
    for pos in range(om.data_offset):
        data = bytearray(static_om)
        data[pos] ^= 0xFF
        _check(omf.reseal(data) if pos >= 12 + 32 else bytes(data))


# ---- the mutation fuzzer through `om inspect` and `om run --trust` in isolation (issue 25) ---------

CI_CASES = 2000
"""Cases of the CI run (a long run: `python -m opbuild.om.fuzz --opp out/opp --cases 100000`)."""


def test_mutation_fuzz_through_run(opp, tmp_path):
    """Every mutation that touches no native code (raw tiling bytes included: their digest) ends in
    a clean result: success or exit 1 with one error line. No signal, hang, other exit status,
    traceback or memory blow-up."""
    from opbuild.om import fuzz

    seeds = fuzz.sample_seeds(opp, tmp_path / "seeds")
    assert {s.name for s in seeds} >= {"static3", "dynamic"}
    before = {k: os.environ.get(k) for k in ("OPBUILD_ISOLATION", "OPBUILD_KERNEL_TIMEOUT")}
    report = fuzz.fuzz(seeds, CI_CASES, jobs=2, timeout=20.0)
    assert {k: os.environ.get(k) for k in before} == before  # isolation is the children's, not the caller's
    assert report.cases == CI_CASES
    assert report.bad(("data", "tiling")) == {}, report.table()
    assert report.count("data", "error") > CI_CASES // 5 and report.count("data", "ok") > 0, report.table()


def test_classify(tmp_path):
    """What the fuzzer calls each child's end (a classifier that cannot fail would hide crashes)."""
    from opbuild.om import fuzz

    limit = 1 << 30
    assert fuzz._classify(11, tmp_path, 0, limit).outcome == "signal"  # died of SIGSEGV
    assert fuzz._classify(fuzz._FOREIGN_EXIT << 8, tmp_path, 0, limit).outcome == "foreign"
    assert fuzz._classify(fuzz._MEMORY_EXIT << 8, tmp_path, 0, limit).outcome == "memory"
    assert fuzz._classify(0, tmp_path, limit // 1024, limit).outcome == "memory"  # peak RSS over half the limit
    assert fuzz._classify(7 << 8, tmp_path, 0, limit).outcome == "exit"
    (tmp_path / "stderr.run").write_text("opbuild om run: error: MODEL_DEF: bad\n")
    assert fuzz._classify(1 << 8, tmp_path, 0, limit).outcome == "error"
    (tmp_path / "stderr.run").write_text("Traceback (most recent call last):\n  ...\nKeyError: 'x'\n")
    assert fuzz._classify(1 << 8, tmp_path, 0, limit).outcome == "foreign"


def test_mutations_are_reproducible(static_om, tmp_path):
    from opbuild.om import fuzz

    seed = fuzz.make_seed("s", static_om, tmp_path)
    assert seed.native and seed.tiling
    assert fuzz.mutate(seed, 17, 3) == fuzz.mutate(seed, 17, 3)
    assert len({fuzz.mutate(seed, k)[0] for k in range(50)}) > 40
