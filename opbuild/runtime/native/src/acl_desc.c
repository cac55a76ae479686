/* acl_desc.c: the plain objects of the aclop / aclmdl API: aclTensorDesc, aclDataBuffer,
 * aclopAttr and aclmdlDataset (C structs owned by this library; acl_desc.h has their layouts,
 * read by acl_op.c when a call goes to Python).
 *
 * Every handle starts with a magic number (cleared on destruction), so that a NULL or dead
 * handle is reported, not followed, where the API returns a status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_desc.h"

#define DESC_MAGIC ACL_MAGIC(0x21)
#define BUFFER_MAGIC ACL_MAGIC(0x22)
#define ATTR_MAGIC ACL_MAGIC(0x23)
#define DATASET_MAGIC ACL_MAGIC(0x24)

int acl_desc_ok(const aclTensorDesc *d) { return d != NULL && d->magic == DESC_MAGIC; }
int acl_buffer_ok(const aclDataBuffer *b) { return b != NULL && b->magic == BUFFER_MAGIC; }
int acl_attr_ok(const aclopAttr *a) { return a != NULL && a->magic == ATTR_MAGIC; }
int acl_dataset_ok(const aclmdlDataset *s) { return s != NULL && s->magic == DATASET_MAGIC; }

/* ---- aclTensorDesc ---------------------------------------------------------------------------- */

aclTensorDesc *aclCreateTensorDesc(aclDataType dataType, int numDims, const int64_t *dims, aclFormat format) {
    if (numDims < 0 || numDims > ACL_MAX_DIM_CNT) {
        acl_fail(ACL_ERROR_INVALID_PARAM, "aclCreateTensorDesc: numDims %d is outside 0..%d", numDims, ACL_MAX_DIM_CNT);
        return NULL;
    }
    if (numDims > 0 && dims == NULL) {
        acl_fail(ACL_ERROR_INVALID_PARAM, "aclCreateTensorDesc: dims is a null pointer (numDims %d)", numDims);
        return NULL;
    }
    for (int i = 0; i < numDims; i++) {
        if (dims[i] < -2) {
            acl_fail(ACL_ERROR_INVALID_PARAM, "aclCreateTensorDesc: dims[%d] is %lld (a dim is >= 0, -1 unknown or "
                     "-2 unknown rank)", i, (long long)dims[i]);
            return NULL;
        }
    }
    aclTensorDesc *d = calloc(1, sizeof *d);
    if (d == NULL) {
        acl_fail(ACL_ERROR_BAD_ALLOC, "aclCreateTensorDesc: out of memory");
        return NULL;
    }
    d->magic = DESC_MAGIC;
    acl_live_add(OPBUILD_ACL_TENSOR_DESC, 1);
    d->dataType = dataType;
    d->format = format;
    d->numDims = (size_t)numDims;
    if (numDims) memcpy(d->dims, dims, (size_t)numDims * sizeof *dims);
    return d;
}

void aclDestroyTensorDesc(const aclTensorDesc *desc) {
    if (!acl_desc_ok(desc)) return;
    aclTensorDesc *d = (aclTensorDesc *)desc;
    d->magic = 0;
    acl_live_add(OPBUILD_ACL_TENSOR_DESC, -1);
    free(d->constData);
    free(d);
}

aclDataType aclGetTensorDescType(const aclTensorDesc *desc) {
    return acl_desc_ok(desc) ? desc->dataType : ACL_DT_UNDEFINED;
}

aclFormat aclGetTensorDescFormat(const aclTensorDesc *desc) {
    return acl_desc_ok(desc) ? desc->format : ACL_FORMAT_UNDEFINED;
}

size_t aclGetTensorDescElementCount(const aclTensorDesc *desc) {
    if (!acl_desc_ok(desc)) return 0;
    size_t n = 1;
    for (size_t i = 0; i < desc->numDims; i++) {
        if (desc->dims[i] < 0) return 0;
        n *= (size_t)desc->dims[i];
    }
    return n;
}

size_t aclGetTensorDescSize(const aclTensorDesc *desc) {
    if (!acl_desc_ok(desc)) return 0;
    return aclGetTensorDescElementCount(desc) * aclDataTypeSize(desc->dataType);
}

