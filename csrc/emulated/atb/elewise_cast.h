// ATB's ElewiseOperation with ELEWISE_CAST, on CPU: ATB's example helpers (demo_util.h) convert host data to
// float16 / bfloat16 with it before every communication demo. It is an atb_ops::Operation like the communication
// operators, so the C++ API runs it through the same wrapper; it is not registered in csrc/ops (the Python
// surfaces do not offer it).
//   param  : {"elewiseType": 1, "outTensorType": <aclDataType>}
//   inputs : x (any dtype of dtypes.h)
//   outputs: x converted to outTensorType, same shape
#pragma once

#include <memory>

#include "ops/operation_base.h"

namespace atb_ops::atb_api {

std::unique_ptr<atb_ops::Operation> makeElewiseCastOperation();

}  // namespace atb_ops::atb_api
