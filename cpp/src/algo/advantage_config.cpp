// algorithm.adv_estimator's settings and rules from a verl config, and what each estimator needs from the step
// (verl/algo/advantage.h): the trainer special-cases no estimator by name.
#include <cmath>
#include <set>
#include <string>

#include "algo/rollout_correction_config.h"
#include "verl/algo/advantage.h"
#include "verl/core/config_default.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace {

bool is_optimal_token_baseline(const std::string& name) {
  return name == "optimal_token_baseline" || name == "tir_optimal_token_baseline";
}

void read_gdpo_keys(const Config& config, AdvantageConfig& c) {
  if (config.has("algorithm.gdpo_reward_keys")) {
    const Json keys = config.get("algorithm.gdpo_reward_keys");
    VERL_CHECK_AS(ConfigTypeError, keys.is_null() || keys.is_array(),
                  "algorithm.gdpo_reward_keys must be a list of reward keys, got ", keys.dump());
    for (const Json& k : keys.is_array() ? keys : Json::array()) {
      VERL_CHECK_AS(ConfigTypeError, k.is_string(), "algorithm.gdpo_reward_keys must hold strings, got ", k.dump());
      c.gdpo_reward_keys.push_back(k.get<std::string>());
    }
  }
  if (config.has("algorithm.gdpo_reward_weights") && !config.get("algorithm.gdpo_reward_weights").is_null()) {
    const Json weights = config.get("algorithm.gdpo_reward_weights");
    VERL_CHECK_AS(ConfigTypeError, weights.is_array(), "algorithm.gdpo_reward_weights must be a list of numbers, got ",
                  weights.dump());
    c.gdpo_reward_weights.emplace();
    for (const Json& w : weights) {
      VERL_CHECK_AS(ConfigTypeError, w.is_number(), "algorithm.gdpo_reward_weights must hold numbers, got ", w.dump());
      c.gdpo_reward_weights->push_back(w.get<double>());
    }
  }
}

}  // namespace

AdvantageConfig advantage_config(const Config& config) {
  const std::string estimator = config.get_as<std::string>("algorithm.adv_estimator");
  try {
    get_adv_estimator_fn(estimator);
  } catch (const InvalidArgument& e) {
    VERL_FAIL(ConfigError, "algorithm.adv_estimator: ", e.what());
  }
  AdvantageConfig c;
  c.gamma = config.get_as<double>("algorithm.gamma");
  c.lam = config.get_as<double>("algorithm.lam");
  c.norm_adv_by_std_in_grpo = config.get_as<bool>("algorithm.norm_adv_by_std_in_grpo");

  read_gdpo_keys(config, c);
  if (estimator == "gdpo") {
    VERL_CHECK_AS(ConfigError, !c.gdpo_reward_keys.empty(),
                  "algorithm.adv_estimator=gdpo requires +algorithm.gdpo_reward_keys listing the reward components "
                  "the reward function returns (e.g. [format_reward,accuracy_reward])");
    VERL_CHECK_AS(ConfigError, !c.gdpo_reward_weights || c.gdpo_reward_weights->size() == c.gdpo_reward_keys.size(),
                  "algorithm.gdpo_reward_weights has ", c.gdpo_reward_weights ? c.gdpo_reward_weights->size() : 0,
                  " weights for ", c.gdpo_reward_keys.size(), " gdpo_reward_keys");
  } else {
    VERL_CHECK_AS(ConfigError, c.gdpo_reward_keys.empty() && !c.gdpo_reward_weights,
                  "algorithm.gdpo_reward_keys / gdpo_reward_weights are read by adv_estimator=gdpo only, but "
                  "algorithm.adv_estimator is ", estimator);
  }

  c.sppo_eta = config.get_as<double>("algorithm.sppo_eta");
  VERL_CHECK_AS(ConfigError, std::isfinite(c.sppo_eta) && c.sppo_eta > 0, "algorithm.sppo_eta must be > 0, got ",
                c.sppo_eta);
  VERL_CHECK_AS(ConfigError, estimator == "sppo" || c.sppo_eta == config_default("algorithm.sppo_eta"),
                "algorithm.sppo_eta is read by adv_estimator=sppo only, but algorithm.adv_estimator is ", estimator);

  if (estimator_needs(estimator).sum_pi_squared) {
    // verl asserts this in compute_advantage; here it fails before the first step.
    VERL_CHECK_AS(ConfigError, config.get_as<bool>("actor_rollout_ref.actor.calculate_sum_pi_squared"),
                  "algorithm.adv_estimator=", estimator, " (step-dependent optimal baseline) requires sum_pi_squared "
                  "from the actor: set actor_rollout_ref.actor.calculate_sum_pi_squared=True");
    // Bypass mode skips the old-log-prob pass, which is what gives sum_pi_squared (verl would fail in
    // compute_advantage).
    VERL_CHECK_AS(ConfigError, !detail::rollout_correction_from_config(config).bypass_mode,
                  "algorithm.adv_estimator=", estimator, " needs sum_pi_squared from the old-log-prob pass, which "
                  "algorithm.rollout_correction.bypass_mode=true skips");
  }
  return c;
}

EstimatorNeeds estimator_needs(const std::string& name) {
  EstimatorNeeds needs;
  needs.values = name == "gae";
  needs.reward_baselines = name == "remax";
  needs.sum_pi_squared = is_optimal_token_baseline(name);
  // Safe-RLHF forms the cost's advantage with the reward's estimator: those that read more than the rewards, values
  // and groups (the reward components, preferences, a greedy reward baseline, sum_pi_squared) have no cost form.
  static const std::set<std::string> no_cost_form{"gdpo", "sppo", "remax", "optimal_token_baseline",
                                                  "tir_optimal_token_baseline"};
  needs.cost_form = no_cost_form.count(name) == 0;
  return needs;
}

}  // namespace verl::algo
