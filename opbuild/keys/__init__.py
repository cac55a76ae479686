"""Simplified keys: the grammar, the key rules (table, Python/C callbacks, default mode) and the
consistency check between a rule and the declared binaries.

Used by codegen, the build and the runtime; imports none of them (only `opbuild.spec.model` and
`opbuild.abi`).
"""

from opbuild.keys.check import KeyFinding, attr_samples, check_key_consistency, key_findings
from opbuild.keys.context import Instance, KeyContext
from opbuild.keys.grammar import (
    ABSENT_GROUP,
    MAX_FRAGMENT_LEN,
    KeyGrammarError,
    ParsedKey,
    call_key_bytes,
    check_fragment,
    default_tail_of,
    full_key,
    key_bytes,
    key_head,
    parse_default_tail,
    parse_full_key,
    tensor_group,
)
from opbuild.keys.rules import (
    FragmentFn,
    KeyRuleError,
    all_binary_keys,
    binary_columns,
    binary_full_keys,
    binary_tails,
    binary_tensor_format,
    callback_path,
    context_for_choices,
    default_groups,
    default_tail,
    describe_call,
    full_key_of,
    keyed_params,
    load_python_callback,
    make_fragment_fn,
    table_fragment,
)

__all__ = [
    "ABSENT_GROUP", "MAX_FRAGMENT_LEN", "FragmentFn", "Instance", "KeyContext", "KeyGrammarError",
    "KeyFinding", "KeyRuleError", "ParsedKey", "key_findings", "all_binary_keys", "attr_samples", "binary_columns", "binary_full_keys",
    "binary_tails", "binary_tensor_format", "call_key_bytes", "callback_path", "check_fragment", "check_key_consistency",
    "context_for_choices", "default_groups", "default_tail", "default_tail_of", "describe_call", "full_key", "full_key_of",
    "key_bytes", "key_head", "keyed_params", "load_python_callback", "make_fragment_fn", "parse_default_tail", "parse_full_key",
    "table_fragment", "tensor_group",
]
