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

/* The tables are opbuild/vocabulary_gen.h's (from opbuild.abi.vocabulary). */
#define CASE_OF(name, ...) case name:

static int dtype_known(int64_t dt) {
    switch (dt) {
    OPBUILD_ACL_DATA_TYPES(CASE_OF)
        return 1;
    default:
        return 0;
    }
}

static int format_known(int64_t f) {
    switch (f) {
    OPBUILD_ACL_FORMATS(CASE_OF)
        return 1;
    default:
        return 0;
    }
}

/* Bytes of one scalar value of `dt`; 0 for types a scalar cannot hold. */
static size_t scalar_size(int64_t dt) {
#define SCALAR_SIZE(name, size, scalar) case name: return (scalar) ? (size) : 0;
    switch (dt) {
    OPBUILD_ACL_DATA_TYPES(SCALAR_SIZE)
    default: return 0;
    }
#undef SCALAR_SIZE
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
    if (stride == NULL) { /* contiguous strides must be representable */
        int64_t acc = 1;
        for (uint64_t i = 0; i < viewDimsNum; i++) {
            if (__builtin_mul_overflow(acc, viewDims[i] > 0 ? viewDims[i] : 1, &acc)) {
                acl_error("OP", "aclCreateTensor: viewDims overflow: their product is larger than 2^63 elements");
                return NULL;
            }
        }
        if (storageDims == NULL && __builtin_add_overflow(acc, offset, &acc)) {
            acl_error("OP", "aclCreateTensor: offset %lld plus the view's elements is larger than 2^63",
                      (long long)offset);
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
        int64_t extent = offset + 1, empty = 0, step;
        for (uint64_t i = 0; i < viewDimsNum; i++) {
            if (viewDims[i] == 0) empty = 1;
            else if (t->strides[i] > 0 && (__builtin_mul_overflow(viewDims[i] - 1, t->strides[i], &step) ||
                                           __builtin_add_overflow(extent, step, &extent))) {
                acl_error("OP", "aclCreateTensor: the view's extent (offset, viewDims, strides) is larger than 2^63 "
                          "elements");
                free(t);
                return NULL;
            }
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

/* ---- scalar lists ----------------------------------------------------------------------------- */

aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size) {
    if (value == NULL && size > 0) {
        acl_error("OP", "aclCreateScalarList: value is a null pointer (size %llu)", (unsigned long long)size);
        return NULL;
    }
    if (size > (1u << 20)) {
        acl_error("OP", "aclCreateScalarList: size %llu is too large", (unsigned long long)size);
        return NULL;
    }
    for (uint64_t i = 0; i < size; i++) {
        if (value[i] == NULL || value[i]->magic != ACL_MAGIC(OPBUILD_ACL_SCALAR)) {
            acl_error("OP", "aclCreateScalarList: value[%llu] is not a live aclScalar", (unsigned long long)i);
            return NULL;
        }
    }
    aclScalarList *l = malloc(sizeof *l + sizeof(aclScalar *) * size);
    if (l == NULL) {
        acl_error("OP", "aclCreateScalarList: out of memory");
        return NULL;
    }
    l->size = size;
    l->scalars = l->items;
    for (uint64_t i = 0; i < size; i++) l->items[i] = (aclScalar *)value[i];
    l->magic = ACL_MAGIC(OPBUILD_ACL_SCALAR_LIST);
    return l;
}

aclnnStatus aclDestroyScalarList(const aclScalarList *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    if (array->magic != ACL_MAGIC(OPBUILD_ACL_SCALAR_LIST))
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalarList", "%p is not a live aclScalarList (destroyed "
                          "already?)", (const void *)array);
    aclnnStatus status = ACLNN_SUCCESS;
    for (uint64_t i = 0; i < array->size; i++) {
        aclnnStatus s = aclDestroyScalar(array->scalars[i]);
        if (s != ACLNN_SUCCESS) status = s;
    }
    uint64_t *magic = (uint64_t *)&array->magic;
    *magic = 0;
    free((void *)array);
    return status;
}

/* ---- getters -------------------------------------------------------------------------------- */

/* ACLNN_SUCCESS if `obj` is a live object of `kind` and `out` is not NULL; else the failure. */
static aclnnStatus check_get(const void *obj, int kind, const void *out, const char *api, const char *what) {
    if (obj == NULL || out == NULL)
        return aclnn_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s is a null pointer", obj == NULL ? what : "the result");
    if (*(const uint64_t *)obj != ACL_MAGIC(kind))
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, api, "%p is not a live %s", obj, what);
    return ACLNN_SUCCESS;
}

/* *out = a malloc'ed copy of n dims (the caller frees it). */
static aclnnStatus copy_dims(const int64_t *dims, uint64_t n, int64_t **out, uint64_t *num, const char *api) {
    if (num == NULL) return aclnn_fail(ACLNN_ERR_PARAM_NULLPTR, api, "the dims count is a null pointer");
    int64_t *copy = malloc(sizeof(int64_t) * (n ? n : 1));
    if (copy == NULL) return aclnn_fail(ACLNN_ERR_INNER, api, "out of memory");
    if (n) memcpy(copy, dims, sizeof(int64_t) * n);
    *out = copy;
    *num = n;
    return ACLNN_SUCCESS;
}

#define GET_TENSOR(api, out)                                                              \
    aclnnStatus st_ = check_get(tensor, OPBUILD_ACL_TENSOR, out, api, "aclTensor");     \
    if (st_ != ACLNN_SUCCESS) return st_

/* After an op with a data-dependent output shape ran (aclnnNonZeroCustom), its out tensor's view
 * shape is the real one. */
aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum) {
    GET_TENSOR("aclGetViewShape", viewDims);
    return copy_dims(tensor->viewDims, tensor->viewDimsNum, viewDims, viewDimsNum, "aclGetViewShape");
}

aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims, uint64_t *storageDimsNum) {
    GET_TENSOR("aclGetStorageShape", storageDims);
    return copy_dims(tensor->storageDims, tensor->storageDimsNum, storageDims, storageDimsNum, "aclGetStorageShape");
}

aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue, uint64_t *stridesNum) {
    GET_TENSOR("aclGetViewStrides", stridesValue);
    return copy_dims(tensor->strides, tensor->viewDimsNum, stridesValue, stridesNum, "aclGetViewStrides");
}

aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
    GET_TENSOR("aclGetViewOffset", offset);
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
    GET_TENSOR("aclGetFormat", format);
    *format = (aclFormat)tensor->format;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
    GET_TENSOR("aclGetDataType", dataType);
    *dataType = (aclDataType)tensor->dataType;
    return ACLNN_SUCCESS;
}

aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr) {
    aclnnStatus st = check_get(tensor, OPBUILD_ACL_TENSOR, &st, "aclSetRawTensorAddr", "aclTensor");
    if (st != ACLNN_SUCCESS) return st;
    tensor->data = addr;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr) {
    GET_TENSOR("aclGetRawTensorAddr", addr);
    *addr = tensor->data;
    return ACLNN_SUCCESS;
}

#define DEFINE_SIZE_GETTER(Type, Kind, Name)                                                     \
    aclnnStatus aclGet##Name##Size(const Type *array, uint64_t *size) {                          \
        aclnnStatus st = check_get(array, Kind, size, "aclGet" #Name "Size", #Type);              \
        if (st != ACLNN_SUCCESS) return st;                                                      \
        *size = array->size;                                                                     \
        return ACLNN_SUCCESS;                                                                    \
    }

DEFINE_SIZE_GETTER(aclIntArray, OPBUILD_ACL_INT_ARRAY, IntArray)
DEFINE_SIZE_GETTER(aclFloatArray, OPBUILD_ACL_FLOAT_ARRAY, FloatArray)
DEFINE_SIZE_GETTER(aclBoolArray, OPBUILD_ACL_BOOL_ARRAY, BoolArray)
DEFINE_SIZE_GETTER(aclTensorList, OPBUILD_ACL_TENSOR_LIST, TensorList)
DEFINE_SIZE_GETTER(aclScalarList, OPBUILD_ACL_SCALAR_LIST, ScalarList)

