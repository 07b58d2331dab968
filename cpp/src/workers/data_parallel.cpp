// Gradient averaging and global loss normalisation over data-parallel ranks (see workers/data_parallel.h).
#include "workers/data_parallel.h"

#include <map>

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::workers::detail {

int64_t DataParallel::local_rows(int64_t global_rows, const std::string& key) const {
  const int64_t n = size();
  VERL_CHECK_AS(ConfigError, global_rows % n == 0, "config key '", key, "' gives mini-batches of ", global_rows,
                " rows (x rollout.n), which ", n, " data-parallel ranks cannot share equally");
  return global_rows / n;
}

void DataParallel::average_gradients(const std::vector<torch::Tensor>& parameters) const {
  if (!comm_ || comm_->world_size() == 1) return;
  torch::NoGradGuard no_grad;
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_dtype;
  for (const auto& p : parameters) {
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    by_dtype[p.grad().scalar_type()].push_back(p.grad());
  }
  const double n = static_cast<double>(comm_->world_size());
  for (auto& [dtype, grads] : by_dtype) {
    std::vector<torch::Tensor> flat;
    flat.reserve(grads.size());
    for (const auto& g : grads) flat.push_back(g.reshape(-1));
    torch::Tensor buffer = torch::cat(flat);
    comm_->all_reduce_sum_(buffer);
    buffer.div_(n);
    int64_t offset = 0;
    for (auto& g : grads) {
      g.copy_(buffer.narrow(0, offset, g.numel()).view_as(g));
      offset += g.numel();
    }
  }
}

void DataParallel::broadcast_from_controller(const std::vector<torch::Tensor>& tensors) const {
  if (!comm_ || comm_->world_size() == 1) return;
  torch::NoGradGuard no_grad;
  for (torch::Tensor t : tensors) comm_->broadcast_(t, 0);
}

}  // namespace verl::workers::detail
