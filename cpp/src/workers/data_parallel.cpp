// Gradient averaging and global loss normalisation over data-parallel ranks (see workers/data_parallel.h).
#include "workers/data_parallel.h"

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::workers::detail {

int64_t DataParallel::local_rows(int64_t global_rows, const std::string& key) const {
  const int64_t n = size();
  VERL_CHECK_AS(ConfigError, global_rows % n == 0, "config key '", key, "' gives mini-batches of ", global_rows,
                " rows (x rollout.n), which ", n, " data-parallel ranks cannot share equally");
  return global_rows / n;
}

void DataParallel::broadcast_from_controller(const std::vector<torch::Tensor>& tensors) const {
  if (!comm_ || comm_->world_size() == 1) return;
  torch::NoGradGuard no_grad;
  for (torch::Tensor t : tensors) comm_->broadcast_(t, 0);
}

}  // namespace verl::workers::detail
