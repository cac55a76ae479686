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
#include "fastpath.h" /* Python, numpy; the plan table, Phase1/Phase2, the launch (the raw hit) */
#include <structmember.h>

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
static PyObject *oneshot_raw(PyObject *cache, PyObject *op, PyObject *inputs, PyObject *attrs);

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
    Py_ssize_t n_in = PyTuple_GET_SIZE(inputs);
    if (!served(op, n_in, attrs)) Py_RETURN_NOTIMPLEMENTED;
    for (Py_ssize_t i = 0; i < n_in; i++)
        if (!PyArray_CheckExact(PyTuple_GET_ITEM(inputs, i))) Py_RETURN_NOTIMPLEMENTED;
    return oneshot_raw(cache, op, inputs, attrs); /* (NotImplemented: the Python call does it) */
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

/* The op's phase functions over ndarrays of these tensors (inputs then outputs): run_phases's
 * 1 / 0 / -1; 0 too when a view cannot be made. */
static int phases_over(PyObject *op, const oneshot_tensor *tensors, Py_ssize_t n_in, Py_ssize_t n_out,
                       PyObject *attrs) {
    PyObject *arrays[2 * ONESHOT_MAX_ARGS];
    Py_ssize_t made = 0;
    int rc = 0;
    if (n_in + PyTuple_GET_SIZE(attrs) + n_out > ONESHOT_MAX_ARGS) return 0; /* run_phases's bound */
    for (; made < n_in + n_out; made++)
        if ((arrays[made] = array_over(&tensors[made])) == NULL) goto done;
    rc = run_phases(op, arrays, n_in, attrs, arrays + n_in, n_out);
done:
    for (Py_ssize_t i = 0; i < made; i++) Py_DECREF(arrays[i]);
    return rc;
}

/* The output specs api.call cached for these inputs and attributes (a new reference), or NULL
 * with no exception: the one-shot specs cache of the calling thread (`cache`, or when NULL the
 * `.oneshot` of the plan cache state `state`), under api.call's key. */
static PyObject *raw_specs(PyObject *state, PyObject *cache, PyObject *op, int n_in, const oneshot_tensor *inputs,
                           PyObject *attrs) {
    Py_ssize_t n_attr = PyTuple_GET_SIZE(attrs);
    if (cache != NULL) {
        Py_INCREF(cache);
    } else {
        if (s_oneshot == NULL && (s_oneshot = PyUnicode_InternFromString("oneshot")) == NULL) goto fail;
        if ((cache = PyObject_GetAttr(state, s_oneshot)) == NULL) goto fail;
    }
    PyObject *key = PyDict_Check(cache) ? key_begin(op, attrs, n_in) : NULL;
    for (int i = 0; key != NULL && i < n_in; i++) {
        npy_intp dims[ONESHOT_API_MAX_DIMS];
        int nd = inputs[i].ndim;
        for (int d = 0; d < nd; d++) dims[d] = (npy_intp)inputs[i].dims[d];
        if (key_tensor(key, n_attr, i, inputs[i].descr, nd, dims) < 0) Py_CLEAR(key);
    }
    PyObject *specs = key != NULL ? cached_specs(cache, key) : NULL;
    Py_DECREF(cache);
    return specs;
fail:
    PyErr_Clear();
    return NULL;
}

/* Allocate the outputs of `specs` into tensors[0..n_out) through `alloc`: 1, or 0 (a spec that
 * is not one, an allocation refused). */
static int alloc_from_specs(PyObject *specs, Py_ssize_t n_out, oneshot_alloc_fn alloc, void *ctx,
                            oneshot_tensor *tensors) {
    for (Py_ssize_t i = 0; i < n_out; i++) {
        npy_intp dims[NPY_MAXDIMS];
        int64_t dims64[NPY_MAXDIMS];
        int nd;
        PyArray_Descr *descr = spec_parts(PyTuple_GET_ITEM(specs, i), &nd, dims);
        if (descr == NULL) return 0;
        for (int d = 0; d < nd; d++) dims64[d] = dims[d];
        int ok = nd <= ONESHOT_API_MAX_DIMS && alloc(ctx, (int)i, (PyObject *)descr, nd, dims64, &tensors[i]) == 0;
        Py_DECREF(descr);
        if (!ok) return 0;
    }
    return 1;
}

