// Host arrays to the device in one copy (core/host_arrays.h).
#include "core/host_arrays.h"

#include <cstring>

#include <torch/torch.h>

namespace verl::detail {

size_t HostArrays::add(c10::ArrayRef<int64_t> v) {
  parts_.push_back({static_cast<int64_t>(words_.size()), static_cast<int64_t>(v.size()), false});
  words_.insert(words_.end(), v.begin(), v.end());
  return parts_.size() - 1;
}

size_t HostArrays::add(c10::ArrayRef<double> v) {
  static_assert(sizeof(double) == sizeof(int64_t));
  parts_.push_back({static_cast<int64_t>(words_.size()), static_cast<int64_t>(v.size()), true});
  const size_t at = words_.size();
  words_.resize(at + v.size());
  if (!v.empty()) std::memcpy(words_.data() + at, v.data(), v.size() * sizeof(double));
  return parts_.size() - 1;
}

std::vector<torch::Tensor> HostArrays::to(const torch::Device& device) const {
  const auto words = static_cast<int64_t>(words_.size());
  torch::Tensor host =
      torch::empty({words}, torch::TensorOptions().dtype(torch::kLong).pinned_memory(device.is_cuda()));
  if (words > 0) std::memcpy(host.data_ptr<int64_t>(), words_.data(), words_.size() * sizeof(int64_t));
  const torch::Tensor staged = host.to(device, /*non_blocking=*/true);
  std::vector<torch::Tensor> out;
  out.reserve(parts_.size());
  for (const Part& p : parts_) {
    torch::Tensor t = staged.narrow(0, p.offset, p.count);
    out.push_back(p.is_double ? t.view(torch::kDouble) : t);
  }
  return out;
}

}  // namespace verl::detail
