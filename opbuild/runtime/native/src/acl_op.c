/* acl_op.c: aclopExecute / aclopCompileAndExecute and the aclmdl model API, run by Python.
 *
 * The C side checks handles and counts, turns the descs, buffers and attributes into Python
 * tuples and calls opbuild/om/aclop.py (single ops: the op packages or the single-op models
 * of aclopSetModelDir) or opbuild/om/aclmdl.py (loaded .om models, OmRunner). Those return
 * (status, message, ...) with an aclError status; this file reports a failure in the CANN log
 * style and returns the status. A model description (aclmdlDesc) is a C copy of what
 * aclmdl.describe returned, so its getters never enter Python.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_desc.h"
#include "acl_python.h"

#define ACLOP_MODULE "opbuild.om.aclop"
#define ACLMDL_MODULE "opbuild.om.aclmdl"

/* ---- results -------------------------------------------------------------------------------- */

/* Unpack (status, message, *rest) of a call: the status (the message reported as `api`'s failure);
 * *rest gets a new reference to the tuple when the status is 0 and `want` > 2. GIL held; steals r. */
static aclError finish(const char *api, PyObject *r, char *msg, Py_ssize_t want, PyObject **rest) {
    aclError status = ACL_ERROR_FAILURE;
    if (r != NULL) {
        if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) == want) {
            long st = PyLong_AsLong(PyTuple_GET_ITEM(r, 0));
            if (st == -1 && PyErr_Occurred()) {
                msg = acl_py_error_text();
            } else {
                status = (aclError)st;
                if (status != ACL_SUCCESS) {
                    const char *text = PyUnicode_AsUTF8(PyTuple_GET_ITEM(r, 1));
                    if (text == NULL) PyErr_Clear();
                    msg = strdup(text ? text : "(no message)");
                } else if (rest != NULL) {
                    Py_INCREF(r);
                    *rest = r;
                }
            }
        } else {
            msg = strdup("the Python side returned an unexpected value");
        }
        Py_DECREF(r);
    }
    if (status != ACL_SUCCESS) acl_fail(status, "%s: %s", api, msg ? msg : "(no message)");
    free(msg);
    return status;
}

/* ---- descs, buffers, attributes as Python values -------------------------------------------- */

