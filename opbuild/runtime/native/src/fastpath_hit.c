/* fastpath_hit.c: the hit path of the Python callers' two-phase calls, in one file.
 *
 * Phase1(x, y, ..., z): a call of plain numpy arrays (exact ndarrays) without per-call
 * deterministic / impl_mode is looked up in the calling thread's plan table by its key (opkey.h,
 * built by build_key; or found again through the Phase1's memo of its last hit): a hit with
 * writable outputs and 16-byte aligned data returns (workspace_size, Executor) with the launch
 * arguments packed. A miss of a known call signature may be planned in C (signature_miss.c)
 * and then returns the same. Anything else goes to phase1_slow (fastpath.c: the Python phase
 * 1, and the registration of the plan it makes).
 *
 * Phase2(workspace, workspaceSize, executor, stream=None): an executor this path may launch
 * (`fast`) of the same op, on the default stream, with no workspace buffer, is checked as
 * executor.execute checks it and launched with sim_launch; everything else goes to the Python
 * phase 2.
 *
 * The table, the Executor type and the module are in fastpath.c (fastpath.h).
 */
#include "fastpath.h"

static int kw_defaults_only(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    if (kwnames == NULL) return 1;
    Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (args[nargs + i] != Py_None) return 0;
        if (name != s_deterministic && name != s_impl_mode) {
            if (PyUnicode_Compare(name, s_deterministic) != 0 && PyUnicode_Compare(name, s_impl_mode) != 0) {
                PyErr_Clear();
                return 0;
            }
        }
    }
    return 1;
}

/* The dtype code (GE) of an array's descriptor, from configure()'s table; -1 if not supported. */
PyObject *g_dtype_codes; /* {numpy dtype: GE code}: set by configure() */
static struct { PyObject *descr; int code; } g_code_cache[16];

int dtype_code(PyObject *descr) {
    for (int i = 0; i < 16 && g_code_cache[i].descr != NULL; i++)
        if (g_code_cache[i].descr == descr) return g_code_cache[i].code;
    PyObject *v = g_dtype_codes ? PyDict_GetItemWithError(g_dtype_codes, descr) : NULL;
    if (v == NULL) {
        PyErr_Clear();
        return -1;
    }
    int code = (int)PyLong_AsLong(v);
    for (int i = 0; i < 16; i++)
        if (g_code_cache[i].descr == NULL) {
            g_code_cache[i].descr = Py_NewRef(descr); /* kept: descriptors of builtin types live forever */
            g_code_cache[i].code = code;
            break;
        }
    return code;
}

/* One tensor slot's words (opkey_tensor) from its dtype descriptor, dims and byte strides: 1, or
 * 0 for a tensor the C path does not key (a dtype without a code, byte-swapped, more than 64
 * dims, a stride not a multiple of the item size). Shared by build_key (arrays) and the one-shot
 * raw entry (oneshot.c: tensors given as memory), so the key has one rule. */
int key_put_tensor(opkey *key, PyObject *descr, int nd, const int64_t *dims, const int64_t *byte_strides) {
    PyArray_Descr *d = (PyArray_Descr *)descr;
    int64_t itemsize = (int64_t)PyDataType_ELSIZE(d);
    int code = PyArray_ISNBO(d->byteorder) ? dtype_code(descr) : -1;
    if (code < 0 || nd < 0 || nd > 64 || itemsize <= 0) return 0;
    int64_t strides[64];
    for (int d_ = 0; d_ < nd; d_++) {
        if (byte_strides[d_] % itemsize) return 0;
        strides[d_] = byte_strides[d_] / itemsize;
    }
    opkey_tensor(key, code, 2 /* ND */, (uint64_t)nd, dims, strides, 0);
    return 1;
}

