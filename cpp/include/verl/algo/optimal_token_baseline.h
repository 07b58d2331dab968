// Optimal Token Baseline (OTB) advantage estimators, verl's "optimal_token_baseline" and
// "tir_optimal_token_baseline" (verl/trainer/ppo/core_algos.py): a per-timestep baseline per prompt
// group, weighted by each trajectory's cumulative path-variance proxy, instead of one group mean.
//
//   w_t   = 1 - 2 * exp(old_log_probs_t) + sum_pi_squared_t      (||score fn||^2 proxy; times
//           rollout_is_weights_t^2 when given, the MSE-optimal form under truncated IS)
//   W_t   = cumsum_t(w * mask)                                   (path variance so far)
//   G_t   = reverse cumsum of rewards * mask                     (reward-to-go = the returns)
//   B_t   = sum_g(G_t * W_t * mask) / (sum_g(W_t * mask) + epsilon)  over the rows of a group
//   A_t   = (G_t - B_t) * mask
//
// Inputs: token_level_rewards, response_mask, old_log_probs, sum_pi_squared and (optional, an
// undefined tensor = none) rollout_is_weights all (bs, response_length) on one device;
// index (bs,) integer group ids. Dtypes follow torch's promotion exactly as verl's expressions do,
// so float32 / float64 results are bitwise verl's on the same device. All inputs must be finite
// (a NaN anywhere in a row reaches its returns or W through the cumulative sums).
// Singleton groups get baseline 0 (A = G). handle_zero_tail: in a group whose longest trajectory
// is strictly the longest, its baseline is 0 from the second-longest length on (no other
// trajectory supports those timesteps). Errors: verl::InvalidArgument naming the argument.
#pragma once

#include <torch/types.h>

#include "verl/algo/advantage.h"
#include "verl/core/export.h"

namespace verl::algo {

// verl's compute_optimal_token_baseline_advantage: timesteps are positions in the row (so in a
// multi-turn row, observation tokens between turns shift later turns' timesteps); a row's length
// is response_mask.sum(-1). Returns (advantages, returns).
VERL_API AdvantageResult compute_optimal_token_baseline_advantage(
    const torch::Tensor& token_level_rewards, const torch::Tensor& response_mask, const torch::Tensor& index,
    const torch::Tensor& old_log_probs, const torch::Tensor& sum_pi_squared,
    const torch::Tensor& rollout_is_weights = {}, bool handle_zero_tail = true, double epsilon = 1e-8);

// verl's compute_multi_turn_optimal_token_baseline_advantage ("tir_"): as above, but timestep t is
// the t-th response token of the row (mask-0 positions, e.g. tool observations, are squeezed out
// before the group statistics, and B is not masked since the squeezed rows are zero-padded).
// Rows without response tokens take no part in any group and get advantage 0. response_mask must
// hold 0/1 values. Returns (advantages, returns).
VERL_API AdvantageResult compute_multi_turn_optimal_token_baseline_advantage(
    const torch::Tensor& token_level_rewards, const torch::Tensor& response_mask, const torch::Tensor& index,
    const torch::Tensor& old_log_probs, const torch::Tensor& sum_pi_squared,
    const torch::Tensor& rollout_is_weights = {}, bool handle_zero_tail = true, double epsilon = 1e-8);

}  // namespace verl::algo