size_t aclGetTensorDescNumDims(const aclTensorDesc *desc) {
    if (!acl_desc_ok(desc)) return 0;
    if (desc->numDims == 1 && desc->dims[0] == -2) return (size_t)ACL_UNKNOWN_RANK;
    return desc->numDims;
}

int64_t aclGetTensorDescDim(const aclTensorDesc *desc, size_t index) {
    if (!acl_desc_ok(desc) || index >= desc->numDims) return -1;
    return desc->dims[index];
}

aclError aclGetTensorDescDimV2(const aclTensorDesc *desc, size_t index, int64_t *dimSize) {
    if (!acl_desc_ok(desc) || dimSize == NULL)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclGetTensorDescDimV2: %s", dimSize == NULL ?
                        "dimSize is a null pointer" : "desc is not a live aclTensorDesc");
    if (index >= desc->numDims)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclGetTensorDescDimV2: index %zu out of range: the desc has %zu dims",
                        index, desc->numDims);
    *dimSize = desc->dims[index];
    return ACL_SUCCESS;
}

aclError aclGetTensorDescDimRange(const aclTensorDesc *desc, size_t index, size_t dimRangeNum, int64_t *dimRange) {
    if (!acl_desc_ok(desc) || dimRange == NULL || dimRangeNum < ACL_TENSOR_SHAPE_RANGE_NUM)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclGetTensorDescDimRange: invalid desc, dimRange or dimRangeNum");
    if (index >= desc->numDims)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclGetTensorDescDimRange: index %zu out of range: the desc has %zu "
                        "dims", index, desc->numDims);
    if (index < desc->numRanges) {
        dimRange[0] = desc->ranges[index][0];
        dimRange[1] = desc->ranges[index][1];
    } else { /* no range set: a known dim is its own range */
        dimRange[0] = dimRange[1] = desc->dims[index];
    }
    return ACL_SUCCESS;
}

void aclSetTensorDescName(aclTensorDesc *desc, const char *name) {
    if (!acl_desc_ok(desc)) return;
    snprintf(desc->name, sizeof desc->name, "%s", name ? name : "");
}

const char *aclGetTensorDescName(aclTensorDesc *desc) { return acl_desc_ok(desc) ? desc->name : ""; }

aclError aclSetTensorShapeRange(aclTensorDesc *desc, size_t dimsCount, int64_t dimsRange[][ACL_TENSOR_SHAPE_RANGE_NUM]) {
    if (!acl_desc_ok(desc)) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclSetTensorShapeRange: desc is not a live "
                                            "aclTensorDesc");
    if (dimsCount > ACL_MAX_DIM_CNT || (dimsCount > 0 && dimsRange == NULL))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclSetTensorShapeRange: dimsCount %zu with %s", dimsCount,
                        dimsRange ? "too many dims" : "a null dimsRange");
    for (size_t i = 0; i < dimsCount; i++) {
        desc->ranges[i][0] = dimsRange[i][0];
        desc->ranges[i][1] = dimsRange[i][1];
    }
    desc->numRanges = dimsCount;
    return ACL_SUCCESS;
}

aclError aclSetTensorFormat(aclTensorDesc *desc, aclFormat format) {
    if (!acl_desc_ok(desc)) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclSetTensorFormat: desc is not a live "
                                            "aclTensorDesc");
    desc->format = format;
    return ACL_SUCCESS;
}

aclError aclSetTensorShape(aclTensorDesc *desc, int numDims, const int64_t *dims) {
    if (!acl_desc_ok(desc) || numDims < 0 || numDims > ACL_MAX_DIM_CNT || (numDims > 0 && dims == NULL))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclSetTensorShape: invalid desc, numDims or dims");
    desc->numDims = (size_t)numDims;
    if (numDims) memcpy(desc->dims, dims, (size_t)numDims * sizeof *dims);
    return ACL_SUCCESS;
}

