"""`opbuild compare DUMP_DIR --reference REF`: a data dump against a reference, tensor by tensor.

REF is either a directory laid out like a dump (`<seq>.<Op>/<kind>.<i>.<name>.npy`, e.g. the dump
of a known-good build or of another device) — every tensor of the dump is compared with the file
of the same relative name — or a Python file / module holding one reference function per op type,
`def BuggyAdd(x, y, *, bug): return x + y`, called with the dumped inputs (positional, in spec
order; the dump needs dump_mode input or all) and the launch's attributes (keywords), returning the
output or a tuple of outputs (numpy arrays or torch tensors); the dumped outputs are compared with
what it returns.

Per tensor: max and mean absolute error, max relative error (|a - r| / |r|, 0 where both are 0),
cosine similarity, the count of elements over the dtype's threshold (|a - r| > tol + tol * |r|;
NaN matches NaN only, inf the same inf) and the first such element's index. Default thresholds
(TOLERANCES) per dtype; `--tolerance float16=1e-2` overrides one. A tensor fails when any element
is over, or its shape or dtype differs, or the reference lacks it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

INDEX_NAME = "launch.json"  # opbuild.runtime.debug.dump.INDEX_NAME (not imported: the runtime stays unloaded)

TOLERANCES: dict[str, float] = {
    "float16": 1e-3,   # ~ half's 2^-10 epsilon
    "bfloat16": 4e-3,  # 2^-8: bfloat16 keeps 8 significant bits
    "float32": 1e-4,
    "float64": 1e-7,
}
"""Default relative and absolute threshold per dtype; every other dtype (integers, bool) must be exact."""


class CompareError(Exception):
    """A dump or reference that cannot be compared: one line naming the path or op."""


@dataclass
class TensorResult:
    launch: str
    tensor: str
    dtype: str
    shape: list[int]
    max_abs: float | None = None
    mean_abs: float | None = None
    max_rel: float | None = None
    cosine: float | None = None
    over: int = 0
    total: int = 0
    first_bad: list[int] | None = None
    tolerance: float = 0.0
    problem: str | None = None  # shape/dtype mismatch, missing reference...
    ok: bool = field(default=False)


def _load(directory: Path, entry: dict) -> np.ndarray:
    path = directory / entry["file"]
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CompareError(f"{path}: cannot read: {exc}") from None
    if entry.get("dtype") == "bfloat16":
        import ml_dtypes

        a = a.view(ml_dtypes.bfloat16)
    return a


def _as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        t = value.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            import ml_dtypes

            return t.view(__import__("torch").int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    return np.asarray(value)


def compare_arrays(actual: np.ndarray, reference: np.ndarray, tolerance: float) -> dict:
    """The metrics of one tensor (see the module docstring)."""
    with np.errstate(all="ignore"):
        return _metrics(actual, reference, tolerance)


def _metrics(actual: np.ndarray, reference: np.ndarray, tolerance: float) -> dict:
    a = actual.astype(np.float64).reshape(-1)
    r = reference.astype(np.float64).reshape(-1)
    both_nan = np.isnan(a) & np.isnan(r)
    same_inf = np.isinf(a) & np.isinf(r) & (a == r)
    finite = ~(both_nan | same_inf)
    diff = np.where(finite, np.abs(a - r), 0.0)
    diff = np.where(np.isnan(diff), np.inf, diff)  # NaN against a number
    denom = np.abs(r)
    rel = np.where(diff == 0, 0.0, diff / denom)
    bad = diff > tolerance + tolerance * np.where(np.isfinite(denom), denom, 0.0)
    over = int(np.count_nonzero(bad))
    first = [int(i) for i in np.unravel_index(int(np.argmax(bad)), actual.shape)] if over else None
    fa, fr = np.where(finite, a, 0.0), np.where(finite, r, 0.0)
    na, nr = float(np.linalg.norm(fa)), float(np.linalg.norm(fr))
    if na == 0.0 and nr == 0.0:
        cosine = 1.0
    elif na == 0.0 or nr == 0.0 or not (math.isfinite(na) and math.isfinite(nr)):
        cosine = 0.0
    else:
        cosine = float(np.dot(fa / na, fr / nr))
    n = a.size
    return {"max_abs": float(diff.max()) if n else 0.0, "mean_abs": float(diff.mean()) if n else 0.0,
            "max_rel": float(rel.max()) if n else 0.0, "cosine": cosine, "over": over, "total": int(n),
            "first_bad": first}


def _result(launch: str, name: str, actual: np.ndarray, reference: np.ndarray | None, tolerances: dict) -> TensorResult:
    dtype = actual.dtype.name
    res = TensorResult(launch, name, dtype, list(actual.shape), tolerance=tolerances.get(dtype, 0.0))
    if reference is None:
        res.problem = "missing in the reference"
        return res
    if reference.dtype.name != dtype:
        res.problem = f"dtype {dtype}, the reference {reference.dtype.name}"
        return res
    if tuple(reference.shape) != tuple(actual.shape):
        res.problem = f"shape {list(actual.shape)}, the reference {list(reference.shape)}"
        return res
    for k, v in compare_arrays(actual, reference, res.tolerance).items():
        setattr(res, k, v)
    res.ok = res.over == 0
    return res


def launches(dump_dir: Path) -> list[tuple[Path, dict]]:
    """The dumped launches (directory, index), in sequence order."""
    if not dump_dir.is_dir():
        raise CompareError(f"{dump_dir}: not a directory (the dump path of OPBUILD_DUMP, rt.dump or acl.json)")
    found = []
    for index in sorted(dump_dir.glob(f"*/{INDEX_NAME}")):
        try:
            found.append((index.parent, json.loads(index.read_text())))
        except (OSError, ValueError) as exc:
            raise CompareError(f"{index}: not a dump index: {exc}") from None
    if not found:
        raise CompareError(f"{dump_dir}: no dumped launches (no */{INDEX_NAME})")
    return found


def load_reference_module(ref: str) -> ModuleType:
    """A reference given as a .py file or an importable module name."""
    path = Path(ref)
    try:
        if path.suffix == ".py":
            if not path.is_file():
                raise CompareError(f"{ref}: no such reference file")
            spec = importlib.util.spec_from_file_location(f"opbuild_compare_ref_{path.stem}", path)
            if spec is None or spec.loader is None:
                raise CompareError(f"{ref}: cannot be imported as a Python module")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(ref)
    except CompareError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's module: any failure is one line
        raise CompareError(f"{ref}: cannot load the reference module: {type(exc).__name__}: {exc}") from None


def compare_dump(dump_dir: Path, reference: str, tolerances: dict[str, float] | None = None) -> list[TensorResult]:
    """Every tensor of the dump against the reference (a directory or a Python module)."""
    tol = dict(TOLERANCES, **(tolerances or {}))
    results = []
    found = launches(dump_dir)
    ref_dir = Path(reference)
    module = None if ref_dir.is_dir() else load_reference_module(reference)
    for directory, index in found:
        launch = directory.name
        if module is None:
            for kind in ("inputs", "outputs"):
                for entry in index.get(kind, []):
                    actual = _load(directory, entry)
                    other = ref_dir / launch / entry["file"]
                    ref = _load(other.parent, entry | {"file": other.name}) if other.is_file() else None
                    results.append(_result(launch, f"{kind[:-1]} {entry['name']}", actual, ref, tol))
            continue
        results.extend(_against_function(module, reference, directory, index, tol))
    return results


def _against_function(module: ModuleType, reference: str, directory: Path, index: dict, tol: dict) -> list[TensorResult]:
    launch, op = directory.name, index["op"]
    outputs = index.get("outputs", [])
    fn: Callable | None = getattr(module, op, None)
    if fn is None or not callable(fn):
        return [TensorResult(launch, f"output {e['name']}", e["dtype"], e["shape"], problem=f"{reference} has no function {op}")
                for e in outputs]
    if not index.get("inputs"):
        raise CompareError(f"{directory}: the dump has no inputs (dump_mode {index.get('dump_mode')}); a reference "
                           f"function needs dump_mode all")
    args = [_load(directory, e) for e in index["inputs"]]
    try:
        got = fn(*args, **index.get("attrs", {}))
    except Exception as exc:  # noqa: BLE001 - the user's function
        raise CompareError(f"{reference}: {op}() failed on {launch}: {type(exc).__name__}: {exc}") from None
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    if len(got) != len(outputs):
        raise CompareError(f"{reference}: {op}() returned {len(got)} outputs, the launch has {len(outputs)}")
    results = []
    for entry, value in zip(outputs, got, strict=True):
        actual = _load(directory, entry)
        ref = _as_numpy(value)
        if ref.dtype != actual.dtype and ref.dtype.kind in "fiub" and actual.dtype.kind in "fiub":
            ref = ref.astype(actual.dtype)  # the function gives the math (often float64); the op's dtype is the dump's
        results.append(_result(launch, f"output {entry['name']}", actual, ref, tol))
    return results


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.3e}"


def format_table(results: list[TensorResult]) -> str:
    head = (f"{'launch':<22} {'tensor':<14} {'dtype':<8} {'shape':<14} {'max abs':>10} {'mean abs':>10} "
            f"{'max rel':>10} {'cosine':>9} {'over':>12} {'first bad':<12} result")
    lines = [head]
    for r in results:
        over = f"{r.over}/{r.total}" if r.problem is None else "-"
        first = "-" if r.first_bad is None else "[" + ",".join(map(str, r.first_bad)) + "]"
        cos = "-" if r.cosine is None else f"{r.cosine:.6f}"
        verdict = "ok" if r.ok else ("FAIL" if r.problem is None else f"FAIL: {r.problem}")
        lines.append(f"{r.launch:<22} {r.tensor:<14} {r.dtype:<8} {str(r.shape).replace(' ', ''):<14} {_num(r.max_abs):>10} "
                     f"{_num(r.mean_abs):>10} {_num(r.max_rel):>10} {cos:>9} {over:>12} {first:<12} {verdict}")
    failed = sum(not r.ok for r in results)
    lines.append(f"{len(results)} tensors compared, {failed} failed")
    return "\n".join(lines)


def parse_tolerances(items: list[str]) -> dict[str, float]:
    """`--tolerance DTYPE=VALUE` items; CompareError on a malformed one."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not sep or not name or not (number >= 0 and math.isfinite(number)):
            raise CompareError(f"--tolerance {item!r}: expected DTYPE=VALUE with a number >= 0, e.g. float16=1e-2")
        out[name] = number
    return out


def run(dump_dir: str, reference: str, tolerances: list[str], as_json: bool) -> int:
    """The command: prints the table (or JSON); 0 when every tensor passed, 1 otherwise."""
    try:
        results = compare_dump(Path(dump_dir), reference, parse_tolerances(tolerances))
    except CompareError as exc:
        print(f"opbuild compare: error: {exc}", file=sys.stderr)
        return 1
    ok = all(r.ok for r in results)
    if as_json:
        print(json.dumps({"ok": ok, "tolerances": dict(TOLERANCES, **parse_tolerances(tolerances)),
                          "tensors": [asdict(r) for r in results]}, indent=1))
    else:
        print(format_table(results))
    return 0 if ok else 1
