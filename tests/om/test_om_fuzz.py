"""Property-based corruption of real .om files: parsing either succeeds or raises OmError (never
another exception, a hang or a huge allocation). `resealed` corruptions get a valid checksum and
length, so they reach the partition, SO_BINS, table and MODEL_DEF parsers.

The CI variant runs a bounded number of examples; the `fuzz`-marked long variant runs only with
OPBUILD_FUZZ_LONG=1.
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
