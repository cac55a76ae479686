/* fastpath.c: opbuild.runtime._fastpath, the C side of the per-op two-phase wrappers.
 *
 * opbuild/runtime/call/executor.py stays the reference and handles everything else. For each
 * "simple" op (required tensors, scalar attributes) the wrappers of its Python phase-1 and phase-2
 * functions are a Phase1 / Phase2 object of this module. Their cache hit -- key (opkey.h) ->
 * cached plan -> launch -- is fastpath_hit.c; this file holds the rest:
 *
 *   - the calling thread's plan table: plancache.h's table (its eviction and stamp check are
 *     the C ABI's too), owned by an object in the thread state dict (freed with the thread;
 *     cleared with the Python cache; a plan the Python cache evicts is dropped: forget);
 *   - the Python miss: phase1_slow calls the Python phase 1 with the key the hit path built
 *     (`_opkey`, so both caches file the plan under one key), registers the plan it made (its
 *     plan record, plans.executor_record, read by plancache_plan_from_record) and lets phase 2
 *     launch that executor from C (make_fast);
 *   - the Executor type (the one executor type of the runtime), Phase1 / Phase2, and the module
 *     functions: configure, the keys of normalized arguments (params_key) and of a Phase1 call
 *     (Phase1.key, key_words), reset, forget, stats.
 *
 * Every table access holds the GIL.
 */
#define FASTPATH_IMPORTS_ARRAY /* this file's module init imports the numpy API */
#include "fastpath.h"

#include <structmember.h>

/* ---- module state (set by configure(); used with the GIL held) ------------------------------- */

PyObject *g_aclnn_error;      /* opbuild.runtime.errors.AclnnError */
PyObject *g_dp;               /* settings.DP: [dp code] */
PyObject *g_py_executor;      /* executor.Executor (what the Python phase 1 returns) */
PyObject *g_launch_failed;    /* executor._launch_failed(plan): raises the launch error */
sim_launch_fn g_launch;
sim_isolated_fn g_isolated;
PyObject *g_table_key;        /* the thread-state-dict key of the plan table */
static PyObject *g_executor_record; /* plans.executor_record: the plan record of a miss (plancache.h) */

PyObject *s_opkey_kwnames;      /* ("_opkey",) */
PyObject *s_opkey_plan_kwnames; /* ("_opkey", "_plan") */
PyObject *s_args, *s_plan, *s_workspace_size, *s_selection, *s_full_key, *s_entry, *s_name, *s_deterministic,
    *s_impl_mode, *s_stamp, *s_stamp_path;

PyObject *s_zero; /* 0, phase 2's result */

unsigned long long st_p1_hits, st_p1_misses, st_p1_registered, st_p2_fast, st_p2_slow, st_raw_hits;

int configured(void) {
    if (g_aclnn_error == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "opbuild.runtime._fastpath is not configured");
        return 0;
    }
    return 1;
}

