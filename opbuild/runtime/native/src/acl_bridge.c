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
    const char *exe = getenv("OPBUILD_PYTHON");
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

struct aclOpExecutor {
    uint64_t magic;
    PyObject *py;           /* opbuild.runtime.executor.Executor */
    char *api;              /* "aclnn<Op>" */
    char *key;              /* full simplified key */
    int repeatable;
    int busy;               /* phase-2 calls in flight */
    int destroy_pending;    /* destroyed while busy: the last call frees it */
    struct aclOpExecutor *prev, *next;
};

static pthread_mutex_t g_exec_lock = PTHREAD_MUTEX_INITIALIZER;
static aclOpExecutor *g_execs;

static int exec_live_locked(const aclOpExecutor *e) {
    for (aclOpExecutor *it = g_execs; it != NULL; it = it->next)
        if (it == e) return 1;
    return 0;
}

static void exec_unlink_locked(aclOpExecutor *e) {
    if (e->prev) e->prev->next = e->next;
    else g_execs = e->next;
    if (e->next) e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

/* Free an unlinked executor; takes the GIL unless `gil_held`. */
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
    free(e->api);
    free(e->key);
    free(e);
    acl_live_add(OPBUILD_ACL_EXECUTOR, -1);
}

#define NOT_LIVE_EXECUTOR                                                                                           \
    "executor %p is not a live aclOpExecutor: it ran already (an executor runs once unless made repeatable with " \
    "aclSetAclOpExecutorRepeatable), was destroyed, or was never created"

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (executor == NULL) return opbuild_aclnn_null_param("aclSetAclOpExecutorRepeatable", "executor");
    pthread_mutex_lock(&g_exec_lock);
    int live = exec_live_locked(executor);
    if (live) executor->repeatable = 1;
    pthread_mutex_unlock(&g_exec_lock);
    if (!live) return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclSetAclOpExecutorRepeatable", NOT_LIVE_EXECUTOR,
                                 (void *)executor);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (executor == NULL) return ACLNN_SUCCESS;
    pthread_mutex_lock(&g_exec_lock);
    int live = exec_live_locked(executor);
    int now = 0;
    if (live) {
        exec_unlink_locked(executor);
        if (executor->busy) executor->destroy_pending = 1;
        else now = 1;
    }
    pthread_mutex_unlock(&g_exec_lock);
    if (!live) return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor", NOT_LIVE_EXECUTOR,
                                 (void *)executor);
    if (now) exec_free(executor, 0);
    return ACLNN_SUCCESS;
}

const char *opbuild_aclnn_executor_key(const aclOpExecutor *executor) {
    pthread_mutex_lock(&g_exec_lock);
    const char *key = exec_live_locked(executor) ? executor->key : NULL;
    pthread_mutex_unlock(&g_exec_lock);
    return key;
}

/* ---- phase 1 -------------------------------------------------------------------------------- */

aclnnStatus opbuild_aclnn_get_workspace_size(const char *package_root, const char *op_type, const void *const *inputs,
                                             const void *const *attrs, const aclTensor *const *outputs,
                                             uint64_t *workspaceSize, aclOpExecutor **executor) {
    char api[256];
    snprintf(api, sizeof api, "aclnn%sGetWorkspaceSize", op_type ? op_type : "");
    if (op_type == NULL) return opbuild_aclnn_null_param(api, "op_type");
    if (package_root == NULL) return opbuild_aclnn_null_param(api, "package_root");
    if (workspaceSize == NULL) return opbuild_aclnn_null_param(api, "workspaceSize");
    if (executor == NULL) return opbuild_aclnn_null_param(api, "executor");
    *executor = NULL;
    *workspaceSize = 0;
    if (ensure_python(api)) return ACLNN_ERR_INNER;

    aclOpExecutor *e = calloc(1, sizeof *e);
    if (e != NULL) {
        e->api = malloc(strlen(op_type) + 6);
        if (e->api != NULL) sprintf(e->api, "aclnn%s", op_type);
    }
    if (e == NULL || e->api == NULL) {
        if (e != NULL) free(e);
        return aclnn_fail(ACLNN_ERR_INNER, api, "out of memory");
    }

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
        status = unpack_status(r, 5, &msg);
        if (status == ACLNN_SUCCESS) {
            size = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(r, 2));
            const char *key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(r, 4));
            if (PyErr_Occurred() || key == NULL) {
                msg = python_error_text();
                status = ACLNN_ERR_INNER;
            } else {
                e->key = strdup(key);
                e->py = PyTuple_GET_ITEM(r, 3);
                Py_INCREF(e->py);
            }
        }
        Py_XDECREF(r);
    }
    PyGILState_Release(g);

    if (status != ACLNN_SUCCESS) {
        aclnn_fail(status, api, "%s", msg ? msg : "(no message)");
        free(msg);
        free(e->api);
        free(e);
        return status;
    }
    e->magic = ACL_MAGIC(OPBUILD_ACL_EXECUTOR);
    acl_live_add(OPBUILD_ACL_EXECUTOR, 1);
    pthread_mutex_lock(&g_exec_lock);
    e->next = g_execs;
    if (g_execs) g_execs->prev = e;
    g_execs = e;
    pthread_mutex_unlock(&g_exec_lock);
    *workspaceSize = size;
    *executor = e;
    return ACLNN_SUCCESS;
}

/* ---- phase 2 -------------------------------------------------------------------------------- */

aclnnStatus opbuild_aclnn_run(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    if (executor == NULL) return opbuild_aclnn_null_param("aclnn (phase 2)", "executor");
    char api[256];
    pthread_mutex_lock(&g_exec_lock);
    int live = exec_live_locked(executor);
    int repeatable = 0;
    if (live) {
        snprintf(api, sizeof api, "%s", executor->api);
        repeatable = executor->repeatable;
        if (repeatable) executor->busy++;
        else exec_unlink_locked(executor); /* claimed: this call releases it */
    }
    pthread_mutex_unlock(&g_exec_lock);
    if (!live) return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclnn (phase 2)", NOT_LIVE_EXECUTOR, (void *)executor);

    aclnnStatus status;
    char *msg = NULL;
    int gil_held = 0;
    PyGILState_STATE g = PyGILState_UNLOCKED;
    if (stream != NULL && !acl_stream_is_live(stream)) {
        status = ACLNN_ERR_PARAM_INVALID;
        msg = malloc(160);
        if (msg) snprintf(msg, 160, "stream %p is not a live stream of aclrtCreateStream", stream);
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
        pthread_mutex_lock(&g_exec_lock);
        executor->busy--;
        int doomed = executor->destroy_pending && executor->busy == 0;
        pthread_mutex_unlock(&g_exec_lock);
        if (doomed) exec_free(executor, gil_held);
    }
    if (gil_held) PyGILState_Release(g);
    if (status != ACLNN_SUCCESS) {
        aclnn_fail(status, api, "%s", msg ? msg : "(no message)");
    }
    free(msg);
    return status;
}

/* ---- thread cache and settings -------------------------------------------------------------- */

void ResetCacheThreadLocal(void) {
    if (!Py_IsInitialized()) return; /* no runtime, no cache */
    PyGILState_STATE g = gil_enter();
    char *msg = load_capi();
    if (msg == NULL) {
        PyObject *r = PyObject_CallNoArgs(g_fn_reset_cache);
        if (r == NULL) msg = python_error_text();
        Py_XDECREF(r);
    }
    PyGILState_Release(g);
    if (msg != NULL) {
        aclnn_fail(ACLNN_ERR_INNER, "ResetCacheThreadLocal", "%s", msg);
        free(msg);
    }
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
