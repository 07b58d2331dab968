// The "adv" stage of a PPO step (see trainer/advantage_stage.h).
#include "trainer/advantage_stage.h"

#include <string>
#include <tuple>
#include <vector>

#include "verl/algo/advantage.h"
#include "verl/algo/functional.h"
#include "verl/algo/gdpo.h"
#include "verl/algo/optimal_token_baseline.h"
#include "verl/algo/safe_rlhf.h"
#include "verl/algo/sppo.h"
#include "verl/core/error.h"

namespace verl::trainer::detail {
namespace {

// verl's GDPO as its compute_advantage calls it: one token-level reward per algorithm.gdpo_reward_keys entry, from
// the reward function's extra-info column of that name (the score on the row's last response token), each GRPO-
// normalized (verl passes no norm_adv_by_std_in_grpo here: std-normalized), summed with gdpo_reward_weights and
// whitened. Adds verl's gdpo/<key>/{mean,std,max,min} metrics.
algo::AdvantageResult gdpo_advantage(const PPOTrainerConfig& settings, const DataProto& batch,
                                     const algo::AdvantageInputs& in, Metrics& metrics) {
  std::vector<torch::Tensor> components;
  const int64_t prompt_length = batch.tensor("prompts").size(1);
  for (const std::string& key : settings.gdpo_reward_keys) {
    VERL_CHECK_AS(DataError, batch.has_column(key), "GDPO reward key '", key,
                  "' is not among the reward function's extra-info columns; make sure it returns a dict "
                  "containing '", key, "'");
    std::vector<double> values;
    for (const Json& v : batch.column(key)) {
      VERL_CHECK_AS(DataError, v.is_number(), "GDPO reward key '", key, "': every value must be a number, got ",
                    v.dump());
      values.push_back(v.get<double>());
    }
    const torch::Tensor scores = torch::tensor(values, torch::kDouble).to(torch::kFloat);
    components.push_back(algo::gdpo_component_rewards(scores, batch.tensor("attention_mask"), prompt_length,
                                                      in.response_mask));
    // verl: np.float32 values, np.std (population)
    metrics["gdpo/" + key + "/mean"] = scores.mean().item<double>();
    metrics["gdpo/" + key + "/std"] = scores.std(/*unbiased=*/false).item<double>();
    metrics["gdpo/" + key + "/max"] = scores.max().item<double>();
    metrics["gdpo/" + key + "/min"] = scores.min().item<double>();
  }
  return algo::compute_gdpo_outcome_advantage(components, in.response_mask, in.index, 1e-6, true,
                                              settings.gdpo_reward_weights);
}

// verl's Optimal Token Baseline estimators as its compute_advantage calls them: old_log_probs, sum_pi_squared and
// (when rollout correction made them) rollout_is_weights from the batch, the defaults for the rest.
algo::AdvantageResult optimal_token_baseline_advantage(const PPOTrainerConfig& settings, const DataProto& batch,
                                                       const algo::AdvantageInputs& in) {
  VERL_CHECK_AS(DataError, batch.has_tensor("sum_pi_squared"),
                "Step-dependent optimal baseline requires sum_pi_squared from actor. Please set "
                "actor_rollout_ref.actor.calculate_sum_pi_squared=True in config.");
  VERL_CHECK_AS(DataError, in.index.defined(), "algorithm.adv_estimator=", settings.adv_estimator,
                " groups the rows by their 'uid' column, which the batch lacks");
  const torch::Tensor is_weights =
      batch.has_tensor("rollout_is_weights") ? batch.tensor("rollout_is_weights") : torch::Tensor();
  const auto fn = settings.adv_estimator == "optimal_token_baseline"
                      ? &algo::compute_optimal_token_baseline_advantage
                      : &algo::compute_multi_turn_optimal_token_baseline_advantage;
  return fn(in.token_level_rewards, in.response_mask, in.index, batch.tensor("old_log_probs"),
            batch.tensor("sum_pi_squared"), is_weights, /*handle_zero_tail=*/true, /*epsilon=*/1e-8);
}

// SPPO's advantage: eta * (P(y beats the other responses of its prompt) - 1/2), the groups being the uids.
algo::AdvantageResult sppo_advantage(const PPOTrainerConfig& settings, const algo::AdvantageInputs& in) {
  VERL_CHECK_AS(DataError, in.index.defined(), "algorithm.adv_estimator=sppo compares the responses of a prompt, "
                "grouped by their 'uid' column, which the batch lacks");
  return algo::compute_sppo_advantage(in.token_level_rewards, in.response_mask, in.index, settings.sppo_eta);
}

}  // namespace

bool is_optimal_token_baseline(const std::string& adv_estimator) {
  return adv_estimator == "optimal_token_baseline" || adv_estimator == "tir_optimal_token_baseline";
}

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
  if (batch.has_tensor("values")) in.values = batch.tensor("values");
  if (batch.has_tensor("reward_baselines")) in.reward_baselines = batch.tensor("reward_baselines");
  algo::AdvantageConfig ac;
  ac.gamma = settings.gamma;
  ac.lam = settings.lam;
  ac.norm_adv_by_std_in_grpo = settings.norm_adv_by_std_in_grpo;
  std::tie(out.advantages, out.returns) =
      settings.adv_estimator == "gdpo"                  ? gdpo_advantage(settings, batch, in, out.metrics)
      : is_optimal_token_baseline(settings.adv_estimator) ? optimal_token_baseline_advantage(settings, batch, in)
      : settings.adv_estimator == "sppo"                ? sppo_advantage(settings, in)
                                                        : algo::get_adv_estimator_fn(settings.adv_estimator)(in, ac);
  if (settings.safe_rlhf) {
    // PPO-Lagrangian: the multiplier moves with this batch's constraint violation, then weighs the cost's advantage
    // (the same estimator on the costs, the cost critic's values for gae) against the reward's.
    VERL_CHECK_AS(DataError, batch.has_tensor("token_level_costs"), "algorithm.safe_rlhf.enable needs the batch's "
                  "'token_level_costs'");
    const torch::Tensor costs = batch.tensor("token_level_costs");
    const double mean_cost = costs.to(torch::kDouble).sum(-1).mean().item<double>();
    safe_rlhf_lambda = algo::update_lagrange_multiplier(safe_rlhf_lambda, mean_cost, settings.cost_limit,
                                                        settings.lambda_lr, settings.lambda_max);
    algo::AdvantageInputs cost_in = in;
    cost_in.token_level_rewards = costs;
    cost_in.values = batch.has_tensor("cost_values") ? batch.tensor("cost_values") : torch::Tensor();
    std::tie(out.cost_advantages, out.cost_returns) = algo::get_adv_estimator_fn(settings.adv_estimator)(cost_in, ac);
    out.advantages = algo::safe_rlhf_advantages(out.advantages, out.cost_advantages.to(out.advantages.scalar_type()),
                                                safe_rlhf_lambda);
    out.metrics["safe_rlhf/lambda"] = safe_rlhf_lambda;
    out.metrics["safe_rlhf/cost/mean"] = mean_cost;
    out.metrics["safe_rlhf/cost_violation"] = mean_cost - settings.cost_limit;
  }
  return out;
}

}  // namespace verl::trainer::detail
