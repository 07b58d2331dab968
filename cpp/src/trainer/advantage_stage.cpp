// The "adv" stage of a PPO step (see trainer/advantage_stage.h).
#include "trainer/advantage_stage.h"

#include <string>
#include <tuple>
#include <vector>

#include "verl/algo/advantage.h"
#include "verl/algo/functional.h"
#include "verl/algo/safe_rlhf.h"
#include "verl/core/error.h"

namespace verl::trainer::detail {

KlPenalty apply_kl_penalty(const torch::Tensor& scores, const torch::Tensor& old_log_probs,
                           const torch::Tensor& ref_log_prob, const torch::Tensor& response_mask,
                           const std::string& kl_penalty, algo::KLController& controller, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  const torch::Tensor mask = response_mask.to(scores.scalar_type());
  const torch::Tensor kld = algo::kl_penalty(old_log_probs, ref_log_prob, kl_penalty) * mask;
  KlPenalty out;
  out.beta = controller.value;
  out.token_level_rewards = scores - out.beta * kld;
  out.current_kl = algo::masked_mean(kld, mask, std::vector<int64_t>{-1}).mean().item<double>();
  controller.update(out.current_kl, batch_size);
  return out;
}

AdvantageOutput compute_advantage(const PPOTrainerConfig& settings, const DataProto& batch, double& safe_rlhf_lambda) {
  torch::NoGradGuard no_grad;
  AdvantageOutput out;
  algo::AdvantageInputs in;
  in.token_level_rewards = batch.tensor("token_level_rewards");
  in.response_mask = batch.tensor("response_mask");
  if (batch.has_column("uid")) {
    std::vector<std::string> uids;
    for (const Json& u : batch.column("uid")) uids.push_back(u.is_string() ? u.get<std::string>() : u.dump());
    in.index = algo::group_ids(uids).to(in.response_mask.device());
  }
  // Every optional input the batch has: the estimator reads what it needs (algo/advantage.h).
  const auto optional_tensor = [&](const char* key) { return batch.has_tensor(key) ? batch.tensor(key) : torch::Tensor(); };
  in.values = optional_tensor("values");
  in.reward_baselines = optional_tensor("reward_baselines");
  in.old_log_probs = optional_tensor("old_log_probs");
  in.sum_pi_squared = optional_tensor("sum_pi_squared");
  in.rollout_is_weights = optional_tensor("rollout_is_weights");
  in.attention_mask = optional_tensor("attention_mask");
  in.non_tensor_batch = &batch.non_tensor_batch();
  in.metrics = &out.metrics;
  const algo::AdvantageConfig& ac = settings.advantage;
  std::tie(out.advantages, out.returns) = algo::get_adv_estimator_fn(settings.adv_estimator)(in, ac);
  if (settings.safe_rlhf.enable) {
    // PPO-Lagrangian: the multiplier moves with this batch's constraint violation, then weighs the cost's advantage
    // (the same estimator on the costs, the cost critic's values for gae) against the reward's.
    VERL_CHECK_AS(DataError, batch.has_tensor("token_level_costs"), "algorithm.safe_rlhf.enable needs the batch's "
                  "'token_level_costs'");
    const torch::Tensor costs = batch.tensor("token_level_costs");
    const double mean_cost = costs.to(torch::kDouble).sum(-1).mean().item<double>();
    safe_rlhf_lambda = algo::update_lagrange_multiplier(safe_rlhf_lambda, mean_cost, settings.safe_rlhf.cost_limit,
                                                        settings.safe_rlhf.lambda_lr, settings.safe_rlhf.lambda_max);
    algo::AdvantageInputs cost_in = in;
    cost_in.token_level_rewards = costs;
    cost_in.values = optional_tensor("cost_values");
    std::tie(out.cost_advantages, out.cost_returns) = algo::get_adv_estimator_fn(settings.adv_estimator)(cost_in, ac);
    out.advantages = algo::safe_rlhf_advantages(out.advantages, out.cost_advantages.to(out.advantages.scalar_type()),
                                                safe_rlhf_lambda);
    out.metrics["safe_rlhf/lambda"] = safe_rlhf_lambda;
    out.metrics["safe_rlhf/cost/mean"] = mean_cost;
    out.metrics["safe_rlhf/cost_violation"] = mean_cost - settings.safe_rlhf.cost_limit;
  }
  return out;
}

}  // namespace verl::trainer::detail
