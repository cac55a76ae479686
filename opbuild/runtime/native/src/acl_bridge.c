/* acl_bridge.c: aclnn phase 1 / phase 2, executors and settings, run by the Python runtime.
 *
 * Generated aclnn wrappers (libcust_opapi.so) call opbuild_aclnn_get_workspace_size and
 * opbuild_aclnn_run; those call opbuild/runtime/capi.py, which reads the acl objects through
 * ctypes, wraps their memory in numpy arrays (zero copy) and runs opbuild.runtime.
 *
 * Python in the process
 *   - Already initialized (a Python program calling the C ABI through ctypes, or a C program
 *     embedding Python itself): calls take the GIL with PyGILState_Ensure.
 *   - Not initialized (a plain C program): the first call starts an embedded interpreter,
 *     configured as the interpreter the library was built for (OPBUILD_PYTHON_EXECUTABLE, baked in
 *     by setup.py; env OPBUILD_PYTHON overrides), so that its site-packages (numpy, opbuild) are
 *     found; signal handlers are left to the program; the GIL is released after start-up. The
 *     interpreter lives until the process exits.
 *   - A thread Python has never seen gets a thread state that lasts until the thread exits, so
 *     that thread-local runtime state (the op-parameter cache) persists across calls.
 *   Locks: the GIL is never requested while holding an acl lock.
 *
 * Executors: aclOpExecutor is a C struct holding a reference to the Python Executor, kept in a
 * registry so that every handle is validated before use. A non-repeatable executor is released
 * by its phase-2 call; a repeatable one by aclDestroyAclOpExecutor (deferred while it runs).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"
#include "opcache.h"

#ifndef OPBUILD_PYTHON_EXECUTABLE
#error "OPBUILD_PYTHON_EXECUTABLE must name the Python interpreter to embed (defined by setup.py)"
#endif

#define CAPI_MODULE "opbuild.runtime.capi"

/* ---- the interpreter ------------------------------------------------------------------------ */

static pthread_mutex_t g_py_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_embedded_exe[PATH_MAX]; /* "" unless this library started the interpreter */
static pthread_key_t g_tstate_key;
static pthread_once_t g_tstate_key_once = PTHREAD_ONCE_INIT;

static int python_finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* pthread key destructor: the lasting thread state of an exiting thread. */
static void release_thread_state(void *p) {
    PyThreadState *ts = p;
    if (ts == NULL || !Py_IsInitialized() || python_finalizing()) return;
    PyEval_RestoreThread(ts);
    PyThreadState_Clear(ts);
    PyThreadState_DeleteCurrent();
}

static void make_tstate_key(void) { pthread_key_create(&g_tstate_key, release_thread_state); }

/* atexit: the embedded interpreter is never finalized; flush what Python code printed. */
static void flush_python_streams(void) {
    if (!Py_IsInitialized() || python_finalizing()) return;
    PyGILState_STATE g = PyGILState_Ensure();
    const char *names[] = {"stdout", "stderr"};
    for (int i = 0; i < 2; i++) {
        PyObject *stream = PySys_GetObject(names[i]);
        PyObject *r = stream && stream != Py_None ? PyObject_CallMethod(stream, "flush", NULL) : NULL;
        Py_XDECREF(r);
        PyErr_Clear();
    }
    PyGILState_Release(g);
}

static int start_python(char *msg, size_t n) {
    const char *exe = getenv(OPBUILD_ENV_PYTHON);
    if (exe == NULL || *exe == '\0') exe = OPBUILD_PYTHON_EXECUTABLE;
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, exe);
    if (!PyStatus_Exception(st)) st = PyConfig_SetBytesString(&config, &config.executable, exe);
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        snprintf(msg, n, "cannot start the embedded Python interpreter (%s; set OPBUILD_PYTHON to another): %s%s%s",
                 exe, st.func ? st.func : "", st.func ? ": " : "", st.err_msg ? st.err_msg : "exit requested");
        return -1;
    }
    PyEval_SaveThread(); /* the main thread state stays registered with the GILState API */
    snprintf(g_embedded_exe, sizeof g_embedded_exe, "%s", exe);
    atexit(flush_python_streams);
    return 0;
}

/* Make sure an interpreter runs; 0, or -1 with the reason reported for `api`. */
static int ensure_python(const char *api) {
    if (Py_IsInitialized()) return 0;
    char msg[ACL_MSG_LEN] = "";
    int rc = 0;
    pthread_mutex_lock(&g_py_lock);
    if (!Py_IsInitialized()) rc = start_python(msg, sizeof msg);
    pthread_mutex_unlock(&g_py_lock);
    if (rc) aclnn_fail(ACLNN_ERR_INNER, api, "%s", msg);
    return rc;
}

static PyGILState_STATE gil_enter(void) {
    if (PyGILState_GetThisThreadState() == NULL) {
        /* First call from this thread: create its thread state and keep it (count 1). */
        pthread_once(&g_tstate_key_once, make_tstate_key);
        (void)PyGILState_Ensure();
        pthread_setspecific(g_tstate_key, PyThreadState_Get());
        PyEval_SaveThread();
    }
    return PyGILState_Ensure();
}

