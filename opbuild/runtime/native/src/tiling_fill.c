/* tiling_fill.c: _fastpath.fill_tiling_context, a TilingContext filled in C from a call's arguments.
 *
 * opbuild/runtime/host/tiling_context.py's build_tiling_context is the reference and the only caller: it
 * runs on every op-parameter cache miss, and filling the context field by field through ctypes
 * cost a quarter of a miss. This fills the same context (opbuild/tiling.h) and everything it
 * points to in ONE block: the context at offset 0, then the start/count arrays, the tensor
 * descriptors, the attribute values, the strings, the tiling data buffer and its guard bytes.
 * The block is a Python object with the buffer protocol, so tiling_context.py maps its ctypes
 * TilingContext onto it (from_buffer) and the ContextHolder API stays the same.
 *
 * Only what it can fill exactly as the Python builder does is handled here; for anything else
 * (an unknown dtype or format, a rank above OPBUILD_MAX_DIMS, list attributes, a value of an
 * unusual type, an overflow) it returns None and the Python builder runs, which says what is
 * wrong. It never raises for bad input.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "tiling_block.h"

static void block_dealloc(TilingBlock *self) {
    PyMem_Free(self->mem);
    Py_XDECREF(self->guard_bytes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int block_getbuffer(TilingBlock *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->mem, self->size, 0, flags);
}

static PyBufferProcs block_as_buffer = {.bf_getbuffer = (getbufferproc)block_getbuffer};

static PyObject *block_guard(TilingBlock *self, void *unused) {
    (void)unused;
    return PyLong_FromSsize_t(self->guard);
}

uint32_t tiling_block_tile(TilingBlock *b, tiling_block_tiling_fn fn, long *overrun) {
    TilingContext *ctx = (TilingContext *)b->mem;
    uint32_t status;
    Py_BEGIN_ALLOW_THREADS
    status = fn(ctx);
    Py_END_ALLOW_THREADS
    *overrun = -1;
    if (b->guard && b->guard_bytes) {
        const char *g = b->mem + b->guard, *want = PyBytes_AS_STRING(b->guard_bytes);
        for (Py_ssize_t i = 0; i < PyBytes_GET_SIZE(b->guard_bytes); i++)
            if (g[i] != want[i]) {
                *overrun = (long)i;
                break;
            }
    }
    ctx->error[OPBUILD_ERROR_LEN - 1] = 0;
    return status;
}

uint32_t tiling_block_infer(TilingBlock *b, const tiling_block_infer_fn *fns, Py_ssize_t nfn, OpbuildTensorDesc *outs,
                            Py_ssize_t *ran) {
    TilingContext *ctx = (TilingContext *)b->mem;
    uint32_t status = 0;
    Py_ssize_t k = 0;
    Py_BEGIN_ALLOW_THREADS
    while (k < nfn && status == 0) status = fns[k++](ctx, outs);
    Py_END_ALLOW_THREADS
    ctx->error[OPBUILD_ERROR_LEN - 1] = 0;
    *ran = k;
    return status;
}

int tiling_desc_contiguous(OpbuildTensorDesc *d) {
    int64_t acc = 1;
    for (int r = (int)d->dim_num - 1; r >= 0; r--) {
        d->strides[r] = acc;
        if (r > 0 && __builtin_mul_overflow(acc, d->dims[r] > 0 ? d->dims[r] : 1, &acc)) return -1;
    }
    return 0;
}

/* block.run_tiling(fn) -> (status, block_dim, tiling_key, workspace_size, tiling_data_size, overrun, error)
 * Calls `uint32_t fn(TilingContext *)` (a tiling function, by address) on the block's context, the
 * GIL released as ctypes would, and reads what it wrote in one go: overrun is the offset of the
 * first changed guard byte after the tiling data buffer (-1: none); error is the context's
 * message (bytes). tiling_context.run_on_block turns this into a result or an error. */
