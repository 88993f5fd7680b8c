/* The ACL header programs include: the runtime subset atb_ops serves on CPU (acl_rt.h) and its basic types
 * (acl_base.h). ACL's model and single-operator APIs (acl_mdl.h, acl_op.h) are not part of it. */
#ifndef ATB_OPS_INCLUDE_ACL_ACL_H
#define ATB_OPS_INCLUDE_ACL_ACL_H

#include "acl_base.h"
#include "acl_rt.h"

#endif /* ATB_OPS_INCLUDE_ACL_ACL_H */