/* The pending Python exception as text (traceback included), cleared. malloc'ed. GIL held. */
static char *python_error_text(void) {
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    char *text = NULL;
    PyObject *mod = PyImport_ImportModule("traceback");
    if (mod != NULL && type != NULL) {
        PyObject *lines = PyObject_CallMethod(mod, "format_exception", "OOO", type, value ? value : Py_None,
                                              tb ? tb : Py_None);
        if (lines != NULL) {
            PyObject *empty = PyUnicode_FromString("");
            PyObject *joined = empty ? PyUnicode_Join(empty, lines) : NULL;
            const char *s = joined ? PyUnicode_AsUTF8(joined) : NULL;
            if (s != NULL) text = strdup(s);
            Py_XDECREF(joined);
            Py_XDECREF(empty);
            Py_DECREF(lines);
        }
    }
    Py_XDECREF(mod);
    PyErr_Clear();
    if (text == NULL) {
        const char *name = type ? ((PyTypeObject *)type)->tp_name : "unknown Python error";
        text = strdup(name);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    /* no trailing newline in log lines */
    size_t len = text ? strlen(text) : 0;
    while (len > 0 && text[len - 1] == '\n') text[--len] = '\0';
    return text;
}

/* ---- opbuild/runtime/capi.py -------------------------------------------------------------- */

static PyObject *g_fn_get_workspace_size, *g_fn_run, *g_fn_reset_cache, *g_fn_set_deterministic,
    *g_fn_get_deterministic;

static char *load_capi_failed(const char *what) {
    char *err = python_error_text();
    char where[PATH_MAX + 128];
    if (g_embedded_exe[0])
        snprintf(where, sizeof where, "the embedded interpreter %s; set OPBUILD_PYTHON to an interpreter that has "
                 "opbuild installed", g_embedded_exe);
    else
        snprintf(where, sizeof where, "this process's Python; is opbuild installed for it?");
    size_t n = strlen(err) + strlen(what) + strlen(where) + 16;
    char *msg = malloc(n);
    if (msg != NULL) snprintf(msg, n, "%s (%s):\n%s", what, where, err);
    free(err);
    return msg;
}

/* Import capi once. NULL, or a malloc'ed error message. GIL held. */
static char *load_capi(void) {
    if (g_fn_get_workspace_size != NULL) return NULL;
    PyObject *mod = PyImport_ImportModule(CAPI_MODULE);
    if (mod == NULL && PyErr_ExceptionMatches(PyExc_ModuleNotFoundError)) {
        /* Not on sys.path: add the directory that holds this library's opbuild package. */
        PyErr_Clear();
        char root[PATH_MAX], resolved[PATH_MAX];
        snprintf(root, sizeof root, "%s/../..", acl_library_dir());
        PyObject *path = PySys_GetObject("path");
        PyObject *entry = PyUnicode_DecodeFSDefault(realpath(root, resolved) ? resolved : root);
        if (path != NULL && entry != NULL) PyList_Append(path, entry);
        Py_XDECREF(entry);
        mod = PyImport_ImportModule(CAPI_MODULE);
    }
    if (mod == NULL) return load_capi_failed("cannot import " CAPI_MODULE);
    PyObject *fns[5] = {
        PyObject_GetAttrString(mod, "get_workspace_size"), PyObject_GetAttrString(mod, "run"),
        PyObject_GetAttrString(mod, "reset_cache"), PyObject_GetAttrString(mod, "set_deterministic"),
        PyObject_GetAttrString(mod, "get_deterministic"),
    };
    Py_DECREF(mod);
    for (int i = 0; i < 5; i++) {
        if (fns[i] == NULL) {
            for (int j = 0; j < 5; j++) Py_XDECREF(fns[j]);
            return load_capi_failed(CAPI_MODULE " is incomplete");
        }
    }
    g_fn_run = fns[1];
    g_fn_reset_cache = fns[2];
    g_fn_set_deterministic = fns[3];
    g_fn_get_deterministic = fns[4];
    g_fn_get_workspace_size = fns[0]; /* last: marks the module loaded */
    return NULL;
}

/* Unpack capi's (status, message, ...) result: the status, and the message malloc'ed when the
 * status is not 0. Steals nothing. GIL held. */
static aclnnStatus unpack_status(PyObject *result, Py_ssize_t want, char **msg) {
    if (result == NULL) {
        *msg = python_error_text();
        return ACLNN_ERR_INNER;
    }
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != want) {
        *msg = strdup(CAPI_MODULE " returned an unexpected value");
        return ACLNN_ERR_INNER;
    }
    long status = PyLong_AsLong(PyTuple_GET_ITEM(result, 0));
    if (status == -1 && PyErr_Occurred()) {
        *msg = python_error_text();
        return ACLNN_ERR_INNER;
    }
    if (status != 0) {
        const char *text = PyUnicode_AsUTF8(PyTuple_GET_ITEM(result, 1));
        if (text == NULL) PyErr_Clear();
        *msg = strdup(text ? text : "(no message)");
    }
    return (aclnnStatus)status;
}

/* ---- executors ------------------------------------------------------------------------------ */

/* An executor of a native hit holds `plan` and the launch arguments; one of a Python miss holds
 * the Python Executor (`py`). `op` is the op whose phase 1 made it (checked by phase 2). */
struct aclOpExecutor {
    uint64_t magic;
    PyObject *py;           /* opbuild.runtime.call.executor.Executor, or NULL */
    opcache_plan *plan;     /* a native hit's plan (a reference), or NULL */
    const opcache_op *op;
    char *key;              /* full simplified key of a Python executor */
    int repeatable;
    int busy;               /* phase-2 calls in flight */
    int destroy_pending;    /* destroyed while busy: the last call frees it */
    struct aclOpExecutor *prev, *next;
    uint32_t nargs;
    void *args[];           /* a native hit's launch arguments */
};