/* [(dtype, format, dims, address, size, name), ...] of n desc/buffer pairs; NULL (reported in *err). */
static PyObject *tensors_tuple(int n, const aclTensorDesc *const descs[], const aclDataBuffer *const bufs[],
                               const char *what, char *err, size_t errlen) {
    if (n < 0) {
        snprintf(err, errlen, "num%s is %d", what, n);
        return NULL;
    }
    if (n > 0 && (descs == NULL || bufs == NULL)) {
        snprintf(err, errlen, "the %s %s array is a null pointer (num%s %d)", what, descs == NULL ? "desc" : "buffer",
                 what, n);
        return NULL;
    }
    PyObject *list = PyList_New(n);
    if (list == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        const aclTensorDesc *d = descs[i];
        const aclDataBuffer *b = bufs[i];
        if (!acl_desc_ok(d) || !acl_buffer_ok(b)) {
            snprintf(err, errlen, "%s[%d]: %s", what, i, !acl_desc_ok(d) ? "the desc is not a live aclTensorDesc"
                                                                         : "the buffer is not a live aclDataBuffer");
            Py_DECREF(list);
            return NULL;
        }
        PyObject *dims = PyTuple_New((Py_ssize_t)d->numDims);
        if (dims == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        for (size_t k = 0; k < d->numDims; k++) PyTuple_SET_ITEM(dims, (Py_ssize_t)k, PyLong_FromLongLong(d->dims[k]));
        PyObject *item = Py_BuildValue("(iiNKKs)", (int)d->dataType, (int)d->format, dims,
                                       (unsigned long long)(uintptr_t)b->data, (unsigned long long)b->size, d->name);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *attr_value(const acl_attr_entry *e) {
    switch (e->kind) {
    case ACL_ATTR_BOOL: return PyBool_FromLong(((const uint8_t *)e->values)[0]);
    case ACL_ATTR_INT:
    case ACL_ATTR_DTYPE: return PyLong_FromLongLong(((const int64_t *)e->values)[0]);
    case ACL_ATTR_FLOAT: return PyFloat_FromDouble(((const float *)e->values)[0]);
    case ACL_ATTR_STRING: return PyUnicode_FromString(((char *const *)e->values)[0]);
    default: break;
    }
    PyObject *list = PyList_New((Py_ssize_t)e->count);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < e->count; i++) {
        PyObject *v = NULL;
        switch (e->kind) {
        case ACL_ATTR_LIST_BOOL: v = PyBool_FromLong(((const uint8_t *)e->values)[i]); break;
        case ACL_ATTR_LIST_INT: v = PyLong_FromLongLong(((const int64_t *)e->values)[i]); break;
        case ACL_ATTR_LIST_FLOAT: v = PyFloat_FromDouble(((const float *)e->values)[i]); break;
        default: v = PyUnicode_FromString(((char *const *)e->values)[i]); break;
        }
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

/* [(name, kind, value), ...]; NULL attr: []. */
static PyObject *attrs_tuple(const aclopAttr *attr) {
    size_t n = attr ? attr->count : 0;
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        const acl_attr_entry *e = &attr->entries[i];
        PyObject *v = attr_value(e);
        PyObject *item = v ? Py_BuildValue("(sCN)", e->name, e->kind, v) : NULL;
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* ---- aclop ---------------------------------------------------------------------------------- */

static pthread_mutex_t g_op_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_model_dir[PATH_MAX];
static int g_compile_flag; /* kept; selection does not depend on it */

#define DUMP_MODULE "opbuild.runtime.debug.dump"

static int g_dump_started; /* aclInit started a dump (g_op_lock) */

aclError acl_dump_configure(const char *path, const char *dump_json) {
    PyGILState_STATE g;
    if (acl_py_enter("aclInit", &g)) return ACL_ERROR_FAILURE;
    char *msg = NULL;
    PyObject *r = acl_py_call(DUMP_MODULE, "configure_acl", Py_BuildValue("(ss)", path, dump_json), &msg);
    aclError st = finish("aclInit", r, msg, 2, NULL);
    PyGILState_Release(g);
    if (st == ACL_SUCCESS) {
        pthread_mutex_lock(&g_op_lock);
        g_dump_started = 1;
        pthread_mutex_unlock(&g_op_lock);
    }
    return st;
}

void acl_op_finalize(void) {
    pthread_mutex_lock(&g_op_lock);
    g_model_dir[0] = '\0'; /* aclInit starts over: the directory may be set again */
    int dumping = g_dump_started;
    g_dump_started = 0;
    pthread_mutex_unlock(&g_op_lock);
    if (dumping) {
        PyGILState_STATE g;
        if (acl_py_enter("aclFinalize", &g)) return;
        char *msg = NULL;
        PyObject *r = acl_py_call(DUMP_MODULE, "finalize_acl", PyTuple_New(0), &msg);
        (void)finish("aclFinalize", r, msg, 2, NULL);
        PyGILState_Release(g);
    }
}

aclError aclopSetModelDir(const char *modelDir) {
    if (modelDir == NULL || *modelDir == '\0')
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclopSetModelDir: modelDir is empty");
    char resolved[PATH_MAX];
    if (realpath(modelDir, resolved) == NULL)
        return acl_fail(ACL_ERROR_INVALID_FILE, "aclopSetModelDir: the model directory %s does not exist", modelDir);
    pthread_mutex_lock(&g_op_lock);
    int again = g_model_dir[0] != '\0';
    if (!again) snprintf(g_model_dir, sizeof g_model_dir, "%s", resolved);
    pthread_mutex_unlock(&g_op_lock);
    if (again) return acl_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclopSetModelDir: the model directory is set already (%s)",
                               g_model_dir);
    return ACL_SUCCESS;
}

aclError aclopLoad(const void *model, size_t modelSize) {
    if (model == NULL || modelSize == 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclopLoad: the model is %s", model ? "empty" : "a null pointer");
    PyGILState_STATE g;
    if (acl_py_enter("aclopLoad", &g)) return ACL_ERROR_FAILURE;
    char *msg;
    PyObject *r = acl_py_call(ACLOP_MODULE, "load", Py_BuildValue("(y#)", (const char *)model, (Py_ssize_t)modelSize),
                              &msg);
    aclError st = finish("aclopLoad", r, msg, 2, NULL);
    PyGILState_Release(g);
    return st;
}

aclError aclSetCompileopt(aclCompileOpt opt, const char *value) {
    if ((int)opt < ACL_PRECISION_MODE || (int)opt > ACL_OP_DEBUG_OPTION || value == NULL)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclSetCompileopt: %s", value == NULL ? "value is a null pointer"
                                                                                        : "unknown aclCompileOpt");
    return ACL_SUCCESS; /* accepted; binaries are prebuilt, nothing is compiled */
}

aclError aclopSetCompileFlag(aclOpCompileFlag flag) {
    if (flag != ACL_OP_COMPILE_DEFAULT && flag != ACL_OP_COMPILE_FUZZ)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclopSetCompileFlag: unknown flag %d", (int)flag);
    __atomic_store_n(&g_compile_flag, (int)flag, __ATOMIC_RELAXED);
    return ACL_SUCCESS;
}

static aclError run_op(const char *api, int compile, const char *opType, int numInputs,
                       const aclTensorDesc *const inputDesc[], const aclDataBuffer *const inputs[], int numOutputs,
                       const aclTensorDesc *const outputDesc[], const aclDataBuffer *const outputs[],
                       const aclopAttr *attr, aclrtStream stream) {
    if (opType == NULL || *opType == '\0') return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: opType is empty", api);
    if (attr != NULL && !acl_attr_ok(attr))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s (%s): attr is not a live aclopAttr", api, opType);
    if (stream != NULL && !acl_stream_is_live(stream))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s (%s): stream %p is not a live stream of aclrtCreateStream", api,
                        opType, stream);
    char model_dir[PATH_MAX];
    pthread_mutex_lock(&g_op_lock);
    snprintf(model_dir, sizeof model_dir, "%s", g_model_dir);
    pthread_mutex_unlock(&g_op_lock);

    PyGILState_STATE g;
    if (acl_py_enter(api, &g)) return ACL_ERROR_FAILURE;
    char err[512] = "";
    PyObject *ins = tensors_tuple(numInputs, inputDesc, inputs, "Inputs", err, sizeof err);
    PyObject *outs = ins ? tensors_tuple(numOutputs, outputDesc, outputs, "Outputs", err, sizeof err) : NULL;
    PyObject *attrs = outs ? attrs_tuple(attr) : NULL;
    aclError st;
    if (attrs == NULL) {
        Py_XDECREF(ins);
        Py_XDECREF(outs);
        if (err[0]) {
            PyErr_Clear();
            st = acl_fail(ACL_ERROR_INVALID_PARAM, "%s (%s): %s", api, opType, err);
        } else {
            char *msg = acl_py_error_text();
            st = acl_fail(ACL_ERROR_FAILURE, "%s (%s): %s", api, opType, msg);
            free(msg);
        }
    } else {
        char *msg;
        PyObject *r = acl_py_call(ACLOP_MODULE, "execute",
                                  Py_BuildValue("(sNNNKzi)", opType, ins, outs, attrs,
                                                (unsigned long long)(uintptr_t)stream,
                                                model_dir[0] ? model_dir : NULL, compile),
                                  &msg);
        st = finish(api, r, msg, 2, NULL);
    }
    PyGILState_Release(g);
    return st;
}

aclError aclopExecute(const char *opType, int numInputs, const aclTensorDesc *const inputDesc[],
                      const aclDataBuffer *const inputs[], int numOutputs, const aclTensorDesc *const outputDesc[],
                      aclDataBuffer *const outputs[], const aclopAttr *attr, aclrtStream stream) {
    return run_op("aclopExecute", 0, opType, numInputs, inputDesc, inputs, numOutputs, outputDesc,
                  (const aclDataBuffer *const *)outputs, attr, stream);
}

aclError aclopExecuteV2(const char *opType, int numInputs, aclTensorDesc *inputDesc[], aclDataBuffer *inputs[],
                        int numOutputs, aclTensorDesc *outputDesc[], aclDataBuffer *outputs[], aclopAttr *attr,
                        aclrtStream stream) {
    return run_op("aclopExecuteV2", 0, opType, numInputs, (const aclTensorDesc *const *)inputDesc,
                  (const aclDataBuffer *const *)inputs, numOutputs, (const aclTensorDesc *const *)outputDesc,
                  (const aclDataBuffer *const *)outputs, attr, stream);
}

static aclError check_compile(const char *api, aclopEngineType engineType, aclopCompileType compileFlag,
                              const char *opPath) {
    if ((int)engineType < ACL_ENGINE_SYS || (int)engineType > ACL_ENGINE_VECTOR)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: unknown aclopEngineType %d", api, (int)engineType);
    if (compileFlag != ACL_COMPILE_SYS)
        return acl_fail(ACL_ERROR_API_NOT_SUPPORT, "%s: only ACL_COMPILE_SYS ops (of the installed op packages) run "
                        "here, not compileFlag %d", api, (int)compileFlag);
    if (opPath != NULL && *opPath != '\0')
        return acl_fail(ACL_ERROR_API_NOT_SUPPORT, "%s: opPath must be NULL (got %s)", api, opPath);
    return ACL_SUCCESS;
}

aclError aclopCompileAndExecute(const char *opType, int numInputs, const aclTensorDesc *const inputDesc[],
                                const aclDataBuffer *const inputs[], int numOutputs,
                                const aclTensorDesc *const outputDesc[], aclDataBuffer *const outputs[],
                                const aclopAttr *attr, aclopEngineType engineType, aclopCompileType compileFlag,
                                const char *opPath, aclrtStream stream) {
    aclError st = check_compile("aclopCompileAndExecute", engineType, compileFlag, opPath);
    if (st != ACL_SUCCESS) return st;
    return run_op("aclopCompileAndExecute", 1, opType, numInputs, inputDesc, inputs, numOutputs, outputDesc,
                  (const aclDataBuffer *const *)outputs, attr, stream);
}

aclError aclopCompileAndExecuteV2(const char *opType, int numInputs, aclTensorDesc *inputDesc[],
                                  aclDataBuffer *inputs[], int numOutputs, aclTensorDesc *outputDesc[],
                                  aclDataBuffer *outputs[], aclopAttr *attr, aclopEngineType engineType,
                                  aclopCompileType compileFlag, const char *opPath, aclrtStream stream) {
    aclError st = check_compile("aclopCompileAndExecuteV2", engineType, compileFlag, opPath);
    if (st != ACL_SUCCESS) return st;
    return run_op("aclopCompileAndExecuteV2", 1, opType, numInputs, (const aclTensorDesc *const *)inputDesc,
                  (const aclDataBuffer *const *)inputs, numOutputs, (const aclTensorDesc *const *)outputDesc,
                  (const aclDataBuffer *const *)outputs, attr, stream);
}

/* ---- aclmdl --------------------------------------------------------------------------------- */

typedef struct mdl_io {
    char name[ACL_MAX_TENSOR_NAME_LEN];
    aclDataType dataType;
    aclFormat format;
    size_t numDims;
    int64_t dims[ACL_MAX_DIM_CNT];
    size_t size;
} mdl_io;

#define MDL_DESC_MAGIC ACL_MAGIC(0x25)

struct aclmdlDesc {
    uint64_t magic;
    size_t numInputs, numOutputs;
    mdl_io *io; /* inputs, then outputs */
};

/* aclmdl.load(path, data) -> (status, message, model id). */
static aclError load_model(const char *api, const char *path, const void *data, size_t size, uint32_t *modelId) {
    PyGILState_STATE g;
    if (acl_py_enter(api, &g)) return ACL_ERROR_FAILURE;
    PyObject *args = path ? Py_BuildValue("(sO)", path, Py_None)
                          : Py_BuildValue("(Oy#)", Py_None, (const char *)data, (Py_ssize_t)size);
    char *msg;
    PyObject *r = acl_py_call(ACLMDL_MODULE, "load", args, &msg);
    PyObject *rest = NULL;
    aclError st = finish(api, r, msg, 3, &rest);
    if (rest != NULL) {
        *modelId = (uint32_t)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(rest, 2));
        Py_DECREF(rest);
    }
    PyGILState_Release(g);
    return st;
}

aclError aclmdlLoadFromFile(const char *modelPath, uint32_t *modelId) {
    if (modelPath == NULL || modelId == NULL)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlLoadFromFile: %s is a null pointer",
                        modelPath ? "modelId" : "modelPath");
    return load_model("aclmdlLoadFromFile", modelPath, NULL, 0, modelId);
}

aclError aclmdlLoadFromMem(const void *model, size_t modelSize, uint32_t *modelId) {
    if (model == NULL || modelId == NULL || modelSize == 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlLoadFromMem: %s", model == NULL ? "model is a null pointer"
                        : modelId == NULL ? "modelId is a null pointer" : "modelSize is 0");
    return load_model("aclmdlLoadFromMem", NULL, model, modelSize, modelId);
}

aclError aclmdlUnload(uint32_t modelId) {
    PyGILState_STATE g;
    if (acl_py_enter("aclmdlUnload", &g)) return ACL_ERROR_FAILURE;
    char *msg;
    PyObject *r = acl_py_call(ACLMDL_MODULE, "unload", Py_BuildValue("(I)", modelId), &msg);
    aclError st = finish("aclmdlUnload", r, msg, 2, NULL);
    PyGILState_Release(g);
    return st;
}

aclmdlDesc *aclmdlCreateDesc(void) {
    aclmdlDesc *d = calloc(1, sizeof *d);
    if (d == NULL) {
        acl_fail(ACL_ERROR_BAD_ALLOC, "aclmdlCreateDesc: out of memory");
        return NULL;
    }
    d->magic = MDL_DESC_MAGIC;
    acl_live_add(OPBUILD_ACL_MODEL_DESC, 1);
    return d;
}

static int mdl_desc_ok(const aclmdlDesc *d) { return d != NULL && d->magic == MDL_DESC_MAGIC; }

aclError aclmdlDestroyDesc(aclmdlDesc *modelDesc) {
    if (!mdl_desc_ok(modelDesc))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlDestroyDesc: %p is not a live aclmdlDesc", (void *)modelDesc);
    modelDesc->magic = 0;
    acl_live_add(OPBUILD_ACL_MODEL_DESC, -1);
    free(modelDesc->io);
    free(modelDesc);
    return ACL_SUCCESS;
}

/* One (name, dtype, format, dims, size) tuple into *io; -1 on a malformed value. */
static int read_io(PyObject *t, mdl_io *io) {
    const char *name;
    int dt, fmt;
    PyObject *dims;
    unsigned long long size;
    if (!PyArg_ParseTuple(t, "siiO!K", &name, &dt, &fmt, &PyTuple_Type, &dims, &size)) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(dims);
    if (n > ACL_MAX_DIM_CNT) return -1;
    snprintf(io->name, sizeof io->name, "%s", name);
    io->dataType = (aclDataType)dt;
    io->format = (aclFormat)fmt;
    io->numDims = (size_t)n;
    for (Py_ssize_t k = 0; k < n; k++) io->dims[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, k));
    io->size = (size_t)size;
    return PyErr_Occurred() ? -1 : 0;
}

