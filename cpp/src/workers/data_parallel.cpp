// Gradient averaging and global loss normalisation over data-parallel ranks (see workers/data_parallel.h).
#include "verl/workers/data_parallel.h"

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::workers::detail {

int64_t DataParallel::local_rows(int64_t global_rows, const std::string& key) const {
  const int64_t n = size();
  VERL_CHECK_AS(ConfigError, global_rows % n == 0, "config key '", key, "' gives mini-batches of ", global_rows,
                " rows (x rollout.n), which ", n, " data-parallel ranks cannot share equally");
  return global_rows / n;
}

RowGroups DataParallel::dynamic_micro_batches(const std::vector<int64_t>& seq_lens, int64_t max_token_len) const {
  RowGroups groups = workers::dynamic_micro_batches(seq_lens, max_token_len);
  if (!comm_ || comm_->world_size() == 1) return groups;
  // A rank that needs more parts than max_token_len's count raises the count for all; repeat until they agree.
  while (true) {
    torch::Tensor count = torch::tensor({static_cast<int64_t>(groups.size())}, torch::kLong);
    comm_->all_reduce_max_(count);
    const int64_t most = count.item<int64_t>();
    if (static_cast<int64_t>(groups.size()) < most)
      groups = workers::dynamic_micro_batches(seq_lens, max_token_len, /*balance=*/true, most);
    if (comm_->all_reduce_sum(static_cast<int64_t>(groups.size()) == most ? 0.0 : 1.0) == 0.0) return groups;
  }
}

void DataParallel::broadcast_from_controller(const std::vector<torch::Tensor>& tensors) const {
  if (!comm_ || comm_->world_size() == 1) return;
  torch::NoGradGuard no_grad;
  for (torch::Tensor t : tensors) comm_->broadcast_(t, 0);
}

void DataParallel::broadcast_model_from_controller(model::CausalLM& model) const {
  std::vector<torch::Tensor> state;
  for (auto& [name, t] : model.named_state()) state.push_back(t);
  broadcast_from_controller(state);
}

}  // namespace verl::workers::detail
