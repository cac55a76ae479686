/* fallback_exec.c: _fastpath.syn_exec, op_fallback's syn_exec_aclnn for the common call in C.
 *
 * What: ResetCacheThreadLocal, aclCreateTensor of each argument, aclnnXGetWorkspaceSize,
 * aclnnX on the given stream, then aclDestroyTensor of each -- CANN_OPS_OPB_SYN_EXEC_ACLNN's
 * steps -- for a call whose arguments are all C-contiguous, native-endian plain numpy arrays (ND
 * aclTensors) and whose phase 1 asks for no workspace.
 * Why: through ctypes the same steps cost ~40 us per call (three aclTensors made and destroyed
 * with nine converted arguments each, one prototype call per phase); here they cost about what
 * the two phases do. Everything else -- other argument kinds, workspaces, any failure before
 * phase 2 -- is left to opbuild/runtime/fallback/execute.py (the reference), which redoes the call
 * from the start: up to phase 2 nothing this function did is visible (ResetCacheThreadLocal only
 * resets per-call state; the tensors and executor it made are destroyed).
 *
 * The functions are the acl library's and the op package's, passed by address (the callers
 * resolve them once per API and search path). The GIL is released while they run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL opbuild_fastpath_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define SYN_MAX_TENSORS 8
#define SYN_MAX_DIMS 8
#define SYN_FORMAT_ND 2

typedef void (*reset_fn)(void);
typedef void *(*create_tensor_fn)(const int64_t *, uint64_t, int, const int64_t *, int64_t, int, const int64_t *,
                                  uint64_t, void *);
typedef int (*destroy_fn)(void *);
typedef int32_t (*phase2_fn)(void *, uint64_t, void *, void *);
typedef void *P;

/* aclnnXGetWorkspaceSize(t0, ..., t(n-1), &size, &executor) with n aclTensor * arguments. */
static int32_t call_phase1(void *f, int n, P *t, uint64_t *ws, P *ex) {
    switch (n) {
    case 1: return ((int32_t (*)(P, uint64_t *, P *))f)(t[0], ws, ex);
    case 2: return ((int32_t (*)(P, P, uint64_t *, P *))f)(t[0], t[1], ws, ex);
    case 3: return ((int32_t (*)(P, P, P, uint64_t *, P *))f)(t[0], t[1], t[2], ws, ex);
    case 4: return ((int32_t (*)(P, P, P, P, uint64_t *, P *))f)(t[0], t[1], t[2], t[3], ws, ex);
    case 5: return ((int32_t (*)(P, P, P, P, P, uint64_t *, P *))f)(t[0], t[1], t[2], t[3], t[4], ws, ex);
    case 6: return ((int32_t (*)(P, P, P, P, P, P, uint64_t *, P *))f)(t[0], t[1], t[2], t[3], t[4], t[5], ws, ex);
    case 7:
        return ((int32_t (*)(P, P, P, P, P, P, P, uint64_t *, P *))f)(t[0], t[1], t[2], t[3], t[4], t[5], t[6], ws,
                                                                      ex);
    case 8:
        return ((int32_t (*)(P, P, P, P, P, P, P, P, uint64_t *, P *))f)(t[0], t[1], t[2], t[3], t[4], t[5], t[6],
                                                                         t[7], ws, ex);
    }
    return -1;
}

enum { F_RESET, F_PHASE1, F_PHASE2, F_CREATE, F_DESTROY, F_DESTROY_EX, N_FUNCS };

/* syn_exec(funcs, dtypes, stream, arrays): 0 when both phases ran and succeeded; -1 when the call
 * is not one this function makes (nothing visible was done: run the reference path); -2 when
 * phase 1 asked for a workspace (likewise); (2, status) when phase 2 ran and returned status
 * (whatever its sign: phase 2 must not run again).
 * funcs: a tuple of the 6 addresses (ResetCacheThreadLocal, aclnnXGetWorkspaceSize, aclnnX,
 * aclCreateTensor, aclDestroyTensor, aclDestroyAclOpExecutor); dtypes: {numpy dtype: aclDataType};
 * stream: an address or None; arrays: a tuple. */
PyObject *fp_syn_exec(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != N_FUNCS ||
        !PyDict_CheckExact(args[1]) || !PyTuple_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "syn_exec(funcs, dtypes, stream, arrays)");
        return NULL;
    }
    void *fn[N_FUNCS];
    for (int i = 0; i < N_FUNCS; i++) {
        fn[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args[0], i));
        if (fn[i] == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "syn_exec: a null function");
            return NULL;
        }
    }
    void *stream = NULL;
    if (args[2] != Py_None && (stream = PyLong_AsVoidPtr(args[2])) == NULL && PyErr_Occurred()) return NULL;
    PyObject *arrays = args[3];
    Py_ssize_t n = PyTuple_GET_SIZE(arrays);
    if (n < 1 || n > SYN_MAX_TENSORS) return PyLong_FromLong(-1);
    int64_t dims[SYN_MAX_TENSORS][SYN_MAX_DIMS];
    int nd[SYN_MAX_TENSORS], dt[SYN_MAX_TENSORS];
    void *data[SYN_MAX_TENSORS];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(arrays, i);
        if (!PyArray_CheckExact(o)) return PyLong_FromLong(-1);
        PyArrayObject *a = (PyArrayObject *)o;
        if (!PyArray_IS_C_CONTIGUOUS(a) || PyArray_ISBYTESWAPPED(a) || PyArray_NDIM(a) > SYN_MAX_DIMS)
            return PyLong_FromLong(-1);
        PyObject *code = PyDict_GetItemWithError(args[1], (PyObject *)PyArray_DESCR(a));
        if (code == NULL) {
            if (PyErr_Occurred()) return NULL;
            return PyLong_FromLong(-1); /* a dtype not converted yet: the reference path adds it */
        }
        dt[i] = (int)PyLong_AsLong(code);
        if (dt[i] == -1 && PyErr_Occurred()) return NULL;
        nd[i] = PyArray_NDIM(a);
        for (int d = 0; d < nd[i]; d++) dims[i][d] = PyArray_DIMS(a)[d];
        data[i] = PyArray_DATA(a);
    }
    long result = 0;
    int ran_phase2 = 0;
    Py_BEGIN_ALLOW_THREADS
    void *t[SYN_MAX_TENSORS] = {0};
    ((reset_fn)fn[F_RESET])();
    Py_ssize_t made = 0;
    for (; made < n; made++) {
        t[made] = ((create_tensor_fn)fn[F_CREATE])(dims[made], (uint64_t)nd[made], dt[made], NULL, 0, SYN_FORMAT_ND,
                                                    NULL, 0, data[made]);
        if (t[made] == NULL) break;
    }
    if (made < n) {
        result = -1;
    } else {
        uint64_t ws = 0;
        void *ex = NULL;
        int32_t status = call_phase1(fn[F_PHASE1], (int)n, t, &ws, &ex);
        if (status != 0 || ws != 0) {
            if (ex != NULL) ((destroy_fn)fn[F_DESTROY_EX])(ex);
            result = status != 0 ? -1 : -2;
        } else {
            result = ((phase2_fn)fn[F_PHASE2])(NULL, 0, ex, stream);
            ran_phase2 = 1;
        }
    }
    for (Py_ssize_t i = made; i-- > 0;) ((destroy_fn)fn[F_DESTROY])(t[i]);
    Py_END_ALLOW_THREADS
    if (ran_phase2 && result != 0) return Py_BuildValue("(il)", 2, result);
    return PyLong_FromLong(result);
}
