/* signature_miss.c: the cache miss of a known call signature, in C.
 *
 * A call signature is a call's key without its tensors' dims and strides: op, search
 * environment, d/p, per tensor its dtype and format, the attribute values. An op whose key rule
 * cannot see shapes selects one binary per signature (plans.Prepared), so a new shape of a known
 * signature only infers its outputs' shapes and tiles (plans.SignatureTiling). Once the Python
 * miss of such a signature has filed a launchable plan, its Phase1 asks plans.signature_program
 * for what that takes, as addresses and numbers (a Program, below). The next miss of the
 * signature with plain arrays (C-contiguous, 16-byte aligned, writable outputs) runs here:
 *
 *   1. the context: the program's context as filled for the signature (its `pristine` bytes),
 *      with the call's dims and contiguous strides (tiling_desc_contiguous);
 *   2. the outputs' shapes by the op_proto shape function, compared with the output arrays';
 *   3. the tiling function, its data size and guard bytes checked, its result in bounds
 *      (tiling_accepts: check_tiling_result's limits, as numbers);
 *   4. the tiling argument packed, the Python plan made by one call of the program's factory
 *      (SignatureTiling.plan, which the Python miss makes its plans with too), and a native plan
 *      like the signature's first (plancache_plan_like) filed under the call's key.
 *
 * phase1_call then goes on as for a hit. Whatever this does not accept -- a function that fails,
 * an output shape that differs, a result out of bounds, a package changed on disk, phase hooks
 * registered (the profiler times Python misses), a program another thread is running -- goes to
 * the Python miss, which plans the call or raises the error: errors have one source.
 */
#include "fastpath.h"
#include "opbuild/infer.h" /* OPBUILD_UNKNOWN_RANK */
#include "tiling_block.h"

#define ARGUMENT_MAX 65536

struct Program {
    uint64_t words[MAX_KEY_WORDS]; /* the signature (signature_words) */
    Py_ssize_t nwords;
    uint64_t gen;           /* g_program_gen when registered: forget_programs() voids it */
    Entry *proto;           /* like the signature's first plan, without a Python plan (owned) */
    TilingBlock *block;     /* the context this program fills and runs functions on (owned) */
    char *pristine;         /* block->mem as filled for the signature, before any function ran */
    tiling_block_infer_fn shape_fns[4];
    Py_ssize_t nshape;
    tiling_block_tiling_fn tiling;
    uint64_t *keys;         /* the tiling keys the kernel declares */
    Py_ssize_t nkeys;
    uint64_t max_blocks, max_workspace;
    Py_ssize_t key_offset;  /* of the tiling key in the tiling argument (kernel_launch.tiling_key_offset) */
    PyObject *factory;      /* SignatureTiling.plan(block_dim, tiling_key, workspace_size, argument) */
    int busy;               /* running (the functions run without the GIL) */
};

static uint64_t g_program_gen = 1;
static PyObject *g_signature_program; /* plans.signature_program */
static PyObject *g_phase_hooks;       /* plans.PHASE_HOOKS (a list) */
unsigned long long st_p1_native_misses;

/* The signature of a key of this Phase1's simple call (every slot one tensor): the key's header,
 * per tensor its dtype and format, then the attribute words as they are. 1, or 0 for a key of
 * another form. */
static int signature_words(Phase1 *self, const Key *k, uint64_t *out, Py_ssize_t *nout) {
    const uint64_t *w = k->words;
    Py_ssize_t n = k->nwords, i = OPKEY_HEADER_WORDS, o = OPKEY_HEADER_WORDS, ntensors = self->n_in + self->n_out;
    if (n < OPKEY_HEADER_WORDS) return 0;
    memcpy(out, w, OPKEY_HEADER_WORDS * sizeof(uint64_t));
    for (Py_ssize_t t = 0; t < ntensors; t++) {
        if (i + 4 > n || w[i] != OPKEY_TENSOR || w[i + 3] > 64) return 0;
        out[o++] = w[i + 1];
        out[o++] = w[i + 2];
        i += OPKEY_TENSOR_WORDS((Py_ssize_t)w[i + 3]);
    }
    if (i > n) return 0;
    memcpy(out + o, w + i, (size_t)(n - i) * sizeof(uint64_t));
    *nout = o + n - i;
    return 1;
}

