// REINFORCE policy loss (see reinforce_loss.h), verl's formula with verl's metric.
#include "verl/algo/reinforce_loss.h"

#include <torch/torch.h>

#include "algo/loss_common.h"
#include "verl/algo/functional.h"

namespace verl::algo {

PolicyLossOutput compute_policy_loss_reinforce(const torch::Tensor& rollout_log_prob, const torch::Tensor& log_prob,
                                               const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                               const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                               const torch::Tensor& rollout_is_weights) {
  detail::check_loss_inputs({response_mask, "response_mask"},
                            {{rollout_log_prob, "rollout_log_prob"}, {log_prob, "log_prob"}, {advantages, "advantages"}},
                            {{rollout_is_weights, "rollout_is_weights"}});
  // Padding garbage (NaN, -inf log-probs) must not reach the loss or its gradient through 0 * x.
  const torch::Tensor lp = detail::zero_outside(log_prob, response_mask);
  const torch::Tensor adv = detail::zero_outside(advantages, response_mask);
  torch::Tensor pg_losses = -adv * lp;
  if (rollout_is_weights.defined()) pg_losses = pg_losses * detail::zero_outside(rollout_is_weights, response_mask);
  PolicyLossOutput out;
  out.pg_loss = detail::agg_loss_unchecked(pg_losses, response_mask, loss_agg_mode, config.global_batch_info);
  const torch::Tensor negative_approx_kl = lp - detail::zero_outside(rollout_log_prob, response_mask);
  out.metrics["actor/ppo_kl"] = masked_mean(-negative_approx_kl, response_mask).detach().item<double>();
  return out;
}

}  // namespace verl::algo
