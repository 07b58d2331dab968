// Per-thread work arrays for the CPU decode kernels (private).
#pragma once

#include <cstddef>
#include <vector>

namespace verl::kernels::cpu::detail {

// A buffer of at least `n` elements owned by the calling thread, kept for its next call: the sampler
// and the paged-attention kernel need vocab- and context-sized work arrays on every decode step, and
// allocating (zero-filling) them each time was an extra memory pass per step. `Tag` tells apart
// buffers of one type that are live at the same time. Contents are unspecified: callers write before
// they read.
template <typename T, int Tag>
T* thread_scratch(size_t n) {
  static thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace verl::kernels::cpu::detail
