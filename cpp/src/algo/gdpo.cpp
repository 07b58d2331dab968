// GDPO (see gdpo.h), verl's compute_gdpo_outcome_advantage step for step.
#include "verl/algo/gdpo.h"

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {

AdvantageResult compute_gdpo_outcome_advantage(const std::vector<torch::Tensor>& component_rewards,
                                               const torch::Tensor& response_mask, const torch::Tensor& index,
                                               double epsilon, bool norm_adv_by_std_in_grpo,
                                               const std::optional<std::vector<double>>& reward_weights) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_gdpo_outcome_advantage";
  VERL_CHECK(!component_rewards.empty(), who, ": no reward components (component_rewards is empty)");
  VERL_CHECK(component_rewards.front().defined(), who, ": component_rewards[0] is undefined");
  VERL_CHECK(!reward_weights || reward_weights->size() == component_rewards.size(), who, ": ",
             reward_weights ? reward_weights->size() : 0, " reward_weights for ", component_rewards.size(),
             " reward components");
  const torch::Device device = component_rewards.front().device();
  // verl builds the weights as a float32 tensor; a 0-dim float32 factor keeps each advantage's dtype.
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const torch::Tensor weights = reward_weights
                                    ? torch::tensor(*reward_weights, torch::kDouble).to(options)
                                    : torch::ones({static_cast<int64_t>(component_rewards.size())}, options);
  torch::Tensor weighted_sum;
  for (size_t k = 0; k < component_rewards.size(); ++k) {
    const torch::Tensor normalized = compute_grpo_outcome_advantage(component_rewards[k], response_mask, index,
                                                                    epsilon, norm_adv_by_std_in_grpo)
                                         .first;
    const torch::Tensor term = weights[static_cast<int64_t>(k)] * normalized;
    weighted_sum = weighted_sum.defined() ? weighted_sum + term : term;
  }
  const torch::Tensor mask = response_mask.to(device);
  const torch::Tensor advantages = masked_whiten(weighted_sum, mask) * mask;
  return {advantages, advantages};
}

torch::Tensor gdpo_component_rewards(const torch::Tensor& scores, const torch::Tensor& attention_mask,
                                     int64_t prompt_length, const torch::Tensor& response_mask) {
  const char* who = "gdpo_component_rewards";
  VERL_CHECK(response_mask.defined() && response_mask.dim() == 2, who,
             ": response_mask must be (bs, response_length)");
  const int64_t bs = response_mask.size(0);
  VERL_CHECK(scores.defined() && scores.dim() == 1 && scores.size(0) == bs, who, ": scores must have shape [", bs,
             "] (one score per row), got ", scores.defined() ? scores.sizes() : torch::IntArrayRef{});
  VERL_CHECK(attention_mask.defined() && attention_mask.dim() == 2 && attention_mask.size(0) == bs, who,
             ": attention_mask must be (", bs, ", prompt_length + response_length)");
  VERL_CHECK(prompt_length >= 0 && prompt_length <= attention_mask.size(1), who, ": prompt_length ", prompt_length,
             " is outside attention_mask's ", attention_mask.size(1), " columns");
  const torch::Tensor last = attention_mask.slice(1, prompt_length).sum(1) - 1;
  const int64_t T = response_mask.size(1);
  VERL_CHECK(((last >= -T) & (last < T)).all().item<bool>(), who,
             ": a row's response length (attention_mask after prompt_length) exceeds response_mask's ", T,
             " columns");
  torch::Tensor placed = torch::zeros_like(response_mask, torch::TensorOptions().dtype(torch::kFloat));
  placed.index_put_({torch::arange(bs, last.options().device(placed.device())), last.to(placed.device())},
                    scores.to(placed.device(), torch::kFloat));
  return placed;
}

}  // namespace verl::algo
