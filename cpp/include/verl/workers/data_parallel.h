// Data parallelism inside a training worker: each rank updates on its own rows, the loss normalised by the
// global (all ranks') token and sequence counts exactly as verl does (dp_size, batch_num_tokens,
// global_batch_size) and the gradients averaged over the ranks by the sharded optimizer (Optimizer::shard_over), so
// N ranks take the step one process would take on the whole mini-batch. With no communicator every function is the
// one-process identity.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"
#include "verl/dist/communicator.h"
#include "verl/model/transformer.h"
#include "verl/workers/micro_batch.h"

namespace verl::workers::detail {

class VERL_API DataParallel {
 public:
  DataParallel() = default;
  explicit DataParallel(std::shared_ptr<dist::Communicator> comm) : comm_(std::move(comm)) {}

  int64_t size() const { return comm_ ? comm_->world_size() : 1; }
  // The sum of `local` over the ranks.
  double sum(double local) const { return comm_ ? comm_->all_reduce_sum(local) : local; }
  // This rank's share of a global mini-batch of `global_rows` rows: ConfigError naming `key` (the
  // ppo_mini_batch_size key) when the ranks cannot share it equally, as verl asserts.
  int64_t local_rows(int64_t global_rows, const std::string& key) const;
  // dynamic_micro_batches (use_dynamic_bsz) with the same number of micro-batches on every rank -- the most any rank
  // needs, as verl's rearrange_micro_batches(same_micro_num_in_dp=True) -- since each sharded forward is a collective.
  RowGroups dynamic_micro_batches(const std::vector<int64_t>& seq_lens, int64_t max_token_len) const;
  // Every rank's `tensors` take rank 0's values (the initial weights of replicas built independently).
  void broadcast_from_controller(const std::vector<torch::Tensor>& tensors) const;
  // Every rank's `model` takes rank 0's weights and buffers (verl's FSDP sync_module_states), before it is sharded.
  void broadcast_model_from_controller(model::CausalLM& model) const;

 private:
  std::shared_ptr<dist::Communicator> comm_;
};

}  // namespace verl::workers::detail