/* The entry of the views: api.call's hit over ndarray views of the tensors (the way of an op
 * whose phase functions are not _fastpath's, and of a call the raw hit does not take). */
static int views_run(PyObject *state, PyObject *cache, PyObject *op, int n_in, const oneshot_tensor *inputs,
                     PyObject *attrs, oneshot_alloc_fn alloc, void *ctx) {
    if (n_in < 0 || n_in > ONESHOT_MAX_ARGS || !served(op, n_in, attrs)) return 0;
    for (int i = 0; i < n_in; i++)
        if (inputs[i].ndim < 0 || inputs[i].ndim > ONESHOT_API_MAX_DIMS || !PyArray_DescrCheck(inputs[i].descr))
            return 0;
    PyObject *specs = raw_specs(state, cache, op, n_in, inputs, attrs);
    if (specs == NULL) return 0;
    Py_ssize_t n_out = PyTuple_GET_SIZE(specs);
    oneshot_tensor tensors[2 * ONESHOT_MAX_ARGS];
    int rc = 0;
    if (n_in + PyTuple_GET_SIZE(attrs) + n_out <= ONESHOT_MAX_ARGS &&
        alloc_from_specs(specs, n_out, alloc, ctx, tensors + n_in)) {
        memcpy(tensors, inputs, (size_t)n_in * sizeof *inputs);
        rc = phases_over(op, tensors, n_in, n_out, attrs);
    }
    Py_DECREF(specs);
    return rc;
}

/* ---- the raw hit: from the tensors' memory to the plan table and the launch -------------------- *
 *
 * The hit of phase 1 (fastpath_hit.c phase1_call) and of phase 2 (phase2_call) for tensors given
 * as memory, without ndarrays, Executors or calls of the phase objects: the key words come from
 * the tensors (key_put_tensor / key_put_attrs: build_key's rule), the plan from the thread's
 * table, the launch is phase2_call's. The outputs' specs are the one-shot specs cache's; the
 * Phase1's `oneshot_memo` remembers the last hit (what its key was built from, the outputs the
 * specs gave and the plan found), so that the same call again skips the specs lookup, the key
 * and the table (as Phase1's memo does for arrays): it is filled only here, only from a call
 * whose outputs the specs cache sized, and it is void when any plan is filed or freed (g_epoch),
 * in another thread, dp or search environment, or once the plan's package changed. */

/* The op's Phase1 (a new reference) when the raw hit may serve the call: _fastpath's Phase1 and
 * Phase2 of this op with these numbers of inputs and attributes, launches not observed; else
 * NULL (no exception). */
static Phase1 *raw_phase1(PyObject *op, int n_in, Py_ssize_t n_attr) {
    if (g_observed || g_launch == NULL || g_dp == NULL) return NULL;
    PyObject *p1 = PyObject_GetAttr(op, s_phase1);
    PyObject *p2 = p1 != NULL ? PyObject_GetAttr(op, s_phase2) : NULL;
    int ok = p2 != NULL && Py_TYPE(p1) == &Phase1Type && Py_TYPE(p2) == &Phase2Type && ((Phase1 *)p1)->op == op &&
             ((Phase2 *)p2)->op == op && ((Phase1 *)p1)->n_in == n_in && ((Phase1 *)p1)->n_attr == n_attr &&
             n_in + ((Phase1 *)p1)->n_out <= MAX_TENSORS;
    if (p2 == NULL) PyErr_Clear();
    Py_XDECREF(p2);
    if (!ok) Py_CLEAR(p1);
    return (Phase1 *)p1;
}

