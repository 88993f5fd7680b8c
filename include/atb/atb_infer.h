// The header ATB programs include: ATB's C++ API as atb_ops serves it on CPU ranks ($ATB_HOME_PATH/lib/libatb.so):
// contexts, operations, tensors, and the params of the operators atb_ops implements (infer_op_params.h).
// ATB's graph builder and training params are not part of it.
#ifndef ATB_OPS_INCLUDE_ATB_ATB_INFER_H
#define ATB_OPS_INCLUDE_ATB_ATB_INFER_H

#include "context.h"
#include "infer_op_params.h"
#include "operation.h"
#include "svector.h"
#include "types.h"
#include "utils.h"

#endif  // ATB_OPS_INCLUDE_ATB_ATB_INFER_H
