"""KeyContext: what a Python GenSimplifiedKey callback (and the table rule) sees of one call.

It is the Python counterpart of the C TilingContext as far as key selection goes: per IR input
and output the tensor instances (dtype name, storage format name, shape), the attributes by name,
the deterministic flag (d), the impl mode (p) and the SoC. A required tensor has one instance, an
absent optional one none, a dynamic list one per element.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from opbuild.suggest import did_you_mean

Instance = tuple[str, str, tuple[int, ...]]
"""One tensor instance: (dtype name, format name, shape)."""


class KeyContext:
    """One call's key-relevant facts. Cheap to build; treat it as read-only."""

    __slots__ = ("_inputs", "_outputs", "_attrs", "_deterministic", "_impl_mode", "_soc", "_attr_types")

    def __init__(
        self,
        inputs: Sequence[Sequence[Instance]],
        outputs: Sequence[Sequence[Instance]],
        attrs: Mapping[str, Any] | None = None,
        deterministic: int = 0,
        impl_mode: int = 0,
        soc: str = "",
        *,
        attr_types: Mapping[str, str] | None = None,
    ) -> None:
        self._inputs = inputs
        self._outputs = outputs
        self._attrs = attrs if attrs is not None else {}
        self._deterministic = 1 if deterministic else 0
        self._impl_mode = int(impl_mode)
        self._soc = soc
        self._attr_types = attr_types

    # ---- inputs ------------------------------------------------------------------------------

    def _instance(self, params: Sequence[Sequence[Instance]], kind: str, i: int, k: int) -> Instance | None:
        if not 0 <= i < len(params):
            raise IndexError(f"{kind} index {i} out of range: the op has {len(params)} {kind}s")
        instances = params[i]
        return instances[k] if 0 <= k < len(instances) else None

    def input_count(self, i: int) -> int:
        """Instances of IR input i: 1 for a tensor, 0 for an absent optional one, n for a list."""
        if not 0 <= i < len(self._inputs):
            raise IndexError(f"input index {i} out of range: the op has {len(self._inputs)} inputs")
        return len(self._inputs[i])

    def input_dtype(self, i: int, k: int = 0) -> str | None:
        """Dtype name (`float16`, ...) of instance k of IR input i; None if absent."""
        inst = self._instance(self._inputs, "input", i, k)
        return inst[0] if inst else None

    def input_format(self, i: int, k: int = 0) -> str | None:
        inst = self._instance(self._inputs, "input", i, k)
        return inst[1] if inst else None

    def input_shape(self, i: int, k: int = 0) -> tuple[int, ...] | None:
        inst = self._instance(self._inputs, "input", i, k)
        return tuple(inst[2]) if inst else None

    # ---- outputs -----------------------------------------------------------------------------

    def output_count(self, i: int) -> int:
        if not 0 <= i < len(self._outputs):
            raise IndexError(f"output index {i} out of range: the op has {len(self._outputs)} outputs")
        return len(self._outputs[i])

    def output_dtype(self, i: int, k: int = 0) -> str | None:
        inst = self._instance(self._outputs, "output", i, k)
        return inst[0] if inst else None

    def output_format(self, i: int, k: int = 0) -> str | None:
        inst = self._instance(self._outputs, "output", i, k)
        return inst[1] if inst else None

    def output_shape(self, i: int, k: int = 0) -> tuple[int, ...] | None:
        inst = self._instance(self._outputs, "output", i, k)
        return tuple(inst[2]) if inst else None

    # ---- attrs and flags ---------------------------------------------------------------------

    def attr(self, name: str) -> Any:
        """The attribute's value for this call; KeyError naming the known attributes if unknown."""
        try:
            return self._attrs[name]
        except KeyError:
            known = ", ".join(sorted(self._attrs)) or "none"
            hint = did_you_mean(name, self._attrs) if isinstance(name, str) else ""
            raise KeyError(f"no attribute {name!r} in this call (attributes: {known}){hint}") from None

    @property
    def attrs(self) -> Mapping[str, Any]:
        """Attribute values by name, in the op's attribute order."""
        return self._attrs

    def typed_attrs(self) -> list[tuple[str, Any]]:
        """(type, value) per attribute in order, type as in the spec (`int`, `float`, `list_int`, ...).

        For filling a C TilingContext. Types come from `attr_types` when given (pass
        `{a.name: a.type for a in spec.attrs}`); otherwise they are inferred from the values, which
        cannot tell a float attribute holding an int from an int attribute.
        """
        types = self._attr_types or {}
        return [(types.get(name) or _infer_attr_type(value), value) for name, value in self._attrs.items()]

    @property
    def inputs(self) -> Sequence[Sequence[Instance]]:
        """Per IR input, its instances (dtype, format, shape)."""
        return self._inputs

    @property
    def outputs(self) -> Sequence[Sequence[Instance]]:
        return self._outputs

    @property
    def deterministic(self) -> int:
        """d: 1 when the call asks for deterministic computation, else 0."""
        return self._deterministic

    @property
    def impl_mode(self) -> int:
        """p: 0 default, 1 high_performance, 2 high_precision."""
        return self._impl_mode

    @property
    def soc(self) -> str:
        return self._soc

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def with_impl_mode(self, impl_mode: int) -> "KeyContext":
        """The same call with another impl mode (p): the runtime's p=0 retry."""
        return KeyContext(self._inputs, self._outputs, self._attrs, self._deterministic, impl_mode, self._soc,
                          attr_types=self._attr_types)

    def __repr__(self) -> str:
        return (f"KeyContext(inputs={self._inputs!r}, outputs={self._outputs!r}, attrs={dict(self._attrs)!r}, "
                f"deterministic={self._deterministic}, impl_mode={self._impl_mode}, soc={self._soc!r})")


def _infer_attr_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, bool) for v in value):
            return "list_bool"
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return "list_int"
        return "list_float"
    raise TypeError(f"attribute value {value!r} has no attribute type")
