/* aclnn/aclnn_base.h: CANN's umbrella name for the aclnn base types (see aclnn/acl_meta.h). */
#ifndef OPBUILD_ACLNN_ACLNN_BASE_H_
#define OPBUILD_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#endif /* OPBUILD_ACLNN_ACLNN_BASE_H_ */
