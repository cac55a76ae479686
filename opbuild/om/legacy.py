"""Format-1 `.om` files (JSON MODEL_DEF): their op_proto library, compiled on first use.

A format-1 file predates op_proto: its nodes carry no inferred output shapes and its packed
tiling libraries no inference functions. Its MODEL_DEF embeds every op's definition, so the
same generator that builds a package's op_proto library (opbuild/codegen/op_proto.py) renders
one per vendor of the model, and the host C compiler (`$CC`, default `cc`) builds it in a
temporary directory, once per process. Ops whose output shape comes from a C function of their
tiling source get no shape rule here (that function is not in the file as a linkable object):
their one-shot calls need output tensors.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from opbuild.om.errors import OmError

_LOCK = threading.Lock()
_BUILT: dict[str, object] = {}  # sha256 of the source -> TilingLibrary (kept for the process)


def op_proto_library(specs: list, vendor: str):
    """The op_proto library of `specs` (one vendor's ops of a format-1 model), built once."""
    from opbuild.codegen.op_proto import render_op_proto_header, render_op_proto_source
    from opbuild.runtime.host.c_callbacks import CallbackError, TilingLibrary
    from opbuild.runtime_paths import native_include_dir

    plain = []
    for spec in specs:  # C infer-shape functions are not linkable from the file: no rule
        outputs = tuple(dataclasses.replace(p, shape=None) if p.shape is not None and p.shape.kind == "function" else p
                        for p in spec.outputs)
        plain.append(dataclasses.replace(spec, outputs=outputs))
    try:
        source = render_op_proto_source(plain, vendor)
        header = render_op_proto_header(plain, vendor)
    except ValueError as exc:  # a definition whose names are not C identifiers
        raise OmError(f"op definitions of {vendor}: {exc}", "MODEL_DEF") from None
    digest = hashlib.sha256((source + header).encode()).hexdigest()
    with _LOCK:
        lib = _BUILT.get(digest)
        if lib is not None:
            return lib
        cc = shlex.split(os.environ.get("CC") or "cc")
        if not cc or shutil.which(cc[0]) is None:
            raise OmError(f"a format-1 model needs a C compiler to build its op_proto library (CC={cc and cc[0]!r} "
                          f"not found); rebuild the model with `opbuild om build`")
        work = Path(tempfile.mkdtemp(prefix="opbuild-om-legacy-"))
        try:
            (work / "op_proto.c").write_text(source)
            (work / "op_proto.h").write_text(header)
            out = work / "libcust_opsproto_rt2.0.so"
            proc = subprocess.run([*cc, "-shared", "-fPIC", "-O1", f"-I{native_include_dir()}", f"-I{work}",
                                   "-o", str(out), str(work / "op_proto.c")], capture_output=True, text=True)
            if proc.returncode != 0:
                raise OmError(f"building the op_proto library of a format-1 model failed: {proc.stderr.strip()[:500]}")
            try:
                lib = TilingLibrary(out)
            except CallbackError as exc:
                raise OmError(str(exc)) from None
        finally:
            shutil.rmtree(work, ignore_errors=True)  # the library stays mapped
        _BUILT[digest] = lib
        return lib