aclnnStatus aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                          const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                          uint64_t storageDimsNum, void *tensorDataAddr) {
    aclnnStatus st = check_get(tensor, OPBUILD_ACL_TENSOR, &st, "aclInitTensor", "aclTensor");
    if (st != ACLNN_SUCCESS) return st;
    /* Build the new description as a new tensor (same checks), then copy it in if it fits. */
    aclTensor *fresh = aclCreateTensor(viewDims, viewDimsNum, dataType, stride, offset, format, storageDims,
                                       storageDimsNum, tensorDataAddr);
    if (fresh == NULL) return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclInitTensor", "invalid tensor description");
    uint64_t room = 2 * tensor->viewDimsNum + tensor->storageDimsNum;
    uint64_t need = 2 * fresh->viewDimsNum + fresh->storageDimsNum;
    if (need > room) {
        aclDestroyTensor(fresh);
        return aclnn_fail(ACLNN_ERR_PARAM_INVALID, "aclInitTensor", "%llu view / %llu storage dims do not fit a tensor "
                          "created with %llu / %llu", (unsigned long long)viewDimsNum, (unsigned long long)storageDimsNum,
                          (unsigned long long)tensor->viewDimsNum, (unsigned long long)tensor->storageDimsNum);
    }
    tensor->dataType = fresh->dataType;
    tensor->format = fresh->format;
    tensor->offset = fresh->offset;
    tensor->data = fresh->data;
    tensor->viewDimsNum = fresh->viewDimsNum;
    tensor->storageDimsNum = fresh->storageDimsNum;
    tensor->viewDims = tensor->dims;
    tensor->strides = tensor->dims + fresh->viewDimsNum;
    tensor->storageDims = tensor->dims + 2 * fresh->viewDimsNum;
    memcpy(tensor->dims, fresh->dims, sizeof(int64_t) * need);
    aclDestroyTensor(fresh);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDumpOpTensors(const char *opType, const char *opName, const aclTensor *tensors, size_t inputTensorNum,
                             size_t outputTensorNum, aclrtStream stream) {
    (void)opName;
    (void)stream;
    if (opType == NULL) return aclnn_fail(ACLNN_ERR_PARAM_NULLPTR, "aclDumpOpTensors", "opType is a null pointer");
    if (tensors == NULL && inputTensorNum + outputTensorNum > 0)
        return aclnn_fail(ACLNN_ERR_PARAM_NULLPTR, "aclDumpOpTensors", "tensors is a null pointer");
    return ACLNN_SUCCESS;
}

/* ---- aclFloat16 and element sizes ------------------------------------------------------------ */

aclFloat16 aclFloatToFloat16(float value) {
    uint32_t x;
    memcpy(&x, &value, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xFFu;
    uint32_t man = x & 0x7FFFFFu;
    if (exp == 0xFFu) return (aclFloat16)(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0)); /* inf / NaN */
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (aclFloat16)(sign | 0x7C00u); /* overflow: infinity */
    if (e <= 0) {                                      /* subnormal half (or zero) */
        if (e < -10) return (aclFloat16)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift;
        uint32_t rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u))) half++;
        return (aclFloat16)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rest = man & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) half++; /* may carry into the exponent: fine */
    return (aclFloat16)(sign | half);
}

float aclFloat16ToFloat(aclFloat16 value) {
    uint32_t sign = ((uint32_t)value & 0x8000u) << 16;
    uint32_t exp = ((uint32_t)value >> 10) & 0x1Fu;
    uint32_t man = (uint32_t)value & 0x3FFu;
    uint32_t x;
    if (exp == 0x1Fu) {
        x = sign | 0x7F800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            x = sign;
        } else { /* subnormal: normalize */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3FFu) << 13);
        }
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

size_t aclDataTypeSize(aclDataType dataType) {
#define DTYPE_SIZE(name, size, scalar) case name: return (size);
    switch (dataType) {
    OPBUILD_ACL_DATA_TYPES(DTYPE_SIZE)
    default: return 0;
    }
#undef DTYPE_SIZE
}

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
