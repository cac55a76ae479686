"""describe() JSON parsing and the kernel-side tiling header, on hand-written descriptions (no
compiler): the checks that reject JSON or layouts opbuild cannot use."""

from __future__ import annotations

import json

import pytest

from opbuild.ascendc.description import parse_description
from opbuild.ascendc.errors import AscendcHostError
from opbuild.ascendc.host import kernel_tiling_header


def field(name, type_, offset, size, count=None, struct=None):
    return {"name": name, "type": type_, "offset": offset, "size": size, "count": count, "struct": struct}


def doc(classes: dict, tiling: list[tuple[str, str]], errors=()) -> str:
    op = {"op": "MyOp", "file": "my_op.cpp", "line": 9, "inputs": [], "outputs": [], "attrs": [], "socs": [],
          "soc_configs": [], "has_tiling": True, "has_infer_shape": False, "has_infer_dtype": False}
    return json.dumps({
        "ops": [op],
        "tiling": [{"op": n, "class": c, "size": classes[c]["size"], "fields": classes[c]["fields"]} for n, c in tiling],
        "tiling_classes": classes, "errors": list(errors)})


def test_header_of_several_classes():
    classes = {"In": {"size": 8, "fields": [field("a", "uint8_t", 0, 1), field("b", "uint32_t", 4, 4)]},
               "Main": {"size": 24, "fields": [field("n", "uint16_t", 0, 2), field("in", "In", 8, 8, struct="In"),
                                               field("v", "int8_t", 16, 3, count=3)]},
               "K7": {"size": 8, "fields": [field("x", "uint64_t", 0, 8)]}}
    desc = parse_description(doc(classes, [("MyOp_7", "K7"), ("MyOp", "Main"), ("MyOpIn", "In")]), ("my_op.cpp",))
    text = kernel_tiling_header(desc)
    assert text.index("struct In {") < text.index("struct Main {") < text.index("struct K7 {")
    assert "    uint8_t a;\n    uint8_t opbuild_pad0[3];\n    uint32_t b;\n};" in text
    assert "    uint16_t n;\n    uint8_t opbuild_pad0[6];\n    In in;\n    int8_t v[3];\n    uint8_t opbuild_pad1[5];\n};" in text
    assert text.endswith("#define OPBUILD_ASCENDC_TILING_TYPE Main\n#define OPBUILD_ASCENDC_TILING_TYPE_KEY_7 K7\n\n"
                         "#endif /* OPBUILD_ASCENDC_MY_OP_TILING_H */\n")


def test_overlapping_fields_are_rejected():
    classes = {"Bad": {"size": 8, "fields": [field("a", "uint32_t", 0, 4), field("b", "uint32_t", 2, 4)]}}
    desc = parse_description(doc(classes, [("MyOp", "Bad")]), ("my_op.cpp",))
    with pytest.raises(AscendcHostError, match="field b at offset 2 overlaps the field before it"):
        kernel_tiling_header(desc)


def test_unknown_nested_class_is_rejected():
    classes = {"Outer": {"size": 8, "fields": [field("i", "Gone", 0, 8, struct="Gone")]}}
    desc = parse_description(doc(classes, [("MyOp", "Outer")]), ("my_op.cpp",))
    with pytest.raises(AscendcHostError, match="field i has the unknown class Gone"):
        kernel_tiling_header(desc)


def test_invalid_json_names_the_sources():
    with pytest.raises(AscendcHostError, match=r"^a\.cpp, b\.cpp: the host bridge's describe\(\) is not valid JSON"):
        parse_description("{", ("a.cpp", "b.cpp"))


def test_json_missing_a_key():
    with pytest.raises(AscendcHostError, match=r"^a\.cpp: describe\(\) JSON lacks or mistypes 'tiling_classes'"):
        parse_description('{"ops": [], "tiling": []}', ("a.cpp",))


def test_load_errors_are_reported():
    with pytest.raises(AscendcHostError, match="^x.cpp:3: OP_ADD\\(MyOp\\): boom$"):
        parse_description(doc({}, [], errors=["x.cpp:3: OP_ADD(MyOp): boom"]), ("x.cpp",))