void raise_aclnn(int status, PyObject *message) {
    if (message == NULL) return;
    PyObject *exc = PyObject_CallFunction(g_aclnn_error, "iO", status, message);
    Py_DECREF(message);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

/* ---- the per-thread plan table (plancache.h) ------------------------------------------------ */

/* Bumped whenever an entry is freed or inserted (and so when a table is cleared or freed): a
 * Phase1's memo of its last hit (below) is valid only while this is unchanged. */
uint64_t g_epoch = 1;

/* An entry's front (EntryFront), released with its plan record; always with the GIL held (a
 * table is only used and freed with it). */
static void front_free(void *front) {
    EntryFront *f = front;
    g_epoch++;
    if (f == NULL) return;
    Py_XDECREF(f->plan);
    Py_XDECREF(f->ws_obj);
    Py_XDECREF(f->op);
    PyMem_Free(f);
}

static void table_dealloc(Table *t) {
    plancache_table *core = t->core;
    t->core = NULL;
    plancache_table_free(core);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "opbuild.runtime._fastpath.PlanTable",
    .tp_basicsize = sizeof(Table),
    .tp_dealloc = (destructor)table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The calling thread's plan table of the C fast path (plancache.h).",
};

/* The calling thread's table; created when `create`, else NULL (no error) when there is none. */
Table *thread_table(int create) {
    PyObject *dict = PyThreadState_GetDict();
    if (dict == NULL) return NULL;
    PyObject *t = PyDict_GetItemWithError(dict, g_table_key);
    if (t != NULL || !create || PyErr_Occurred()) return (Table *)t;
    t = PyType_GenericNew(&TableType, NULL, NULL);
    if (t == NULL) return NULL;
    ((Table *)t)->core = plancache_table_new();
    if (((Table *)t)->core == NULL) {
        Py_DECREF(t);
        PyErr_NoMemory();
        return NULL;
    }
    int rc = PyDict_SetItem(dict, g_table_key, t);
    Py_DECREF(t);
    return rc < 0 ? NULL : (Table *)t;
}

/* ---- executor allocation ----------------------------------------------------------------------- */

/* Executors of up to EXEC_FREE_ITEMS data words (a launch of up to 7 tensors) are allocated with
 * that many and recycled through a free list (every hit makes one and drops it a moment later:
 * the allocator was ~6% of a hit). The GIL guards the list; every field is set by the maker. */
#define EXEC_FREE_ITEMS 16
#define EXEC_FREE_MAX 16
static Executor *g_exec_free[EXEC_FREE_MAX];
static int g_exec_nfree;

Executor *executor_alloc(Py_ssize_t items) {
    if (items > EXEC_FREE_ITEMS) return PyObject_NewVar(Executor, &ExecutorType, items);
    if (g_exec_nfree > 0) {
        Executor *ex = g_exec_free[--g_exec_nfree];
        return (Executor *)PyObject_InitVar((PyVarObject *)ex, &ExecutorType, EXEC_FREE_ITEMS);
    }
    return PyObject_NewVar(Executor, &ExecutorType, EXEC_FREE_ITEMS);
}

/* ---- the Python miss: its call, and the registration of the plan it made ---------------------- */

/* File `plan` (the Python plan of `op`) in the calling thread's table under `words`: `e` is its
 * native plan (one reference, taken over), launchable unless `python_only`. 0, or -1 error. */
int file_entry(Entry *e, PyObject *op, PyObject *plan, int python_only) {
    Table *t = thread_table(1);
    EntryFront *f = t != NULL ? PyMem_Calloc(1, sizeof(EntryFront)) : NULL;
    if (f == NULL) {
        plancache_plan_unref(e);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    f->op = Py_NewRef(op);
    f->plan = Py_NewRef(plan);
    f->python_only = python_only;
    e->front = f;
    e->front_free = front_free;
    if (!python_only && (f->ws_obj = PyLong_FromUnsignedLongLong(e->ws_size)) == NULL) {
        plancache_plan_unref(e);
        return -1;
    }
    g_epoch++;
    int rc = plancache_insert(t->core, e);
    plancache_plan_unref(e); /* the table's reference remains */
    if (rc < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* File the Python plan `plan` of `op` under `words` for Python lookups only (python_only: no
 * launch data; the C hit hands it to the Python phase 1), with the plan's package stamp
 * (plan.stamp_path, plan.stamp: checked like every other). 0 (not filed when the stamp cannot
 * be kept), or -1 error. */
static int file_python_plan(const uint64_t *words, size_t n, PyObject *op, PyObject *plan) {
    PyObject *stamp = PyObject_GetAttr(plan, s_stamp);
    if (stamp == NULL) return -1;
    PyObject *path = stamp != Py_None ? PyObject_GetAttr(plan, s_stamp_path) : Py_NewRef(Py_None);
    int64_t words3[3] = {0, 0, 0};
    const char *cpath = NULL;
    int rc = -1;
    if (path == NULL) goto out;
    if (stamp != Py_None) {
        if (!PyTuple_Check(stamp) || PyTuple_GET_SIZE(stamp) != 3 || !PyUnicode_Check(path)) {
            PyErr_SetString(PyExc_TypeError, "plan.stamp must be a 3-tuple and plan.stamp_path a str");
            goto out;
        }
        for (int i = 0; i < 3; i++) {
            words3[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(stamp, i));
            if (PyErr_Occurred()) goto out;
        }
        if ((cpath = PyUnicode_AsUTF8(path)) == NULL) goto out;
    }
    Entry *e = plancache_plan_new(words, n);
    if (e == NULL) {
        PyErr_NoMemory();
        goto out;
    }
    if (cpath != NULL && plancache_plan_stamp(e, cpath, words3) < 0) {
        plancache_plan_unref(e); /* a stamp that cannot be kept: the plan is not cached */
        rc = 0;
        goto out;
    }
    rc = file_entry(e, op, plan, 1);
out:
    Py_DECREF(stamp);
    Py_XDECREF(path);
    return rc;
}

/* Register the plan of `ex` (the executor of a miss this path keyed) under the call's key: its
 * plan record (plans.executor_record, parsed by the one parser, plancache_plan_from_record) as a
 * launchable entry, 1 and the entry in *registered; a plan whose calls cannot be launched from
 * the key alone (no record) for Python lookups only, 0; -1 error (a malformed record is a
 * ValueError naming what is wrong). */
static int register_plan(Phase1 *self, Key *k, PyObject *ex, PyObject *plan, Entry **registered) {
    PyObject *rec = PyObject_CallOneArg(g_executor_record, ex);
    if (rec == NULL) return -1;
    if (rec == Py_None) {
        Py_DECREF(rec);
        return file_python_plan(k->words, (size_t)k->nwords, self->op, plan);
    }
    if (!PyBytes_Check(rec)) {
        PyErr_Format(PyExc_TypeError, "executor_record returned %.100s, not bytes", Py_TYPE(rec)->tp_name);
        Py_DECREF(rec);
        return -1;
    }
    char err[256];
    Entry *e = plancache_plan_from_record(PyBytes_AS_STRING(rec), (size_t)PyBytes_GET_SIZE(rec), k->words,
                                          (size_t)k->nwords, 0, err, sizeof err);
    Py_DECREF(rec);
    if (e == NULL) {
        PyObject *name = self->dict != NULL ? PyDict_GetItemString(self->dict, "__name__") : NULL;
        PyErr_Format(PyExc_ValueError, "%S: %s", name != NULL ? name : self->op, err);
        return -1;
    }
    if (e->ntensors != (uint32_t)(self->n_in + self->n_out)) {
        plancache_plan_unref(e);
        return file_python_plan(k->words, (size_t)k->nwords, self->op, plan);
    }
    if (file_entry(e, self->op, plan, 0) < 0) return -1;
    st_p1_registered++;
    *registered = e;
    return 1;
}

/* Make the executor the Python miss returned launchable by Phase2 in C, as a hit's: its launch
 * arguments are the call's as they are (the Python path packed them: executor._direct_args) and
 * its plan is `e`'s. */
static void make_fast(Executor *ex, Entry *e, Phase1 *self, PyObject *const *args) {
    if (Py_TYPE(ex) != &ExecutorType || !ex->has_args || ex->ntensors != 0 || ex->nargs != e->nargs) return;
    Py_ssize_t n_in = self->n_in, ntensors = n_in + self->n_out;
    uint64_t bytes = 0;
    for (Py_ssize_t i = 0; i < ntensors; i++)
        bytes += (uint64_t)PyArray_NBYTES((PyArrayObject *)args[i < n_in ? i : i + self->n_attr]);
    ex->block_dim = e->block_dim;
    ex->sync = e->sync;
    ex->empty = e->empty;
    ex->ws_size = e->ws_size;
    ex->fn = e->fn;
    ex->release_gil = e->block_dim > 1 || bytes >= RELEASE_GIL_BYTES;
    ex->fast = 1;
}

/* The Python phase 1 of a call this path keyed: its key words as the keyword argument `_opkey`
 * (bytes), so that the Python cache files the plan under the same key (executor.get_workspace_size).
 * Only calls whose deterministic/impl_mode keywords are absent or None get a key: they are dropped. */
static PyObject *call_slow_with_key(Phase1 *self, PyObject *const *args, Py_ssize_t nargs, Key *k,
                                    PyObject *python_plan) {
    PyObject *stack[MAX_TENSORS + MAX_ATTRS + 2];
    PyObject *key = PyBytes_FromStringAndSize((const char *)k->words, k->nwords * (Py_ssize_t)sizeof(uint64_t));
    if (key == NULL) return NULL;
    memcpy(stack, args, (size_t)nargs * sizeof(PyObject *));
    stack[nargs] = key;
    stack[nargs + 1] = python_plan;
    PyObject *res = PyObject_Vectorcall(self->slow, stack, (size_t)nargs,
                                        python_plan != NULL ? s_opkey_plan_kwnames : s_opkey_kwnames);
    Py_DECREF(key);
    return res;
}

PyObject *phase1_slow(Phase1 *self, PyObject *const *args, size_t nargsf, PyObject *kwnames, Key *k, long dp,
                      PyObject *python_plan) {
    st_p1_misses++;
    PyObject *res = k == NULL ? PyObject_Vectorcall(self->slow, args, nargsf, kwnames)
                              : call_slow_with_key(self, args, PyVectorcall_NARGS(nargsf), k, python_plan);
    if (res == NULL || k == NULL) return res;
    if (!PyTuple_CheckExact(res) || PyTuple_GET_SIZE(res) != 2) return res;
    PyObject *ex = PyTuple_GET_ITEM(res, 1);
    if ((PyObject *)Py_TYPE(ex) != g_py_executor) return res;
    /* settings changed meanwhile (another thread): the plan may be of another dp */
    if (PyLong_AsLong(PyList_GET_ITEM(g_dp, 0)) != dp) return res;
    PyObject *a = PyObject_GetAttr(ex, s_args);
    if (a == NULL) {
        Py_DECREF(res);
        return NULL;
    }
    int direct = a != Py_None;
    Py_DECREF(a);
    PyObject *plan = PyObject_GetAttr(ex, s_plan);
    if (plan == NULL) {
        Py_DECREF(res);
        return NULL;
    }
    /* This path keyed the call, so it files the plan (the Python phase 1 does not): launchable
     * when the executor launches the call's arrays as they are, else for Python lookups only
     * (unless that is the entry the plan came from). */
    Entry *e = NULL;
    int rc = direct ? register_plan(self, k, ex, plan, &e)
                    : plan == python_plan ? 0 : file_python_plan(k->words, (size_t)k->nwords, self->op, plan);
    if (rc > 0) {
        /* a launchable plan: the next miss of its call signature may run natively */
        plancache_plan_ref(e);
        make_fast((Executor *)ex, e, self, args);
        if (signature_register(self, k, e, plan) < 0) rc = -1;
        plancache_plan_unref(e);
    }
    Py_DECREF(plan);
    if (rc < 0) {
        Py_DECREF(res);
        return NULL;
    }
    return res;
}

/* ---- the Phase1 type ------------------------------------------------------------------------- */

static PyObject *phase1_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *op, *slow;
    Py_ssize_t n_in, n_attr, n_out, n_kinds;
    unsigned long long key_id;
    const char *kinds;
    static char *kwlist[] = {"op", "n_inputs", "n_attrs", "n_outputs", "slow", "key_id", "attr_kinds", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OnnnOKy#:Phase1", kwlist, &op, &n_in, &n_attr, &n_out, &slow,
                                     &key_id, &kinds, &n_kinds))
        return NULL;
    if (n_kinds != n_attr) {
        PyErr_SetString(PyExc_ValueError, "Phase1: one attribute kind per attribute");
        return NULL;
    }
    if (!configured()) return NULL;
    if (n_in < 0 || n_attr < 0 || n_out < 0 || n_in + n_out > MAX_TENSORS || n_attr > MAX_ATTRS ||
        !PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_ValueError, "Phase1: bad parameter counts or slow function");
        return NULL;
    }
    Phase1 *self = (Phase1 *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = (vectorcallfunc)phase1_call;
    self->op = Py_NewRef(op);
    self->slow = Py_NewRef(slow);
    self->n_in = n_in;
    self->n_attr = n_attr;
    self->n_out = n_out;
    self->key_id = key_id;
    memcpy(self->attr_kind, kinds, (size_t)n_kinds);
    return (PyObject *)self;
}

/* phase1.key(dp, *args) -> the call's key words as bytes (opkey.h; what the cache files its plan
 * under), or None for a call this path does not key (the Python path then uses its generic key).
 * `dp` is the call's resolved deterministic/impl-mode code (a Python call may set its own). */
static PyObject *phase1_key(Phase1 *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "key(dp, *args)");
        return NULL;
    }
    if (!configured()) return NULL;
    long dp = PyLong_AsLong(args[0]);
    if (dp == -1 && PyErr_Occurred()) return NULL;
    if (nargs - 1 != self->n_in + self->n_attr + self->n_out) Py_RETURN_NONE;
    Table *t = thread_table(1);
    if (t == NULL) return NULL;
    Key k;
    int rc = build_key(self, args + 1, &k, dp, &t->core->env);
    if (rc < 0) return NULL;
    if (rc == 0) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)k.words, k.nwords * (Py_ssize_t)sizeof(uint64_t));
}

