/* acl_meta.c: aclTensor, aclScalar, aclTensorList and the acl*Array objects.
 *
 * Plain C structs (acl_internal.h), one allocation each, with a magic number checked by every
 * destructor and by the Python side. Constructors copy dims, strides and values; tensor data
 * stays the caller's. A tensor list owns its tensors.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

static int dtype_known(int64_t dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_FLOAT16: case ACL_INT8: case ACL_INT32: case ACL_UINT8: case ACL_INT16:
    case ACL_UINT16: case ACL_UINT32: case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_BOOL:
    case ACL_STRING: case ACL_COMPLEX64: case ACL_COMPLEX128: case ACL_BF16: case ACL_INT4: case ACL_UINT1:
    case ACL_COMPLEX32:
        return 1;
    default:
        return 0;
    }
}

static int format_known(int64_t f) {
    switch (f) {
    case ACL_FORMAT_NCHW: case ACL_FORMAT_NHWC: case ACL_FORMAT_ND: case ACL_FORMAT_NC1HWC0:
    case ACL_FORMAT_FRACTAL_Z: case ACL_FORMAT_NC1HWC0_C04: case ACL_FORMAT_HWCN: case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_FRACTAL_NZ: case ACL_FORMAT_NCDHW: case ACL_FORMAT_NDC1HWC0: case ACL_FRACTAL_Z_3D:
    case ACL_FORMAT_NC: case ACL_FORMAT_NCL:
        return 1;
    default:
        return 0;
    }
}

/* Bytes of one scalar value of `dt`; 0 for types a scalar cannot hold. */
static size_t scalar_size(int64_t dt) {
    switch (dt) {
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_FLOAT16: case ACL_INT16: case ACL_UINT16: case ACL_BF16: return 2;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: case ACL_COMPLEX32: return 4;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;
    }
}

/* ---- tensors -------------------------------------------------------------------------------- */

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
    if (viewDimsNum > ACL_MAX_DIMS || storageDimsNum > ACL_MAX_DIMS) {
        acl_error("OP", "aclCreateTensor: %llu view / %llu storage dims; at most %u are supported",
                  (unsigned long long)viewDimsNum, (unsigned long long)storageDimsNum, ACL_MAX_DIMS);
        return NULL;
    }
    if (viewDims == NULL && viewDimsNum > 0) {
        acl_error("OP", "aclCreateTensor: viewDims is a null pointer (viewDimsNum %llu)", (unsigned long long)viewDimsNum);
        return NULL;
    }
    if (storageDims == NULL && storageDimsNum > 0) {
        acl_error("OP", "aclCreateTensor: storageDims is a null pointer (storageDimsNum %llu)",
                  (unsigned long long)storageDimsNum);
        return NULL;
    }
    if (!dtype_known(dataType)) {
        acl_error("OP", "aclCreateTensor: unknown aclDataType %d", (int)dataType);
        return NULL;
    }
    if (!format_known(format)) {
        acl_error("OP", "aclCreateTensor: unknown aclFormat %d", (int)format);
        return NULL;
    }
    if (offset < 0) {
        acl_error("OP", "aclCreateTensor: negative offset %lld", (long long)offset);
        return NULL;
    }
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        if (viewDims[i] < 0) {
            acl_error("OP", "aclCreateTensor: viewDims[%llu] = %lld is negative", (unsigned long long)i,
                      (long long)viewDims[i]);
            return NULL;
        }
    }
    for (uint64_t i = 0; i < storageDimsNum; i++) {
        if (storageDims[i] < 0) {
            acl_error("OP", "aclCreateTensor: storageDims[%llu] = %lld is negative", (unsigned long long)i,
                      (long long)storageDims[i]);
            return NULL;
        }
    }
    uint64_t storage_num = storageDims != NULL ? storageDimsNum : 1;
    aclTensor *t = malloc(sizeof *t + sizeof(int64_t) * (2 * viewDimsNum + storage_num));
    if (t == NULL) {
        acl_error("OP", "aclCreateTensor: out of memory");
        return NULL;
    }
    t->dataType = dataType;
    t->format = format;
    t->offset = offset;
    t->viewDimsNum = viewDimsNum;
    t->storageDimsNum = storage_num;
    t->data = tensorData;
    t->viewDims = t->dims;
    t->strides = t->dims + viewDimsNum;
    t->storageDims = t->dims + 2 * viewDimsNum;
    if (viewDimsNum) memcpy(t->viewDims, viewDims, sizeof(int64_t) * viewDimsNum);
    if (stride != NULL) {
        if (viewDimsNum) memcpy(t->strides, stride, sizeof(int64_t) * viewDimsNum);
    } else { /* contiguous */
        int64_t acc = 1;
        for (uint64_t i = viewDimsNum; i-- > 0;) {
            t->strides[i] = acc;
            acc *= viewDims[i] > 0 ? viewDims[i] : 1;
        }
    }
    if (storageDims != NULL) {
        if (storageDimsNum) memcpy(t->storageDims, storageDims, sizeof(int64_t) * storageDimsNum);
    } else { /* one dimension: the extent the view reaches */
        int64_t extent = offset + 1, empty = 0;
        for (uint64_t i = 0; i < viewDimsNum; i++) {
            if (viewDims[i] == 0) empty = 1;
            else if (t->strides[i] > 0) extent += (viewDims[i] - 1) * t->strides[i];
        }
        t->storageDims[0] = empty ? 0 : extent;
    }
    t->magic = ACL_MAGIC(OPBUILD_ACL_TENSOR);
    acl_live_add(OPBUILD_ACL_TENSOR, 1);
    return t;
}

