/* acl/acl_op.h: single-op execution of opbuild's acl library (aclopAttr, aclopExecute*).
 *
 * An op runs by type from the single-op models of the directory aclopSetModelDir named (the
 * .om files written by `opbuild om single-op` or `atc --singleop`), found by content: the model's
 * op type, its inputs' dtypes and shapes (-1 in the model matches any dim) and the attributes it
 * was built with. No model matches: ACL_ERROR_OP_TYPE_NOT_MATCH / ACL_ERROR_OP_INPUT_NOT_MATCH /
 * ACL_ERROR_OP_ATTR_NOT_MATCH with a message naming what was searched. The models of that
 * directory are trusted (the application chose it): the code they carry runs.
 */
#ifndef OPBUILD_ACL_ACL_OP_H_
#define OPBUILD_ACL_ACL_OP_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aclopAttr aclopAttr;
typedef struct aclopHandle aclopHandle;

typedef enum aclopEngineType {
    ACL_ENGINE_SYS = 0,
    ACL_ENGINE_AICORE = 1,
    ACL_ENGINE_VECTOR = 2,
} aclopEngineType;

/* ---- attributes: name -> value, copied; setting a name again replaces its value ---------------- */
ACL_FUNC_VISIBILITY aclopAttr *aclopCreateAttr(void);
ACL_FUNC_VISIBILITY void aclopDestroyAttr(const aclopAttr *attr);
ACL_FUNC_VISIBILITY aclError aclopSetAttrBool(aclopAttr *attr, const char *attrName, uint8_t attrValue);
ACL_FUNC_VISIBILITY aclError aclopSetAttrInt(aclopAttr *attr, const char *attrName, int64_t attrValue);
ACL_FUNC_VISIBILITY aclError aclopSetAttrFloat(aclopAttr *attr, const char *attrName, float attrValue);
ACL_FUNC_VISIBILITY aclError aclopSetAttrString(aclopAttr *attr, const char *attrName, const char *attrValue);
ACL_FUNC_VISIBILITY aclError aclopSetAttrDataType(aclopAttr *attr, const char *attrName, aclDataType attrValue);
ACL_FUNC_VISIBILITY aclError aclopSetAttrListBool(aclopAttr *attr, const char *attrName, int numValues,
                                                  const uint8_t *values);
ACL_FUNC_VISIBILITY aclError aclopSetAttrListInt(aclopAttr *attr, const char *attrName, int numValues,
                                                 const int64_t *values);
ACL_FUNC_VISIBILITY aclError aclopSetAttrListFloat(aclopAttr *attr, const char *attrName, int numValues,
                                                   const float *values);
ACL_FUNC_VISIBILITY aclError aclopSetAttrListString(aclopAttr *attr, const char *attrName, int numValues,
                                                    const char **values);

/* ---- single-op models ------------------------------------------------------------------------ */
/* The directory of the single-op .om files (read when an op first runs; set once, as CANN). */
ACL_FUNC_VISIBILITY aclError aclopSetModelDir(const char *modelDir);
/* One single-op model from memory (a copy is kept), searched before the directory's. */
ACL_FUNC_VISIBILITY aclError aclopLoad(const void *model, size_t modelSize);

/* Run opType on the buffers (device memory), ordered on `stream` (NULL: done on return). */
ACL_FUNC_VISIBILITY aclError aclopExecute(const char *opType, int numInputs, const aclTensorDesc *const inputDesc[],
                                          const aclDataBuffer *const inputs[], int numOutputs,
                                          const aclTensorDesc *const outputDesc[], aclDataBuffer *const outputs[],
                                          const aclopAttr *attr, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclopExecuteV2(const char *opType, int numInputs, aclTensorDesc *inputDesc[],
                                            aclDataBuffer *inputs[], int numOutputs, aclTensorDesc *outputDesc[],
                                            aclDataBuffer *outputs[], aclopAttr *attr, aclrtStream stream);

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_ACL_ACL_OP_H_ */
