/* acl_desc.h: private layouts of the aclop / aclmdl objects (acl_desc.c) and the Python calls
 * of the aclop / aclmdl API (acl_op.c, through acl_bridge.c's interpreter).
 */
#ifndef OPBUILD_ACL_DESC_H
#define OPBUILD_ACL_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_mdl.h"
#include "acl/acl_op.h"
#include "acl/acl_op_compiler.h"
#include "acl_internal.h"

struct aclTensorDesc {
    uint64_t magic;
    aclDataType dataType;
    aclFormat format;
    size_t numDims;
    int64_t dims[ACL_MAX_DIM_CNT];
    size_t numRanges;
    int64_t ranges[ACL_MAX_DIM_CNT][ACL_TENSOR_SHAPE_RANGE_NUM];
    char name[ACL_MAX_TENSOR_NAME_LEN];
    void *constData; /* aclSetTensorConst's copy, or NULL */
    size_t constLength;
};

struct aclDataBuffer {
    uint64_t magic;
    void *data;
    size_t size;
};

/* The kind of an attribute value; also its tag in the tuples given to Python (opbuild/om/aclop.py). */
enum {
    ACL_ATTR_BOOL = 'b',
    ACL_ATTR_INT = 'i',
    ACL_ATTR_FLOAT = 'f',
    ACL_ATTR_STRING = 's',
    ACL_ATTR_DTYPE = 't',
    ACL_ATTR_LIST_BOOL = 'B',
    ACL_ATTR_LIST_INT = 'I',
    ACL_ATTR_LIST_FLOAT = 'F',
    ACL_ATTR_LIST_STRING = 'S',
};

typedef struct acl_attr_entry {
    char *name;
    int kind;
    size_t count;
    void *values; /* count x (uint8_t | int64_t | float | char *) */
} acl_attr_entry;

struct aclopAttr {
    uint64_t magic;
    size_t count, cap;
    acl_attr_entry *entries;
};

struct aclmdlDataset {
    uint64_t magic;
    size_t count, cap;
    aclDataBuffer **buffers; /* not owned */
    aclTensorDesc **descs;   /* per buffer, or NULL */
    unsigned char *owned;    /* descs[i] was made by aclmdlExecute (destroyed with the dataset) */
};

ACL_INTERNAL int acl_desc_ok(const aclTensorDesc *d);
ACL_INTERNAL int acl_buffer_ok(const aclDataBuffer *b);
ACL_INTERNAL int acl_attr_ok(const aclopAttr *a);
ACL_INTERNAL int acl_dataset_ok(const aclmdlDataset *s);
/* After a run: output `index` of the dataset is dataType[dims] (its desc made or updated, unless
 * the caller set its own). */
ACL_INTERNAL aclError acl_dataset_set_result(aclmdlDataset *dataset, size_t index, aclDataType dataType, int numDims,
                                             const int64_t *dims);

#endif /* OPBUILD_ACL_DESC_H */
