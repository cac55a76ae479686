/* aclnn/acl_meta.h: the aclnn object types and their constructors (CANN names and signatures).
 *
 * Every generated aclnn_<op>.h includes this header. The objects are plain C structs owned by
 * opbuild's acl library (opbuild.runtime._opbuild_acl); create them with aclCreateXxx and
 * release them with aclDestroyXxx. Constructors copy what they are given (dims, strides, array
 * values), except the tensor data, which stays the caller's memory. A tensor list takes
 * ownership of its tensors: aclDestroyTensorList destroys them too.
 */
#ifndef OPBUILD_ACLNN_ACL_META_H_
#define OPBUILD_ACLNN_ACL_META_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000

typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclTensorList aclTensorList;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef struct aclBoolArray aclBoolArray;

/* A tensor over `tensorData` (device memory, not copied): view shape viewDims[viewDimsNum],
 * strides in elements (NULL: contiguous), element offset into the storage, and the storage
 * shape storageDims[storageDimsNum] (NULL/0: the extent the view needs). NULL on invalid
 * arguments (the reason is kept for aclGetRecentErrMsg). */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                               const int64_t *stride, int64_t offset, aclFormat format,
                                               const int64_t *storageDims, uint64_t storageDimsNum,
                                               void *tensorData);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);
/* The view shape of a tensor in a new array (*viewDims, freed by the caller with free()). After an
 * op with a data-dependent output shape ran and its stream was synchronized, the out tensor's
 * view shape is the real one (CANN's pattern for aclnnNonzero). */
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum);

/* A scalar holding a copy of *value, read as dataType. */
ACL_FUNC_VISIBILITY aclScalar *aclCreateScalar(void *value, aclDataType dataType);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyScalar(const aclScalar *scalar);

/* A list of `size` tensors; the list owns them from now on. */
ACL_FUNC_VISIBILITY aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensorList(const aclTensorList *array);

ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray *array);
ACL_FUNC_VISIBILITY aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyFloatArray(const aclFloatArray *array);
ACL_FUNC_VISIBILITY aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyBoolArray(const aclBoolArray *array);

/* Let phase 2 (aclnnXxx) run this executor any number of times; it is then released only by
 * aclDestroyAclOpExecutor. A non-repeatable executor is released by its phase-2 call. */
ACL_FUNC_VISIBILITY aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);

/* Clear the calling thread's op-parameter cache. */
ACL_FUNC_VISIBILITY void ResetCacheThreadLocal(void);

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_ACLNN_ACL_META_H_ */