static PyObject *block_run_tiling(TilingBlock *self, PyObject *arg) {
    uintptr_t addr = (uintptr_t)PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) return NULL;
    if (addr == 0) {
        PyErr_SetString(PyExc_ValueError, "run_tiling: NULL function");
        return NULL;
    }
    TilingContext *ctx = (TilingContext *)self->mem;
    long overrun;
    uint32_t status = tiling_block_tile(self, (tiling_block_tiling_fn)addr, &overrun);
    return Py_BuildValue("(IkKKKly)", status, (unsigned long)ctx->block_dim, (unsigned long long)ctx->tiling_key,
                         (unsigned long long)ctx->workspace_size, (unsigned long long)ctx->tiling_data_size, overrun,
                         ctx->error);
}

/* block.tiling_data(size) -> the first `size` bytes of the tiling data buffer (size checked by the
 * caller against the capacity). */
static PyObject *block_tiling_data(TilingBlock *self, PyObject *arg) {
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) return NULL;
    TilingContext *ctx = (TilingContext *)self->mem;
    if (size < 0 || (uint64_t)size > ctx->tiling_data_capacity || (size && ctx->tiling_data == NULL)) {
        PyErr_SetString(PyExc_ValueError, "tiling_data: size out of the buffer");
        return NULL;
    }
    return PyBytes_FromStringAndSize(size ? (const char *)ctx->tiling_data : "", size);
}

/* block.run_infer(fns, n_outputs) -> (status, error, index of the last function run, ((dtype code, dims), ...))
 * Calls each `uint32_t fn(TilingContext *, OpbuildTensorDesc *outputs)` of `fns` (op_proto
 * functions, by address: InferDataType then InferShape) in turn on the same n_outputs zeroed
 * descriptors, stopping at the first failure, and returns what they wrote (runtime/host/op_proto.py). */
static PyObject *block_run_infer(TilingBlock *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "run_infer(fns: tuple, n_outputs)");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || n > 4096) {
        PyErr_SetString(PyExc_ValueError, "run_infer: bad output count");
        return NULL;
    }
    Py_ssize_t nfn = PyTuple_GET_SIZE(args[0]);
    tiling_block_infer_fn fns[4];
    if (nfn > 4) {
        PyErr_SetString(PyExc_ValueError, "run_infer: at most 4 functions");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nfn; i++) {
        fns[i] = (tiling_block_infer_fn)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(args[0], i));
        if (PyErr_Occurred()) return NULL;
        if (fns[i] == NULL) {
            PyErr_SetString(PyExc_ValueError, "run_infer: NULL function");
            return NULL;
        }
    }
    OpbuildTensorDesc small[8];
    memset(small, 0, sizeof small);
    OpbuildTensorDesc *outs = n <= 8 ? small : PyMem_Calloc((size_t)n, sizeof(OpbuildTensorDesc));
    if (outs == NULL) return PyErr_NoMemory();
    TilingContext *ctx = (TilingContext *)self->mem;
    Py_ssize_t ran; /* the function that failed is fns[ran - 1] */
    uint32_t status = tiling_block_infer(self, fns, nfn, outs, &ran);
    PyObject *result = PyTuple_New(n);
    for (Py_ssize_t k = 0; result != NULL && k < n; k++) {
        uint32_t rank = outs[k].dim_num > OPBUILD_MAX_DIMS ? OPBUILD_MAX_DIMS : outs[k].dim_num;
        PyObject *dims = PyTuple_New(rank);
        for (uint32_t r = 0; dims != NULL && r < rank; r++) {
            PyObject *d = PyLong_FromLongLong(outs[k].dims[r]);
            if (d == NULL) Py_CLEAR(dims);
            else PyTuple_SET_ITEM(dims, r, d);
        }
        PyObject *item = dims ? Py_BuildValue("(iN)", outs[k].dtype, dims) : NULL;
        if (item == NULL) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, k, item);
    }
    if (outs != small) PyMem_Free(outs);
    if (result == NULL) return NULL;
    return Py_BuildValue("(IynN)", status, ctx->error, ran - 1, result);
}

static PyMethodDef block_methods[] = {
    {"run_tiling", (PyCFunction)block_run_tiling, METH_O, "run_tiling(fn address) -> the tiling function's results"},
    {"tiling_data", (PyCFunction)block_tiling_data, METH_O, "tiling_data(size) -> bytes of the tiling data buffer"},
    {"run_infer", (PyCFunction)(void (*)(void))block_run_infer, METH_FASTCALL,
     "run_infer(fn addresses, n_outputs) -> (status, error, last index, ((dtype, dims), ...))"},
    {NULL},
};

