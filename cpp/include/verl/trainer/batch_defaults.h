// Batch sizes a user need not set (issue 16 item 2): a config with nothing but the algorithm, the model and the data
// trains, from Python (RLConfig, the CLI) and from C++ (PPOTrainer's constructor) alike -- one derivation.
//
// verl requires every micro-batch size and leaves a batch larger than the data (or a mini-batch larger than the batch)
// to fail later. fill_batch_defaults settles them before the trainer is built:
// - data.train_batch_size larger than the training set (`dataset_size`, when known): clipped to the set's size.
// - ppo_mini_batch_size (actor, critic) larger than data.train_batch_size: clipped to it.
// - micro-batch sizes left unset (null) while use_dynamic_bsz is off: the update's
//   (actor.ppo_micro_batch_size_per_gpu, critic.ppo_micro_batch_size_per_gpu) is the largest divisor of the
//   trajectories of one rank's share of the mini-batch (ppo_mini_batch_size x rollout.n over trainer.nnodes x
//   trainer.n_gpus_per_node ranks, as verl normalises it) whose sequences fit verl's per-GPU token budget
//   (ppo_max_token_len_per_gpu over max_prompt_length + max_response_length); the forward passes' (rollout / ref
//   log_prob_micro_batch_size_per_gpu, critic.forward_micro_batch_size_per_gpu) as many trajectories of the batch as
//   fit that budget.
// A value the user set is never changed except by the two clips above.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/export.h"

namespace verl::trainer {

// One settled key: its new value and why.
struct VERL_API BatchDefault {
  std::string key;
  int64_t value = 0;
  std::string why;
};

// Settles the batch sizes of `config` (a PPO tree, changed in place) as above; the changes, in order.
VERL_API std::vector<BatchDefault> fill_batch_defaults(Config& config,
                                                       std::optional<int64_t> dataset_size = std::nullopt);

}  // namespace verl::trainer
