/* describe.c: _fastpath.describe_call, what a cache miss of phase 1 needs to know about a call's
 * tensors, read in one pass; _fastpath.pack_direct, its launch arguments.
 *
 * opbuild/runtime/call/plans.py's describe_call is the reference and the only caller (it runs the
 * Python version, _describe_call_py, when the extension is missing): per IR parameter the
 * instances (dtype name, format name, shape, None) that tiling, inference and the key rule see;
 * the signature a shape-blind key rule sees ((dtype name, format name) per instance); whether
 * every tensor is C-contiguous; whether any output has elements. Pure marshalling, no rules: the
 * arguments were checked by normalize_tensors, and a dtype missing from `names` raises KeyError
 * as the Python version does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL opbuild_fastpath_ARRAY_API
#include <numpy/arrayobject.h>

/* One side: a tuple of per-parameter tuples of instances; appends (dtype, format) pairs to sig. */
static PyObject *describe_side(PyObject *params, PyObject *names, PyObject *sig, int *contiguous, int *nonempty) {
    if (!PyList_CheckExact(params) && !PyTuple_CheckExact(params)) {
        PyErr_SetString(PyExc_TypeError, "describe_call: parameters must be a list or tuple");
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(params);
    PyObject *side = PyTuple_New(n);
    if (side == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *group = PySequence_Fast_GET_ITEM(params, i);
        if (!PyList_CheckExact(group) && !PyTuple_CheckExact(group)) goto bad;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(group);
        PyObject *insts = PyTuple_New(m);
        if (insts == NULL) goto fail;
        PyTuple_SET_ITEM(side, i, insts);
        for (Py_ssize_t k = 0; k < m; k++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(group, k);
            if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyArray_Check(PyTuple_GET_ITEM(pair, 0)))
                goto bad;
            PyArrayObject *a = (PyArrayObject *)PyTuple_GET_ITEM(pair, 0);
            PyObject *fmt = PyTuple_GET_ITEM(pair, 1);
            PyObject *name = PyDict_GetItemWithError(names, (PyObject *)PyArray_DESCR(a));
            if (name == NULL) {
                if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, (PyObject *)PyArray_DESCR(a));
                goto fail;
            }
            int nd = PyArray_NDIM(a);
            PyObject *shape = PyTuple_New(nd);
            if (shape == NULL) goto fail;
            for (int d = 0; d < nd; d++) {
                PyObject *dim = PyLong_FromSsize_t(PyArray_DIMS(a)[d]);
                if (dim == NULL) {
                    Py_DECREF(shape);
                    goto fail;
                }
                PyTuple_SET_ITEM(shape, d, dim);
            }
            PyObject *inst = PyTuple_Pack(4, name, fmt, shape, Py_None);
            Py_DECREF(shape);
            if (inst == NULL) goto fail;
            PyTuple_SET_ITEM(insts, k, inst);
            PyObject *entry = PyTuple_Pack(2, name, fmt);
            if (entry == NULL || PyList_Append(sig, entry) < 0) {
                Py_XDECREF(entry);
                goto fail;
            }
            Py_DECREF(entry);
            if (!PyArray_IS_C_CONTIGUOUS(a)) *contiguous = 0;
            if (nonempty != NULL && PyArray_SIZE(a) > 0) *nonempty = 1;
        }
    }
    return side;
bad:
    PyErr_SetString(PyExc_TypeError, "describe_call: each parameter is a list of (array, format) pairs");
fail:
    Py_DECREF(side);
    return NULL;
}

/* describe_call(inputs, outputs, names) -> (in_inst, out_inst, signature, contiguous, any output non-empty) */
PyObject *fp_describe_call(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 3 || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "describe_call(inputs, outputs, names: dict)");
        return NULL;
    }
    int contiguous = 1, nonempty = 0;
    PyObject *sig = PyList_New(0);
    if (sig == NULL) return NULL;
    PyObject *in_inst = describe_side(args[0], args[2], sig, &contiguous, NULL);
    PyObject *out_inst = in_inst ? describe_side(args[1], args[2], sig, &contiguous, &nonempty) : NULL;
    PyObject *sig_t = out_inst ? PyList_AsTuple(sig) : NULL;
    Py_DECREF(sig);
    if (sig_t == NULL) {
        Py_XDECREF(in_inst);
        Py_XDECREF(out_inst);
        return NULL;
    }
    return Py_BuildValue("(NNNOO)", in_inst, out_inst, sig_t, contiguous ? Py_True : Py_False,
                         nonempty ? Py_True : Py_False);
}

/* pack_direct(arrays, tiling_addr) -> bytes, or None
 * The launch arguments of a plan whose tensors are passed as they are (executor._direct_args is
 * the reference): each array's data pointer, then the workspace slot (0) and the tiling
 * argument's address, as native uint64s; None when an array's data is not aligned to its item
 * size (phase 2 then copies it). */
PyObject *fp_pack_direct(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 2 || (!PyList_CheckExact(args[0]) && !PyTuple_CheckExact(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "pack_direct(arrays: list, tiling_addr: int)");
        return NULL;
    }
    uint64_t tiling = PyLong_AsUnsignedLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args[0]);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (n + 2) * 8);
    if (out == NULL) return NULL;
    uint64_t *words = (uint64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(args[0], i);
        if (!PyArray_Check(o)) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "pack_direct: arrays only");
            return NULL;
        }
        PyArrayObject *a = (PyArrayObject *)o;
        uintptr_t addr = (uintptr_t)PyArray_DATA(a);
        npy_intp itemsize = PyArray_ITEMSIZE(a);
        if (itemsize > 0 && addr % (uintptr_t)itemsize) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        words[i] = (uint64_t)addr;
    }
    words[n] = 0;
    words[n + 1] = tiling;
    return out;
}