/* The live executors, in shards by address so that threads calling concurrently rarely share a
 * lock: every handle is checked against its shard before use (a stale handle is reported, never
 * dereferenced). */
#define EXEC_SHARDS 64
typedef struct {
    pthread_mutex_t lock;
    aclOpExecutor *head;
    char pad[64 - sizeof(pthread_mutex_t) % 64 - sizeof(aclOpExecutor *) % 64];
} exec_shard;
static exec_shard g_shards[EXEC_SHARDS];
static pthread_once_t g_shards_once = PTHREAD_ONCE_INIT;

static void init_shards(void) {
    for (int i = 0; i < EXEC_SHARDS; i++) pthread_mutex_init(&g_shards[i].lock, NULL);
}

static exec_shard *shard_of(const aclOpExecutor *e) {
    pthread_once(&g_shards_once, init_shards);
    return &g_shards[((uintptr_t)e >> 6) % EXEC_SHARDS];
}

static int exec_live_locked(const aclOpExecutor *e) {
    for (aclOpExecutor *it = shard_of(e)->head; it != NULL; it = it->next)
        if (it == e) return 1;
    return 0;
}

static void exec_link(aclOpExecutor *e) {
    e->magic = ACL_MAGIC(OPBUILD_ACL_EXECUTOR);
    acl_live_add(OPBUILD_ACL_EXECUTOR, 1);
    exec_shard *sh = shard_of(e);
    pthread_mutex_lock(&sh->lock);
    e->next = sh->head;
    if (sh->head) sh->head->prev = e;
    sh->head = e;
    pthread_mutex_unlock(&sh->lock);
}

static void exec_unlink_locked(aclOpExecutor *e) {
    if (e->prev) e->prev->next = e->next;
    else shard_of(e)->head = e->next;
    if (e->next) e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

/* Free an unlinked executor; a Python one takes the GIL unless `gil_held`. */
static void exec_free(aclOpExecutor *e, int gil_held) {
    e->magic = 0;
    if (e->py != NULL) {
        if (gil_held) {
            Py_DECREF(e->py);
        } else if (Py_IsInitialized() && !python_finalizing()) {
            PyGILState_STATE g = gil_enter();
            Py_DECREF(e->py);
            PyGILState_Release(g);
        }
    }
    opcache_plan_unref(e->plan);
    free(e->key);
    free(e);
    acl_live_add(OPBUILD_ACL_EXECUTOR, -1);
}

#define NOT_LIVE_EXECUTOR                                                                                           \
    "executor %p is not a live aclOpExecutor: it ran already (an executor runs once unless made repeatable with " \
    "aclSetAclOpExecutorRepeatable), was destroyed, or was never created"

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (executor == NULL) return opbuild_aclnn_null_param("aclSetAclOpExecutorRepeatable", "executor");
    pthread_mutex_lock(&shard_of(executor)->lock);
    int live = exec_live_locked(executor);
    if (live) executor->repeatable = 1;
    pthread_mutex_unlock(&shard_of(executor)->lock);
    if (!live) return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclSetAclOpExecutorRepeatable", NOT_LIVE_EXECUTOR,
                                 (void *)executor);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (executor == NULL) return ACLNN_SUCCESS;
    pthread_mutex_lock(&shard_of(executor)->lock);
    int live = exec_live_locked(executor);
    int now = 0;
    if (live) {
        exec_unlink_locked(executor);
        if (executor->busy) executor->destroy_pending = 1;
        else now = 1;
    }
    pthread_mutex_unlock(&shard_of(executor)->lock);
    if (!live) return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor", NOT_LIVE_EXECUTOR,
                                 (void *)executor);
    if (now) exec_free(executor, 0);
    return ACLNN_SUCCESS;
}

const char *opbuild_aclnn_executor_key(const aclOpExecutor *executor) {
    pthread_mutex_lock(&shard_of(executor)->lock);
    const char *key = NULL;
    if (exec_live_locked(executor)) key = executor->plan ? executor->plan->key_text : executor->key;
    pthread_mutex_unlock(&shard_of(executor)->lock);
    return key;
}

/* ---- the process-wide deterministic / impl mode (mirrored from opbuild.runtime.settings) ----- */

static int g_dp = 3; /* settings.dp_code(0, high_performance, fallback=True): no impl mode set, until Python says otherwise */

void opbuild_aclnn_set_dp(int dp) { __atomic_store_n(&g_dp, dp, __ATOMIC_RELEASE); }

/* launch.add_launch_hook: while > 0, the native hit path declines (launch.WATCH_LISTENERS). */
static int g_watched;

void opbuild_aclnn_set_watched(int n) { __atomic_store_n(&g_watched, n, __ATOMIC_RELAXED); }

/* ---- phase 1 -------------------------------------------------------------------------------- */