/* Whether this call is made of what the raw memo remembers (and its plan may still launch). */
static int raw_memo_match(Phase1 *p1, const oneshot_tensor *in, PyObject *const *attrs, PyObject *dpo) {
    Memo *m = &p1->oneshot_memo;
    if (m->epoch != g_epoch || m->dp != dpo) return 0;
    PyThreadState *ts = PyThreadState_Get();
    if (ts != m->ts || ts->id != m->ts_id) return 0;
    const npy_intp *shape = m->shape;
    for (Py_ssize_t i = 0; i < p1->n_in; i++) {
        int nd = in[i].ndim;
        if (in[i].descr != m->objs[i] || nd != shape[0]) return 0;
        for (int d = 0; d < nd; d++)
            if (in[i].dims[d] != shape[1 + d] || in[i].strides[d] != shape[1 + nd + d]) return 0;
        shape += 1 + 2 * nd;
    }
    Py_ssize_t ntensors = p1->n_in + p1->n_out;
    for (Py_ssize_t i = 0; i < p1->n_attr; i++)
        if (!memo_same_attr(attrs[i], m->objs[ntensors + i])) return 0;
    if (opkey_env_token_cached(&m->table->core->env) != m->env_token) return 0;
    if (!plancache_plan_fresh(m->entry)) return 0; /* the next lookup drops it */
    plancache_touch(m->table->core, m->entry);
    return 1;
}

/* Output j of the memo: its descriptor (borrowed), ndim, dims and byte strides. */
static const npy_intp *raw_memo_output(Phase1 *p1, Py_ssize_t j, PyObject **descr) {
    Memo *m = &p1->oneshot_memo;
    const npy_intp *shape = m->shape;
    for (Py_ssize_t i = 0; i < p1->n_in + j; i++) shape += 1 + 2 * shape[0];
    *descr = m->objs[p1->n_in + j];
    return shape;
}

_Static_assert(sizeof(npy_intp) == sizeof(int64_t), "oneshot_api's int64_t dims and strides are an ndarray's npy_intp");

/* Remember this call (all its tensors, attributes) and the plan `e` found for it in `t`. */
static void raw_memo_set(Phase1 *p1, const oneshot_tensor *tensors, PyObject *const *attrs, PyObject *dpo, Table *t,
                         Entry *e) {
    Py_ssize_t ntensors = p1->n_in + p1->n_out;
    MemoTensor kept[MAX_TENSORS];
    for (Py_ssize_t i = 0; i < ntensors; i++)
        kept[i] = (MemoTensor){tensors[i].descr, tensors[i].ndim, (const npy_intp *)tensors[i].dims,
                               (const npy_intp *)tensors[i].strides};
    memo_store(&p1->oneshot_memo, ntensors, kept, p1->n_attr, attrs, dpo, t, e);
}

/* The plan of the thread's table for these tensors and attributes (raw_memo_set remembers it),
 * or NULL (not keyed here, not filed, filed by the Python front end; no exception). */
static Entry *raw_lookup(Phase1 *p1, const oneshot_tensor *tensors, PyObject *const *attrs, PyObject *dpo) {
    long dp = PyLong_AsLong(dpo);
    Table *t = dp == -1 && PyErr_Occurred() ? NULL : thread_table(1);
    if (t == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_ssize_t ntensors = p1->n_in + p1->n_out;
    opkey key;
    Key k;
    opkey_begin(&key, p1->key_id, opkey_env_token_cached(&t->core->env), (uint64_t)dp, (uint32_t)ntensors,
                (uint32_t)p1->n_attr);
    int ok = 1;
    for (Py_ssize_t i = 0; i < ntensors && ok; i++)
        ok = key_put_tensor(&key, tensors[i].descr, tensors[i].ndim, tensors[i].dims, tensors[i].strides);
    ok = ok && key_put_attrs(p1, &key, attrs);
    if (!key_finish(&key, ok, &k)) return NULL;
    Entry *e = plancache_find(t->core, k.words, (size_t)k.nwords, k.hash);
    if (e == NULL || ENTRY_FRONT(e)->op != p1->op || ENTRY_FRONT(e)->python_only) return NULL;
    raw_memo_set(p1, tensors, attrs, dpo, t, e);
    return e;
}

/* Launch plan `e` on these tensors as phase2_call launches a Phase1 hit's executor: 1 ran, -1 an
 * exception (the launch failed: launch.py's _launch_failed says how). */
static int raw_launch(Entry *e, const oneshot_tensor *tensors, Py_ssize_t ntensors, uint64_t bytes) {
    void *args[MAX_TENSORS + 2];
    for (Py_ssize_t i = 0; i < ntensors; i++) args[i] = tensors[i].data;
    args[ntensors] = NULL; /* no workspace */
    args[ntensors + 1] = e->tiling;
    st_p1_hits++;
    st_p2_fast++;
    st_raw_hits++;
    if (e->empty) return 1;
    PyObject *plan = Py_NewRef(ENTRY_FRONT(e)->plan); /* (the entry may go while the GIL is released) */
    void *fn = e->fn;
    uint32_t nargs = e->nargs, block_dim = e->block_dim;
    int sync = e->sync, rc;
    if (block_dim > 1 || bytes >= RELEASE_GIL_BYTES || g_isolated()) {
        plancache_plan_ref(e); /* its tiling stays while another thread may reset the tables */
        Py_BEGIN_ALLOW_THREADS
        rc = g_launch(NULL, fn, args, nargs, block_dim, sync, NULL, 0);
        Py_END_ALLOW_THREADS
        plancache_plan_unref(e);
    } else {
        rc = g_launch(NULL, fn, args, nargs, block_dim, sync, NULL, 0);
    }
    if (rc) {
        PyObject *r = PyObject_CallOneArg(g_launch_failed, plan);
        Py_XDECREF(r);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "kernel launch failed");
        Py_DECREF(plan);
        return -1;
    }
    Py_DECREF(plan);
    return 1;
}

