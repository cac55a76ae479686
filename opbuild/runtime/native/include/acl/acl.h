/* acl/acl.h: AscendCL entry header (types, errors, runtime) of opbuild's C ABI. */
#ifndef OPBUILD_ACL_ACL_H_
#define OPBUILD_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#endif /* OPBUILD_ACL_ACL_H_ */