static void program_free(Program *p) {
    if (p == NULL) return;
    plancache_plan_unref(p->proto);
    Py_XDECREF((PyObject *)p->block);
    Py_XDECREF(p->factory);
    PyMem_Free(p->pristine);
    PyMem_Free(p->keys);
    PyMem_Free(p);
}

static Program *program_find(Phase1 *self, const uint64_t *words, Py_ssize_t nwords, int *slot) {
    for (int i = 0; i < self->nprograms; i++) {
        Program *p = self->programs[i];
        if (p->nwords == nwords && memcmp(p->words, words, (size_t)nwords * sizeof(uint64_t)) == 0) {
            *slot = i;
            return p;
        }
    }
    return NULL;
}

static int program_valid(Program *p) { return p->gen == g_program_gen && plancache_plan_fresh(p->proto); }

/* ---- the rule the Python miss checks with check_tiling_result, as limits ---------------------- */

int tiling_accepts(uint64_t block_dim, uint64_t workspace_size, uint64_t tiling_key, const uint64_t *keys,
                   Py_ssize_t nkeys, uint64_t max_blocks, uint64_t max_workspace) {
    int declared = 0;
    for (Py_ssize_t i = 0; i < nkeys && !declared; i++) declared = keys[i] == tiling_key;
    return declared && block_dim > 0 && block_dim <= max_blocks && workspace_size <= max_workspace;
}

/* ---- registration ------------------------------------------------------------------------- */

static int as_u64(PyObject *o, uint64_t *out) {
    if (!PyLong_Check(o)) return -1;
    *out = PyLong_AsUnsignedLongLong(o);
    return *out == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

/* A Program from plans.signature_program's tuple (block, shape function addresses, tiling
 * function address, tiling keys, most blocks, most workspace bytes, tiling key offset, factory);
 * NULL and TypeError when it is not one (a contract of this extension and plans.py). */
static Program *program_new(PyObject *t, Entry *first, const uint64_t *words, Py_ssize_t nwords) {
    Program *p = PyMem_Calloc(1, sizeof(Program));
    if (p == NULL) return (Program *)PyErr_NoMemory();
    uint64_t v;
    PyObject *block, *fns, *keys;
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 8) goto bad;
    block = PyTuple_GET_ITEM(t, 0);
    fns = PyTuple_GET_ITEM(t, 1);
    keys = PyTuple_GET_ITEM(t, 3);
    if (Py_TYPE(block) != &TilingBlockType || !PyTuple_CheckExact(fns) || PyTuple_GET_SIZE(fns) > 4 ||
        !PyTuple_CheckExact(keys) || !PyCallable_Check(PyTuple_GET_ITEM(t, 7)))
        goto bad;
    p->block = (TilingBlock *)Py_NewRef(block);
    p->factory = Py_NewRef(PyTuple_GET_ITEM(t, 7));
    p->nshape = PyTuple_GET_SIZE(fns);
    for (Py_ssize_t i = 0; i < p->nshape; i++) {
        if (as_u64(PyTuple_GET_ITEM(fns, i), &v) < 0 || v == 0) goto bad;
        p->shape_fns[i] = (tiling_block_infer_fn)(uintptr_t)v;
    }
    if (as_u64(PyTuple_GET_ITEM(t, 2), &v) < 0 || v == 0) goto bad;
    p->tiling = (tiling_block_tiling_fn)(uintptr_t)v;
    p->nkeys = PyTuple_GET_SIZE(keys);
    if ((p->keys = PyMem_Calloc((size_t)p->nkeys + 1, sizeof(uint64_t))) == NULL) goto oom;
    for (Py_ssize_t i = 0; i < p->nkeys; i++)
        if (as_u64(PyTuple_GET_ITEM(keys, i), &p->keys[i]) < 0) goto bad;
    if (as_u64(PyTuple_GET_ITEM(t, 4), &p->max_blocks) < 0 || as_u64(PyTuple_GET_ITEM(t, 5), &p->max_workspace) < 0 ||
        as_u64(PyTuple_GET_ITEM(t, 6), &v) < 0 || v % 8 || v + 8 != first->tiling_len || v + 8 > ARGUMENT_MAX)
        goto bad;
    p->key_offset = (Py_ssize_t)v;
    if ((p->pristine = PyMem_Malloc((size_t)p->block->size)) == NULL) goto oom;
    memcpy(p->pristine, p->block->mem, (size_t)p->block->size);
    memcpy(p->words, words, (size_t)nwords * sizeof(uint64_t));
    p->nwords = nwords;
    if ((p->proto = plancache_plan_like(first, words, (size_t)nwords, 0, 0, NULL)) == NULL) goto oom;
    p->gen = g_program_gen;
    return p;
bad:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "signature_program returned something that is not a signature program");
    program_free(p);
    return NULL;