aclError aclSetTensorConst(aclTensorDesc *desc, void *dataBuffer, size_t length) {
    if (!acl_desc_ok(desc) || dataBuffer == NULL || length == 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclSetTensorConst: invalid desc, dataBuffer or length");
    void *copy = malloc(length);
    if (copy == NULL) return acl_fail(ACL_ERROR_BAD_ALLOC, "aclSetTensorConst: out of memory");
    memcpy(copy, dataBuffer, length);
    free(desc->constData);
    desc->constData = copy;
    desc->constLength = length;
    return ACL_SUCCESS;
}

/* ---- aclDataBuffer ---------------------------------------------------------------------------- */

aclDataBuffer *aclCreateDataBuffer(void *data, size_t size) {
    aclDataBuffer *b = calloc(1, sizeof *b);
    if (b == NULL) {
        acl_fail(ACL_ERROR_BAD_ALLOC, "aclCreateDataBuffer: out of memory");
        return NULL;
    }
    b->magic = BUFFER_MAGIC;
    acl_live_add(OPBUILD_ACL_DATA_BUFFER, 1);
    b->data = data;
    b->size = size;
    return b;
}

aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer) {
    if (!acl_buffer_ok(dataBuffer))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclDestroyDataBuffer: %p is not a live aclDataBuffer",
                        (const void *)dataBuffer);
    aclDataBuffer *b = (aclDataBuffer *)dataBuffer;
    b->magic = 0;
    acl_live_add(OPBUILD_ACL_DATA_BUFFER, -1);
    free(b);
    return ACL_SUCCESS;
}

aclError aclUpdateDataBuffer(aclDataBuffer *dataBuffer, void *data, size_t size) {
    if (!acl_buffer_ok(dataBuffer))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclUpdateDataBuffer: %p is not a live aclDataBuffer",
                        (void *)dataBuffer);
    dataBuffer->data = data;
    dataBuffer->size = size;
    return ACL_SUCCESS;
}

void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer) {
    return acl_buffer_ok(dataBuffer) ? dataBuffer->data : NULL;
}

uint32_t aclGetDataBufferSize(const aclDataBuffer *dataBuffer) {
    return acl_buffer_ok(dataBuffer) ? (uint32_t)dataBuffer->size : 0;
}

size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer) {
    return acl_buffer_ok(dataBuffer) ? dataBuffer->size : 0;
}

/* ---- aclopAttr -------------------------------------------------------------------------------- */

aclopAttr *aclopCreateAttr(void) {
    aclopAttr *a = calloc(1, sizeof *a);
    if (a == NULL) {
        acl_fail(ACL_ERROR_BAD_ALLOC, "aclopCreateAttr: out of memory");
        return NULL;
    }
    a->magic = ATTR_MAGIC;
    acl_live_add(OPBUILD_ACL_OP_ATTR, 1);
    return a;
}

static void free_entry(acl_attr_entry *e) {
    if (e->kind == ACL_ATTR_LIST_STRING || e->kind == ACL_ATTR_STRING) {
        char **strings = e->values;
        for (size_t i = 0; i < e->count; i++) free(strings[i]);
    }
    free(e->values);
    free(e->name);
}

void aclopDestroyAttr(const aclopAttr *attr) {
    if (!acl_attr_ok(attr)) return;
    aclopAttr *a = (aclopAttr *)attr;
    for (size_t i = 0; i < a->count; i++) free_entry(&a->entries[i]);
    free(a->entries);
    a->magic = 0;
    acl_live_add(OPBUILD_ACL_OP_ATTR, -1);
    free(a);
}

/* Set name -> (kind, count values of `item` bytes at `values`); strings are copied one by one. */
static aclError set_attr(aclopAttr *attr, const char *api, const char *name, int kind, const void *values, int count,
                         size_t item) {
    if (!acl_attr_ok(attr)) return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: attr is not a live aclopAttr", api);
    if (name == NULL || *name == '\0') return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: attrName is empty", api);
    if (count < 0 || (count > 0 && values == NULL))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: attribute %s: numValues %d with %s", api, name, count,
                        values ? "a negative count" : "null values");
    acl_attr_entry e = {.kind = kind, .count = (size_t)count};
    e.name = strdup(name);
    size_t bytes = (size_t)count * item;
    e.values = malloc(bytes ? bytes : 1);
    if (e.name == NULL || e.values == NULL) {
        free(e.name);
        free(e.values);
        return acl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", api);
    }
    if (kind == ACL_ATTR_LIST_STRING || kind == ACL_ATTR_STRING) {
        const char *const *src = values;
        char **dst = e.values;
        for (int i = 0; i < count; i++) {
            dst[i] = strdup(src[i] ? src[i] : "");
            if (dst[i] == NULL) {
                e.count = (size_t)i;
                free_entry(&e);
                return acl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", api);
            }
        }
    } else if (bytes) {
        memcpy(e.values, values, bytes);
    }
    for (size_t i = 0; i < attr->count; i++) {
        if (strcmp(attr->entries[i].name, name) == 0) {
            free_entry(&attr->entries[i]);
            attr->entries[i] = e;
            return ACL_SUCCESS;
        }
    }
    if (attr->count == attr->cap) {
        size_t cap = attr->cap ? 2 * attr->cap : 8;
        acl_attr_entry *grown = realloc(attr->entries, cap * sizeof *grown);
        if (grown == NULL) {
            free_entry(&e);
            return acl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", api);
        }
        attr->entries = grown;
        attr->cap = cap;
    }
    attr->entries[attr->count++] = e;
    return ACL_SUCCESS;
}

