/* oneshot.c: _fastpath.oneshot, the cache-hit branch of api.call (ops.xxx(x, y)) in C.
 *
 * What: for a "simple" op called with plain numpy arrays, look up the output (shape, dtype) specs
 * in the thread's one-shot cache under api.call's own key, allocate the outputs, run the op's
 * phase-1 and phase-2 functions (the _fastpath wrappers: their cache hit is C as well) and return
 * the output(s). Anything else -- no cached specs, an argument that is not an exact ndarray, an
 * allocation that fails -- returns NotImplemented before anything ran, and api.call (the
 * reference) does the call.
 * Why: the Python branch built the key, allocated and called both phases in ~1 us of interpreter
 * work per call, more than the two phases cost; the one-shot call was slower than torch.add.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL opbuild_fastpath_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "oneshot_api.h"

#define ONESHOT_MAX_ARGS 64

static PyObject *s_oneshot;
static PyObject *s_simple, *s_n_inputs, *s_n_attrs, *s_phase1, *s_phase2;

static int intern_names(void) {
    if (s_simple != NULL) return 0;
    if ((s_simple = PyUnicode_InternFromString("simple")) == NULL ||
        (s_n_inputs = PyUnicode_InternFromString("n_inputs")) == NULL ||
        (s_n_attrs = PyUnicode_InternFromString("n_attrs")) == NULL ||
        (s_phase1 = PyUnicode_InternFromString("phase1")) == NULL ||
        (s_phase2 = PyUnicode_InternFromString("phase2")) == NULL)
        return -1;
    return 0;
}

/* op.<name> as a C long (-1 with an exception on failure). */
static long attr_long(PyObject *op, PyObject *name) {
    PyObject *v = PyObject_GetAttr(op, name);
    if (v == NULL) return -1;
    long r = PyLong_AsLong(v);
    Py_DECREF(v);
    return r;
}

/* api.call's key: (op, attr0, type(attr0), ..., x.dtype, x.shape, ...) with the tensors' slots
 * left empty (key_tensor fills them); NULL with no exception when out of memory. */