aclError aclmdlGetDesc(aclmdlDesc *modelDesc, uint32_t modelId) {
    if (!mdl_desc_ok(modelDesc))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetDesc: %p is not a live aclmdlDesc", (void *)modelDesc);
    PyGILState_STATE g;
    if (acl_py_enter("aclmdlGetDesc", &g)) return ACL_ERROR_FAILURE;
    char *msg;
    PyObject *r = acl_py_call(ACLMDL_MODULE, "describe", Py_BuildValue("(I)", modelId), &msg);
    PyObject *rest = NULL;
    aclError st = finish("aclmdlGetDesc", r, msg, 4, &rest);
    if (rest != NULL) {
        PyObject *ins = PyTuple_GET_ITEM(rest, 2), *outs = PyTuple_GET_ITEM(rest, 3);
        Py_ssize_t ni = PyList_Check(ins) ? PyList_GET_SIZE(ins) : -1, no = PyList_Check(outs) ? PyList_GET_SIZE(outs) : -1;
        mdl_io *io = ni >= 0 && no >= 0 ? calloc((size_t)(ni + no) + 1, sizeof *io) : NULL;
        int bad = io == NULL;
        for (Py_ssize_t i = 0; !bad && i < ni + no; i++)
            bad = read_io(i < ni ? PyList_GET_ITEM(ins, i) : PyList_GET_ITEM(outs, i - ni), &io[i]) != 0;
        if (bad) {
            PyErr_Clear();
            free(io);
            st = acl_fail(ACL_ERROR_FAILURE, "aclmdlGetDesc: the Python side returned a malformed description");
        } else {
            free(modelDesc->io);
            modelDesc->io = io;
            modelDesc->numInputs = (size_t)ni;
            modelDesc->numOutputs = (size_t)no;
        }
        Py_DECREF(rest);
    }
    PyGILState_Release(g);
    return st;
}