/* The native hit: key -> cached plan -> executor; 1 done, 0 not a hit (take the Python path). */
static int native_phase1(opcache_op *op, const void *const *inputs, const void *const *attrs,
                         const aclTensor *const *outputs, opkey *key, int *have_key, uint64_t *workspaceSize,
                         aclOpExecutor **executor) {
    *have_key = opcache_call_key(op, (uint64_t)__atomic_load_n(&g_dp, __ATOMIC_ACQUIRE), inputs, attrs, outputs,
                                 key) == 0;
    if (!*have_key) {
        opcache_note_miss();
        return 0;
    }
    if (__builtin_expect(__atomic_load_n(&g_watched, __ATOMIC_RELAXED) != 0, 0)) {
        *have_key = 2; /* launches are watched (dump, profile): the Python path, which calls the hooks */
        return 0;
    }
    opcache_plan *plan = opcache_lookup(key);
    if (plan == NULL) return 0;
    aclOpExecutor *e = calloc(1, sizeof *e + plan->nargs * sizeof(void *));
    if (e == NULL || opcache_launch_args(plan, inputs, opcache_n_inputs(op), outputs, opcache_n_outputs(op),
                                         e->args) < 0) {
        free(e);
        opcache_plan_unref(plan);
        *have_key = 2; /* the plan is cached: the miss path must not insert it again */
        return 0;
    }
    e->plan = plan;
    e->op = op;
    e->nargs = plan->nargs;
    exec_link(e);
    *workspaceSize = plan->ws_size;
    *executor = e;
    return 1;
}

/* Learn the op's signature and cache the plan of a Python miss: capi's `native` value is None or
 * (signature, plan) with signature (in_kinds: bytes, attr_kinds: bytes, defaults: tuple of
 * bytes) and plan None or its plan record (plancache.h; plans.native_record), parsed by the one
 * parser. GIL held. */
static void learn_from_miss(opcache_op *op, PyObject *native, const void *const *inputs, const void *const *attrs,
                            const aclTensor *const *outputs, opkey *key, int *have_key) {
    if (native == Py_None || !PyTuple_Check(native) || PyTuple_GET_SIZE(native) != 2) return;
    PyObject *sig = PyTuple_GET_ITEM(native, 0), *rec = PyTuple_GET_ITEM(native, 1);
    if (!opcache_op_has_signature(op)) {
        char *in_kinds, *attr_kinds;
        Py_ssize_t n_in, n_attr;
        long n_out;
        PyObject *defaults;
        if (!PyArg_ParseTuple(sig, "y#y#lO!", &in_kinds, &n_in, &attr_kinds, &n_attr, &n_out, &PyTuple_Type,
                              &defaults) ||
            PyTuple_GET_SIZE(defaults) != n_attr || n_attr > 64) {
            PyErr_Clear();
            return;
        }
        const uint64_t *dw[64];
        size_t dn[64];
        for (Py_ssize_t i = 0; i < n_attr; i++) {
            PyObject *b = PyTuple_GET_ITEM(defaults, i);
            if (!PyBytes_Check(b)) return;
            dw[i] = (const uint64_t *)PyBytes_AS_STRING(b);
            dn[i] = (size_t)PyBytes_GET_SIZE(b) / sizeof(uint64_t);
        }
        opcache_op_set_signature(op, (const uint8_t *)in_kinds, (uint32_t)n_in, (const uint8_t *)attr_kinds,
                                 (uint32_t)n_attr, (uint32_t)n_out, dw, dn);
    }
    if (rec == Py_None || *have_key == 2) return;
    if (!*have_key) {
        opkey_free(key);
        *have_key = opcache_call_key(op, (uint64_t)__atomic_load_n(&g_dp, __ATOMIC_ACQUIRE), inputs, attrs, outputs,
                                     key) == 0;
        if (!*have_key) return;
    }
    if (!PyBytes_Check(rec)) return;
    char err[256];
    opcache_plan *plan = plancache_plan_from_record(PyBytes_AS_STRING(rec), (size_t)PyBytes_GET_SIZE(rec), key->w,
                                                    key->n, 1, err, sizeof err);
    if (plan == NULL) { /* capi.native_plan made it: a bug, reported; the call itself succeeded */
        char api[128];
        opcache_op_api(op, api, sizeof api);
        acl_error("ACLNN", "%s: the plan is not cached natively: %s", api, err);
        return;
    }
    if (plan->stamp_path != NULL) opcache_insert(plan); /* no stamp, no caching */
    opcache_plan_unref(plan);
}

/* The names of the two phases' APIs in messages. Formatted only for a message: an snprintf per
 * call was ~45% of a C ABI cache hit. */
static const char *phase1_api(char *buf, size_t n, const char *op_type) {
    snprintf(buf, n, "aclnn%sGetWorkspaceSize", op_type ? op_type : "");
    return buf;
}

static const char *phase2_api(char *buf, size_t n, const opcache_op *op) {
    if (op != NULL) opcache_op_api(op, buf, n);
    else snprintf(buf, n, "aclnn (phase 2)");
    return buf;
}

