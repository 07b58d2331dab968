// The per-algorithm config rules beside the advantage's (algo/advantage_config.cpp): Safe-RLHF's, PF-PPO's and the
// SPPO loss's, each with its ConfigError naming the key, so the trainer holds no algorithm's rule.
#include <cmath>
#include <string>

#include "verl/algo/advantage.h"
#include "verl/algo/pf_ppo.h"
#include "verl/algo/safe_rlhf.h"
#include "verl/algo/sppo.h"
#include "verl/core/config_default.h"
#include "verl/core/error.h"

namespace verl::algo {

SafeRlhfConfig safe_rlhf_config(const Config& config) {
  const std::string sr = "algorithm.safe_rlhf.";
  SafeRlhfConfig s;
  s.enable = config.get_as<bool>(sr + "enable");
  s.cost_limit = config.get_as<double>(sr + "cost_limit");
  s.lambda_init = config.get_as<double>(sr + "lambda_init");
  s.lambda_lr = config.get_as<double>(sr + "lambda_lr");
  const Json lambda_max = config.get(sr + "lambda_max");
  if (!lambda_max.is_null()) {
    VERL_CHECK_AS(ConfigTypeError, lambda_max.is_number(), "config key '", sr, "lambda_max' is not a number: ",
                  lambda_max.dump());
    s.lambda_max = lambda_max.get<double>();
  }
  if (!s.enable) return s;
  VERL_CHECK_AS(ConfigError, std::isfinite(s.cost_limit), sr, "cost_limit must be finite, got ", s.cost_limit);
  VERL_CHECK_AS(ConfigError, std::isfinite(s.lambda_init) && s.lambda_init >= 0, sr, "lambda_init must be >= 0, got ",
                s.lambda_init);
  VERL_CHECK_AS(ConfigError, std::isfinite(s.lambda_lr) && s.lambda_lr >= 0, sr, "lambda_lr must be >= 0, got ",
                s.lambda_lr);
  VERL_CHECK_AS(ConfigError, !s.lambda_max || (std::isfinite(*s.lambda_max) && *s.lambda_max >= s.lambda_init), sr,
                "lambda_max must be null or >= lambda_init (", s.lambda_init, "), got ", s.lambda_max.value_or(0.0));
  const std::string estimator = config.get_as<std::string>("algorithm.adv_estimator");
  VERL_CHECK_AS(ConfigError, estimator_needs(estimator).cost_form, sr, "enable: Safe-RLHF forms the cost's "
                "advantage with the reward's estimator, which algorithm.adv_estimator=", estimator,
                " cannot do; use gae (reward and cost critics) or an outcome estimator such as grpo");
  return s;
}

PfPpoConfig pf_ppo_config(const Config& config) {
  PfPpoConfig p;
  p.enable = config.get_as<bool>("algorithm.use_pf_ppo");
  p.reweight_method = config.get_as<std::string>("algorithm.pf_ppo.reweight_method");
  p.weight_pow = config.get_as<double>("algorithm.pf_ppo.weight_pow");
  if (!p.enable) return p;
  const std::string estimator = config.get_as<std::string>("algorithm.adv_estimator");
  VERL_CHECK_AS(ConfigError, estimator == "gae", "algorithm.use_pf_ppo: PF-PPO resamples the batch after GAE only "
                "(as verl), but algorithm.adv_estimator is ", estimator);
  const std::string& m = p.reweight_method;
  VERL_CHECK_AS(ConfigError, m == "pow" || m == "max_min" || m == "max_random",
                "algorithm.pf_ppo.reweight_method must be pow, max_min or max_random, got '", m, "'");
  return p;
}

void check_sppo_loss_config(const Config& config) {
  if (config.get_as<std::string>("actor_rollout_ref.actor.policy_loss.loss_mode") != "sppo") return;
  // Token importance weights have no place in a loss on whole-sequence log-ratios, and it is a mean over sequences
  // whatever the token aggregation says.
  VERL_CHECK_AS(ConfigError, !config.get("algorithm.rollout_correction.rollout_is").is_string(),
                "actor_rollout_ref.actor.policy_loss.loss_mode=sppo takes no rollout importance weights: leave "
                "algorithm.rollout_correction.rollout_is null");
  const std::string agg = config.get_as<std::string>("actor_rollout_ref.actor.loss_agg_mode");
  VERL_CHECK_AS(ConfigError, agg == config_default("actor_rollout_ref.actor.loss_agg_mode"),
                "actor_rollout_ref.actor.loss_agg_mode=", agg, " has no effect on policy_loss.loss_mode=sppo (a "
                "squared loss on whole-sequence log-ratios, averaged over sequences); leave it at its default");
}

}  // namespace verl::algo