static PyGetSetDef block_getset[] = {
    {"guard", (getter)block_guard, NULL, "offset of the guard bytes after the tiling data (0: none)", NULL},
    {NULL},
};

PyTypeObject TilingBlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "opbuild.runtime._fastpath.TilingBlock",
    .tp_basicsize = sizeof(TilingBlock),
    .tp_dealloc = (destructor)block_dealloc,
    .tp_as_buffer = &block_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A TilingContext and everything it points to, in one block (fill_tiling_context).",
    .tp_getset = block_getset,
    .tp_methods = block_methods,
};

#define ALIGN8(n) (((n) + 7) & ~(Py_ssize_t)7)

/* Instances of one side: total count, or -1 when not a sequence of sequences. */
static Py_ssize_t count_instances(PyObject *side) {
    if (!PyList_CheckExact(side) && !PyTuple_CheckExact(side)) return -1;
    Py_ssize_t total = 0, n = PySequence_Fast_GET_SIZE(side);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(side, i);
        if (!PyList_CheckExact(p) && !PyTuple_CheckExact(p)) return -1;
        total += PySequence_Fast_GET_SIZE(p);
    }
    return total;
}

/* An int64 of an exact int (or bool); 0 on success. */
static int as_i64(PyObject *o, int64_t *out) {
    if (!PyLong_Check(o)) return -1;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *out = v;
    return 0;
}

/* A GE code from a name -> code dict; -1 if not there. */
static int code_of(PyObject *table, PyObject *name) {
    PyObject *v = PyUnicode_CheckExact(name) ? PyDict_GetItemWithError(table, name) : NULL;
    int64_t code;
    if (v == NULL || as_i64(v, &code) < 0 || code < INT32_MIN || code > INT32_MAX) {
        PyErr_Clear();
        return INT32_MIN;
    }
    return (int)code;
}

/* Fill one side's start/count arrays and descriptors; 0, or -1 for what only Python handles. */
static int fill_side(PyObject *side, PyObject *dtypes, PyObject *formats, uint32_t *start, uint32_t *count,
                     OpbuildTensorDesc *descs) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(side), k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(side, i);
        Py_ssize_t m = PySequence_Fast_GET_SIZE(p);
        start[i] = (uint32_t)k;
        count[i] = (uint32_t)m;
        for (Py_ssize_t j = 0; j < m; j++, k++) {
            PyObject *t = PySequence_Fast_GET_ITEM(p, j);
            if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 4) return -1;
            PyObject *shape = PyTuple_GET_ITEM(t, 2), *strides = PyTuple_GET_ITEM(t, 3);
            OpbuildTensorDesc *d = &descs[k];
            int dt = code_of(dtypes, PyTuple_GET_ITEM(t, 0)), ft = code_of(formats, PyTuple_GET_ITEM(t, 1));
            if (dt == INT32_MIN || ft == INT32_MIN || !PyTuple_CheckExact(shape)) return -1;
            Py_ssize_t rank = PyTuple_GET_SIZE(shape);
            if (rank > OPBUILD_MAX_DIMS) return -1;
            if (strides != Py_None && (!PyTuple_CheckExact(strides) || PyTuple_GET_SIZE(strides) != rank)) return -1;
            d->dtype = dt;
            d->format = ft;
            d->dim_num = (uint32_t)rank;
            for (Py_ssize_t r = 0; r < rank; r++)
                if (as_i64(PyTuple_GET_ITEM(shape, r), &d->dims[r]) < 0) return -1;
            if (strides == Py_None) { /* contiguous; out of int64: Python says so */
                if (tiling_desc_contiguous(d) < 0) return -1;
            } else {
                for (Py_ssize_t r = 0; r < rank; r++)
                    if (as_i64(PyTuple_GET_ITEM(strides, r), &d->strides[r]) < 0) return -1;
            }
        }
    }
    return 0;
}

