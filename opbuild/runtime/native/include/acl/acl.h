/* acl/acl.h: AscendCL entry header of opbuild's C ABI (types, errors, runtime, ops, models). */
#ifndef OPBUILD_ACL_ACL_H_
#define OPBUILD_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_mdl.h"
#include "acl/acl_op.h"
#include "acl/acl_rt.h"

#endif /* OPBUILD_ACL_ACL_H_ */
