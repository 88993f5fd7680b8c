// Large CPU buffers that are about to be written for the first time.
#pragma once

#include <ATen/core/Tensor.h>

namespace atb_ops {

// Asks Linux to back a CPU tensor's pages with transparent huge pages before they are first written:
// a fresh 32 MiB output then takes 16 page faults instead of 8192 (3-4x faster to fill on the VMs
// measured in docs/quant.md). Only for tensors of at least 32 MiB (always fresh mappings, see memory.cpp),
// where THP is enabled ("madvise" or "always"); a no-op elsewhere, on other devices and systems, and under
// ATB_OPS_HUGEPAGES=0.
void adviseHugePages(const at::Tensor& t);

}  // namespace atb_ops