aclnnStatus opbuild_aclnn_get_workspace_size(const char *package_root, const char *op_type, const void *const *inputs,
                                             const void *const *attrs, const aclTensor *const *outputs,
                                             uint64_t *workspaceSize, aclOpExecutor **executor) {
    char api[256]; /* the API's name, formatted only for a message (phase1_api) */
    if (op_type == NULL) return opbuild_aclnn_null_param(phase1_api(api, sizeof api, op_type), "op_type");
    if (package_root == NULL) return opbuild_aclnn_null_param(phase1_api(api, sizeof api, op_type), "package_root");
    if (workspaceSize == NULL) return opbuild_aclnn_null_param(phase1_api(api, sizeof api, op_type), "workspaceSize");
    if (executor == NULL) return opbuild_aclnn_null_param(phase1_api(api, sizeof api, op_type), "executor");
    *executor = NULL;
    *workspaceSize = 0;
    opcache_op *op = opcache_op_get(package_root, op_type);
    if (op == NULL) return aclnn_fail(ACLNN_ERR_INNER, phase1_api(api, sizeof api, op_type), "out of memory");
    opkey key;
    int have_key = 0;
    if (native_phase1(op, inputs, attrs, outputs, &key, &have_key, workspaceSize, executor)) {
        opkey_free(&key);
        return ACLNN_SUCCESS;
    }
    phase1_api(api, sizeof api, op_type); /* the miss path's messages */
    /* the miss path: the Python runtime selects, tiles and fills the cache */
    if (ensure_python(api)) {
        opkey_free(&key);
        return ACLNN_ERR_INNER;
    }
    aclOpExecutor *e = calloc(1, sizeof *e);
    if (e == NULL) {
        opkey_free(&key);
        return aclnn_fail(ACLNN_ERR_INNER, api, "out of memory");
    }
    e->op = op;

    aclnnStatus status;
    char *msg = NULL;
    uint64_t size = 0;
    PyGILState_STATE g = gil_enter();
    msg = load_capi();
    if (msg != NULL) {
        status = ACLNN_ERR_INNER;
    } else {
        PyObject *r = PyObject_CallFunction(g_fn_get_workspace_size, "ssKKK", package_root, op_type,
                                            (unsigned long long)(uintptr_t)inputs, (unsigned long long)(uintptr_t)attrs,
                                            (unsigned long long)(uintptr_t)outputs);
        status = unpack_status(r, 6, &msg);
        if (status == ACLNN_SUCCESS) {
            size = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(r, 2));
            const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(r, 4));
            if (PyErr_Occurred() || k == NULL) {
                msg = python_error_text();
                status = ACLNN_ERR_INNER;
            } else {
                e->key = strdup(k);
                e->py = PyTuple_GET_ITEM(r, 3);
                Py_INCREF(e->py);
                learn_from_miss(op, PyTuple_GET_ITEM(r, 5), inputs, attrs, outputs, &key, &have_key);
            }
        }
        Py_XDECREF(r);
    }
    PyGILState_Release(g);
    opkey_free(&key);

    if (status != ACLNN_SUCCESS) {
        aclnn_fail(status, api, "%s", msg ? msg : "(no message)");
        free(msg);
        free(e->key);
        free(e);
        return status;
    }
    exec_link(e);
    *workspaceSize = size;
    *executor = e;
    return ACLNN_SUCCESS;
}

/* ---- phase 2 -------------------------------------------------------------------------------- */

static void unref_plan_host_fn(void *plan) { opcache_plan_unref(plan); }