oom:
    program_free(p);
    return (Program *)PyErr_NoMemory();
}

int signature_register(Phase1 *self, const Key *k, Entry *first, PyObject *plan) {
    uint64_t words[MAX_KEY_WORDS];
    Py_ssize_t nwords;
    int slot = -1;
    if (g_signature_program == NULL || PyList_GET_SIZE(g_phase_hooks) != 0 || !signature_words(self, k, words, &nwords))
        return 0;
    Program *old = program_find(self, words, nwords, &slot);
    if (old != NULL && (old->busy || program_valid(old))) return 0;
    PyObject *t = PyObject_CallOneArg(g_signature_program, plan);
    if (t == NULL) return -1;
    Program *p = t != Py_None ? program_new(t, first, words, nwords) : NULL;
    Py_DECREF(t);
    if (p == NULL) return PyErr_Occurred() ? -1 : 0;
    /* (signature_program ran Python: the table may have changed) */
    old = program_find(self, words, nwords, &slot);
    if (old == NULL) {
        if (self->nprograms < PROGRAMS_MAX) slot = self->nprograms++;
        else {
            slot = -1;
            for (int i = 0; i < PROGRAMS_MAX && slot < 0; i++) {
                int j = (self->next_victim + i) % PROGRAMS_MAX;
                if (!self->programs[j]->busy) slot = j;
            }
            if (slot < 0) { /* every one is running */
                program_free(p);
                return 0;
            }
            self->next_victim = (slot + 1) % PROGRAMS_MAX;
            old = self->programs[slot];
        }
    } else if (old->busy) {
        program_free(p);
        return 0;
    }
    program_free(old);
    self->programs[slot] = p;
    return 1;
}

void signature_programs_release(Phase1 *self) {
    for (int i = 0; i < self->nprograms; i++) program_free(self->programs[i]);
    self->nprograms = 0;
}

int signature_programs_traverse(Phase1 *self, visitproc visit, void *arg) {
    for (int i = 0; i < self->nprograms; i++) Py_VISIT(self->programs[i]->factory);
    return 0;
}

/* ---- the native miss ---------------------------------------------------------------------- */

/* Steps 1-3 of the top on the program's block: 1 accepted (the result is in the block's
 * context), 0 for the Python miss. */
