"""A user's `.npy` file as a model's tensor: what `om run --input` and `om build --freeze-input` read.

Why a module: numpy writes the ml_dtypes types (bfloat16, the float8s) as raw bytes (`|V2`,
`|V1`), so `np.load` alone hands a bfloat16 input back as a void array, and an object or
structured array is no tensor at all. `read_npy(file, what, want)` reads the file without pickles,
gives a raw-bytes array the dtype the model wants when the sizes agree (a `|V2` file is a bfloat16
for a bfloat16 input), and refuses anything else in one line naming the input and the file.
"""

from __future__ import annotations

import numpy as np

from opbuild.abi.ge_types import dtype_name, numpy_dtype
from opbuild.om.errors import OmError, one_line


def read_npy(file: str, what: str, want: str | None = None) -> np.ndarray:
    """The array in `file` for `what` (e.g. "--input x"), as the dtype name `want` when the file
    stores it as raw bytes of that size; OmError (one line) for a file numpy cannot read or an
    array of a dtype no op takes."""
    try:
        array = np.load(file, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise OmError(f"{what}: cannot load {file}: {one_line(str(exc)) or type(exc).__name__}") from None
    if not isinstance(array, np.ndarray):  # an .npz archive
        raise OmError(f"{what}: {file} is an .npz archive; give one array saved with numpy.save")
    if array.dtype.kind == "V" and array.dtype.fields is None and want is not None:
        wanted = numpy_dtype(want)
        if wanted.kind == "V" and wanted.itemsize == array.dtype.itemsize:  # (ml_dtypes' types are kind V)
            return array.view(wanted)
    try:
        dtype_name(array.dtype)
    except ValueError:
        raw = array.dtype.kind == "V" and array.dtype.fields is None
        stored = f"raw {array.dtype.itemsize}-byte values ({array.dtype.str})" if raw else str(array.dtype)
        hint = f"; the model wants {want}" if want else ""
        raise OmError(f"{what}: {file} holds {stored}, no dtype an op takes{hint}") from None
    return array
