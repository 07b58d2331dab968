// GDPO, SPPO and the optimal token baselines as registry entries (see algo/batch_estimators.h).
#include "algo/batch_estimators.h"

#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/algo/gdpo.h"
#include "verl/algo/optimal_token_baseline.h"
#include "verl/algo/sppo.h"
#include "verl/core/error.h"

namespace verl::algo::detail {
namespace {

const torch::Tensor& grouped_by_uid(const AdvantageInputs& in, const std::string& estimator, const char* why) {
  VERL_CHECK_AS(DataError, in.index.defined(), "algorithm.adv_estimator=", estimator, why);
  return in.index;
}

AdvantageResult optimal_token_baseline(const AdvantageInputs& in, const std::string& estimator,
                                       decltype(&compute_optimal_token_baseline_advantage) fn) {
  VERL_CHECK_AS(DataError, in.sum_pi_squared.defined(),
                "Step-dependent optimal baseline requires sum_pi_squared from actor. Please set "
                "actor_rollout_ref.actor.calculate_sum_pi_squared=True in config.");
  VERL_CHECK_AS(DataError, in.old_log_probs.defined(), "algorithm.adv_estimator=", estimator,
                " needs the old policy's log-probs (old_log_probs), which the batch lacks");
  const torch::Tensor& index =
      grouped_by_uid(in, estimator, " groups the rows by their 'uid' column, which the batch lacks");
  // verl's compute_advantage: the defaults for the rest (handle_zero_tail, epsilon)
  return fn(in.token_level_rewards, in.response_mask, index, in.old_log_probs, in.sum_pi_squared,
            in.rollout_is_weights, /*handle_zero_tail=*/true, /*epsilon=*/1e-8);
}

}  // namespace

// verl's GDPO as its compute_advantage calls it: one token-level reward per algorithm.gdpo_reward_keys entry, from
// the reward function's extra-info column of that name (the score on the row's last response token), each GRPO-
// normalized (verl passes no norm_adv_by_std_in_grpo here: std-normalized), summed with gdpo_reward_weights and
// whitened. Reports verl's gdpo/<key>/{mean,std,max,min} metrics.
AdvantageResult gdpo_entry(const AdvantageInputs& in, const AdvantageConfig& config) {
  VERL_CHECK_AS(DataError, in.non_tensor_batch != nullptr && in.attention_mask.defined(),
                "algorithm.adv_estimator=gdpo reads the reward function's extra-info columns and the attention_mask, "
                "which were not given");
  const torch::Tensor& index = grouped_by_uid(in, "gdpo", " groups the rows by their 'uid' column, which the batch lacks");
  std::vector<torch::Tensor> components;
  const int64_t prompt_length = in.attention_mask.size(1) - in.response_mask.size(1);
  for (const std::string& key : config.gdpo_reward_keys) {
    const auto column = in.non_tensor_batch->find(key);
    VERL_CHECK_AS(DataError, column != in.non_tensor_batch->end(), "GDPO reward key '", key,
                  "' is not among the reward function's extra-info columns; make sure it returns a dict "
                  "containing '", key, "'");
    std::vector<double> values;
    for (const Json& v : column->second) {
      VERL_CHECK_AS(DataError, v.is_number(), "GDPO reward key '", key, "': every value must be a number, got ",
                    v.dump());
      values.push_back(v.get<double>());
    }
    const torch::Tensor scores = torch::tensor(values, torch::kDouble).to(torch::kFloat);
    components.push_back(gdpo_component_rewards(scores, in.attention_mask, prompt_length, in.response_mask));
    if (in.metrics != nullptr) {
      // verl: np.float32 values, np.std (population)
      auto& m = *in.metrics;
      m["gdpo/" + key + "/mean"] = scores.mean().item<double>();
      m["gdpo/" + key + "/std"] = scores.std(/*unbiased=*/false).item<double>();
      m["gdpo/" + key + "/max"] = scores.max().item<double>();
      m["gdpo/" + key + "/min"] = scores.min().item<double>();
    }
  }
  return compute_gdpo_outcome_advantage(components, in.response_mask, index, 1e-6, true, config.gdpo_reward_weights);
}

// SPPO's advantage: eta * (P(y beats the other responses of its prompt) - 1/2), the groups being the uids.
AdvantageResult sppo_entry(const AdvantageInputs& in, const AdvantageConfig& config) {
  const torch::Tensor& index = grouped_by_uid(
      in, "sppo", " compares the responses of a prompt, grouped by their 'uid' column, which the batch lacks");
  return compute_sppo_advantage(in.token_level_rewards, in.response_mask, index, config.sppo_eta);
}

AdvantageResult optimal_token_baseline_entry(const AdvantageInputs& in, const AdvantageConfig&) {
  return optimal_token_baseline(in, "optimal_token_baseline", &compute_optimal_token_baseline_advantage);
}

AdvantageResult tir_optimal_token_baseline_entry(const AdvantageInputs& in, const AdvantageConfig&) {
  return optimal_token_baseline(in, "tir_optimal_token_baseline",
                                &compute_multi_turn_optimal_token_baseline_advantage);
}

}  // namespace verl::algo::detail
