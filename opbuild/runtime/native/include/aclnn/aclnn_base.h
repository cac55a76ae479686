/* aclnn/aclnn_base.h: CANN's umbrella header of the aclnn base types (aclnn/acl_meta.h) and
 * aclnnInit / aclnnFinalize. */
#ifndef OPBUILD_ACLNN_ACLNN_BASE_H_
#define OPBUILD_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Initialize the aclnn library (configPath: a JSON config file or NULL). Calling it again is
 * harmless; aclnn calls do not require it (they start the runtime on first use). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
/* Release what aclnnInit set up (the calling thread's op-parameter cache). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_ACLNN_ACLNN_BASE_H_ */
