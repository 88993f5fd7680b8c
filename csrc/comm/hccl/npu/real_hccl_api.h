// The HcclApi that calls the real HCCL, ACL and torch_npu (hccl_api_impl.cpp). Declared without vendor
// includes so the backend registration needs none either.
#pragma once

#include <memory>

#include "comm/hccl/hccl_api.h"

namespace atb_ops::hccl {

// One per process; stateless apart from symbols resolved on first use.
std::shared_ptr<HcclApi> realHcclApi();

}  // namespace atb_ops::hccl
