// The per-token part of the vanilla (dual-clip PPO) policy loss as one fused pass (the
// verl::vanilla_token_losses op, kernels/ops.h), for compute_policy_loss_vanilla and its tests. Private to libverl's algo/ sources.
// VERL_API on the functions tests/cpp calls: the tests link the shared libverl (hidden visibility),
// so these are exported for them; the header is not installed and they are not API.
#pragma once

#include <cstdint>

#include <string>

#include <torch/types.h>

#include "verl/algo/policy_loss.h"
#include "verl/core/export.h"

namespace verl::algo::detail {

// The token losses of verl's compute_policy_loss_vanilla and its three metrics' masked sums,
// computed in one pass. Differentiable w.r.t. log_prob only: the derivative of each token's loss
// is computed in the same pass (with autograd's conventions for clamp, maximum and minimum ties)
// and saved, so the backward is one multiply.
struct VanillaTokenLosses {
  // (bs, T) log_prob's dtype, 0 where response_mask == 0; with `reduce` the 0-dim masked token sum
  // sum(pg_losses * response_mask) instead (what token-mean / token-sum aggregate).
  torch::Tensor pg_losses;
  double clipfrac_sum = 0;       // sum over the mask of mask * [pg_losses2 > pg_losses1]
  double clipfrac_lower_sum = 0; // sum over the mask of mask * [clip_pg_losses1 > pg_losses3 and A < 0]
  double neg_kl_sum = 0;         // sum over the mask of mask * -clamp(log_prob - old_log_prob, -20, 20)
  double mask_sum = 0;           // sum of response_mask
};

// Whether vanilla_token_losses can take these inputs: tensors of one device that has a kernel of
// the op (today the CPU; elsewhere the ATen formula runs), old_log_prob / log_prob /
// advantages of one dtype (float32 or float64), no gradient wanted for old_log_prob or advantages.
VERL_API bool vanilla_fusable(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                              const torch::Tensor& advantages, const torch::Tensor& response_mask);

// Shapes are checked by the caller; NaN/Inf inside the mask throws InvalidArgument naming the
// input (positions outside the mask are never read). Garbage outside the mask gets loss 0 and
// gradient 0.
VanillaTokenLosses vanilla_token_losses(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                        const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                        double clip_low, double clip_high, double clip_ratio_c, bool reduce);

// compute_policy_loss_vanilla as device-generic ATen ops (verl's formula op by op, inputs zeroed
// outside the mask). compute_policy_loss_vanilla uses it where the fused kernel does not apply;
// exposed for tests that compare the two.
VERL_API PolicyLossOutput compute_policy_loss_vanilla_aten(
    const torch::Tensor& old_log_prob, const torch::Tensor& log_prob, const torch::Tensor& advantages,
    const torch::Tensor& response_mask, const std::string& loss_agg_mode, const PolicyLossConfig& config,
    const torch::Tensor& rollout_is_weights = {});

}  // namespace verl::algo::detail