static PyObject *key_begin(PyObject *op, PyObject *attrs, Py_ssize_t n_in) {
    Py_ssize_t n_attr = PyTuple_GET_SIZE(attrs);
    PyObject *key = PyTuple_New(1 + 2 * n_attr + 2 * n_in);
    if (key == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_ssize_t k = 0;
    PyTuple_SET_ITEM(key, k++, Py_NewRef(op));
    for (Py_ssize_t i = 0; i < n_attr; i++) {
        PyObject *v = PyTuple_GET_ITEM(attrs, i);
        PyTuple_SET_ITEM(key, k++, Py_NewRef(v));
        PyTuple_SET_ITEM(key, k++, Py_NewRef((PyObject *)Py_TYPE(v)));
    }
    return key;
}

/* Input i's slots of the key: its dtype and its shape (a tuple of ints); -1 (no exception) when out
 * of memory. */
static int key_tensor(PyObject *key, Py_ssize_t n_attr, Py_ssize_t i, PyObject *descr, int nd,
                      const npy_intp *dims) {
    PyObject *shape = PyTuple_New(nd);
    if (shape == NULL) goto fail;
    for (int d = 0; d < nd; d++) {
        PyObject *dim = PyLong_FromSsize_t(dims[d]);
        if (dim == NULL) {
            Py_DECREF(shape);
            goto fail;
        }
        PyTuple_SET_ITEM(shape, d, dim);
    }
    PyTuple_SET_ITEM(key, 1 + 2 * n_attr + 2 * i, Py_NewRef(descr));
    PyTuple_SET_ITEM(key, 2 + 2 * n_attr + 2 * i, shape);
    return 0;
fail:
    PyErr_Clear();
    return -1;
}

/* The specs cached under `key` (a new reference; the key is released), or NULL with no exception
 * (not cached, an unhashable attribute: api.call says what is wrong). */
static PyObject *cached_specs(PyObject *cache, PyObject *key) {
    PyObject *specs = NULL;
    if (PyObject_Hash(key) != -1) specs = PyDict_GetItemWithError(cache, key); /* borrowed */
    Py_DECREF(key);
    if (specs == NULL || !PyTuple_CheckExact(specs) || PyTuple_GET_SIZE(specs) < 1) {
        PyErr_Clear();
        return NULL;
    }
    return Py_NewRef(specs); /* the cache may be cleared by the phases */
}

/* Output spec `spec` = (shape, dtype): its dims in `dims` and its descriptor (a new reference), or
 * NULL with no exception when it is not one. */
static PyArray_Descr *spec_parts(PyObject *spec, int *nd, npy_intp *dims) {
    PyArray_Descr *descr = NULL;
    PyObject *shape = PyTuple_Check(spec) && PyTuple_GET_SIZE(spec) == 2 ? PyTuple_GET_ITEM(spec, 0) : NULL;
    if (shape == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > NPY_MAXDIMS) return NULL;
    *nd = (int)PyTuple_GET_SIZE(shape);
    for (int d = 0; d < *nd; d++) dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
    if (PyErr_Occurred() || !PyArray_DescrConverter(PyTuple_GET_ITEM(spec, 1), &descr)) {
        PyErr_Clear();
        return NULL;
    }
    return descr;
}

/* The op's phase 1 then phase 2 on these arrays: 1 ran, 0 not served (the op has no phase
 * functions; nothing ran, no exception), -1 an exception (the phases raise AclnnError only). */
static int run_phases(PyObject *op, PyObject *const *inputs, Py_ssize_t n_in, PyObject *attrs,
                      PyObject *const *outputs, Py_ssize_t n_out) {
    Py_ssize_t n_attr = PyTuple_GET_SIZE(attrs);
    PyObject *phase1 = PyObject_GetAttr(op, s_phase1);
    PyObject *phase2 = phase1 != NULL ? PyObject_GetAttr(op, s_phase2) : NULL;
    PyObject *result = NULL;
    int rc = -1;
    if (phase2 == NULL || phase1 == Py_None || phase2 == Py_None) {
        PyErr_Clear();
        rc = 0;
        goto done;
    }
    PyObject *call_args[ONESHOT_MAX_ARGS];
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n_in; i++) call_args[k++] = inputs[i];
    for (Py_ssize_t i = 0; i < n_attr; i++) call_args[k++] = PyTuple_GET_ITEM(attrs, i);
    for (Py_ssize_t i = 0; i < n_out; i++) call_args[k++] = outputs[i];
    result = PyObject_Vectorcall(phase1, call_args, (size_t)k, NULL);
    if (result == NULL) goto done;
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 2) {
        PyErr_SetString(PyExc_TypeError, "phase 1 did not return (workspace_size, executor)");
        goto done;
    }
    PyObject *size = PyTuple_GET_ITEM(result, 0), *workspace = Py_None;
    Py_ssize_t nbytes = PyLong_AsSsize_t(size);
    if (nbytes == -1 && PyErr_Occurred()) goto done;
    if (nbytes > 0) {
        npy_intp n = nbytes;
        workspace = PyArray_SimpleNew(1, &n, NPY_UINT8);
        if (workspace == NULL) goto done;
    } else {
        Py_INCREF(workspace);
    }
    PyObject *p2_args[4] = {workspace, size, PyTuple_GET_ITEM(result, 1), Py_None};
    PyObject *status = PyObject_Vectorcall(phase2, p2_args, 4, NULL);
    Py_DECREF(workspace);
    if (status == NULL) goto done;
    Py_DECREF(status);
    rc = 1;
done:
    Py_XDECREF(result);
    Py_XDECREF(phase1);
    Py_XDECREF(phase2);
    return rc;
}

/* Whether api.call with these arguments may be served here: a simple op with its numbers of
 * inputs and attributes (0 with no exception otherwise). */
static int served(PyObject *op, Py_ssize_t n_in, PyObject *attrs) {
    if (intern_names() < 0 || !PyTuple_CheckExact(attrs)) goto no;
    PyObject *simple = PyObject_GetAttr(op, s_simple);
    if (simple == NULL) goto no;
    int is_simple = PyObject_IsTrue(simple);
    Py_DECREF(simple);
    long want_in = attr_long(op, s_n_inputs), want_attr = attr_long(op, s_n_attrs);
    if (PyErr_Occurred() || is_simple != 1 || want_in != n_in || want_attr != PyTuple_GET_SIZE(attrs)) goto no;
    return 1;
no:
    PyErr_Clear();
    return 0;
}

static PyObject *oneshot_run(PyObject *cache, PyObject *op, PyObject *inputs, PyObject *attrs);

/* oneshot(cache, op, inputs, attrs): the output(s) of the call, or NotImplemented (nothing ran). */
PyObject *fp_oneshot(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "oneshot(cache, op, inputs, attrs)");
        return NULL;
    }
    return oneshot_run(args[0], args[1], args[2], args[3]);
}

/* The work of oneshot(); NotImplemented (no exception) when it cannot do the call before anything
 * ran, an exception only from the phase functions (AclnnError: they raise nothing else). */
