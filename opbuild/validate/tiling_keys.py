"""The kernel source agrees with `tiling.keys`: each declared key has a branch, each branch a key.

CANN makes one kernel function `<kernel>_<key>` per `TILING_KEY_IS(<key>)` branch and lists them
in the kernel JSON's `kernelList`; opbuild writes that list from the spec's `tiling.keys`
(abi/kernel_launch.py), and the runtime refuses a tiling key it does not declare. So a spec and
its kernel that disagree fail only when a call reaches the key: a declared key with no branch
runs whatever the kernel does for "no key matched", a branch on an undeclared key never runs.
`tiling_key_problems` finds both at build time, from the kernel text (csource.tiling_key_tests):

* every `TILING_KEY_IS(k)` whose k is an integer literal (or a name the kernel source `#define`s
  as one) names a declared key; reported at the `TILING_KEY_IS` in the kernel source;
* every declared key has such a branch; reported at the key in op.yaml's `tiling.keys` (at
  `tiling` when the keys are the default). A kernel with no `TILING_KEY_IS` at all and the
  default keys, [0], is the ordinary case: it serves the one key whatever it is.

A `TILING_KEY_IS` whose argument is anything else (an expression, an enum constant, a macro
from a header or a macro parameter) is not an error, and since it may test any key, the kernel
is then not required to branch on every declared key: the check cannot know the value without
the compiler. The runtime's check of the key the tiling function sets still applies.
"""

from __future__ import annotations

from opbuild.spec import csource
from opbuild.spec.errors import Problem
from opbuild.spec.model import DEFAULT_TILING_KEYS, OpSpec
from opbuild.spec.yaml_marks import Marks


def tiling_key_problems(spec: OpSpec, marks: Marks, kernel_text: str, kernel_shown: str) -> list[Problem]:
    """Every disagreement between `spec.tiling_keys` and the kernel source `kernel_text` (shown
    to the user as `kernel_shown`); [] when they agree."""
    declared = spec.tiling_keys
    tests = csource.tiling_key_tests(kernel_text)
    given = marks.value(("tiling", "keys")) is not None
    keys_path = ("tiling", "keys") if given else ("tiling",)
    line, col = marks.at(keys_path)
    listed = ", ".join(map(str, declared))
    where = f"tiling.keys: [{listed}] at {marks.file}:{line}:{col}" if given else f"tiling.keys: default [{listed}]"
    problems = [Problem(kernel_shown, t.line, t.col,
                        f"op {spec.op}: TILING_KEY_IS({t.argument}) tests tiling key {t.key}, which the spec does "
                        f"not declare ({where}): the kernelList has no function for it and the runtime refuses "
                        f"the key, so this branch never runs (add {t.key} to tiling.keys, or remove the branch)", "")
                for t in tests if t.key is not None and t.key not in declared]
    if any(t.key is None for t in tests) or (not tests and declared == DEFAULT_TILING_KEYS):
        return problems  # (a branch on a value the check cannot know; or the ordinary unbranched kernel)
    tested = {t.key for t in tests if t.key is not None}  # (none is None here: returned above)
    if tested:
        why, other_fix = (f"it tests {', '.join(map(str, sorted(tested)))}: a launch with this key takes none of "
                          f"its key paths"), "remove it from tiling.keys"
    else:
        why, other_fix = "it has no TILING_KEY_IS at all: every key runs the same code", \
            "leave tiling.keys out (the default, [0])"
    for i, key in enumerate(declared):
        if key not in tested:
            problems.append(marks.problem(("tiling", "keys", i) if given else keys_path,
                                          f"op {spec.op} declares tiling key {key}, but its kernel {kernel_shown} "
                                          f"has no TILING_KEY_IS({key}) branch ({why}); branch on it with "
                                          f"`if (TILING_KEY_IS({key})) {{ ... }}`, or {other_fix}"))
    return problems


__all__ = ["tiling_key_problems"]