/* Phase 2 of a native hit's executor, in C: the checks of executor.execute, then the launch. */
static aclnnStatus native_run(aclOpExecutor *e, void *workspace, uint64_t workspaceSize, aclrtStream stream,
                              char **msg) {
    const opcache_plan *plan = e->plan;
    char text[ACL_MSG_LEN];
    if (workspaceSize < plan->ws_size) {
        snprintf(text, sizeof text, "workspace of %llu bytes is smaller than the %llu required",
                 (unsigned long long)workspaceSize, (unsigned long long)plan->ws_size);
        *msg = strdup(text);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (plan->ws_size && workspace == NULL) {
        snprintf(text, sizeof text, "workspace is a null pointer (%llu bytes required)", (unsigned long long)plan->ws_size);
        *msg = strdup(text);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    const sim_api *sim = acl_sim();
    if (sim == NULL) {
        *msg = strdup("the device simulator cannot be loaded (see the previous error)");
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    void *args_buf[64];
    void **args = e->nargs <= 64 ? args_buf : malloc(e->nargs * sizeof(void *));
    if (args == NULL) {
        *msg = strdup("out of memory");
        return ACLNN_ERR_INNER;
    }
    memcpy(args, e->args, e->nargs * sizeof(void *));
    args[plan->ntensors] = workspace;
    char err[SIM_ERROR_LEN] = "";
    int rc;
    if (stream == NULL) {
        rc = sim->launch(NULL, (opbuild_kernel_launch_fn)plan->fn, args, e->nargs, plan->block_dim, plan->sync, err,
                         sizeof err);
    } else {
        /* the kernel runs later: its tiling argument (in the plan) must outlive it; the stream's
         * thread releases the plan right after the kernel (one enqueue, sim_launch_then) */
        opcache_plan_ref(e->plan);
        rc = sim->launch_then((sim_stream *)stream, (opbuild_kernel_launch_fn)plan->fn, args, e->nargs,
                              plan->block_dim, plan->sync, unref_plan_host_fn, e->plan, err, sizeof err);
        if (rc != 0) opcache_plan_unref(e->plan);
    }
    if (args != args_buf) free(args);
    if (rc != 0) {
        snprintf(text, sizeof text, "%s: kernel %s failed: %s", plan->key_text, plan->kernel, err);
        *msg = strdup(text);
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus run_executor(const opcache_op *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                aclrtStream stream) {
    if (executor == NULL) return opbuild_aclnn_null_param("aclnn (phase 2)", "executor");
    char api[256]; /* the API's name, formatted only for a message (below) */
    pthread_mutex_lock(&shard_of(executor)->lock);
    int live = exec_live_locked(executor);
    int repeatable = 0, wrong_op = 0;
    const opcache_op *made_for = NULL;
    if (live) {
        made_for = executor->op;
        wrong_op = op != NULL && made_for != op;
        repeatable = executor->repeatable;
        if (!wrong_op) {
            if (repeatable) executor->busy++;
            else exec_unlink_locked(executor); /* claimed: this call releases it */
        }
    }
    pthread_mutex_unlock(&shard_of(executor)->lock);
    const opcache_op *named = op != NULL ? op : live ? made_for : NULL;
    if (!live)
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, phase2_api(api, sizeof api, named), NOT_LIVE_EXECUTOR,
                          (void *)executor);
    if (wrong_op) {
        char other[256];
        opcache_op_api(made_for, other, sizeof other);
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, phase2_api(api, sizeof api, named),
                          "the executor was made by %sGetWorkspaceSize, not %sGetWorkspaceSize", other, api);
    }

    aclnnStatus status;
    char *msg = NULL;
    int gil_held = 0;
    PyGILState_STATE g = PyGILState_UNLOCKED;
    if (stream != NULL && !acl_stream_is_live(stream)) {
        status = ACLNN_ERR_PARAM_INVALID;
        msg = malloc(160);
        if (msg) snprintf(msg, 160, "stream %p is not a live stream of aclrtCreateStream", stream);
    } else if (executor->plan != NULL) {
        status = native_run(executor, workspace, workspaceSize, stream, &msg); /* no Python */
    } else {
        g = gil_enter();
        gil_held = 1;
        msg = load_capi();
        if (msg != NULL) {
            status = ACLNN_ERR_INNER;
        } else {
            PyObject *r = PyObject_CallFunction(g_fn_run, "KKOKi", (unsigned long long)(uintptr_t)workspace,
                                                (unsigned long long)workspaceSize, executor->py,
                                                (unsigned long long)(uintptr_t)stream, repeatable);
            status = unpack_status(r, 2, &msg);
            Py_XDECREF(r);
        }
    }

    if (!repeatable) {
        exec_free(executor, gil_held);
    } else {
        pthread_mutex_lock(&shard_of(executor)->lock);
        executor->busy--;
        int doomed = executor->destroy_pending && executor->busy == 0;
        pthread_mutex_unlock(&shard_of(executor)->lock);
        if (doomed) exec_free(executor, gil_held);
    }
    if (gil_held) PyGILState_Release(g);
    if (status != ACLNN_SUCCESS) {
        aclnn_fail(status, phase2_api(api, sizeof api, named), "%s", msg ? msg : "(no message)");
    }
    free(msg);
    return status;
}

aclnnStatus opbuild_aclnn_run(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return run_executor(NULL, workspace, workspaceSize, executor, stream);
}

aclnnStatus opbuild_aclnn_run_op(const char *package_root, const char *op_type, void *workspace,
                                 uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    if (package_root == NULL || op_type == NULL) return opbuild_aclnn_run(workspace, workspaceSize, executor, stream);
    const opcache_op *op = opcache_op_get(package_root, op_type);
    if (op == NULL) return aclnn_fail(ACLNN_ERR_INNER, "aclnn (phase 2)", "out of memory");
    return run_executor(op, workspace, workspaceSize, executor, stream);
}

/* ---- thread cache and settings -------------------------------------------------------------- */

void ResetCacheThreadLocal(void) {
    /* As CANN's (opbase op_cache.cpp): resets this thread's per-call hashing state, which this
     * runtime does not keep between calls (the key is built on the stack of each call). The
     * cached plans stay; opbuild_aclnn_clear_cache() empties the calling thread's cache. No
     * Python: op_fallback calls this before every phase 1. */
}

aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
    if (opt != ACL_OPT_DETERMINISTIC)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCtxSetSysParamOpt: unsupported option %d", (int)opt);
    if (value != 0 && value != 1)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCtxSetSysParamOpt: ACL_OPT_DETERMINISTIC takes 0 or 1, not %lld",
                        (long long)value);
    if (ensure_python("aclrtCtxSetSysParamOpt")) return ACL_ERROR_FAILURE;
    PyGILState_STATE g = gil_enter();
    char *msg = load_capi();
    if (msg == NULL) {
        PyObject *r = PyObject_CallFunction(g_fn_set_deterministic, "i", (int)value);
        if (r == NULL) msg = python_error_text();
        Py_XDECREF(r);
    }
    PyGILState_Release(g);
    if (msg != NULL) {
        acl_fail(ACL_ERROR_FAILURE, "aclrtCtxSetSysParamOpt: %s", msg);
        free(msg);
        return ACL_ERROR_FAILURE;
    }
    return ACL_SUCCESS;
}

aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value) {
    if (value == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCtxGetSysParamOpt: value is a null pointer");
    if (opt != ACL_OPT_DETERMINISTIC)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCtxGetSysParamOpt: unsupported option %d", (int)opt);
    if (ensure_python("aclrtCtxGetSysParamOpt")) return ACL_ERROR_FAILURE;
    PyGILState_STATE g = gil_enter();
    char *msg = load_capi();
    long v = 0;
    if (msg == NULL) {
        PyObject *r = PyObject_CallNoArgs(g_fn_get_deterministic);
        if (r != NULL) v = PyLong_AsLong(r);
        if (r == NULL || PyErr_Occurred()) msg = python_error_text();
        Py_XDECREF(r);
    }
    PyGILState_Release(g);
    if (msg != NULL) {
        acl_fail(ACL_ERROR_FAILURE, "aclrtCtxGetSysParamOpt: %s", msg);
        free(msg);
        return ACL_ERROR_FAILURE;
    }
    *value = v;
    return ACL_SUCCESS;
}

/* ---- package roots of generated wrapper libraries ------------------------------------------- */

typedef struct root_entry {
    struct root_entry *next;
    char *object;
    char *relative;
    char *root;
} root_entry;

static pthread_mutex_t g_roots_lock = PTHREAD_MUTEX_INITIALIZER;
static root_entry *g_roots;

const char *opbuild_aclnn_package_root(const void *anchor, const char *relative) {
    Dl_info info;
    if (anchor == NULL || dladdr(anchor, &info) == 0 || info.dli_fname == NULL) {
        aclnn_fail(ACLNN_ERR_INNER, "aclnn", "cannot find the shared object containing %p (dladdr failed)", anchor);
        return NULL;
    }
    if (relative == NULL) relative = ".";
    const char *result = NULL;
    pthread_mutex_lock(&g_roots_lock);
    for (root_entry *r = g_roots; r != NULL; r = r->next) {
        if (strcmp(r->object, info.dli_fname) == 0 && strcmp(r->relative, relative) == 0) {
            result = r->root;
            break;
        }
    }
    pthread_mutex_unlock(&g_roots_lock);
    if (result != NULL) return result;

    char dir[PATH_MAX], joined[PATH_MAX * 2], resolved[PATH_MAX];
    if (realpath(info.dli_fname, dir) == NULL) snprintf(dir, sizeof dir, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash != NULL) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    snprintf(joined, sizeof joined, "%s/%s", dir, relative);
    if (realpath(joined, resolved) == NULL) {
        aclnn_fail(ACLNN_ERR_INNER, "aclnn", "the op package root %s of %s does not exist", joined, info.dli_fname);
        return NULL;
    }
    root_entry *r = calloc(1, sizeof *r);
    if (r != NULL) {
        r->object = strdup(info.dli_fname);
        r->relative = strdup(relative);
        r->root = strdup(resolved);
    }
    if (r == NULL || r->object == NULL || r->relative == NULL || r->root == NULL) {
        if (r != NULL) {
            free(r->object);
            free(r->relative);
            free(r->root);
            free(r);
        }
        aclnn_fail(ACLNN_ERR_INNER, "aclnn", "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&g_roots_lock);
    r->next = g_roots;
    g_roots = r;
    pthread_mutex_unlock(&g_roots_lock);
    return r->root;
}

/* ---- aclnnInit / aclnnFinalize ---------------------------------------------------------------- */

aclnnStatus aclnnInit(const char *configPath) {
    if (configPath != NULL) {
        FILE *f = fopen(configPath, "r");
        if (f == NULL) return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclnnInit", "config file %s cannot be read", configPath);
        fclose(f);
    }
    return ACLNN_SUCCESS; /* the runtime starts on the first aclnn call */
}

aclnnStatus aclnnFinalize(void) {
    ResetCacheThreadLocal();
    return ACLNN_SUCCESS;
}

/* ---- aclSet*TensorAddr ------------------------------------------------------------------------ */

enum { ADDR_INPUT = 0, ADDR_OUTPUT = 1, ADDR_ANY = 2 };

/* Point `tensor` at `addr`, then the executor's launch argument for it: kind/index as the API
 * names them (input index, output index, or inputs-then-outputs index). */
static aclnnStatus set_tensor_addr(aclOpExecutor *executor, int kind, size_t index, aclTensor *tensor, void *addr,
                                   const char *api) {
    if (executor == NULL || tensor == NULL)
        return aclnn_fail(ACLNN_ERR_INNER_NULLPTR, api, "%s is a null pointer", executor == NULL ? "executor" : "tensor");
    aclnnStatus st = aclSetRawTensorAddr(tensor, addr);
    if (st != ACLNN_SUCCESS) return st;
    uint64_t bytes, room;
    if (acl_tensor_storage_bytes(tensor, aclDataTypeSize((aclDataType)tensor->dataType), &bytes) != 0)
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, api, "the tensor's storage is larger than 2^64 bytes");
    if (acl_device_room(addr, &room) && bytes > room)
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, api, "the tensor's storage is %llu bytes, but the device buffer %p "
                          "points into has %llu from there (aclrtMalloc)", (unsigned long long)bytes, addr,
                          (unsigned long long)room);
    pthread_mutex_lock(&shard_of(executor)->lock);
    int live = exec_live_locked(executor);
    if (live) executor->busy++; /* not freed while we update it */
    pthread_mutex_unlock(&shard_of(executor)->lock);
    if (!live) return aclnn_fail(ACLNN_ERR_PARAM_INVALID, api, NOT_LIVE_EXECUTOR, (void *)executor);

    char *msg = NULL;
    if (executor->plan != NULL) { /* a native hit: no lists, inputs then outputs */
        uint32_t n_in = opcache_n_inputs(executor->op), n = executor->plan->ntensors;
        size_t slot = kind == ADDR_OUTPUT ? n_in + index : index;
        if ((kind == ADDR_INPUT && index >= n_in) || slot >= n) {
            st = ACLNN_ERR_PARAM_INVALID;
            msg = strdup("index out of range");
        } else {
            size_t item = aclDataTypeSize((aclDataType)tensor->dataType);
            executor->args[slot] = (char *)addr + tensor->offset * (int64_t)item;
        }
    } else {
        PyGILState_STATE g = gil_enter();
        PyObject *mod = PyImport_ImportModule(CAPI_MODULE);
        PyObject *r = mod ? PyObject_CallMethod(mod, "set_address", "OinK", executor->py, kind, (Py_ssize_t)index,
                                                (unsigned long long)((uintptr_t)addr + (uintptr_t)(tensor->offset *
                                                    (int64_t)aclDataTypeSize((aclDataType)tensor->dataType))))
                          : NULL;
        st = unpack_status(r, 2, &msg);
        Py_XDECREF(r);
        Py_XDECREF(mod);
        PyGILState_Release(g);
    }
    pthread_mutex_lock(&shard_of(executor)->lock);
    executor->busy--;
    int doomed = executor->destroy_pending && executor->busy == 0;
    pthread_mutex_unlock(&shard_of(executor)->lock);
    if (doomed) exec_free(executor, 0);
    if (st != ACLNN_SUCCESS) aclnn_fail(st, api, "%s", msg ? msg : "(no message)");
    free(msg);
    return st;
}

/* Element relativeIndex of the list of dynamic parameter irIndex: the simulator's executors pass
 * lists through phase 2's argument preparation, so only the tensor itself is re-pointed when the
 * executor cannot be; the status says so. */
static aclnnStatus set_list_addr(aclOpExecutor *executor, size_t irIndex, size_t relativeIndex, aclTensorList *tensors,
                                 void *addr, const char *api) {
    (void)irIndex;
    if (executor == NULL || tensors == NULL)
        return aclnn_fail(ACLNN_ERR_INNER_NULLPTR, api, "%s is a null pointer", executor == NULL ? "executor" : "tensors");
    uint64_t size = 0;
    aclnnStatus st = aclGetTensorListSize(tensors, &size);
    if (st != ACLNN_SUCCESS) return st;
    if (relativeIndex >= size)
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, api, "relativeIndex %zu out of range: the list has %llu tensors",
                          relativeIndex, (unsigned long long)size);
    st = aclSetRawTensorAddr(tensors->tensors[relativeIndex], addr);
    if (st != ACLNN_SUCCESS) return st;
    return aclnn_fail(ACLNN_ERR_PARAM_INVALID, api, "the tensor now points at %p, but an executor with a tensor list "
                      "prepares its arguments when it is made: call phase 1 again", addr);
}

aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_tensor_addr(executor, ADDR_INPUT, index, tensor, addr, "aclSetInputTensorAddr");
}
aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_tensor_addr(executor, ADDR_OUTPUT, index, tensor, addr, "aclSetOutputTensorAddr");
}
aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_tensor_addr(executor, ADDR_ANY, index, tensor, addr, "aclSetTensorAddr");
}
aclnnStatus aclSetDynamicInputTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                         aclTensorList *tensors, void *addr) {
    return set_list_addr(executor, irIndex, relativeIndex, tensors, addr, "aclSetDynamicInputTensorAddr");
}
aclnnStatus aclSetDynamicOutputTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                          aclTensorList *tensors, void *addr) {
    return set_list_addr(executor, irIndex, relativeIndex, tensors, addr, "aclSetDynamicOutputTensorAddr");
}
aclnnStatus aclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                    aclTensorList *tensors, void *addr) {
    return set_list_addr(executor, irIndex, relativeIndex, tensors, addr, "aclSetDynamicTensorAddr");
}

/* CANN's reserved capitalized aliases. */
aclnnStatus AclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return aclSetInputTensorAddr(executor, index, tensor, addr);
}
aclnnStatus AclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return aclSetOutputTensorAddr(executor, index, tensor, addr);
}
aclnnStatus AclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return aclSetTensorAddr(executor, index, tensor, addr);
}
aclnnStatus AclSetDynamicInputTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                         aclTensorList *tensors, void *addr) {
    return aclSetDynamicInputTensorAddr(executor, irIndex, relativeIndex, tensors, addr);
}
aclnnStatus AclSetDynamicOutputTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                          aclTensorList *tensors, void *addr) {
    return aclSetDynamicOutputTensorAddr(executor, irIndex, relativeIndex, tensors, addr);
}
aclnnStatus AclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                    aclTensorList *tensors, void *addr) {
    return aclSetDynamicTensorAddr(executor, irIndex, relativeIndex, tensors, addr);
}

/* ---- Python calls of the aclop / aclmdl API (acl_op.c) -------------------------------------- */

int acl_py_enter(const char *api, PyGILState_STATE *g) {
    if (ensure_python(api)) return -1;
    *g = gil_enter();
    return 0;
}

char *acl_py_error_text(void) { return python_error_text(); }

PyObject *acl_py_call(const char *module, const char *func, PyObject *args, char **msg) {
    *msg = NULL;
    if (args == NULL) {
        *msg = python_error_text();
        return NULL;
    }
    *msg = load_capi(); /* puts opbuild on sys.path when the interpreter lacks it */
    if (*msg != NULL) {
        Py_DECREF(args);
        return NULL;
    }
    PyObject *mod = PyImport_ImportModule(module);
    if (mod == NULL) {
        Py_DECREF(args);
        char what[256];
        snprintf(what, sizeof what, "cannot import %s", module);
        *msg = load_capi_failed(what);
        return NULL;
    }
    PyObject *fn = PyObject_GetAttrString(mod, func);
    Py_DECREF(mod);
    PyObject *r = fn ? PyObject_CallObject(fn, args) : NULL;
    Py_XDECREF(fn);
    Py_DECREF(args);
    if (r == NULL) *msg = python_error_text();
    return r;
}