size_t aclmdlGetNumInputs(aclmdlDesc *modelDesc) { return mdl_desc_ok(modelDesc) ? modelDesc->numInputs : 0; }
size_t aclmdlGetNumOutputs(aclmdlDesc *modelDesc) { return mdl_desc_ok(modelDesc) ? modelDesc->numOutputs : 0; }

/* Input (out = 0) or output `index` of the desc, or NULL (reported as `api`'s failure). */
static const mdl_io *io_at(const aclmdlDesc *d, int out, size_t index, const char *api) {
    if (!mdl_desc_ok(d)) {
        acl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a live aclmdlDesc", api, (const void *)d);
        return NULL;
    }
    size_t n = out ? d->numOutputs : d->numInputs;
    if (index >= n) {
        acl_fail(ACL_ERROR_INVALID_PARAM, "%s: index %zu out of range: the model has %zu %s", api, index, n,
                 out ? "outputs" : "inputs");
        return NULL;
    }
    return &d->io[(out ? d->numInputs : 0) + index];
}

size_t aclmdlGetInputSizeByIndex(aclmdlDesc *modelDesc, size_t index) {
    const mdl_io *io = io_at(modelDesc, 0, index, "aclmdlGetInputSizeByIndex");
    return io ? io->size : 0;
}
size_t aclmdlGetOutputSizeByIndex(aclmdlDesc *modelDesc, size_t index) {
    const mdl_io *io = io_at(modelDesc, 1, index, "aclmdlGetOutputSizeByIndex");
    return io ? io->size : 0;
}