static PyMethodDef phase1_methods[] = {
    {"key", (PyCFunction)(void (*)(void))phase1_key, METH_FASTCALL,
     "key(dp, *args): the call's cache key (opkey.h words as bytes), or None when this path does not key it"},
    {NULL},
};

static int phase1_traverse(Phase1 *self, visitproc visit, void *arg) {
    for (Memo *m = &self->memo; m != NULL; m = m == &self->memo ? &self->oneshot_memo : NULL) {
        Py_VISIT(m->dp);
        for (Py_ssize_t i = 0; m->objs != NULL && i < self->n_in + self->n_out + self->n_attr; i++)
            Py_VISIT(m->objs[i]);
    }
    Py_VISIT(self->op);
    Py_VISIT(self->slow);
    Py_VISIT(self->dict);
    return signature_programs_traverse(self, visit, arg);
}

static int phase1_clear(Phase1 *self) {
    memo_release(self);
    signature_programs_release(self);
    Py_CLEAR(self->op);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->dict);
    return 0;
}

static void phase1_dealloc(Phase1 *self) {
    PyObject_GC_UnTrack(self);
    phase1_clear(self);
    PyMem_Free(self->memo.objs);
    PyMem_Free(self->memo.shape);
    PyMem_Free(self->oneshot_memo.objs);
    PyMem_Free(self->oneshot_memo.shape);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef phase1_members[] = {
    {"op", T_OBJECT, offsetof(Phase1, op), READONLY, NULL},
    {"slow", T_OBJECT, offsetof(Phase1, slow), READONLY, "the Python phase-1 function (the reference path)"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Phase1, vectorcall), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(Phase1, dict), READONLY, NULL},
    {NULL},
};

PyTypeObject Phase1Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "opbuild.runtime._fastpath.Phase1",
    .tp_basicsize = sizeof(Phase1),
    .tp_dealloc = (destructor)phase1_dealloc,
    .tp_vectorcall_offset = offsetof(Phase1, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Phase1(op, n_inputs, n_attrs, n_outputs, slow): phase 1 of an op, cache hits in C.",
    .tp_traverse = (traverseproc)phase1_traverse,
    .tp_clear = (inquiry)phase1_clear,
    .tp_members = phase1_members,
    .tp_methods = phase1_methods,
    .tp_dictoffset = offsetof(Phase1, dict),
    .tp_new = phase1_new,
};

/* ---- executors ------------------------------------------------------------------------------ */

static void executor_dealloc(Executor *self) {
    for (uint32_t i = 0; i < self->ntensors; i++) Py_XDECREF((PyObject *)(uintptr_t)self->data[i]);
    Py_XDECREF(self->plan);
    Py_XDECREF(self->op);
    Py_XDECREF(self->refs);
    Py_XDECREF(self->inputs);
    Py_XDECREF(self->outputs);
    if (Py_SIZE(self) == EXEC_FREE_ITEMS && g_exec_nfree < EXEC_FREE_MAX) g_exec_free[g_exec_nfree++] = self;
    else PyObject_Free(self);
}

/* Executor(plan, op, refs, args, inputs=None, outputs=None): what the Python phase 1 makes (the
 * one Executor type; executor.PyExecutor is its equivalent without this extension). `args` is
 * the packed launch-argument array (bytes of native uint64) or None. */
static PyObject *executor_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *plan, *op, *refs, *packed, *inputs = Py_None, *outputs = Py_None;
    static char *kwlist[] = {"plan", "op", "refs", "args", "inputs", "outputs", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO|OO:Executor", kwlist, &plan, &op, &refs, &packed, &inputs,
                                     &outputs))
        return NULL;
    Py_ssize_t nbytes = 0;
    if (packed != Py_None) {
        if (!PyBytes_Check(packed) || PyBytes_GET_SIZE(packed) % 8) {
            PyErr_SetString(PyExc_TypeError, "Executor: args must be packed uint64 bytes or None");
            return NULL;
        }
        nbytes = PyBytes_GET_SIZE(packed);
    }
    (void)type; /* ExecutorType: not subclassable */
    Executor *ex = executor_alloc(nbytes / 8 + 1);
    if (ex == NULL) return NULL;
    ex->plan = Py_NewRef(plan);
    ex->op = Py_NewRef(op);
    ex->refs = Py_NewRef(refs);
    ex->inputs = inputs == Py_None ? NULL : Py_NewRef(inputs);
    ex->outputs = outputs == Py_None ? NULL : Py_NewRef(outputs);
    ex->ntensors = 0;
    ex->nargs = (uint32_t)(nbytes / 8);
    ex->has_args = packed != Py_None;
    if (nbytes) memcpy(ex->data, PyBytes_AS_STRING(packed), (size_t)nbytes);
    ex->fast = 0;
    ex->block_dim = 0;
    ex->sync = ex->empty = ex->repeatable = ex->used = ex->release_gil = 0;
    ex->ws_size = 0;
    ex->fn = NULL;
    return (PyObject *)ex;
}

