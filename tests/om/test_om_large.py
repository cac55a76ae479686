"""Issue 25, finding 4: a 100,000-op `.om` took seconds to parse (jsonschema over every node)
and its errors listed every name. Timings are bench/om_parse_bench.py's; here: what the errors
of a large model say, and that the compiled schema check is the parser's."""

from __future__ import annotations

import re


def test_listed_bounds_names():
    from opbuild.om.errors import MAX_LISTED, listed

    names = [f"vendor:Kernel{k}" for k in range(100000)]
    text = listed(names)
    assert text.startswith("vendor:Kernel0, vendor:Kernel1, ") and text.endswith(f", ... and {100000 - MAX_LISTED} more")
    assert len(text) < 200
    assert listed(["a", "b"]) == "a, b"


def test_trust_error_of_many_kernels_is_bounded(static_om):
    """The trust refusal of a model with 100,000 kernels names 8 and counts the rest."""
    import pytest

    from opbuild.om.errors import OmTrustError
    from opbuild.om.loader import parse_om

    m = parse_om(static_om)
    item = next(iter(m.kernels.values()))
    m.kernels = {f"customize:K{k}": item for k in range(100000)}
    with pytest.raises(OmTrustError) as exc:
        m.load()
    msg = str(exc.value)
    listed_names = re.search(r"kernel binaries in TBE_KERNELS, host \.so files on the CPU simulator \(([^)]*)\)", msg)
    assert "100000 kernel binaries in TBE_KERNELS" in msg and listed_names, msg[:300]
    shown = listed_names.group(1).split(", ")
    assert shown[-1] == f"... and {100000 - (len(shown) - 1)} more", shown[-1][:100]
    assert len(msg) < 1000


def test_missing_kernels_error_is_bounded(opp):
    """Kernel descriptors of 20,000 kernels but no TBE_KERNELS item: one short message."""
    import pytest

    from omtools import build, edit_model_def, model_dict
    from opbuild.om.errors import OmError
    from opbuild.om.loader import parse_om

    data = build(opp, model_dict("many", [16, 1024], ops=1))

    def many(model):
        kernels = model.attr["_opbuild_kernels"].func.attr
        first = next(iter(kernels.values())).s
        for k in range(20000):
            kernels[f"customize:K{k}"].s = first

    with pytest.raises(OmError) as exc:
        parse_om(edit_model_def(data, many))
    msg = str(exc.value)
    assert "TBE_KERNELS items and MODEL_DEF kernel descriptors differ: customize:K0, customize:K1" in msg
    assert re.search(r", \.\.\. and \d+ more$", msg) and len(msg) < 1000, msg[:300]
