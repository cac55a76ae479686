"""The keys tests share the spec factory of tests/codegen/conftest.py (module `opbuild_spec_factory`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if "opbuild_spec_factory" not in sys.modules:
    _path = Path(__file__).resolve().parent.parent / "codegen" / "conftest.py"
    _spec = importlib.util.spec_from_file_location("opbuild_spec_factory", _path)
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["opbuild_spec_factory"] = _mod
    _spec.loader.exec_module(_mod)

from opbuild_spec_factory import sample, samples  # noqa: E402,F401  (fixtures)