static PyObject *executor_obj(Executor *self, void *which) {
    PyObject *o = which == NULL ? self->inputs : self->outputs;
    return Py_NewRef(o ? o : Py_None);
}

static PyObject *executor_fast(Executor *self, void *unused) {
    (void)unused;
    return PyBool_FromLong(self->fast);
}

static PyObject *executor_refs(Executor *self, void *unused) {
    (void)unused;
    if (self->refs != NULL) return Py_NewRef(self->refs);
    PyObject *t = PyTuple_New(self->ntensors);
    if (t == NULL) return NULL;
    for (uint32_t i = 0; i < self->ntensors; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef((PyObject *)(uintptr_t)self->data[i]));
    return t;
}

static PyObject *executor_args(Executor *self, void *unused) {
    (void)unused;
    if (!self->has_args) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)(self->data + self->ntensors), (Py_ssize_t)self->nargs * 8);
}

static PyObject *executor_get_flag(Executor *self, void *which) {
    return PyBool_FromLong(which ? self->used : self->repeatable);
}

static int executor_set_flag(Executor *self, PyObject *value, void *which) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete this attribute");
        return -1;
    }
    int v = PyObject_IsTrue(value);
    if (v < 0) return -1;
    if (which) self->used = v;
    else self->repeatable = v;
    return 0;
}

static PyObject *executor_simplified_key(Executor *self, void *unused) {
    (void)unused;
    PyObject *sel = PyObject_GetAttr(self->plan, s_selection);
    if (sel == NULL) return NULL;
    PyObject *r = PyObject_GetAttr(sel, s_full_key);
    Py_DECREF(sel);
    return r;
}

static PyObject *executor_binary_name(Executor *self, void *unused) {
    (void)unused;
    PyObject *sel = PyObject_GetAttr(self->plan, s_selection);
    if (sel == NULL) return NULL;
    PyObject *entry = PyObject_GetAttr(sel, s_entry);
    Py_DECREF(sel);
    if (entry == NULL) return NULL;
    PyObject *r = PyObject_GetAttr(entry, s_name);
    Py_DECREF(entry);
    return r;
}

static PyObject *executor_workspace_size(Executor *self, void *unused) {
    (void)unused;
    return PyObject_GetAttr(self->plan, s_workspace_size);
}

static PyObject *executor_set_repeatable(Executor *self, PyObject *args, PyObject *kwds) {
    PyObject *value = Py_True;
    static char *kwlist[] = {"repeatable", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:set_repeatable", kwlist, &value)) return NULL;
    if (executor_set_flag(self, value, NULL) < 0) return NULL;
    return Py_NewRef(self);
}

static PyObject *executor_repr(Executor *self) {
    PyObject *key = executor_simplified_key(self, NULL);
    PyObject *name = key ? executor_binary_name(self, NULL) : NULL;
    PyObject *ws = name ? executor_workspace_size(self, NULL) : NULL;
    PyObject *r = ws ? PyUnicode_FromFormat("Executor(%S -> %S, workspace=%S)", key, name, ws) : NULL;
    Py_XDECREF(key);
    Py_XDECREF(name);
    Py_XDECREF(ws);
    return r;
}

static PyMemberDef executor_members[] = {
    {"plan", T_OBJECT, offsetof(Executor, plan), READONLY, NULL},
    {"op", T_OBJECT, offsetof(Executor, op), READONLY, NULL},
    {NULL},
};

static PyGetSetDef executor_getset[] = {
    {"refs", (getter)executor_refs, NULL, "the call's arrays (kept alive while the executor lives)", NULL},
    {"args", (getter)executor_args, NULL, "the launch-argument array as packed native uint64", NULL},
    {"inputs", (getter)executor_obj, NULL, "the normalized inputs of a prepared launch, or None", NULL},
    {"outputs", (getter)executor_obj, NULL, "the normalized outputs of a prepared launch, or None", (void *)1},
    {"fast", (getter)executor_fast, NULL,
     "phase 2 launches it in C: made by a cache hit of this path, or by a miss whose plan it registered", NULL},
    {"repeatable", (getter)executor_get_flag, (setter)executor_set_flag, NULL, NULL},
    {"used", (getter)executor_get_flag, (setter)executor_set_flag, NULL, (void *)1},
    {"simplified_key", (getter)executor_simplified_key, NULL, NULL, NULL},
    {"binary_name", (getter)executor_binary_name, NULL, NULL, NULL},
    {"workspace_size", (getter)executor_workspace_size, NULL, NULL, NULL},
    {NULL},
};

/* executor.set_arg(slot, address): re-point launch argument `slot` (a tensor) at `address`
 * (aclSetInputTensorAddr & co). False when the executor prepares its arguments in phase 2. */
static PyObject *executor_set_arg(Executor *self, PyObject *args) {
    unsigned int slot;
    unsigned long long address;
    if (!PyArg_ParseTuple(args, "IK:set_arg", &slot, &address)) return NULL;
    if (!self->has_args) Py_RETURN_FALSE;
    if (self->nargs < 2 || slot >= self->nargs - 2) { /* the last two: workspace, tiling */
        PyErr_Format(PyExc_IndexError, "tensor slot %u out of range: the executor has %u tensors", slot,
                     self->nargs < 2 ? 0 : self->nargs - 2);
        return NULL;
    }
    self->data[self->ntensors + slot] = (uint64_t)address;
    Py_RETURN_TRUE;
}

static PyMethodDef executor_methods[] = {
    {"set_repeatable", (PyCFunction)(void (*)(void))executor_set_repeatable, METH_VARARGS | METH_KEYWORDS,
     "Allow phase 2 to run this executor more than once (aclSetAclOpExecutorRepeatable)."},
    {"set_arg", (PyCFunction)executor_set_arg, METH_VARARGS,
     "Re-point tensor launch argument `slot` at `address` (aclSetInputTensorAddr); False if phase 2 prepares them."},
    {NULL},
};

PyTypeObject ExecutorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "opbuild.runtime._fastpath.Executor",
    .tp_basicsize = offsetof(Executor, data),
    .tp_itemsize = sizeof(uint64_t),
    .tp_dealloc = (destructor)executor_dealloc,
    .tp_repr = (reprfunc)executor_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The product of phase 1: a plan bound to a call's tensors. Runs once unless repeatable.",
    .tp_new = executor_new,
    .tp_methods = executor_methods,
    .tp_members = executor_members,
    .tp_getset = executor_getset,
};