/* oneshot_api.run and the numpy one-shot's hit (oneshot_run): the specs cache is `cache`, or when
 * NULL the `.oneshot` of `state`. */
static int raw_call(PyObject *state, PyObject *cache, PyObject *op, int n_in, const oneshot_tensor *inputs,
                    PyObject *attrs, oneshot_alloc_fn alloc, void *ctx) {
    if (n_in < 0 || !PyTuple_CheckExact(attrs) || intern_names() < 0) {
        PyErr_Clear();
        return 0;
    }
    Phase1 *p1 = raw_phase1(op, n_in, PyTuple_GET_SIZE(attrs));
    if (p1 == NULL) return views_run(state, cache, op, n_in, inputs, attrs, alloc, ctx);
    for (int i = 0; i < n_in; i++)
        if (inputs[i].ndim < 0 || inputs[i].ndim > ONESHOT_API_MAX_DIMS || !PyArray_DescrCheck(inputs[i].descr)) {
            Py_DECREF(p1);
            return 0;
        }
    Py_ssize_t n_out = p1->n_out, ntensors = n_in + n_out;
    PyObject *const *attr_items = ((PyTupleObject *)attrs)->ob_item;
    PyObject *dpo = PyList_GET_ITEM(g_dp, 0);
    oneshot_tensor tensors[MAX_TENSORS];
    memcpy(tensors, inputs, (size_t)n_in * sizeof *inputs);
    Entry *e = NULL;
    int rc = 0;
    if (raw_memo_match(p1, inputs, attr_items, dpo)) {
        e = p1->oneshot_memo.entry;
        for (Py_ssize_t j = 0; j < n_out; j++) {
            PyObject *descr;
            const npy_intp *shape = raw_memo_output(p1, j, &descr);
            int nd = (int)shape[0];
            int64_t dims[ONESHOT_API_MAX_DIMS];
            for (int d = 0; d < nd; d++) dims[d] = shape[1 + d];
            if (alloc(ctx, (int)j, descr, nd, dims, &tensors[n_in + j]) != 0) goto done;
            for (int d = 0; d < nd; d++)
                if (tensors[n_in + j].strides[d] != shape[1 + nd + d]) e = NULL; /* keyed again below */
        }
    } else {
        PyObject *specs = raw_specs(state, cache, op, n_in, inputs, attrs);
        if (specs == NULL) goto done;
        int ok = PyTuple_GET_SIZE(specs) == n_out && alloc_from_specs(specs, n_out, alloc, ctx, tensors + n_in);
        Py_DECREF(specs);
        if (!ok) goto done;
    }
    if (e == NULL) e = raw_lookup(p1, tensors, attr_items, dpo);
    uintptr_t or_addr = 0;
    uint64_t bytes = 0;
    for (Py_ssize_t i = 0; e != NULL && i < ntensors; i++) {
        or_addr |= (uintptr_t)tensors[i].data;
        uint64_t nbytes = (uint64_t)PyDataType_ELSIZE((PyArray_Descr *)tensors[i].descr);
        for (int d = 0; d < tensors[i].ndim; d++) nbytes *= (uint64_t)tensors[i].dims[d];
        bytes += nbytes;
    }
    if (e == NULL || (or_addr & 15) || e->ws_size != 0 || e->nargs != (uint32_t)ntensors + 2)
        rc = phases_over(op, tensors, n_in, n_out, attrs); /* a miss (it files the plan), or a call to prepare */
    else
        rc = raw_launch(e, tensors, ntensors, bytes);
done:
    Py_DECREF(p1);
    return rc;
}

