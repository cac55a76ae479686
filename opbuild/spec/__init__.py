"""Op specs: loading `ops/<op_snake>/op.yaml`, validating it, and the typed model it becomes.

    from opbuild.spec import load_spec, load_specs, find_specs, SpecError

    spec = load_spec("ops/add_custom_template/op.yaml")    # -> OpSpec (opbuild.spec.model)
    specs = load_specs([Path("ops")])                      # every ops/*/op.yaml, all problems at once

Invalid specs raise `SpecError`, whose `.problems` are `Problem`s printing as
`path:line:col: message [$.json.path]`. The format is documented in docs/spec-format.md; each
field is declared once in opbuild/spec/fields.py, from which schemas/op_spec.schema.json and the
docs' field tables are generated (`python -m opbuild.spec.generate`).
"""

from .errors import Problem, SpecError
from .loader import check_spec, find_specs, load_spec, load_specs
from .model import OpSpec
from .naming import snake_case

__all__ = ["OpSpec", "Problem", "SpecError", "check_spec", "find_specs", "load_spec", "load_specs", "snake_case"]