static aclError get_dims(const aclmdlDesc *d, int out, size_t index, aclmdlIODims *dims, const char *api) {
    if (dims == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: dims is a null pointer", api);
    const mdl_io *io = io_at(d, out, index, api);
    if (io == NULL) return ACL_ERROR_INVALID_PARAM;
    snprintf(dims->name, sizeof dims->name, "%s", io->name);
    dims->dimCount = io->numDims;
    memcpy(dims->dims, io->dims, io->numDims * sizeof io->dims[0]);
    return ACL_SUCCESS;
}

aclError aclmdlGetInputDims(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims) {
    return get_dims(modelDesc, 0, index, dims, "aclmdlGetInputDims");
}
aclError aclmdlGetOutputDims(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims) {
    return get_dims(modelDesc, 1, index, dims, "aclmdlGetOutputDims");
}
const char *aclmdlGetInputNameByIndex(const aclmdlDesc *modelDesc, size_t index) {
    const mdl_io *io = io_at(modelDesc, 0, index, "aclmdlGetInputNameByIndex");
    return io ? io->name : NULL;
}
const char *aclmdlGetOutputNameByIndex(const aclmdlDesc *modelDesc, size_t index) {
    const mdl_io *io = io_at(modelDesc, 1, index, "aclmdlGetOutputNameByIndex");
    return io ? io->name : NULL;
}
aclDataType aclmdlGetInputDataType(const aclmdlDesc *modelDesc, size_t index) {
    const mdl_io *io = io_at(modelDesc, 0, index, "aclmdlGetInputDataType");
    return io ? io->dataType : ACL_DT_UNDEFINED;
}
aclDataType aclmdlGetOutputDataType(const aclmdlDesc *modelDesc, size_t index) {
    const mdl_io *io = io_at(modelDesc, 1, index, "aclmdlGetOutputDataType");
    return io ? io->dataType : ACL_DT_UNDEFINED;
}
aclFormat aclmdlGetInputFormat(const aclmdlDesc *modelDesc, size_t index) {
    const mdl_io *io = io_at(modelDesc, 0, index, "aclmdlGetInputFormat");
    return io ? io->format : ACL_FORMAT_UNDEFINED;
}
aclFormat aclmdlGetOutputFormat(const aclmdlDesc *modelDesc, size_t index) {
    const mdl_io *io = io_at(modelDesc, 1, index, "aclmdlGetOutputFormat");
    return io ? io->format : ACL_FORMAT_UNDEFINED;
}

/* [(address, size, dims or None), ...] of a dataset (dims: the buffer's tensor desc); NULL with *err
 * set. GIL held. */
static PyObject *dataset_list(const aclmdlDataset *s, const char *what, char *err, size_t errlen) {
    if (!acl_dataset_ok(s)) {
        snprintf(err, errlen, "the %s dataset is not a live aclmdlDataset", what);
        return NULL;
    }
    PyObject *list = PyList_New((Py_ssize_t)s->count);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < s->count; i++) {
        const aclDataBuffer *b = s->buffers[i];
        if (!acl_buffer_ok(b)) {
            snprintf(err, errlen, "%s buffer %zu is not a live aclDataBuffer (destroyed after it was added?)", what, i);
            Py_DECREF(list);
            return NULL;
        }
        const aclTensorDesc *d = s->descs[i];
        PyObject *dims = Py_None;
        if (acl_desc_ok(d)) {
            dims = PyTuple_New((Py_ssize_t)d->numDims);
            for (size_t k = 0; dims != NULL && k < d->numDims; k++)
                PyTuple_SET_ITEM(dims, (Py_ssize_t)k, PyLong_FromLongLong(d->dims[k]));
        } else {
            Py_INCREF(dims);
        }
        PyObject *item = dims ? Py_BuildValue("(KKN)", (unsigned long long)(uintptr_t)b->data,
                                              (unsigned long long)b->size, dims) : NULL;
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static aclError execute_model(const char *api, uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output,
                              aclrtStream stream) {
    if (stream != NULL && !acl_stream_is_live(stream))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: stream %p is not a live stream of aclrtCreateStream", api, stream);
    PyGILState_STATE g;
    if (acl_py_enter(api, &g)) return ACL_ERROR_FAILURE;
    char err[256] = "";
    PyObject *ins = dataset_list(input, "input", err, sizeof err);
    PyObject *outs = ins ? dataset_list(output, "output", err, sizeof err) : NULL;
    aclError st;
    if (outs == NULL) {
        Py_XDECREF(ins);
        PyErr_Clear();
        st = acl_fail(ACL_ERROR_INVALID_PARAM, "%s: %s", api, err[0] ? err : "out of memory");
    } else {
        char *msg;
        PyObject *r = acl_py_call(ACLMDL_MODULE, "execute",
                                  Py_BuildValue("(INNK)", modelId, ins, outs, (unsigned long long)(uintptr_t)stream),
                                  &msg);
        PyObject *rest = NULL;
        st = finish(api, r, msg, 3, &rest);
        if (rest != NULL) { /* the outputs' real dtype and dims -> their dataset descs */
            PyObject *shapes = PyTuple_GET_ITEM(rest, 2);
            Py_ssize_t n = PyList_Check(shapes) ? PyList_GET_SIZE(shapes) : 0;
            for (Py_ssize_t i = 0; i < n && st == ACL_SUCCESS; i++) {
                int dt;
                PyObject *dims;
                int64_t v[ACL_MAX_DIM_CNT];
                if (!PyArg_ParseTuple(PyList_GET_ITEM(shapes, i), "iO!", &dt, &PyTuple_Type, &dims) ||
                    PyTuple_GET_SIZE(dims) > ACL_MAX_DIM_CNT) {
                    PyErr_Clear();
                    continue;
                }
                Py_ssize_t nd = PyTuple_GET_SIZE(dims);
                for (Py_ssize_t k = 0; k < nd; k++) v[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, k));
                if (acl_dataset_set_result(output, (size_t)i, (aclDataType)dt, (int)nd, v) != ACL_SUCCESS)
                    st = acl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", api);
            }
            Py_DECREF(rest);
        }
    }
    PyGILState_Release(g);
    return st;
}

aclError aclmdlExecute(uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output) {
    return execute_model("aclmdlExecute", modelId, input, output, NULL);
}

aclError aclmdlExecuteAsync(uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output, aclrtStream stream) {
    return execute_model("aclmdlExecuteAsync", modelId, input, output, stream);
}