/* The attributes' words (per self->attr_kind): 1, or 0 for a value the C path does not key. */
int key_put_attrs(Phase1 *self, opkey *key, PyObject *const *attrs) {
    for (Py_ssize_t i = 0; i < self->n_attr; i++) {
        PyObject *v = attrs[i];
        switch (self->attr_kind[i]) {
        case OPKEY_INT: {
            if (!PyLong_CheckExact(v)) return 0;
            int overflow;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
            opkey_int(key, x);
            break;
        }
        case OPKEY_FLOAT:
            if (PyFloat_CheckExact(v)) opkey_float(key, PyFloat_AS_DOUBLE(v));
            else if (PyLong_CheckExact(v)) {
                double x = PyLong_AsDouble(v);
                if (x == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
                opkey_float(key, x);
            } else return 0;
            break;
        case OPKEY_BOOL:
            if (!PyBool_Check(v)) return 0;
            opkey_bool(key, v == Py_True);
            break;
        case OPKEY_STR: {
            Py_ssize_t len;
            const char *text = PyUnicode_CheckExact(v) ? PyUnicode_AsUTF8AndSize(v, &len) : NULL;
            if (text == NULL) { PyErr_Clear(); return 0; }
            opkey_str(key, text, (size_t)len);
            break;
        }
        default: return 0; /* lists: not a simple op */
        }
    }
    return 1;
}

/* `key` (released here) as the table's Key `k` when `ok`: 1, or 0 (not ok, out of memory, too long). */
int key_finish(opkey *key, int ok, Key *k) {
    if (!ok || key->failed || key->n > MAX_KEY_WORDS) {
        opkey_free(key);
        return 0;
    }
    memcpy(k->words, key->w, key->n * sizeof(uint64_t));
    k->nwords = (Py_ssize_t)key->n;
    k->hash = opkey_hash(key->w, key->n);
    opkey_free(key);
    return 1;
}

/* The call's key (opkey.h: the same words as cache_key.key_words of the call) in `k`; 1 built,
 * 0 not a call this path handles (the Python path validates it), -1 error. */
int build_key(Phase1 *self, PyObject *const *args, Key *k, long dp, opkey_env_cache *env) {
    Py_ssize_t n_in = self->n_in, n_attr = self->n_attr;
    Py_ssize_t ntensors = n_in + self->n_out;
    opkey key;
    opkey_begin(&key, self->key_id, env ? opkey_env_token_cached(env) : opkey_env_token(), (uint64_t)dp,
                (uint32_t)ntensors, (uint32_t)n_attr);
    int ok = 1;
    for (Py_ssize_t i = 0; i < ntensors && ok; i++) {
        PyObject *o = args[i < n_in ? i : i + n_attr];
        if (!PyArray_CheckExact(o)) {
            ok = 0;
            break;
        }
        PyArrayObject *a = (PyArrayObject *)o;
        int nd = PyArray_NDIM(a);
        if (nd > 64) {
            ok = 0;
            break;
        }
        int64_t dims[64], strides[64];
        for (int d = 0; d < nd; d++) {
            dims[d] = PyArray_DIMS(a)[d];
            strides[d] = PyArray_STRIDES(a)[d];
        }
        ok = key_put_tensor(&key, (PyObject *)PyArray_DESCR(a), nd, dims, strides);
    }
    ok = ok && key_put_attrs(self, &key, args + n_in);
    return key_finish(&key, ok, k);
}

/* The table's plan for this call's key (plancache_find: a stale plan is dropped), or NULL; a
 * plan the Python front end filed (python_only: no launch data) is handed out in *python_plan
 * (borrowed) for the Python phase 1 to use, and NULL returned. */
static inline Entry *lookup(Table *t, Phase1 *self, Key *k, PyObject **python_plan) {
    Entry *e = plancache_find(t->core, k->words, (size_t)k->nwords, k->hash);
    if (e == NULL || ENTRY_FRONT(e)->op != self->op) return NULL;
    if (ENTRY_FRONT(e)->python_only) {
        *python_plan = ENTRY_FRONT(e)->plan;
        return NULL;
    }
    return e;
}

/* ---- the memo of the last hit (see Memo) ------------------------------------------------------ */

void memo_release(Phase1 *self) {
    memo_clear(&self->memo, self->n_in + self->n_out + self->n_attr);
    memo_clear(&self->oneshot_memo, self->n_in + self->n_out + self->n_attr);
}

/* Empty memo `m` of `n` objects (its buffers stay for the next fill). */
void memo_clear(Memo *m, Py_ssize_t n) {
    m->epoch = 0;
    Py_CLEAR(m->dp);
    for (Py_ssize_t i = 0; m->objs != NULL && i < n; i++) Py_CLEAR(m->objs[i]);
}

/* Whether attribute values a (this call's) and b (the memo's) give the same key words. */
int memo_same_attr(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (Py_TYPE(a) != Py_TYPE(b)) return 0;
    if (PyFloat_CheckExact(a)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return memcmp(&x, &y, sizeof x) == 0; /* the key has the bits (0.0 and -0.0 differ) */
    }
    if (PyLong_CheckExact(a) || PyUnicode_CheckExact(a)) {
        int eq = PyObject_RichCompareBool(a, b, Py_EQ); /* cannot run Python code for these types */
        if (eq < 0) PyErr_Clear();
        return eq > 0;
    }
    return 0;
}

/* The memo's entry when this call matches it (and its package is unchanged), else NULL. */
static inline Entry *memo_match(Phase1 *self, PyObject *const *args, PyObject *dpo) {
    Memo *m = &self->memo;
    if (m->epoch != g_epoch || m->dp != dpo) return NULL;
    PyThreadState *ts = PyThreadState_Get();
    if (ts != m->ts || ts->id != m->ts_id) return NULL;
    Py_ssize_t n_in = self->n_in, n_attr = self->n_attr, ntensors = n_in + self->n_out;
    const npy_intp *shape = m->shape;
    for (Py_ssize_t i = 0; i < ntensors; i++) {
        PyObject *o = args[i < n_in ? i : i + n_attr];
        if (Py_TYPE(o) != &PyArray_Type) return NULL;
        PyArrayObject *a = (PyArrayObject *)o;
        int nd = PyArray_NDIM(a);
        if ((PyObject *)PyArray_DESCR(a) != m->objs[i] || nd != shape[0]) return NULL;
        const npy_intp *dims = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
        for (int d = 0; d < nd; d++)
            if (dims[d] != shape[1 + d] || strides[d] != shape[1 + nd + d]) return NULL;
        shape += 1 + 2 * nd;
    }
    for (Py_ssize_t i = 0; i < n_attr; i++)
        if (!memo_same_attr(args[n_in + i], m->objs[ntensors + i])) return NULL;
    if (opkey_env_token_cached(&m->table->core->env) != m->env_token) return NULL;
    if (!plancache_plan_fresh(m->entry)) return NULL; /* the lookup drops it */
    plancache_touch(m->table->core, m->entry);
    return m->entry;
}

/* Fill memo `m` with a call (its tensors, then its attribute values) and the entry `e` found for
 * it in `t` under the key built from them in this thread just now (both front ends: memo_set
 * here, oneshot.c's raw hit). Left empty when memory is short: every hit then builds its key. */
void memo_store(Memo *m, Py_ssize_t ntensors, const MemoTensor *tensors, Py_ssize_t n_attr, PyObject *const *attrs,
                PyObject *dpo, Table *t, Entry *e) {
    Py_ssize_t nshape = 0;
    for (Py_ssize_t i = 0; i < ntensors; i++) nshape += 1 + 2 * tensors[i].ndim;
    memo_clear(m, ntensors + n_attr);
    if (m->objs == NULL && (m->objs = PyMem_Calloc((size_t)(ntensors + n_attr) + 1, sizeof(PyObject *))) == NULL)
        return;
    if (nshape > m->cap) {
        npy_intp *shape = PyMem_Realloc(m->shape, (size_t)nshape * sizeof(npy_intp));
        if (shape == NULL) return;
        m->shape = shape;
        m->cap = nshape;
    }
    npy_intp *out = m->shape;
    for (Py_ssize_t i = 0; i < ntensors; i++) {
        int nd = tensors[i].ndim;
        m->objs[i] = Py_NewRef(tensors[i].descr);
        *out++ = nd;
        memcpy(out, tensors[i].dims, (size_t)nd * sizeof *out);
        memcpy(out + nd, tensors[i].strides, (size_t)nd * sizeof *out);
        out += 2 * nd;
    }
    for (Py_ssize_t i = 0; i < n_attr; i++) m->objs[ntensors + i] = Py_NewRef(attrs[i]);
    m->nshape = nshape;
    m->dp = Py_NewRef(dpo);
    m->ts = PyThreadState_Get();
    m->ts_id = m->ts->id;
    m->table = t;
    m->entry = e;
    m->env_token = t->core->env.token; /* the key was just built through the table's env */
    m->epoch = g_epoch;
}

/* Remember a hit of these arrays: `e`, found in `t` under the key of this call. */
static void memo_set(Phase1 *self, PyObject *const *args, PyObject *dpo, Table *t, Entry *e) {
    Py_ssize_t n_in = self->n_in, n_attr = self->n_attr, ntensors = n_in + self->n_out;
    MemoTensor tensors[MAX_TENSORS];
    for (Py_ssize_t i = 0; i < ntensors; i++) {
        PyArrayObject *a = (PyArrayObject *)args[i < n_in ? i : i + n_attr];
        tensors[i] = (MemoTensor){(PyObject *)PyArray_DESCR(a), PyArray_NDIM(a), PyArray_DIMS(a), PyArray_STRIDES(a)};
    }
    memo_store(&self->memo, ntensors, tensors, n_attr, args + n_in, dpo, t, e);
}

PyObject *phase1_call(Phase1 *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Key k;
    if (nargs != self->n_in + self->n_attr + self->n_out || !kw_defaults_only(args, nargs, kwnames))
        return phase1_slow(self, args, nargsf, kwnames, NULL, 0, NULL);
    PyObject *dpo = PyList_GET_ITEM(g_dp, 0);
    Entry *e = memo_match(self, args, dpo);
    int hit = 1;
    if (e == NULL) {
        long dp = PyLong_AsLong(dpo);
        if (dp == -1 && PyErr_Occurred()) return NULL;
        Table *t = thread_table(1);
        if (t == NULL) return NULL;
        int rc = build_key(self, args, &k, dp, &t->core->env);
        if (rc <= 0) return rc < 0 ? NULL : phase1_slow(self, args, nargsf, kwnames, NULL, 0, NULL);
        PyObject *python_plan = NULL;
        e = lookup(t, self, &k, &python_plan);
        if (e == NULL && python_plan == NULL) { /* a miss: of a known call signature, planned in C? */
            e = signature_miss(self, args, &k);
            if (e == NULL && PyErr_Occurred()) return NULL;
            if (e != NULL) {
                st_p1_misses++;
                hit = 0;
            }
        }
        if (e == NULL) {
            Py_XINCREF(python_plan); /* (the Python miss may drop its entry) */
            PyObject *res = phase1_slow(self, args, nargsf, kwnames, &k, dp, python_plan);
            Py_XDECREF(python_plan);
            return res;
        }
        if (hit) memo_set(self, args, dpo, t, e); /* (the memo is of hits: a miss's next call looks up) */
    }
    Py_ssize_t n_in = self->n_in, ntensors = n_in + self->n_out;
    uintptr_t or_addr = 0;
    uint64_t bytes = 0;
    for (Py_ssize_t i = 0; i < ntensors; i++) {
        PyArrayObject *a = (PyArrayObject *)args[i < n_in ? i : i + self->n_attr];
        or_addr |= (uintptr_t)PyArray_DATA(a);
        uint64_t nbytes = (uint64_t)PyArray_ITEMSIZE(a); /* PyArray_NBYTES without its call */
        for (int d = 0; d < PyArray_NDIM(a); d++) nbytes *= (uint64_t)PyArray_DIMS(a)[d];
        bytes += nbytes;
        if (i >= n_in && !PyArray_ISWRITEABLE(a)) return phase1_slow(self, args, nargsf, kwnames, NULL, 0, NULL);
    }
    if (or_addr & 15) return phase1_slow(self, args, nargsf, kwnames, NULL, 0, NULL);
    Executor *ex = executor_alloc(ntensors + e->nargs);
    if (ex == NULL) return NULL;
    ex->plan = Py_NewRef(ENTRY_FRONT(e)->plan);
    ex->op = Py_NewRef(self->op);
    ex->refs = ex->inputs = ex->outputs = NULL;
    ex->fast = ex->has_args = 1;
    ex->nargs = e->nargs;
    ex->block_dim = e->block_dim;
    ex->ntensors = (uint32_t)ntensors;
    ex->sync = e->sync;
    ex->empty = e->empty;
    ex->repeatable = 0;
    ex->used = 0;
    ex->release_gil = e->block_dim > 1 || bytes >= RELEASE_GIL_BYTES;
    ex->ws_size = e->ws_size;
    ex->fn = e->fn;
    uint64_t *launch_args = ex->data + ntensors;
    for (Py_ssize_t i = 0; i < ntensors; i++) {
        PyObject *o = args[i < n_in ? i : i + self->n_attr];
        ex->data[i] = (uint64_t)(uintptr_t)Py_NewRef(o);
        launch_args[i] = (uint64_t)(uintptr_t)PyArray_DATA((PyArrayObject *)o);
    }
    launch_args[ntensors] = 0;
    launch_args[ntensors + 1] = (uint64_t)(uintptr_t)e->tiling;
    st_p1_hits += (unsigned long long)hit;
    PyObject *res = PyTuple_New(2);
    if (res == NULL) {
        Py_DECREF(ex);
        return NULL;
    }
    PyTuple_SET_ITEM(res, 0, Py_NewRef(ENTRY_FRONT(e)->ws_obj));
    PyTuple_SET_ITEM(res, 1, (PyObject *)ex);
    return res;
}

/* launch.observe_launches: while > 0, launches go through the Python path (which calls them). */
long g_observed;

static PyObject *phase2_slow(Phase2 *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    st_p2_slow++;
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

PyObject *phase2_call(Phase2 *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs < 3 || nargs > 4 || (nargs == 4 && args[3] != Py_None))
        return phase2_slow(self, args, nargsf, kwnames);
    if (g_observed) return phase2_slow(self, args, nargsf, kwnames);
    PyObject *workspace = args[0], *size_obj = args[1];
    Executor *ex = (Executor *)args[2];
    if (Py_TYPE(ex) != &ExecutorType || !ex->fast || ex->op != self->op || !PyLong_CheckExact(size_obj) ||
        (workspace != Py_None && ex->ws_size != 0))
        return phase2_slow(self, args, nargsf, kwnames);
    int overflow;
    long long size = PyLong_AsLongLongAndOverflow(size_obj, &overflow);
    if (overflow || (size == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return phase2_slow(self, args, nargsf, kwnames);
    }
    if (workspace != Py_None) {
        /* no workspace needed: the Python path checks what was given */
        return phase2_slow(self, args, nargsf, kwnames);
    }
    /* the checks of executor.execute, in its order */
    if (ex->used && !ex->repeatable) {
        raise_aclnn(ACLNN_ERR_PARAM_INVALID,
                    PyUnicode_FromString("this executor already ran; make it repeatable to run it again"));
        return NULL;
    }
    if (ex->empty) {
        ex->used = 1;
        st_p2_fast++;
        return Py_NewRef(s_zero);
    }
    if (size < 0 || (unsigned long long)size < ex->ws_size) {
        raise_aclnn(ACLNN_ERR_PARAM_INVALID,
                    PyUnicode_FromFormat("workspace of %lld bytes is smaller than the %llu required", size,
                                         ex->ws_size));
        return NULL;
    }
    if (ex->ws_size) {
        raise_aclnn(ACLNN_ERR_PARAM_NULLPTR,
                    PyUnicode_FromFormat("workspace is a null pointer (%llu bytes required)", ex->ws_size));
        return NULL;
    }
    void *const *launch_args = (void *const *)(ex->data + ex->ntensors);
    void *copy[MAX_TENSORS + 2];
    ex->used = 1;
    st_p2_fast++;
    int rc;
    if (ex->release_gil || g_isolated()) { /* a big launch, or any launch waiting for its worker process */
        /* a copy: set_arg may change the executor's while the kernel runs without the GIL; and keep
         * the executor (and so its arrays) alive meanwhile */
        memcpy(copy, launch_args, (size_t)ex->nargs * sizeof(uint64_t));
        launch_args = copy;
        Py_INCREF(ex);
        Py_BEGIN_ALLOW_THREADS
        rc = g_launch(NULL, ex->fn, launch_args, ex->nargs, ex->block_dim, ex->sync, NULL, 0);
        Py_END_ALLOW_THREADS
        Py_DECREF(ex);
    } else {
        rc = g_launch(NULL, ex->fn, launch_args, ex->nargs, ex->block_dim, ex->sync, NULL, 0);
    }
    if (rc) {
        PyObject *r = PyObject_CallOneArg(g_launch_failed, ex->plan);
        Py_XDECREF(r);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "kernel launch failed");
        return NULL;
    }
    return Py_NewRef(s_zero);
}
