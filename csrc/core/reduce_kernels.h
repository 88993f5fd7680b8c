// Elementwise reductions over raw host buffers, without building tensors: the shm backend reduces small
// messages and ring chunks of at most 64 KiB, where ATen's per-call overhead (from_blob, TensorIterator)
// costs more than the arithmetic.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstddef>
#include <cstdint>

#include "core/reduce.h"

namespace atb_ops {

// out[i] = parts[0][i] (op) parts[1][i] (op) ... for i < n, in this order, with the arithmetic of
// reduceInOrder (16-bit floats accumulate in float32 and round once; integers wrap; max/min propagate
// NaN; bool sums and maxima are logical or, products and minima logical and). `out` may alias any part at the
// same offset. Returns false, touching nothing, for a dtype it does not handle (complex, ...): the caller
// falls back to reduceInOrder.
bool reduceRaw(const char* const* parts, size_t count, char* out, int64_t n, c10::ScalarType dtype, ReduceOp op);

// memcpy with non-temporal stores, for results much larger than the caches: they go to memory without
// first being read into the cache (a plain store reads each line before writing it).
void copyStreaming(char* dst, const char* src, size_t bytes);

// memmove, with non-temporal stores when `streaming` and the two ranges do not overlap; returns whether it used them.
bool copyMaybeStreaming(char* dst, const char* src, size_t bytes, bool streaming);

}  // namespace atb_ops
