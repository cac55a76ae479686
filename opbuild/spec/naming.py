"""Names derived from an op's CamelCase type: the snake_case used for directories and files.

The rule (kept deliberately simple, and the same everywhere in opbuild): insert `_` before an
uppercase letter that

* follows a lowercase letter or a digit (`AddCustom` -> `add_custom`, `Conv2D` -> `conv2_d`), or
* is followed by a lowercase letter and preceded by an uppercase one (`AddNCustom` ->
  `add_n_custom`, `HTTPServer` -> `http_server`),

then lowercase everything. `ReLU6Grad` therefore becomes `re_lu6_grad`; name ops `Relu6Grad`
(-> `relu6_grad`) if that reads better.
"""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """`AddCustomTemplate` -> `add_custom_template`, `AddNCustom` -> `add_n_custom`."""
    return _BOUNDARY.sub("_", name).lower()
