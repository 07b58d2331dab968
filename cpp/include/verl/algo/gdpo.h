// GDPO (Group reward-Decoupled normalization Policy Optimization, arXiv 2601.05242), verl's "gdpo"
// estimator: each reward component is GRPO-normalized within its prompt group on its own, the
// normalized components are summed with weights, and the sum is whitened over the batch's response
// tokens. A dominant reward component so cannot drown out a weaker one, as it can when GRPO
// normalizes their sum.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "verl/algo/advantage.h"
#include "verl/core/export.h"

namespace verl::algo {

// component_rewards: one (bs, response_length) token-level reward tensor per component (verl
// passes token_level_rewards alone when no components are configured); reward_weights: one weight
// per component (float32, as verl's weight tensor), all 1 when nullopt. Each component goes through
// compute_grpo_outcome_advantage(component, response_mask, index, epsilon, norm_adv_by_std_in_grpo);
// A = masked_whiten(sum_k w_k * A_k, response_mask) * response_mask (needs >= 2 response tokens in
// the batch). Returns (advantages, advantages). InvalidArgument for no components, a weight count
// that differs from the component count, or any input GRPO refuses.
VERL_API AdvantageResult compute_gdpo_outcome_advantage(const std::vector<torch::Tensor>& component_rewards,
                                                        const torch::Tensor& response_mask, const torch::Tensor& index,
                                                        double epsilon = 1e-6, bool norm_adv_by_std_in_grpo = true,
                                                        const std::optional<std::vector<double>>& reward_weights =
                                                            std::nullopt);

// One reward component as token-level rewards, the way verl's GDPO places a per-sample score:
// float32 zeros of response_mask's shape with score i at row i's last response token, at position
// attention_mask[i, prompt_length:].sum() - 1 (a row without response tokens gets it at the last
// position, as verl's index -1 does). scores (bs,) is cast to float32; attention_mask is
// (bs, prompt_length + response_length).
VERL_API torch::Tensor gdpo_component_rewards(const torch::Tensor& scores, const torch::Tensor& attention_mask,
                                              int64_t prompt_length, const torch::Tensor& response_mask);

}  // namespace verl::algo