/* fill_tiling_context(op_type, soc, core_num, ub_size, deterministic, impl_mode, capacity, guard,
 *                     inputs, outputs, attrs, dtypes, formats, attr_types)
 * -> TilingBlock, or None for what only tiling_context.build_tiling_context handles.
 * op_type, soc: bytes; guard: the guard bytes (bytes); attrs: (type name, value) pairs;
 * dtypes, formats, attr_types: the name -> code dicts of tiling_context.py. */
PyObject *fp_fill_tiling_context(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 14) {
        PyErr_SetString(PyExc_TypeError, "fill_tiling_context takes 14 arguments");
        return NULL;
    }
    PyObject *op_b = args[0], *soc_b = args[1], *guard_b = args[7], *inputs = args[8], *outputs = args[9],
             *attrs = args[10], *dtypes = args[11], *formats = args[12], *attr_types = args[13];
    int64_t core_num, ub_size, det, impl, capacity;
    if (!PyBytes_CheckExact(op_b) || !PyBytes_CheckExact(soc_b) || !PyBytes_CheckExact(guard_b) ||
        !PyDict_CheckExact(dtypes) || !PyDict_CheckExact(formats) || !PyDict_CheckExact(attr_types) ||
        as_i64(args[2], &core_num) < 0 || as_i64(args[3], &ub_size) < 0 || as_i64(args[4], &det) < 0 ||
        as_i64(args[5], &impl) < 0 || as_i64(args[6], &capacity) < 0 || capacity < 0 || core_num < 0 ||
        core_num > UINT32_MAX || impl < 0 || impl > UINT32_MAX)
        Py_RETURN_NONE;
    Py_ssize_t n_in_inst = count_instances(inputs), n_out_inst = count_instances(outputs);
    if (n_in_inst < 0 || n_out_inst < 0 || (!PyList_CheckExact(attrs) && !PyTuple_CheckExact(attrs))) Py_RETURN_NONE;
    Py_ssize_t n_in = PySequence_Fast_GET_SIZE(inputs), n_out = PySequence_Fast_GET_SIZE(outputs);
    Py_ssize_t n_attr = PySequence_Fast_GET_SIZE(attrs);
    Py_ssize_t guard_len = PyBytes_GET_SIZE(guard_b);

    /* the layout of the block */
    Py_ssize_t off = ALIGN8((Py_ssize_t)sizeof(TilingContext));
    Py_ssize_t o_in_start = off; off = ALIGN8(off + n_in * 4);
    Py_ssize_t o_in_count = off; off = ALIGN8(off + n_in * 4);
    Py_ssize_t o_out_start = off; off = ALIGN8(off + n_out * 4);
    Py_ssize_t o_out_count = off; off = ALIGN8(off + n_out * 4);
    Py_ssize_t o_in_descs = off; off += n_in_inst * (Py_ssize_t)sizeof(OpbuildTensorDesc);
    Py_ssize_t o_out_descs = off; off += n_out_inst * (Py_ssize_t)sizeof(OpbuildTensorDesc);
    Py_ssize_t o_attrs = off; off += n_attr * (Py_ssize_t)sizeof(OpbuildAttrValue);
    Py_ssize_t o_strings = off; /* op type, soc, str attributes: NUL terminated */
    off += PyBytes_GET_SIZE(op_b) + 1 + PyBytes_GET_SIZE(soc_b) + 1;
    for (Py_ssize_t i = 0; i < n_attr; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(attrs, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) Py_RETURN_NONE;
        PyObject *v = PyTuple_GET_ITEM(item, 1);
        if (PyUnicode_CheckExact(v)) {
            Py_ssize_t len;
            if (PyUnicode_AsUTF8AndSize(v, &len) == NULL) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            off += len + 1;
        }
    }
    off = ALIGN8(off);
    Py_ssize_t o_data = off, guard = 0;
    if (capacity) {
        guard = o_data + capacity;
        off = ALIGN8(guard + guard_len);
    }

    TilingBlock *block = PyObject_New(TilingBlock, &TilingBlockType);
    if (block == NULL) return NULL;
    block->mem = PyMem_Calloc(1, (size_t)off);
    block->size = off;
    block->guard = guard;
    block->exports = 0;
    block->guard_bytes = NULL;
    if (block->mem == NULL) {
        Py_DECREF(block);
        return PyErr_NoMemory();
    }
    char *m = block->mem;
    TilingContext *ctx = (TilingContext *)m;
    if (fill_side(inputs, dtypes, formats, (uint32_t *)(m + o_in_start), (uint32_t *)(m + o_in_count),
                  (OpbuildTensorDesc *)(m + o_in_descs)) < 0 ||
        fill_side(outputs, dtypes, formats, (uint32_t *)(m + o_out_start), (uint32_t *)(m + o_out_count),
                  (OpbuildTensorDesc *)(m + o_out_descs)) < 0)
        goto python;
    char *str = m + o_strings;
    memcpy(str, PyBytes_AS_STRING(op_b), (size_t)PyBytes_GET_SIZE(op_b) + 1);
    ctx->op_type = str;
    str += PyBytes_GET_SIZE(op_b) + 1;
    memcpy(str, PyBytes_AS_STRING(soc_b), (size_t)PyBytes_GET_SIZE(soc_b) + 1);
    ctx->soc_version = str;
    str += PyBytes_GET_SIZE(soc_b) + 1;
    OpbuildAttrValue *av = (OpbuildAttrValue *)(m + o_attrs);
    for (Py_ssize_t i = 0; i < n_attr; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(attrs, i), *kind = PyTuple_GET_ITEM(item, 0);
        PyObject *v = PyTuple_GET_ITEM(item, 1);
        int code = code_of(attr_types, kind);
        av[i].type = code;
        if (code == OPBUILD_ATTR_INT) {
            if (as_i64(v, &av[i].i) < 0) goto python;
        } else if (code == OPBUILD_ATTR_FLOAT) {
            if (PyFloat_CheckExact(v)) av[i].f = PyFloat_AS_DOUBLE(v);
            else if (PyLong_CheckExact(v)) {
                av[i].f = PyLong_AsDouble(v);
                if (av[i].f == -1.0 && PyErr_Occurred()) {
                    PyErr_Clear();
                    goto python;
                }
            } else goto python;
        } else if (code == OPBUILD_ATTR_BOOL) {
            if (!PyBool_Check(v)) goto python;
            av[i].i = v == Py_True;
        } else if (code == OPBUILD_ATTR_STR) {
            Py_ssize_t len;
            const char *text = PyUnicode_CheckExact(v) ? PyUnicode_AsUTF8AndSize(v, &len) : NULL;
            if (text == NULL || memchr(text, 0, (size_t)len) != NULL) goto python;
            memcpy(str, text, (size_t)len + 1);
            av[i].s = str;
            str += len + 1;
        } else {
            goto python; /* lists, unknown types */
        }
    }
    ctx->abi_version = OPBUILD_TILING_ABI_VERSION;
    ctx->input_num = (uint32_t)n_in;
    ctx->output_num = (uint32_t)n_out;
    ctx->attr_num = (uint32_t)n_attr;
    ctx->input_start = (uint32_t *)(m + o_in_start);
    ctx->input_count = (uint32_t *)(m + o_in_count);
    ctx->input_descs = (OpbuildTensorDesc *)(m + o_in_descs);
    ctx->output_start = (uint32_t *)(m + o_out_start);
    ctx->output_count = (uint32_t *)(m + o_out_count);
    ctx->output_descs = (OpbuildTensorDesc *)(m + o_out_descs);
    ctx->attrs = av;
    ctx->core_num = (uint32_t)core_num;
    ctx->deterministic = det ? 1 : 0;
    ctx->impl_mode = (uint32_t)impl;
    ctx->ub_size = (uint64_t)ub_size;
    if (capacity) {
        ctx->tiling_data = m + o_data;
        memcpy(m + guard, PyBytes_AS_STRING(guard_b), (size_t)guard_len);
        Py_INCREF(guard_b);
        block->guard_bytes = guard_b;
    }
    ctx->tiling_data_capacity = (uint64_t)capacity;
    return (PyObject *)block;
python:
    PyErr_Clear();
    Py_DECREF(block);
    Py_RETURN_NONE;
}