static PyObject *oneshot_run(PyObject *cache, PyObject *op, PyObject *inputs, PyObject *attrs) {
    if (!PyTuple_CheckExact(inputs) || !PyDict_Check(cache)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n_in = PyTuple_GET_SIZE(inputs), n_attr;
    if (!served(op, n_in, attrs)) Py_RETURN_NOTIMPLEMENTED;
    n_attr = PyTuple_GET_SIZE(attrs);
    for (Py_ssize_t i = 0; i < n_in; i++)
        if (!PyArray_CheckExact(PyTuple_GET_ITEM(inputs, i))) Py_RETURN_NOTIMPLEMENTED;
    PyObject *key = key_begin(op, attrs, n_in);
    if (key == NULL) Py_RETURN_NOTIMPLEMENTED;
    for (Py_ssize_t i = 0; i < n_in; i++) {
        PyArrayObject *a = (PyArrayObject *)PyTuple_GET_ITEM(inputs, i);
        if (key_tensor(key, n_attr, i, (PyObject *)PyArray_DESCR(a), PyArray_NDIM(a), PyArray_DIMS(a)) < 0) {
            Py_DECREF(key);
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    PyObject *specs = cached_specs(cache, key);
    if (specs == NULL) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n_out = PyTuple_GET_SIZE(specs);
    if (n_in + n_attr + n_out > ONESHOT_MAX_ARGS) {
        Py_DECREF(specs);
        Py_RETURN_NOTIMPLEMENTED;
    }

    PyObject *ret = NULL;
    PyObject *outputs[ONESHOT_MAX_ARGS];
    Py_ssize_t made = 0;
    for (; made < n_out; made++) {
        npy_intp dims[NPY_MAXDIMS];
        int nd;
        PyArray_Descr *descr = spec_parts(PyTuple_GET_ITEM(specs, made), &nd, dims);
        if (descr == NULL) break;
        outputs[made] = PyArray_Empty(nd, dims, descr, 0); /* steals descr */
        if (outputs[made] == NULL) { /* too large: api.call says which output */
            PyErr_Clear();
            break;
        }
    }
    int rc = made < n_out ? 0 : run_phases(op, ((PyTupleObject *)inputs)->ob_item, n_in, attrs, outputs, n_out);
    if (rc == 0) {
        ret = Py_NewRef(Py_NotImplemented);
    } else if (rc == 1 && n_out == 1) {
        ret = Py_NewRef(outputs[0]);
    } else if (rc == 1) {
        ret = PyTuple_New(n_out);
        if (ret != NULL)
            for (Py_ssize_t i = 0; i < n_out; i++) PyTuple_SET_ITEM(ret, i, Py_NewRef(outputs[i]));
    }
    for (Py_ssize_t i = 0; i < made; i++) Py_DECREF(outputs[i]);
    Py_DECREF(specs);
    return ret;
}

/* ---- the C entry of tensors given as raw memory (oneshot_api.h) ------------------------------ */

/* An ndarray over a tensor's memory (no copy, not owning it): what the phase functions take. */
static PyObject *array_over(const oneshot_tensor *t) {
    npy_intp dims[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    if (t->ndim < 0 || t->ndim > NPY_MAXDIMS || t->ndim > ONESHOT_API_MAX_DIMS) return NULL;
    for (int d = 0; d < t->ndim; d++) {
        dims[d] = (npy_intp)t->dims[d];
        strides[d] = (npy_intp)t->strides[d];
    }
    PyArray_Descr *descr = (PyArray_Descr *)t->descr;
    Py_INCREF(descr); /* stolen */
    PyObject *a = PyArray_NewFromDescr(&PyArray_Type, descr, t->ndim, dims, strides, t->data, NPY_ARRAY_WRITEABLE,
                                       NULL);
    if (a == NULL) PyErr_Clear();
    return a;
}

static int views_run(PyObject *state, PyObject *op, int n_in, const oneshot_tensor *inputs, PyObject *attrs,
                     oneshot_alloc_fn alloc, void *ctx) {
    if (n_in < 0 || !served(op, n_in, attrs)) return 0;
    Py_ssize_t n_attr = PyTuple_GET_SIZE(attrs);
    if (s_oneshot == NULL && (s_oneshot = PyUnicode_InternFromString("oneshot")) == NULL) goto not_here;
    PyObject *cache = PyObject_GetAttr(state, s_oneshot);
    if (cache == NULL) goto not_here;
    PyObject *key = PyDict_Check(cache) ? key_begin(op, attrs, n_in) : NULL;
    for (int i = 0; key != NULL && i < n_in; i++) {
        npy_intp dims[ONESHOT_API_MAX_DIMS];
        int nd = inputs[i].ndim;
        if (nd < 0 || nd > ONESHOT_API_MAX_DIMS || !PyArray_DescrCheck(inputs[i].descr)) {
            Py_CLEAR(key);
            break;
        }
        for (int d = 0; d < nd; d++) dims[d] = (npy_intp)inputs[i].dims[d];
        if (key_tensor(key, n_attr, i, inputs[i].descr, nd, dims) < 0) Py_CLEAR(key);
    }
    PyObject *specs = key != NULL ? cached_specs(cache, key) : NULL;
    Py_DECREF(cache);
    if (specs == NULL) goto not_here;
    Py_ssize_t n_out = PyTuple_GET_SIZE(specs);
    PyObject *arrays[2 * ONESHOT_MAX_ARGS];
    Py_ssize_t made = 0;
    int rc = 0;
    if (n_in + n_attr + n_out > ONESHOT_MAX_ARGS) goto done;
    for (; made < n_in; made++)
        if ((arrays[made] = array_over(&inputs[made])) == NULL) goto done;
    for (Py_ssize_t i = 0; i < n_out; i++) {
        npy_intp dims[NPY_MAXDIMS];
        int64_t dims64[NPY_MAXDIMS];
        int nd;
        PyArray_Descr *descr = spec_parts(PyTuple_GET_ITEM(specs, i), &nd, dims);
        if (descr == NULL) goto done;
        for (int d = 0; d < nd; d++) dims64[d] = dims[d];
        oneshot_tensor out;
        int ok = nd <= ONESHOT_API_MAX_DIMS && alloc(ctx, (int)i, (PyObject *)descr, nd, dims64, &out) == 0;
        Py_DECREF(descr);
        if (!ok || (arrays[made] = array_over(&out)) == NULL) goto done;
        made++;
    }
    rc = run_phases(op, arrays, n_in, attrs, arrays + n_in, n_out);
done:
    for (Py_ssize_t i = 0; i < made; i++) Py_DECREF(arrays[i]);
    Py_DECREF(specs);
    return rc;
not_here:
    PyErr_Clear();
    return 0;
}

static const oneshot_api g_oneshot_api = {ONESHOT_API_VERSION, views_run};

/* The capsule of oneshot_api (the module's `oneshot_api`). */
PyObject *oneshot_api_capsule(void) {
    return PyCapsule_New((void *)&g_oneshot_api, ONESHOT_API_CAPSULE, NULL);
}

/* ---- OneShot: api.call with this in front ---------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fn;    /* api's Python call(op, inputs, attrs, deterministic, impl_mode, stream) */
    PyObject *state; /* the thread-local plan cache state: its .oneshot is the calling thread's dict */
    PyObject *dict;
} OneShot;


/* call(op, inputs, attrs, deterministic=None, impl_mode=None, stream=None) */
static PyObject *oneshot_vectorcall(OneShot *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && n >= 3 && n <= 6) {
        int defaults = 1;
        for (Py_ssize_t i = 3; i < n; i++) defaults &= args[i] == Py_None;
        if (defaults) {
            PyObject *cache = PyObject_GetAttr(self->state, s_oneshot);
            if (cache == NULL) return NULL;
            PyObject *out = oneshot_run(cache, args[0], args[1], args[2]);
            Py_DECREF(cache);
            if (out != Py_NotImplemented) return out;
            Py_DECREF(out);
        }
    }
    return PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
}

static PyObject *oneshot_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fn", "state", NULL};
    PyObject *fn, *state;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO", kwlist, &fn, &state)) return NULL;
    if (s_oneshot == NULL && (s_oneshot = PyUnicode_InternFromString("oneshot")) == NULL) return NULL;
    OneShot *self = (OneShot *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = (vectorcallfunc)oneshot_vectorcall;
    self->fn = Py_NewRef(fn);
    self->state = Py_NewRef(state);
    return (PyObject *)self;
}

static int oneshot_traverse(OneShot *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->state);
    Py_VISIT(self->dict);
    return 0;
}

static int oneshot_clear(OneShot *self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->state);
    Py_CLEAR(self->dict);
    return 0;
}

static void oneshot_dealloc(OneShot *self) {
    PyObject_GC_UnTrack(self);
    oneshot_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef oneshot_members[] = {
    {"fn", T_OBJECT, offsetof(OneShot, fn), READONLY, "the Python call (the reference path)"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(OneShot, vectorcall), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(OneShot, dict), READONLY, NULL},
    {NULL},
};

PyTypeObject OneShotType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "opbuild.runtime._fastpath.OneShot",
    .tp_basicsize = sizeof(OneShot),
    .tp_dealloc = (destructor)oneshot_dealloc,
    .tp_vectorcall_offset = offsetof(OneShot, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "OneShot(fn, state): api.call with the cache hit of plain numpy arrays in C (oneshot.c).",
    .tp_traverse = (traverseproc)oneshot_traverse,
    .tp_clear = (inquiry)oneshot_clear,
    .tp_members = oneshot_members,
    .tp_new = oneshot_new,
    .tp_dictoffset = offsetof(OneShot, dict),
};