static int infer_and_tile(Phase1 *self, Program *p, PyArrayObject *const *arrays) {
    Py_ssize_t n_in = self->n_in, n_out = self->n_out;
    TilingBlock *b = p->block;
    TilingContext *ctx = (TilingContext *)b->mem;
    memcpy(b->mem, p->pristine, (size_t)b->size);
    for (Py_ssize_t i = 0; i < n_in + n_out; i++) {
        OpbuildTensorDesc *d = (OpbuildTensorDesc *)(i < n_in ? &ctx->input_descs[ctx->input_start[i]]
                                                              : &ctx->output_descs[ctx->output_start[i - n_in]]);
        PyArrayObject *a = arrays[i];
        d->dim_num = (uint32_t)PyArray_NDIM(a);
        for (int r = 0; r < PyArray_NDIM(a); r++) d->dims[r] = PyArray_DIMS(a)[r];
        if (tiling_desc_contiguous(d) < 0) return 0;
    }
    OpbuildTensorDesc outs[MAX_TENSORS];
    memset(outs, 0, (size_t)n_out * sizeof(OpbuildTensorDesc));
    Py_ssize_t ran;
    if (tiling_block_infer(b, p->shape_fns, p->nshape, outs, &ran) != 0) return 0;
    for (Py_ssize_t k = 0; k < n_out; k++) {
        PyArrayObject *a = arrays[n_in + k];
        uint32_t rank = outs[k].dim_num > OPBUILD_MAX_DIMS ? OPBUILD_MAX_DIMS : outs[k].dim_num;
        if (rank == 1 && outs[k].dims[0] == OPBUILD_UNKNOWN_RANK) continue; /* no shape rule: not checked */
        if ((int)rank != PyArray_NDIM(a)) return 0;
        for (uint32_t r = 0; r < rank; r++)
            if (outs[k].dims[r] != PyArray_DIMS(a)[r]) return 0;
    }
    long overrun;
    if (tiling_block_tile(b, p->tiling, &overrun) != 0 || overrun >= 0 ||
        ctx->tiling_data_size > ctx->tiling_data_capacity)
        return 0;
    return tiling_accepts(ctx->block_dim, ctx->workspace_size, ctx->tiling_key, p->keys, p->nkeys, p->max_blocks,
                          p->max_workspace);
}

/* Step 4: the plan of the tiling result in the block, filed under the call's key; the entry
 * (borrowed: the table's), or NULL with an exception. */
static Entry *file_result(Phase1 *self, Program *p, const Key *k) {
    TilingContext *ctx = (TilingContext *)p->block->mem;
    PyObject *argument = PyBytes_FromStringAndSize(NULL, p->key_offset + 8);
    if (argument == NULL) return NULL;
    char *bytes = PyBytes_AS_STRING(argument);
    memset(bytes, 0, (size_t)p->key_offset);
    if (ctx->tiling_data_size) memcpy(bytes, ctx->tiling_data, (size_t)ctx->tiling_data_size);
    uint64_t tiling_key = ctx->tiling_key;
    memcpy(bytes + p->key_offset, &tiling_key, sizeof tiling_key);
    PyObject *args[4] = {PyLong_FromUnsignedLong(ctx->block_dim), PyLong_FromUnsignedLongLong(ctx->tiling_key),
                         PyLong_FromUnsignedLongLong(ctx->workspace_size), argument};
    uint32_t block_dim = ctx->block_dim;
    uint64_t ws_size = ctx->workspace_size;
    PyObject *plan = args[0] && args[1] && args[2] ? PyObject_Vectorcall(p->factory, args, 4, NULL) : NULL;
    for (int i = 0; i < 4; i++) Py_XDECREF(args[i]);
    if (plan == NULL) return NULL;
    static PyObject *s_tiling_addr;
    if (s_tiling_addr == NULL && (s_tiling_addr = PyUnicode_InternFromString("tiling_addr")) == NULL) {
        Py_DECREF(plan);
        return NULL;
    }
    PyObject *addr = PyObject_GetAttr(plan, s_tiling_addr);
    void *tiling = addr != NULL ? PyLong_AsVoidPtr(addr) : NULL;
    Py_XDECREF(addr);
    Entry *e = tiling != NULL ? plancache_plan_like(p->proto, k->words, (size_t)k->nwords, block_dim, ws_size, tiling)
                              : NULL;
    if (e == NULL || file_entry(e, self->op, plan, 0) < 0) {
        if (e == NULL && !PyErr_Occurred()) PyErr_NoMemory();
        Py_DECREF(plan);
        return NULL;
    }
    Py_DECREF(plan); /* (the entry's front holds it) */
    return e;
}