/* ---- the Phase2 type ------------------------------------------------------------------------- */

static PyObject *phase2_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *op, *slow;
    static char *kwlist[] = {"op", "slow", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:Phase2", kwlist, &op, &slow)) return NULL;
    if (!configured()) return NULL;
    if (g_launch == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Phase2: no sim_launch configured");
        return NULL;
    }
    Phase2 *self = (Phase2 *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = (vectorcallfunc)phase2_call;
    self->op = Py_NewRef(op);
    self->slow = Py_NewRef(slow);
    return (PyObject *)self;
}

static int phase2_traverse(Phase2 *self, visitproc visit, void *arg) {
    Py_VISIT(self->op);
    Py_VISIT(self->slow);
    Py_VISIT(self->dict);
    return 0;
}

static int phase2_clear(Phase2 *self) {
    Py_CLEAR(self->op);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->dict);
    return 0;
}

static void phase2_dealloc(Phase2 *self) {
    PyObject_GC_UnTrack(self);
    phase2_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef phase2_members[] = {
    {"op", T_OBJECT, offsetof(Phase2, op), READONLY, NULL},
    {"slow", T_OBJECT, offsetof(Phase2, slow), READONLY, "the Python phase-2 function (the reference path)"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Phase2, vectorcall), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(Phase2, dict), READONLY, NULL},
    {NULL},
};

PyTypeObject Phase2Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "opbuild.runtime._fastpath.Phase2",
    .tp_basicsize = sizeof(Phase2),
    .tp_dealloc = (destructor)phase2_dealloc,
    .tp_vectorcall_offset = offsetof(Phase2, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Phase2(op, slow): phase 2 of an op, the plain default-stream launch in C.",
    .tp_traverse = (traverseproc)phase2_traverse,
    .tp_clear = (inquiry)phase2_clear,
    .tp_members = phase2_members,
    .tp_dictoffset = offsetof(Phase2, dict),
    .tp_new = phase2_new,
};

/* ---- module functions ----------------------------------------------------------------------- */

static PyObject *fp_configure(PyObject *mod, PyObject *args, PyObject *kwds) {
    (void)mod;
    PyObject *err, *dp, *py_executor, *launch_failed, *codes, *record;
    unsigned long long launch = 0, isolated = 0;
    static char *kwlist[] = {"aclnn_error", "dp", "executor_type", "launch_failed", "sim_launch",
                             "dtype_codes", "sim_isolated", "executor_record", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOKO!KO:configure", kwlist, &err, &PyList_Type, &dp,
                                     &py_executor, &launch_failed, &launch, &PyDict_Type,
                                     &codes, &isolated, &record))
        return NULL;
    if (!PyCallable_Check(record)) {
        PyErr_SetString(PyExc_TypeError, "configure: executor_record must be callable");
        return NULL;
    }
    Py_XSETREF(g_executor_record, Py_NewRef(record));
    if (!launch || !isolated) {
        PyErr_SetString(PyExc_ValueError, "configure: sim_launch and sim_isolated must be function addresses");
        return NULL;
    }
    Py_XSETREF(g_dtype_codes, Py_NewRef(codes));
    if (PyList_GET_SIZE(dp) != 1) {
        PyErr_SetString(PyExc_ValueError, "configure: dp must be a one-element list");
        return NULL;
    }
    Py_XSETREF(g_aclnn_error, Py_NewRef(err));
    Py_XSETREF(g_dp, Py_NewRef(dp));
    Py_XSETREF(g_py_executor, Py_NewRef(py_executor));
    Py_XSETREF(g_launch_failed, Py_NewRef(launch_failed));
    g_launch = (sim_launch_fn)(uintptr_t)launch;
    g_isolated = (sim_isolated_fn)(uintptr_t)isolated;
    Py_RETURN_NONE;
}

/* key_words(phase1, *args): the key words the C path builds for this call (None if it does not
 * handle it): what tests compare with cache_key.key_words. */
static PyObject *fp_key_words(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs < 1 || Py_TYPE(args[0]) != &Phase1Type) {
        PyErr_SetString(PyExc_TypeError, "key_words(phase1, *args)");
        return NULL;
    }
    Phase1 *self = (Phase1 *)args[0];
    if (nargs - 1 != self->n_in + self->n_attr + self->n_out) Py_RETURN_NONE;
    long dp = PyLong_AsLong(PyList_GET_ITEM(g_dp, 0));
    Key k;
    int rc = build_key(self, args + 1, &k, dp, NULL);
    if (rc < 0) return NULL;
    if (rc == 0) Py_RETURN_NONE;
    PyObject *list = PyList_New(k.nwords);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < k.nwords; i++) PyList_SET_ITEM(list, i, PyLong_FromUnsignedLongLong(k.words[i]));
    return list;
}

/* One normalized tensor ((array, format name) of executor.normalize_tensors) into the key; 1 done,
 * 0 strides not in whole elements (not keyable), -1 error. */
static int params_key_tensor(opkey *key, PyObject *pair, PyObject *formats) {
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyArray_Check(PyTuple_GET_ITEM(pair, 0))) {
        PyErr_SetString(PyExc_TypeError, "params_key: a tensor is an (array, format name) pair");
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)PyTuple_GET_ITEM(pair, 0);
    int code = PyArray_ISBYTESWAPPED(a) ? -1 : dtype_code((PyObject *)PyArray_DESCR(a));
    PyObject *fmt = PyDict_GetItemWithError(formats, PyTuple_GET_ITEM(pair, 1));
    if (code < 0 || fmt == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "params_key: dtype or format without a GE code");
        return -1;
    }
    long fmt_code = PyLong_AsLong(fmt);
    if (fmt_code == -1 && PyErr_Occurred()) return -1;
    int nd = PyArray_NDIM(a);
    npy_intp itemsize = PyArray_ITEMSIZE(a);
    if (nd > 64 || itemsize <= 0) return 0;
    int64_t dims[64], strides[64];
    for (int d = 0; d < nd; d++) {
        npy_intp st = PyArray_STRIDES(a)[d];
        if (st % itemsize) return 0;
        dims[d] = PyArray_DIMS(a)[d];
        strides[d] = st / itemsize;
    }
    opkey_tensor(key, code, fmt_code, (uint64_t)nd, dims, strides, 0);
    return 1;
}

/* One normalized attribute value of key tag `tag` into the key; 1 done, 0 not representable (an
 * int out of int64, a string that is not UTF-8), -1 error. */