aclError aclopSetAttrBool(aclopAttr *attr, const char *attrName, uint8_t attrValue) {
    return set_attr(attr, "aclopSetAttrBool", attrName, ACL_ATTR_BOOL, &attrValue, 1, sizeof attrValue);
}
aclError aclopSetAttrInt(aclopAttr *attr, const char *attrName, int64_t attrValue) {
    return set_attr(attr, "aclopSetAttrInt", attrName, ACL_ATTR_INT, &attrValue, 1, sizeof attrValue);
}
aclError aclopSetAttrFloat(aclopAttr *attr, const char *attrName, float attrValue) {
    return set_attr(attr, "aclopSetAttrFloat", attrName, ACL_ATTR_FLOAT, &attrValue, 1, sizeof attrValue);
}
aclError aclopSetAttrString(aclopAttr *attr, const char *attrName, const char *attrValue) {
    if (attrValue == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclopSetAttrString: attrValue is a null pointer");
    return set_attr(attr, "aclopSetAttrString", attrName, ACL_ATTR_STRING, &attrValue, 1, sizeof attrValue);
}
aclError aclopSetAttrDataType(aclopAttr *attr, const char *attrName, aclDataType attrValue) {
    int64_t v = attrValue;
    return set_attr(attr, "aclopSetAttrDataType", attrName, ACL_ATTR_DTYPE, &v, 1, sizeof v);
}
aclError aclopSetAttrListBool(aclopAttr *attr, const char *attrName, int numValues, const uint8_t *values) {
    return set_attr(attr, "aclopSetAttrListBool", attrName, ACL_ATTR_LIST_BOOL, values, numValues, sizeof *values);
}
aclError aclopSetAttrListInt(aclopAttr *attr, const char *attrName, int numValues, const int64_t *values) {
    return set_attr(attr, "aclopSetAttrListInt", attrName, ACL_ATTR_LIST_INT, values, numValues, sizeof *values);
}
aclError aclopSetAttrListFloat(aclopAttr *attr, const char *attrName, int numValues, const float *values) {
    return set_attr(attr, "aclopSetAttrListFloat", attrName, ACL_ATTR_LIST_FLOAT, values, numValues, sizeof *values);
}
aclError aclopSetAttrListString(aclopAttr *attr, const char *attrName, int numValues, const char **values) {
    return set_attr(attr, "aclopSetAttrListString", attrName, ACL_ATTR_LIST_STRING, values, numValues,
                    sizeof *values);
}

/* ---- aclmdlDataset ---------------------------------------------------------------------------- */

aclmdlDataset *aclmdlCreateDataset(void) {
    aclmdlDataset *s = calloc(1, sizeof *s);
    if (s == NULL) {
        acl_fail(ACL_ERROR_BAD_ALLOC, "aclmdlCreateDataset: out of memory");
        return NULL;
    }
    s->magic = DATASET_MAGIC;
    acl_live_add(OPBUILD_ACL_DATASET, 1);
    return s;
}

aclError aclmdlDestroyDataset(const aclmdlDataset *dataset) {
    if (!acl_dataset_ok(dataset))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlDestroyDataset: %p is not a live aclmdlDataset",
                        (const void *)dataset);
    aclmdlDataset *s = (aclmdlDataset *)dataset;
    s->magic = 0;
    acl_live_add(OPBUILD_ACL_DATASET, -1);
    for (size_t i = 0; i < s->count; i++)
        if (s->owned[i]) aclDestroyTensorDesc(s->descs[i]);
    free(s->buffers);
    free(s->descs);
    free(s->owned);
    free(s);
    return ACL_SUCCESS;
}

