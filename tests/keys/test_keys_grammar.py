"""The simplified-key grammar: heads, full keys, default tails, parsing, fragment checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opbuild.keys import (
    MAX_FRAGMENT_LEN,
    KeyGrammarError,
    check_fragment,
    default_tail_of,
    full_key,
    key_head,
    parse_default_tail,
    parse_full_key,
    tensor_group,
)


def test_head_and_full_key():
    assert key_head("AddCustomTemplate", 0, 1) == "AddCustomTemplate/d=0,p=1/"
    assert full_key("AddCustomTemplate", 0, 1, "custom_fp16") == "AddCustomTemplate/d=0,p=1/custom_fp16"
    assert full_key("Op", 1, 0, "x") == key_head("Op", 1, 0) + "x"


def test_groups_use_ge_enums():
    assert tensor_group("float16", "ND") == "1,2"
    assert tensor_group("float32", "NCHW") == "0,0"
    assert tensor_group("bfloat16", "NHWC") == "27,1"
    assert default_tail_of([("float16", "ND"), ("float32", "ND"), ("float32", "ND")]) == "1,2/0,2/0,2"
    with pytest.raises(KeyGrammarError, match="complex"):
        tensor_group("complex128", "ND")


def test_parse():
    k = parse_full_key("MulCustom/d=1,p=0/1,2/0,2/0,2")
    assert (k.op, k.d, k.p, k.tail) == ("MulCustom", 1, 0, "1,2/0,2/0,2")
    assert parse_default_tail(k.tail) == [("float16", "ND"), ("float32", "ND"), ("float32", "ND")]
    assert parse_full_key("MemSetV2/d=0,p=0/diy,99").tail == "diy,99"
    for bad in ["", "Op", "Op/d=0,p=1", "Op/d=0,p=1/", "Op/p=1,d=0/x", "Op/d=a,p=1/x", "Op/d=2,p=1/x",
                "Op/d=0,p=3/x", "/d=0,p=0/x", "Op/d=0/x"]:
        with pytest.raises(KeyGrammarError):
            parse_full_key(bad)
    with pytest.raises(KeyGrammarError):
        parse_default_tail("1,2/x")


def test_check_fragment():
    assert check_fragment("custom_fp16") is None
    assert check_fragment("diy,addn,1") is None
    assert check_fragment("a" * MAX_FRAGMENT_LEN) is None
    assert "empty" in check_fragment("")
    assert "257 bytes" in check_fragment("a" * 257)
    assert "bytes" in check_fragment("é" * 129)  # 258 bytes in UTF-8, 129 characters
    assert "whitespace" in check_fragment("a b")
    assert "whitespace" in check_fragment("a\tb")
    assert "whitespace" in check_fragment("ab\n")
    assert "string" in check_fragment(None)
    assert "string" in check_fragment(b"abc")


_op = st.from_regex(r"[A-Z][A-Za-z0-9]{0,20}", fullmatch=True)
_frag = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=80)


@given(_op, st.sampled_from([0, 1]), st.sampled_from([0, 1, 2]), _frag)
def test_roundtrip(op, d, p, tail):
    if check_fragment(tail) is not None:
        return
    assert parse_full_key(full_key(op, d, p, tail)) == (op, d, p, tail)