static int raw_run(PyObject *state, PyObject *op, int n_in, const oneshot_tensor *inputs, PyObject *attrs,
                   oneshot_alloc_fn alloc, void *ctx) {
    return raw_call(state, NULL, op, n_in, inputs, attrs, alloc, ctx);
}

static const oneshot_api g_oneshot_api = {ONESHOT_API_VERSION, raw_run};

/* The outputs a numpy one-shot's raw hit made (ndarrays). */
typedef struct {
    PyObject *arrays[ONESHOT_MAX_ARGS];
    int made;
} NumpyOutputs;

static int numpy_alloc(void *ctx, int index, PyObject *descr, int ndim, const int64_t *dims, oneshot_tensor *out) {
    NumpyOutputs *outs = ctx;
    npy_intp shape[ONESHOT_API_MAX_DIMS];
    if (index != outs->made || index >= ONESHOT_MAX_ARGS || ndim < 0 || ndim > ONESHOT_API_MAX_DIMS) return -1;
    for (int d = 0; d < ndim; d++) shape[d] = (npy_intp)dims[d];
    Py_INCREF(descr); /* stolen */
    PyObject *a = PyArray_Empty(ndim, shape, (PyArray_Descr *)descr, 0);
    if (a == NULL) { /* too large: api.call says which output */
        PyErr_Clear();
        return -1;
    }
    outs->arrays[outs->made++] = a;
    *out = (oneshot_tensor){PyArray_DATA((PyArrayObject *)a), descr, ndim, (const int64_t *)PyArray_DIMS((PyArrayObject *)a),
                            (const int64_t *)PyArray_STRIDES((PyArrayObject *)a)};
    return 0;
}


/* The numpy one-shot's hit through raw_call (the torch kernel's): the arrays' memory keyed and
 * launched without the phase objects; its output(s), NotImplemented (not served, nothing ran),
 * or NULL (an exception from the phases or the launch). */
static PyObject *oneshot_raw(PyObject *cache, PyObject *op, PyObject *inputs, PyObject *attrs) {
    Py_ssize_t n_in = PyTuple_GET_SIZE(inputs);
    oneshot_tensor tensors[MAX_TENSORS];
    if (n_in > MAX_TENSORS) Py_RETURN_NOTIMPLEMENTED;
    for (Py_ssize_t i = 0; i < n_in; i++) {
        PyArrayObject *a = (PyArrayObject *)PyTuple_GET_ITEM(inputs, i);
        if (PyArray_NDIM(a) > ONESHOT_API_MAX_DIMS) Py_RETURN_NOTIMPLEMENTED;
        tensors[i] = (oneshot_tensor){PyArray_DATA(a), (PyObject *)PyArray_DESCR(a), PyArray_NDIM(a),
                                      (const int64_t *)PyArray_DIMS(a), (const int64_t *)PyArray_STRIDES(a)};
    }
    NumpyOutputs outs;
    outs.made = 0;
    int rc = raw_call(NULL, cache, op, (int)n_in, tensors, attrs, numpy_alloc, &outs);
    PyObject *ret = NULL;
    if (rc == 0) {
        ret = Py_NewRef(Py_NotImplemented);
    } else if (rc == 1 && outs.made == 1) {
        ret = Py_NewRef(outs.arrays[0]);
    } else if (rc == 1) {
        ret = PyTuple_New(outs.made);
        if (ret != NULL)
            for (int i = 0; i < outs.made; i++) PyTuple_SET_ITEM(ret, i, Py_NewRef(outs.arrays[i]));
    }
    for (int i = 0; i < outs.made; i++) Py_DECREF(outs.arrays[i]);
    return ret;
}

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