static int params_key_attr(opkey *key, int tag, PyObject *v) {
    if (tag == OPKEY_STR) {
        Py_ssize_t len;
        const char *text = PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, &len) : NULL;
        if (text == NULL) {
            PyErr_Clear();
            return 0;
        }
        opkey_str(key, text, (size_t)len);
        return 1;
    }
    int is_list = tag == OPKEY_INTS || tag == OPKEY_FLOATS || tag == OPKEY_BOOLS;
    PyObject *seq = is_list ? PySequence_Fast(v, "params_key: a list attribute is a sequence") : Py_NewRef(v);
    if (seq == NULL) return -1;
    Py_ssize_t n = is_list ? PySequence_Fast_GET_SIZE(seq) : 1;
    PyObject **items = is_list ? PySequence_Fast_ITEMS(seq) : &seq;
    int64_t *ints = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    double *reals = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(double));
    uint8_t *flags = PyMem_Malloc((size_t)(n ? n : 1));
    int rc = ints && reals && flags ? 1 : -1;
    if (rc < 0) PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n && rc == 1; i++) {
        PyObject *x = items[i];
        if (tag == OPKEY_INT || tag == OPKEY_INTS) {
            int overflow;
            ints[i] = PyLong_AsLongLongAndOverflow(x, &overflow);
            if (overflow) rc = 0;
            else if (ints[i] == -1 && PyErr_Occurred()) rc = -1;
        } else if (tag == OPKEY_FLOAT || tag == OPKEY_FLOATS) {
            reals[i] = PyFloat_AsDouble(x);
            if (reals[i] == -1.0 && PyErr_Occurred()) {
                rc = PyErr_ExceptionMatches(PyExc_OverflowError) ? 0 : -1;
                if (rc == 0) PyErr_Clear();
            }
        } else if (tag == OPKEY_BOOL || tag == OPKEY_BOOLS) {
            int t = PyObject_IsTrue(x);
            if (t < 0) rc = -1;
            flags[i] = (uint8_t)t;
        } else {
            PyErr_Format(PyExc_ValueError, "params_key: unknown attribute tag %d", tag);
            rc = -1;
        }
    }
    if (rc == 1) {
        switch (tag) {
        case OPKEY_INT: opkey_int(key, ints[0]); break;
        case OPKEY_FLOAT: opkey_float(key, reals[0]); break;
        case OPKEY_BOOL: opkey_bool(key, flags[0]); break;
        case OPKEY_INTS: opkey_ints(key, ints, (uint64_t)n); break;
        case OPKEY_FLOATS: opkey_floats(key, reals, (uint64_t)n); break;
        default: opkey_bools(key, flags, (uint64_t)n); break;
        }
    }
    PyMem_Free(ints);
    PyMem_Free(reals);
    PyMem_Free(flags);
    Py_DECREF(seq);
    return rc;
}

/* params_key(op_id, dp, slot_kinds, params, formats, attr_tags, attrs) -> the cache key (opkey.h
 * words as bytes) of a call given as normalized tensors and attributes: what executor.py files
 * the calls the simple key does not cover under (optional or list parameters, other formats,
 * Tensors). params: per IR parameter (inputs, then outputs) a list of (array, format name);
 * slot_kinds: per parameter 0 (one tensor, [] when absent) or 1 (a tensor list); formats: {format
 * name: GE code}; attr_tags: per attribute its OPKEY_* tag. None when a tensor's strides are not
 * in whole elements or a value has no key encoding (the call is then planned without the
 * cache). cache_key.params_key is the pure-Python equivalent. */
static PyObject *fp_params_key(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 7 || !PyBytes_Check(args[2]) || !PyDict_Check(args[4]) || !PyBytes_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "params_key(op_id, dp, slot_kinds: bytes, params, formats: dict, "
                                         "attr_tags: bytes, attrs)");
        return NULL;
    }
    if (!configured()) return NULL;
    unsigned long long op_id = PyLong_AsUnsignedLongLong(args[0]);
    long dp = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    PyObject *params = PySequence_Fast(args[3], "params_key: params is a sequence");
    if (params == NULL) return NULL;
    PyObject *attrs = PySequence_Fast(args[6], "params_key: attrs is a sequence");
    if (attrs == NULL) {
        Py_DECREF(params);
        return NULL;
    }
    const char *kinds = PyBytes_AS_STRING(args[2]), *tags = PyBytes_AS_STRING(args[5]);
    Py_ssize_t nslots = PySequence_Fast_GET_SIZE(params), nattrs = PySequence_Fast_GET_SIZE(attrs);
    PyObject *result = NULL;
    if (nslots != PyBytes_GET_SIZE(args[2]) || nattrs != PyBytes_GET_SIZE(args[5])) {
        PyErr_SetString(PyExc_ValueError, "params_key: one kind per parameter and one tag per attribute");
        Py_DECREF(params);
        Py_DECREF(attrs);
        return NULL;
    }
    Table *t = thread_table(1);
    if (t == NULL) {
        Py_DECREF(params);
        Py_DECREF(attrs);
        return NULL;
    }
    opkey key;
    opkey_begin(&key, op_id, opkey_env_token_cached(&t->core->env), (uint64_t)dp, (uint32_t)nslots, (uint32_t)nattrs);
    int rc = 1;
    for (Py_ssize_t i = 0; i < nslots && rc == 1; i++) {
        PyObject *group = PySequence_Fast(PySequence_Fast_GET_ITEM(params, i), "params_key: a parameter is a list");
        if (group == NULL) {
            rc = -1;
            break;
        }
        Py_ssize_t m = PySequence_Fast_GET_SIZE(group);
        if (kinds[i]) opkey_list(&key, (uint64_t)m);
        else if (m == 0) opkey_absent(&key);
        else if (m != 1) {
            PyErr_SetString(PyExc_ValueError, "params_key: a single parameter has one tensor or none");
            rc = -1;
        }
        for (Py_ssize_t k = 0; k < m && rc == 1; k++)
            rc = params_key_tensor(&key, PySequence_Fast_GET_ITEM(group, k), args[4]);
        Py_DECREF(group);
    }
    for (Py_ssize_t i = 0; i < nattrs && rc == 1; i++)
        rc = params_key_attr(&key, (unsigned char)tags[i], PySequence_Fast_GET_ITEM(attrs, i));
    if (rc == 1 && !key.failed)
        result = PyBytes_FromStringAndSize((const char *)key.w, (Py_ssize_t)(key.n * sizeof(uint64_t)));
    else if (rc >= 0)
        result = Py_NewRef(Py_None);
    opkey_free(&key);
    Py_DECREF(params);
    Py_DECREF(attrs);
    return result;
}

static PyObject *fp_set_observed(PyObject *mod, PyObject *arg) {
    (void)mod;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    g_observed = n;
    Py_RETURN_NONE;
}

static PyObject *fp_reset(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    if (g_table_key == NULL) Py_RETURN_NONE;
    Table *t = thread_table(0);
    if (t == NULL && PyErr_Occurred()) return NULL;
    if (t != NULL) plancache_table_clear(t->core);
    Py_RETURN_NONE;
}

/* env_token(): the search environment's token (opkey.h), through the calling thread's table's cache. */
static PyObject *fp_env_token(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    Table *t = g_table_key != NULL ? thread_table(1) : NULL;
    if (t == NULL && PyErr_Occurred()) return NULL;
    return PyLong_FromUnsignedLongLong(t != NULL ? opkey_env_token_cached(&t->core->env) : opkey_env_token());
}

/* ---- the Python front end's lookups (plan_cache.NativePlanTable) ------------------------------ */

/* The words of a key given as bytes (a whole number of words), or -1 with TypeError. */
static Py_ssize_t key_of(PyObject *key, const uint64_t **words) {
    if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) % (Py_ssize_t)sizeof(uint64_t) != 0 || PyBytes_GET_SIZE(key) == 0) {
        PyErr_SetString(PyExc_TypeError, "a plan key is bytes of whole 64-bit words (opkey.h)");
        return -1;
    }
    *words = (const uint64_t *)PyBytes_AS_STRING(key); /* (bytes data is aligned) */
    return PyBytes_GET_SIZE(key) / (Py_ssize_t)sizeof(uint64_t);
}

