// The "bypass_mode" policy loss (declared in policy_loss.h), dispatching as verl's does.
#include "verl/algo/policy_loss.h"

#include <torch/torch.h>

#include "verl/algo/reinforce_loss.h"
#include "verl/core/error.h"

namespace verl::algo {

PolicyLossOutput compute_policy_loss_bypass_mode(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                 const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                                 const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                 const torch::Tensor& /*rollout_is_weights: computed here*/) {
  const auto& corr = config.policy_loss.rollout_correction;
  VERL_CHECK(corr.has_value(),
             "rollout_correction config not found in policy_loss. When using loss_mode='bypass_mode', ensure "
             "rollout_correction config is passed.");
  VERL_CHECK(corr->loss_type == "reinforce" || corr->loss_type == "ppo_clip", "Invalid loss_type: ", corr->loss_type,
             ". Must be 'reinforce' or 'ppo_clip'.");
  // In bypass mode old_log_prob is the rollout policy's; the weights compare the current policy with it.
  RolloutCorrection correction;
  {
    torch::NoGradGuard no_grad;
    correction = compute_rollout_correction_and_rejection_mask(log_prob.detach(), old_log_prob, response_mask, *corr);
  }
  PolicyLossOutput out;
  if (corr->loss_type == "reinforce") {
    out = compute_policy_loss_reinforce(old_log_prob, log_prob, advantages, correction.response_mask, loss_agg_mode,
                                        config, correction.rollout_is_weights);
  } else {
    // The PPO ratio pi_current / pi_rollout already carries the correction: weighting again would count it twice.
    out = compute_policy_loss_vanilla(old_log_prob, log_prob, advantages, correction.response_mask, loss_agg_mode,
                                      config, torch::Tensor());
  }
  for (auto& [k, v] : correction.metrics) out.metrics[k] = v;
  return out;
}

}  // namespace verl::algo
