// Small host arrays (indices, per-row parameters) made device tensors through one buffer and one copy. On CUDA the
// buffer is pinned and the copy asynchronous -- the caching host allocator keeps the block until the copy has read
// it -- so staging costs no host synchronisation, where torch::tensor(v).to(device) (a pageable copy) costs one per
// array. On the CPU the tensors are views of the host buffer.
#pragma once

#include <cstdint>
#include <vector>

#include <c10/util/ArrayRef.h>
#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::detail {

class VERL_API HostArrays {
 public:
  // Appends an array; its tensor is the add()'s index in to(): int64 / float64 of shape (v.size(),).
  size_t add(c10::ArrayRef<int64_t> v);
  size_t add(c10::ArrayRef<double> v);
  // Every array added, on `device`, in the order added.
  std::vector<torch::Tensor> to(const torch::Device& device) const;

 private:
  struct Part {
    int64_t offset, count;
    bool is_double;
  };
  std::vector<int64_t> words_;  // every array's 8-byte elements end to end (doubles as their bits)
  std::vector<Part> parts_;
};

}  // namespace verl::detail