/* The calling thread's plan filed under `key` (bytes of words), or NULL (none; or an error set). */
static Entry *find_by_key(PyObject *key) {
    const uint64_t *words;
    Py_ssize_t n = key_of(key, &words);
    Table *t = n < 0 ? NULL : thread_table(0);
    return t == NULL ? NULL : plancache_find(t->core, words, (size_t)n, opkey_hash(words, (size_t)n));
}

/* plan_find(key) -> the Python plan filed under the key in the calling thread's table, or None.
 * The one lookup of the Python front end when the extension is built: the same table, eviction
 * and package-stamp check as the C hit (plancache_find; a stale plan is dropped). */
static PyObject *fp_plan_find(PyObject *mod, PyObject *key) {
    (void)mod;
    Entry *e = find_by_key(key);
    if (e == NULL) return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    return Py_NewRef(ENTRY_FRONT(e)->plan);
}

/* plan_store(key, op, plan): file a miss of the Python front end (a call this path
 * did not key) under its key, for Python lookups (python_only: the C hit hands the entry's plan
 * to the Python phase 1, whose miss then files it launchable). */
static PyObject *fp_plan_store(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "plan_store(key, op, plan)");
        return NULL;
    }
    const uint64_t *words;
    Py_ssize_t n = key_of(args[0], &words);
    if (n < 0) return NULL;
    if (file_python_plan(words, (size_t)n, args[1], args[2]) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *fp_table_size(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    Table *t = thread_table(0);
    if (t == NULL && PyErr_Occurred()) return NULL;
    return PyLong_FromSize_t(t ? t->core->count : 0);
}

/* cache_stats(): the calling thread's table counters (plancache.h), the same fields as the acl
 * library's opbuild_aclnn_cache_stats. */
static PyObject *fp_cache_stats(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    Table *t = g_table_key != NULL ? thread_table(0) : NULL;
    if (t == NULL && PyErr_Occurred()) return NULL;
    plancache_stats z = {0}, *st = t != NULL ? &t->core->stats : &z;
    return Py_BuildValue("{sKsKsKsKsnsK}", "hits", (unsigned long long)st->hits, "misses",
                         (unsigned long long)st->misses, "inserts", (unsigned long long)st->inserts, "stale",
                         (unsigned long long)st->stale, "size", (Py_ssize_t)(t != NULL ? t->core->count : 0),
                         "evictions", (unsigned long long)st->evictions);
}

/* cache_capacity(n=0): the plans a thread's table holds at most (OPBUILD_PARAM_CACHE_SIZE); n > 0 sets it. */
static PyObject *fp_cache_capacity(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    Py_ssize_t n = 0;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "cache_capacity(n=0)");
        return NULL;
    }
    if (nargs == 1 && (n = PyLong_AsSsize_t(args[0])) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "cache_capacity: n >= 0");
        return NULL;
    }
    return PyLong_FromSize_t(plancache_capacity((size_t)n));
}

/* parse_plan_record(record: bytes) -> dict: the plan plancache_plan_from_record makes of a record
 * (its fields), or ValueError naming what is wrong: the one parser, for tests and tools. */
/* A native plan's fields as a dict (for tests: what the one parser read, what a table holds). */
static PyObject *plan_fields(const plancache_plan *p) {
    return Py_BuildValue(
        "{sKsIsIsIsisisKsy#sy#szsssssLsLsL}", "fn", (unsigned long long)(uintptr_t)p->fn, "block_dim", p->block_dim,
        "nargs", p->nargs, "ntensors", p->ntensors, "sync", p->sync, "empty", p->empty, "workspace_size",
        (unsigned long long)p->ws_size, "tiling", p->tiling ? (const char *)p->tiling : "",
        (Py_ssize_t)(p->tiling ? p->tiling_len : 0), "itemsizes", (const char *)p->itemsize,
        (Py_ssize_t)p->ntensors, "stamp_path", p->stamp_path, "key_text", p->key_text, "kernel", p->kernel,
        "mtime_ns", (long long)p->stamp[0], "size", (long long)p->stamp[1], "inode", (long long)p->stamp[2]);
}

static PyObject *fp_parse_plan_record(PyObject *mod, PyObject *record) {
    (void)mod;
    if (!PyBytes_Check(record)) {
        PyErr_SetString(PyExc_TypeError, "parse_plan_record(record: bytes)");
        return NULL;
    }
    char err[256];
    const uint64_t none = 0;
    plancache_plan *p = plancache_plan_from_record(PyBytes_AS_STRING(record), (size_t)PyBytes_GET_SIZE(record), &none,
                                                   0, 1, err, sizeof err);
    if (p == NULL) {
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    PyObject *r = plan_fields(p);
    plancache_plan_unref(p);
    return r;
}

/* plan_entry(key) -> the fields (plan_fields) of the native plan filed under the key in the
 * calling thread's table, or None (a lookup: counted, and it makes the plan the most recent). */
static PyObject *fp_plan_entry(PyObject *mod, PyObject *key) {
    (void)mod;
    Entry *e = find_by_key(key);
    if (e == NULL) return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    return plan_fields(e);
}

static PyObject *fp_stats(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "phase1_hits", st_p1_hits, "phase1_misses", st_p1_misses,
                         "phase1_native_misses", st_p1_native_misses,
                         "registered", st_p1_registered, "phase2_fast", st_p2_fast, "phase2_slow", st_p2_slow,
                         "oneshot_raw", st_raw_hits);
}

static PyObject *fp_reset_stats(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    st_p1_hits = st_p1_misses = st_p1_native_misses = st_p1_registered = st_p2_fast = st_p2_slow = st_raw_hits = 0;
    Py_RETURN_NONE;
}

