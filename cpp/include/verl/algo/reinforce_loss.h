// verl's compute_policy_loss_reinforce: the plain policy-gradient (REINFORCE) loss of rollout
// correction's bypass mode, -A * log_prob, optionally times the rollout importance weights
// w = pi_current / pi_rollout (detached), without PPO's ratio or clipping. Not in the policy-loss
// registry (verl calls it directly, from its "bypass_mode" loss).
#pragma once

#include <string>

#include <torch/types.h>

#include "verl/algo/policy_loss.h"
#include "verl/core/export.h"

namespace verl::algo {

// rollout_log_prob, log_prob (differentiable), advantages, response_mask, rollout_is_weights
// (undefined = none): (bs, response_length), as every policy loss (policy_loss.h). The token loss
// is aggregated with loss_agg_mode (verl's default for this loss: "seq-mean-token-sum") and
// config.global_batch_info. Metric: actor/ppo_kl = masked mean of rollout_log_prob - log_prob.
VERL_API PolicyLossOutput compute_policy_loss_reinforce(const torch::Tensor& rollout_log_prob,
                                                        const torch::Tensor& log_prob,
                                                        const torch::Tensor& advantages,
                                                        const torch::Tensor& response_mask,
                                                        const std::string& loss_agg_mode,
                                                        const PolicyLossConfig& config,
                                                        const torch::Tensor& rollout_is_weights = {});

}  // namespace verl::algo
