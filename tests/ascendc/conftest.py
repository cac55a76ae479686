"""Fixtures of the Ascend C kernel tests: ackit.py (importable from here) builds kernel .so files
from Ascend C sources with kernel_operator.h and a hand-written launch shim (what the build's
generated shim does), and runs them on the device simulator."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
