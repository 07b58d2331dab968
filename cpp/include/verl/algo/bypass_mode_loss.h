// verl's "bypass_mode" policy loss: rollout correction's loss when old_log_prob is the rollout's own
// log-prob (no recomputation). It computes the rollout-correction weights and rejection mask of
// pi_current / pi_rollout and runs PPO-clip or REINFORCE on the kept tokens. Registered as "bypass_mode".
#pragma once

#include <string>

#include <torch/types.h>

#include "verl/algo/policy_loss.h"
#include "verl/core/export.h"

namespace verl::algo {

// old_log_prob is the rollout's log-prob; all tensors (bs, response_length) as every policy loss.
// config.policy_loss.rollout_correction must be set (InvalidArgument otherwise): its rollout_is /
// rollout_rs settings give IS weights and a rejection mask of log_prob (detached) against old_log_prob;
// loss_type "ppo_clip" runs compute_policy_loss_vanilla on the kept tokens without the weights (the
// PPO ratio already is pi_current / pi_rollout), "reinforce" runs compute_policy_loss_reinforce with
// them. The rollout_is_weights argument is ignored (computed here, as verl). Metrics: the loss's plus
// the rollout_corr/* metrics of compute_rollout_correction_and_rejection_mask.
VERL_API PolicyLossOutput compute_policy_loss_bypass_mode(const torch::Tensor& old_log_prob,
                                                          const torch::Tensor& log_prob,
                                                          const torch::Tensor& advantages,
                                                          const torch::Tensor& response_mask,
                                                          const std::string& loss_agg_mode,
                                                          const PolicyLossConfig& config,
                                                          const torch::Tensor& rollout_is_weights = {});

}  // namespace verl::algo
