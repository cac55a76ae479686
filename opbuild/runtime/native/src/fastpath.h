/* fastpath.h: what the files of the _fastpath extension's hit path share (internal).
 *
 * fastpath_hit.c is the hit path (key -> cached plan -> launch); fastpath.c the rest of the
 * extension: the per-thread plan table (plancache.h's), the Executor type, the registration of a
 * Python miss's plan, the Phase1/Phase2 types and the module. Every function and variable here is used with
 * the GIL held.
 */
#ifndef OPBUILD_FASTPATH_H
#define OPBUILD_FASTPATH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "opbuild/vocabulary_gen.h" /* ACLNN_ERR_* */
#include "opkey.h"
#include "plancache.h"

#define PY_ARRAY_UNIQUE_SYMBOL opbuild_fastpath_ARRAY_API /* shared with fallback_exec.c, oneshot.c ... */
#ifndef FASTPATH_IMPORTS_ARRAY
#define NO_IMPORT_ARRAY /* fastpath.c's module init imports the numpy API */
#endif
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#if NPY_ABI_VERSION < 0x02000000 /* numpy 1.x: the descriptor's item size is a field */
#define PyDataType_ELSIZE(descr) ((descr)->elsize)
#endif

#define MAX_KEY_WORDS 512
#define MAX_TENSORS 60
#define MAX_ATTRS 60
#define RELEASE_GIL_BYTES (64 * 1024)

_Static_assert(sizeof(void *) == sizeof(uint64_t), "launch arguments are kept as uint64 and passed as pointers");

typedef int (*sim_launch_fn)(void *stream, void *fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                             int intercore_sync, char *err, uint32_t errlen);
/* sim_isolated: launches run in a worker process now (the launch waits: the GIL is released). */
typedef int (*sim_isolated_fn)(void);

/* ---- types ------------------------------------------------------------------------------------- */

/* A plan of the table: plancache.h's record; what this extension keeps beside it (the Python
 * objects a hit hands out) is its `front`, an EntryFront. */
typedef plancache_plan Entry;
typedef struct {
    PyObject *op;     /* the op the plan was made for */
    PyObject *plan;   /* the Python plans.Plan */
    PyObject *ws_obj; /* plan.workspace_size as an int (NULL when python_only) */
    int python_only;  /* filed by the Python front end (plan_store): no launch data, the C hit skips it */
} EntryFront;
#define ENTRY_FRONT(e) ((EntryFront *)(e)->front)

/* The calling thread's plan table: plancache.h's table, owned by a Python object kept in the
 * thread state dict (freed with the thread, with the GIL held). */
typedef struct {
    PyObject_HEAD
    plancache_table *core;
} Table;

/* The last hit of a Phase1: what the key was built from (not the key) and the entry it found.
 * A call made of the same things -- the same thread, dp object, search environment, per tensor
 * an exact ndarray of the same descriptor, dims and byte strides, per attribute the same object
 * (or an equal float/int/str of the same type) -- has the same key, so it skips building and
 * hashing the key and the table lookup: that was ~60% of a hit's instructions. The key stays
 * the one definition (opkey.h): the memo is only ever filled from a call whose key was built
 * and found. It points into the thread's table, so any entry freed or inserted anywhere
 * (g_epoch) invalidates it; the package stamp is still checked on every hit (plancache_plan_fresh). */
typedef struct {
    uint64_t epoch;        /* g_epoch when filled; 0 = empty (g_epoch starts counting at 1) */
    PyThreadState *ts;     /* the thread it was made in (pointer and id: a new thread state may */
    uint64_t ts_id;        /* reuse the address, never the id) */
    Table *table;          /* that thread's table, and the entry found in it */
    Entry *entry;
    PyObject *dp;          /* owned: the settings.DP[0] object of the call */
    uint64_t env_token;
    PyObject **objs;       /* owned: per tensor its descriptor, then per attribute its value */
    npy_intp *shape;       /* per tensor: ndim, dims..., byte strides... */
    Py_ssize_t nshape, cap;
} Memo;

/* What the native miss of one call signature takes (signature_miss.c). */
typedef struct Program Program;
#define PROGRAMS_MAX 16 /* programs a Phase1 keeps; then one is replaced */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *op;
    PyObject *slow; /* the Python phase-1 function */
    PyObject *dict;
    Py_ssize_t n_in, n_attr, n_out;
    uint64_t key_id;            /* the op's id in the key (opkey.h) */
    uint8_t attr_kind[MAX_ATTRS]; /* per attribute, its opkey tag (OPKEY_INT ...) */
    Memo memo;
    Memo oneshot_memo; /* the last hit of oneshot.c's raw entry (tensors as memory): filled only
                        * there, from a call whose outputs were allocated by the one-shot specs */
    Program *programs[PROGRAMS_MAX]; /* the signatures it misses natively (signature_miss.c) */
    int nprograms, next_victim;
} Phase1;