aclError aclmdlAddDatasetBuffer(aclmdlDataset *dataset, aclDataBuffer *dataBuffer) {
    if (!acl_dataset_ok(dataset) || !acl_buffer_ok(dataBuffer))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlAddDatasetBuffer: %s",
                        acl_dataset_ok(dataset) ? "dataBuffer is not a live aclDataBuffer"
                                                : "dataset is not a live aclmdlDataset");
    if (dataset->count == dataset->cap) {
        size_t cap = dataset->cap ? 2 * dataset->cap : 8;
        aclDataBuffer **grown = realloc(dataset->buffers, cap * sizeof *grown);
        if (grown != NULL) dataset->buffers = grown;
        aclTensorDesc **descs = grown ? realloc(dataset->descs, cap * sizeof *descs) : NULL;
        if (descs != NULL) dataset->descs = descs;
        unsigned char *owned = descs ? realloc(dataset->owned, cap) : NULL;
        if (owned == NULL) return acl_fail(ACL_ERROR_BAD_ALLOC, "aclmdlAddDatasetBuffer: out of memory");
        dataset->owned = owned;
        dataset->cap = cap;
    }
    dataset->descs[dataset->count] = NULL;
    dataset->owned[dataset->count] = 0;
    dataset->buffers[dataset->count++] = dataBuffer;
    return ACL_SUCCESS;
}

size_t aclmdlGetDatasetNumBuffers(const aclmdlDataset *dataset) {
    return acl_dataset_ok(dataset) ? dataset->count : 0;
}

aclDataBuffer *aclmdlGetDatasetBuffer(const aclmdlDataset *dataset, size_t index) {
    if (!acl_dataset_ok(dataset) || index >= dataset->count) {
        acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetDatasetBuffer: %s", acl_dataset_ok(dataset) ?
                 "index out of range" : "dataset is not a live aclmdlDataset");
        return NULL;
    }
    return dataset->buffers[index];
}

aclError aclmdlSetDatasetTensorDesc(aclmdlDataset *dataset, aclTensorDesc *tensorDesc, size_t index) {
    if (!acl_dataset_ok(dataset) || !acl_desc_ok(tensorDesc))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlSetDatasetTensorDesc: %s", acl_dataset_ok(dataset)
                        ? "tensorDesc is not a live aclTensorDesc" : "dataset is not a live aclmdlDataset");
    if (index >= dataset->count)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlSetDatasetTensorDesc: index %zu out of range: the dataset has "
                        "%zu buffers", index, dataset->count);
    if (dataset->owned[index]) aclDestroyTensorDesc(dataset->descs[index]);
    dataset->descs[index] = tensorDesc;
    dataset->owned[index] = 0;
    return ACL_SUCCESS;
}

aclTensorDesc *aclmdlGetDatasetTensorDesc(const aclmdlDataset *dataset, size_t index) {
    if (!acl_dataset_ok(dataset) || index >= dataset->count) {
        acl_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetDatasetTensorDesc: %s", acl_dataset_ok(dataset) ?
                 "index out of range" : "dataset is not a live aclmdlDataset");
        return NULL;
    }
    return dataset->descs[index];
}

aclError acl_dataset_set_result(aclmdlDataset *dataset, size_t index, aclDataType dataType, int numDims,
                                const int64_t *dims) {
    if (index >= dataset->count) return ACL_ERROR_INVALID_PARAM;
    aclTensorDesc *d = dataset->descs[index];
    if (d != NULL && !dataset->owned[index]) return ACL_SUCCESS; /* the caller's desc stays as it set it */
    if (d == NULL) {
        d = aclCreateTensorDesc(dataType, numDims, dims, ACL_FORMAT_ND);
        if (d == NULL) return ACL_ERROR_BAD_ALLOC;
        dataset->descs[index] = d;
        dataset->owned[index] = 1;
        return ACL_SUCCESS;
    }
    d->dataType = dataType;
    return aclSetTensorShape(d, numDims, dims);
}