static aclnnStatus destroy_object(void *obj, int kind, const char *api, const char *what) {
    if (obj == NULL) return ACLNN_SUCCESS;
    uint64_t *magic = obj;
    if (*magic != ACL_MAGIC(kind))
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, api, "%p is not a live %s (destroyed already?)", obj, what);
    *magic = 0;
    free(obj);
    acl_live_add(kind, -1);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    return destroy_object((void *)tensor, OPBUILD_ACL_TENSOR, "aclDestroyTensor", "aclTensor");
}

/* The tensor's view shape, in an array this function allocates (the caller frees it with free(),
 * CANN: delete[]). After an op with a data-dependent output shape ran (aclnnNonZeroCustom), its out
 * tensor's view shape is the real one. */
aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum) {
    if (tensor == NULL || viewDims == NULL || viewDimsNum == NULL)
        return aclnn_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape", "tensor, viewDims or viewDimsNum is a null pointer");
    if (tensor->magic != ACL_MAGIC(OPBUILD_ACL_TENSOR))
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclGetViewShape", "%p is not a live aclTensor", (const void *)tensor);
    uint64_t n = tensor->viewDimsNum;
    int64_t *dims = malloc((n ? n : 1) * sizeof *dims);
    if (dims == NULL) return aclnn_fail(ACLNN_ERR_INNER, "aclGetViewShape", "out of memory");
    if (n) memcpy(dims, tensor->viewDims, n * sizeof *dims);
    *viewDims = dims;
    *viewDimsNum = n;
    return ACLNN_SUCCESS;
}

/* ---- scalars -------------------------------------------------------------------------------- */

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
    size_t size = scalar_size(dataType);
    if (value == NULL) {
        acl_error("OP", "aclCreateScalar: value is a null pointer");
        return NULL;
    }
    if (size == 0) {
        acl_error("OP", "aclCreateScalar: aclDataType %d cannot be a scalar", (int)dataType);
        return NULL;
    }
    aclScalar *s = calloc(1, sizeof *s);
    if (s == NULL) {
        acl_error("OP", "aclCreateScalar: out of memory");
        return NULL;
    }
    s->dataType = dataType;
    s->size = size;
    memcpy(s->value.bytes, value, size);
    s->magic = ACL_MAGIC(OPBUILD_ACL_SCALAR);
    acl_live_add(OPBUILD_ACL_SCALAR, 1);
    return s;
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    return destroy_object((void *)scalar, OPBUILD_ACL_SCALAR, "aclDestroyScalar", "aclScalar");
}

/* ---- tensor lists --------------------------------------------------------------------------- */

aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
    if (value == NULL && size > 0) {
        acl_error("OP", "aclCreateTensorList: value is a null pointer (size %llu)", (unsigned long long)size);
        return NULL;
    }
    if (size > (1u << 20)) {
        acl_error("OP", "aclCreateTensorList: size %llu is too large", (unsigned long long)size);
        return NULL;
    }
    for (uint64_t i = 0; i < size; i++) {
        if (value[i] != NULL && value[i]->magic != ACL_MAGIC(OPBUILD_ACL_TENSOR)) {
            acl_error("OP", "aclCreateTensorList: value[%llu] is not a live aclTensor", (unsigned long long)i);
            return NULL;
        }
        for (uint64_t j = 0; j < i && size <= 4096; j++) {
            if (value[i] != NULL && value[j] == value[i]) {
                acl_error("OP", "aclCreateTensorList: value[%llu] and value[%llu] are the same tensor (the list owns "
                          "its tensors)", (unsigned long long)j, (unsigned long long)i);
                return NULL;
            }
        }
    }
    aclTensorList *l = malloc(sizeof *l + sizeof(aclTensor *) * size);
    if (l == NULL) {
        acl_error("OP", "aclCreateTensorList: out of memory");
        return NULL;
    }
    l->size = size;
    l->tensors = l->items;
    for (uint64_t i = 0; i < size; i++) l->items[i] = (aclTensor *)value[i];
    l->magic = ACL_MAGIC(OPBUILD_ACL_TENSOR_LIST);
    acl_live_add(OPBUILD_ACL_TENSOR_LIST, 1);
    return l;
}

aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    if (array->magic != ACL_MAGIC(OPBUILD_ACL_TENSOR_LIST))
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyTensorList", "%p is not a live aclTensorList (destroyed "
                          "already?)", (const void *)array);
    aclnnStatus status = ACLNN_SUCCESS;
    for (uint64_t i = 0; i < array->size; i++) {
        aclnnStatus s = aclDestroyTensor(array->tensors[i]);
        if (s != ACLNN_SUCCESS) status = s;
    }
    destroy_object((void *)array, OPBUILD_ACL_TENSOR_LIST, "aclDestroyTensorList", "aclTensorList");
    return status;
}

/* ---- arrays --------------------------------------------------------------------------------- */

#define DEFINE_ARRAY(Type, Elem, Kind, Name)                                                                   \
    Type *aclCreate##Name(const Elem *value, uint64_t size) {                                                  \
        if (value == NULL && size > 0) {                                                                       \
            acl_error("OP", "aclCreate" #Name ": value is a null pointer (size %llu)", (unsigned long long)size); \
            return NULL;                                                                                       \
        }                                                                                                      \
        if (size > (1u << 24)) {                                                                               \
            acl_error("OP", "aclCreate" #Name ": size %llu is too large", (unsigned long long)size);            \
            return NULL;                                                                                       \
        }                                                                                                      \
        Type *a = malloc(sizeof *a + sizeof(Elem) * size);                                                     \
        if (a == NULL) {                                                                                       \
            acl_error("OP", "aclCreate" #Name ": out of memory");                                              \
            return NULL;                                                                                       \
        }                                                                                                      \
        a->size = size;                                                                                        \
        a->values = a->items;                                                                                  \
        if (size) memcpy(a->items, value, sizeof(Elem) * size);                                                \
        a->magic = ACL_MAGIC(Kind);                                                                            \
        acl_live_add(Kind, 1);                                                                                 \
        return a;                                                                                              \
    }                                                                                                          \
    aclnnStatus aclDestroy##Name(const Type *array) {                                                          \
        return destroy_object((void *)array, Kind, "aclDestroy" #Name, #Type);                                 \
    }

DEFINE_ARRAY(aclIntArray, int64_t, OPBUILD_ACL_INT_ARRAY, IntArray)
DEFINE_ARRAY(aclFloatArray, float, OPBUILD_ACL_FLOAT_ARRAY, FloatArray)
DEFINE_ARRAY(aclBoolArray, bool, OPBUILD_ACL_BOOL_ARRAY, BoolArray)

/* ---- layout for the Python side ------------------------------------------------------------- */

#define FIELD(S, f) {#S, #f, (uint32_t)offsetof(struct S, f), (uint32_t)sizeof(((struct S *)0)->f)}
#define SIZE(S) {#S, "", (uint32_t)sizeof(struct S), 0}

static const opbuild_acl_field g_layout[] = {
    SIZE(aclTensor),
    FIELD(aclTensor, magic), FIELD(aclTensor, dataType), FIELD(aclTensor, format), FIELD(aclTensor, offset),
    FIELD(aclTensor, viewDimsNum), FIELD(aclTensor, storageDimsNum), FIELD(aclTensor, data),
    FIELD(aclTensor, viewDims), FIELD(aclTensor, strides), FIELD(aclTensor, storageDims),
    SIZE(aclScalar),
    FIELD(aclScalar, magic), FIELD(aclScalar, dataType), FIELD(aclScalar, size), FIELD(aclScalar, value),
    SIZE(aclTensorList),
    FIELD(aclTensorList, magic), FIELD(aclTensorList, size), FIELD(aclTensorList, tensors),
    SIZE(aclIntArray),
    FIELD(aclIntArray, magic), FIELD(aclIntArray, size), FIELD(aclIntArray, values),
    SIZE(aclFloatArray),
    FIELD(aclFloatArray, magic), FIELD(aclFloatArray, size), FIELD(aclFloatArray, values),
    SIZE(aclBoolArray),
    FIELD(aclBoolArray, magic), FIELD(aclBoolArray, size), FIELD(aclBoolArray, values),
    {NULL, NULL, 0, 0},
};

const opbuild_acl_field *opbuild_acl_layout(void) { return g_layout; }