Entry *signature_miss(Phase1 *self, PyObject *const *args, const Key *k) {
    uint64_t words[MAX_KEY_WORDS];
    Py_ssize_t nwords, n_in = self->n_in, ntensors = n_in + self->n_out;
    int slot;
    if (self->nprograms == 0 || PyList_GET_SIZE(g_phase_hooks) != 0 || !signature_words(self, k, words, &nwords))
        return NULL;
    Program *p = program_find(self, words, nwords, &slot);
    if (p == NULL || p->busy) return NULL;
    if (!program_valid(p)) {
        program_free(p);
        self->programs[slot] = self->programs[--self->nprograms];
        return NULL;
    }
    PyArrayObject *arrays[MAX_TENSORS];
    int nonempty = 0;
    for (Py_ssize_t i = 0; i < ntensors; i++) {
        PyArrayObject *a = arrays[i] = (PyArrayObject *)args[i < n_in ? i : i + self->n_attr];
        if (!PyArray_IS_C_CONTIGUOUS(a) || ((uintptr_t)PyArray_DATA(a) & 15) || PyArray_NDIM(a) > OPBUILD_MAX_DIMS)
            return NULL;
        if (i >= n_in) {
            if (!PyArray_ISWRITEABLE(a)) return NULL;
            nonempty |= PyArray_SIZE(a) > 0;
        }
    }
    if (!nonempty) return NULL; /* an empty plan: the Python miss makes it */
    p->busy = 1;
    Entry *e = NULL;
    if (infer_and_tile(self, p, arrays)) {
        e = file_result(self, p, k);
        if (e != NULL) st_p1_native_misses++;
    }
    p->busy = 0;
    return e;
}

/* ---- the module's functions ------------------------------------------------------------------ */

/* set_signature_programs(signature_program, phase_hooks) */
PyObject *fp_set_signature_programs(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 2 || !PyCallable_Check(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "set_signature_programs(signature_program, phase_hooks: list)");
        return NULL;
    }
    Py_XSETREF(g_signature_program, Py_NewRef(args[0]));
    Py_XSETREF(g_phase_hooks, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

/* forget_programs(): every Phase1's programs are void (selection.forget_selections). */
PyObject *fp_forget_programs(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    g_program_gen++;
    Py_RETURN_NONE;
}

/* tiling_accepts(block_dim, workspace_size, tiling_key, keys, max_blocks, max_workspace) -> bool:
 * the native miss's bounds (tests hold it equal to check_tiling_result). */
PyObject *fp_tiling_accepts(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    uint64_t v[6];
    if (nargs != 6 || !PyTuple_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "tiling_accepts(block_dim, workspace_size, tiling_key, keys: tuple, "
                                         "max_blocks, max_workspace)");
        return NULL;
    }
    for (int i = 0; i < 6; i++)
        if (i != 3 && as_u64(args[i], &v[i]) < 0) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args[3]);
    uint64_t keys[64];
    if (n > 64) {
        PyErr_SetString(PyExc_ValueError, "tiling_accepts: at most 64 keys");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (as_u64(PyTuple_GET_ITEM(args[3], i), &keys[i]) < 0) return NULL;
    return PyBool_FromLong(tiling_accepts(v[0], v[1], v[2], keys, n, v[4], v[5]));
}

/* signature_programs(phase1) -> the number of its programs not voided by forget_programs() (tests). */
PyObject *fp_signature_programs(PyObject *mod, PyObject *arg) {
    (void)mod;
    if (Py_TYPE(arg) != &Phase1Type) {
        PyErr_SetString(PyExc_TypeError, "signature_programs(phase1)");
        return NULL;
    }
    Phase1 *self = (Phase1 *)arg;
    long n = 0;
    for (int i = 0; i < self->nprograms; i++) n += self->programs[i]->gen == g_program_gen;
    return PyLong_FromLong(n);
}