typedef struct {
    PyObject_VAR_HEAD /* ob_size = ntensors + nargs */
    PyObject *plan;
    PyObject *op;
    PyObject *refs;    /* made by Python: the call's arrays (tuple); NULL when they are in `data` */
    PyObject *inputs;  /* made by Python for a prepared launch: the normalized tensors, or NULL */
    PyObject *outputs;
    uint32_t nargs, block_dim, ntensors;
    int sync, empty, repeatable, used, release_gil;
    int fast;          /* the launch fields below are set, Phase2 may launch: made by Phase1's hit, or
                        * by a miss whose plan Phase1 registered (make_fast) */
    int has_args;      /* `data` holds launch arguments (else: phase 2 prepares them from inputs) */
    unsigned long long ws_size;
    void *fn;
    uint64_t data[1]; /* ntensors array references, then the nargs launch arguments */
} Executor;

/* The call's key in `words` (and its hash); 0 if the call is not one the C path handles. */
typedef struct {
    uint64_t words[MAX_KEY_WORDS];
    Py_ssize_t nwords;
    uint64_t hash;
} Key;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *op;
    PyObject *slow; /* the Python phase-2 function */
    PyObject *dict;
} Phase2;

/* ---- module state (fastpath.c; set by configure()) ---------------------------------------------- */

extern PyObject *g_aclnn_error, *g_dp, *g_py_executor, *g_launch_failed, *g_table_key, *g_dtype_codes;
extern sim_launch_fn g_launch;
extern sim_isolated_fn g_isolated;
extern long g_observed;  /* launch observers registered (fastpath_hit.c) */
extern uint64_t g_epoch; /* bumped when any table entry is freed or inserted */
extern PyObject *s_opkey_kwnames, *s_opkey_plan_kwnames, *s_zero, *s_deterministic, *s_impl_mode;
extern unsigned long long st_p1_hits, st_p1_misses, st_p1_registered, st_p2_fast, st_p2_slow;
extern unsigned long long st_p1_native_misses; /* misses signature_miss.c planned (counted in p1 misses too) */
extern unsigned long long st_raw_hits; /* launches of oneshot.c's raw hit (counted in p1 hits and p2 fast too) */
extern PyTypeObject ExecutorType, Phase1Type, Phase2Type;

/* ---- fastpath.c ---------------------------------------------------------------------------------- */

int configured(void);
void raise_aclnn(int status, PyObject *message);
Table *thread_table(int create);
Executor *executor_alloc(Py_ssize_t items);
/* A call the hit path does not serve: the Python phase 1 (with the key `k` when it built one). */
PyObject *phase1_slow(Phase1 *self, PyObject *const *args, size_t nargsf, PyObject *kwnames, Key *k, long dp,
                      PyObject *python_plan);

/* ---- fastpath_hit.c ------------------------------------------------------------------------------ */

int dtype_code(PyObject *descr);
int key_put_tensor(opkey *key, PyObject *descr, int nd, const int64_t *dims, const int64_t *byte_strides);
int key_put_attrs(Phase1 *self, opkey *key, PyObject *const *attrs);
int key_finish(opkey *key, int ok, Key *k);
int build_key(Phase1 *self, PyObject *const *args, Key *k, long dp, opkey_env_cache *env);
void memo_release(Phase1 *self);
void memo_clear(Memo *m, Py_ssize_t n);
/* One tensor of a call as the memo keeps it: its dtype descriptor, dims and byte strides. */
typedef struct {
    PyObject *descr;
    int ndim;
    const npy_intp *dims, *strides;
} MemoTensor;
void memo_store(Memo *m, Py_ssize_t ntensors, const MemoTensor *tensors, Py_ssize_t n_attr, PyObject *const *attrs,
                PyObject *dpo, Table *t, Entry *e);
int memo_same_attr(PyObject *a, PyObject *b);
PyObject *phase1_call(Phase1 *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);
int file_entry(Entry *e, PyObject *op, PyObject *plan, int python_only);
/* signature_miss.c: the native miss of a known call signature. signature_miss: the plan it filed
 * under `k` for these arguments (borrowed), or NULL -- an exception set on error, else the
 * Python miss runs. signature_register: after the Python miss filed `first` (and `plan`) under
 * `k`, keep its signature's program (1), or not (0), -1 error. */
Entry *signature_miss(Phase1 *self, PyObject *const *args, const Key *k);
int signature_register(Phase1 *self, const Key *k, Entry *first, PyObject *plan);
void signature_programs_release(Phase1 *self);
int signature_programs_traverse(Phase1 *self, visitproc visit, void *arg);
PyObject *phase2_call(Phase2 *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

#endif /* OPBUILD_FASTPATH_H */