PyObject *fp_syn_exec(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* fallback_exec.c */
PyObject *fp_oneshot(PyObject *self, PyObject *const *args, Py_ssize_t nargs);  /* oneshot.c */
extern PyTypeObject OneShotType;                                                /* oneshot.c */
PyObject *oneshot_api_capsule(void);                                            /* oneshot.c */
PyObject *fp_fill_tiling_context(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* tiling_fill.c */
PyObject *fp_describe_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs);       /* describe.c */
PyObject *fp_pack_direct(PyObject *self, PyObject *const *args, Py_ssize_t nargs);         /* describe.c */
extern PyTypeObject TilingBlockType;                                                      /* tiling_fill.c */
PyObject *fp_set_signature_programs(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* signature_miss.c */
PyObject *fp_forget_programs(PyObject *self, PyObject *unused);                               /* signature_miss.c */
PyObject *fp_tiling_accepts(PyObject *self, PyObject *const *args, Py_ssize_t nargs);         /* signature_miss.c */
PyObject *fp_signature_programs(PyObject *self, PyObject *arg);                               /* signature_miss.c */

static PyMethodDef fp_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))fp_configure, METH_VARARGS | METH_KEYWORDS,
     "configure(aclnn_error, dp, executor_type, launch_failed, sim_launch, dtype_codes, sim_isolated, "
     "executor_record): "
     "bind to the runtime."},
    {"params_key", (PyCFunction)(void (*)(void))fp_params_key, METH_FASTCALL,
     "params_key(op_id, dp, slot_kinds, params, formats, attr_tags, attrs): the key of normalized arguments"},
    {"key_words", (PyCFunction)(void (*)(void))fp_key_words, METH_FASTCALL,
     "key_words(phase1, *args): the key (opkey.h words) the C path builds for this call, or None."},
    {"set_observed", fp_set_observed, METH_O,
     "set_observed(n): n launch observers are registered (launch.observe_launches); while n > 0 "
     "Phase2 hands launches to the Python path."},
    {"oneshot", (PyCFunction)(void (*)(void))fp_oneshot, METH_FASTCALL,
     "oneshot(cache, op, inputs, attrs): api.call's cache hit of plain arrays, or NotImplemented (oneshot.c)."},
    {"syn_exec", (PyCFunction)(void (*)(void))fp_syn_exec, METH_FASTCALL,
     "syn_exec(funcs, dtypes, stream, arrays): op_fallback's syn_exec_aclnn of plain arrays (fallback_exec.c)."},
    {"pack_direct", (PyCFunction)(void (*)(void))fp_pack_direct, METH_FASTCALL,
     "pack_direct(arrays, tiling_addr) -> launch arguments (bytes) or None if one is misaligned "
     "(describe.c; executor._direct_args_py is the reference)"},
    {"describe_call", (PyCFunction)(void (*)(void))fp_describe_call, METH_FASTCALL,
     "describe_call(inputs, outputs, names) -> (in_inst, out_inst, signature, contiguous, any output "
     "non-empty) (describe.c; plans.describe_call is the reference)"},
    {"fill_tiling_context", (PyCFunction)(void (*)(void))fp_fill_tiling_context, METH_FASTCALL,
     "fill_tiling_context(...): a TilingContext filled in C, or None (tiling_fill.c; used by "
     "opbuild.runtime.host.tiling_context.build_tiling_context)."},
    {"reset", fp_reset, METH_NOARGS, "Forget the calling thread's plan table (ResetCacheThreadLocal)."},
    {"env_token", fp_env_token, METH_NOARGS,
     "The search environment's token (opkey.h), recomputed only when the environment may have changed."},
    {"plan_find", fp_plan_find, METH_O,
     "plan_find(key) -> the Python plan filed under the key in the calling thread's table, or None."},
    {"plan_store", (PyCFunction)(void (*)(void))fp_plan_store, METH_FASTCALL,
     "plan_store(key, op, plan): file a Python miss's plan in the calling thread's table."},
    {"table_size", fp_table_size, METH_NOARGS, "Entries in the calling thread's plan table."},
    {"cache_stats", fp_cache_stats, METH_NOARGS,
     "The calling thread's plan table counters: hits, misses, inserts, stale, size, evictions (plancache.h)."},
    {"cache_capacity", (PyCFunction)(void (*)(void))fp_cache_capacity, METH_FASTCALL,
     "cache_capacity(n=0): the plans a thread's table holds at most (OPBUILD_PARAM_CACHE_SIZE); n > 0 sets it."},
    {"plan_entry", fp_plan_entry, METH_O,
     "plan_entry(key) -> the fields of the native plan filed under the key in the calling thread's table, or None."},
    {"parse_plan_record", fp_parse_plan_record, METH_O,
     "parse_plan_record(record) -> its fields, as the one parser reads them (plancache.h), or ValueError."},
    {"set_signature_programs", (PyCFunction)(void (*)(void))fp_set_signature_programs, METH_FASTCALL,
     "set_signature_programs(signature_program, phase_hooks): bind the native miss of known call signatures "
     "(signature_miss.c) to plans.signature_program and plans.PHASE_HOOKS."},
    {"forget_programs", fp_forget_programs, METH_NOARGS,
     "Void every Phase1's signature programs (selection.forget_selections)."},
    {"tiling_accepts", (PyCFunction)(void (*)(void))fp_tiling_accepts, METH_FASTCALL,
     "tiling_accepts(block_dim, workspace_size, tiling_key, keys, max_blocks, max_workspace) -> whether the "
     "native miss accepts a tiling result (tiling_bounds.check_tiling_result's limits)."},
    {"signature_programs", fp_signature_programs, METH_O,
     "signature_programs(phase1) -> the number of call signatures it misses natively."},
    {"stats", fp_stats, METH_NOARGS, "Process-wide counters of the fast path (hits, misses, launches)."},
    {"reset_stats", fp_reset_stats, METH_NOARGS, "Zero the counters."},
    {NULL},
};

static struct PyModuleDef fp_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "opbuild.runtime._fastpath",
    .m_doc = "The cache-hit path of the per-op two-phase wrappers (see opbuild/runtime/call/executor.py).",
    .m_size = -1,
    .m_methods = fp_methods,
};

#define INTERN(var, text)                                   \
    do {                                                    \
        if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL; \
    } while (0)

PyMODINIT_FUNC PyInit__fastpath(void) {
    import_array();
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&Phase1Type) < 0 || PyType_Ready(&Phase2Type) < 0 ||
        PyType_Ready(&ExecutorType) < 0 || PyType_Ready(&OneShotType) < 0 ||
        PyType_Ready(&TilingBlockType) < 0)
        return NULL;
    INTERN(g_table_key, "opbuild.runtime._fastpath.table");
    if ((s_zero = PyLong_FromLong(0)) == NULL) return NULL;
    INTERN(s_args, "args");
    INTERN(s_plan, "plan");
    INTERN(s_workspace_size, "workspace_size");
    INTERN(s_selection, "selection");
    INTERN(s_full_key, "full_key");
    INTERN(s_entry, "entry");
    INTERN(s_name, "name");
    INTERN(s_deterministic, "deterministic");
    INTERN(s_impl_mode, "impl_mode");
    INTERN(s_stamp, "stamp");
    INTERN(s_stamp_path, "stamp_path");
    {
        PyObject *name = PyUnicode_InternFromString("_opkey"), *plan = PyUnicode_InternFromString("_plan");
        if (name == NULL || plan == NULL || (s_opkey_kwnames = PyTuple_Pack(1, name)) == NULL ||
            (s_opkey_plan_kwnames = PyTuple_Pack(2, name, plan)) == NULL)
            return NULL;
        Py_DECREF(name);
        Py_DECREF(plan);
    }
    PyObject *m = PyModule_Create(&fp_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Phase1", (PyObject *)&Phase1Type) < 0 ||
        PyModule_AddObjectRef(m, "Phase2", (PyObject *)&Phase2Type) < 0 ||
        PyModule_AddObjectRef(m, "Executor", (PyObject *)&ExecutorType) < 0 ||
        PyModule_AddObjectRef(m, "OneShot", (PyObject *)&OneShotType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *api = oneshot_api_capsule(); /* the torch kernel's entry (oneshot_api.h) */
    int added = api != NULL ? PyModule_AddObjectRef(m, "oneshot_api", api) : -1;
    Py_XDECREF(api);
    if (added < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
