// algo::advantage_config / estimator_needs and the registry entries of the estimators that read more of the batch
// (GDPO, SPPO, the optimal token baselines): every estimator's config rule is a ConfigError raised in algo/, and the
// trainer calls every estimator through the registry with AdvantageInputs' optional fields -- equal to calling the
// estimator's own function.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "verl/algo/advantage.h"
#include "verl/algo/gdpo.h"
#include "verl/algo/optimal_token_baseline.h"
#include "verl/algo/sppo.h"
#include "verl/core/config.h"
#include "verl/core/error.h"

using verl::Config;
using verl::ConfigError;
using verl::DataError;
using verl::Json;
using namespace verl::algo;

namespace {

AdvantageConfig configured(const std::vector<std::string>& overrides) {
  return advantage_config(Config::load("", overrides));
}

}  // namespace

TEST_CASE("advantage config: every estimator's rule names its key", "[algo][advantage]") {
  CHECK_THROWS_WITH(configured({"algorithm.adv_estimator=nope"}), Catch::Contains("algorithm.adv_estimator"));
  CHECK_THROWS_WITH(configured({"algorithm.adv_estimator=gdpo"}),
                    Catch::Contains("adv_estimator=gdpo requires +algorithm.gdpo_reward_keys"));
  CHECK_THROWS_WITH(configured({"algorithm.adv_estimator=gdpo", "+algorithm.gdpo_reward_keys=[a,b]",
                                "+algorithm.gdpo_reward_weights=[1.0]"}),
                    Catch::Contains("gdpo_reward_weights has 1 weights for 2 gdpo_reward_keys"));
  CHECK_THROWS_WITH(configured({"algorithm.adv_estimator=grpo", "+algorithm.gdpo_reward_keys=[a]"}),
                    Catch::Contains("read by adv_estimator=gdpo only"));
  CHECK_THROWS_WITH(configured({"algorithm.adv_estimator=grpo", "algorithm.sppo_eta=2.0"}),
                    Catch::Contains("read by adv_estimator=sppo only"));
  CHECK_THROWS_WITH(configured({"algorithm.adv_estimator=sppo", "algorithm.sppo_eta=0"}),
                    Catch::Contains("sppo_eta must be > 0"));
  CHECK_THROWS_WITH(configured({"algorithm.adv_estimator=optimal_token_baseline"}),
                    Catch::Contains("calculate_sum_pi_squared=True"));
  const AdvantageConfig c = configured({"algorithm.adv_estimator=gdpo", "+algorithm.gdpo_reward_keys=[a,b]",
                                        "+algorithm.gdpo_reward_weights=[1.0,0.5]", "algorithm.gamma=0.9"});
  CHECK(c.gdpo_reward_keys == std::vector<std::string>{"a", "b"});
  CHECK(*c.gdpo_reward_weights == std::vector<double>{1.0, 0.5});
  CHECK(c.gamma == 0.9);

  CHECK(estimator_needs("gae").values);
  CHECK(estimator_needs("remax").reward_baselines);
  CHECK(estimator_needs("tir_optimal_token_baseline").sum_pi_squared);
  CHECK_FALSE(estimator_needs("sppo").cost_form);
  CHECK(estimator_needs("grpo").cost_form);
  CHECK(estimator_needs("a_user_estimator").cost_form);
}

TEST_CASE("advantage registry: gdpo, sppo and the optimal token baselines read the optional inputs",
          "[algo][advantage]") {
  torch::manual_seed(0);
  const int64_t bs = 4, len = 3, prompt = 2;
  AdvantageInputs in;
  in.token_level_rewards = torch::rand({bs, len});
  in.response_mask = torch::tensor({1, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1}, torch::kLong).view({bs, len});
  in.index = torch::tensor({0, 0, 1, 1}, torch::kLong);
  in.attention_mask = torch::cat({torch::ones({bs, prompt}, torch::kLong), in.response_mask}, 1);
  AdvantageConfig config;
  config.sppo_eta = 2.0;
  config.gdpo_reward_keys = {"a", "b"};
  config.gdpo_reward_weights = std::vector<double>{1.0, 0.5};

  // sppo: the registry's entry is compute_sppo_advantage with algorithm.sppo_eta
  auto [adv, ret] = get_adv_estimator_fn("sppo")(in, config);
  auto [want, want_ret] = compute_sppo_advantage(in.token_level_rewards, in.response_mask, in.index, 2.0);
  CHECK(torch::equal(adv, want));

  // gdpo: the components from the non-tensor columns named by gdpo_reward_keys, with its metrics
  std::map<std::string, std::vector<Json>> columns{{"a", {1.0, 0.0, 0.5, 0.25}}, {"b", {0, 1, 1, 0}}};
  std::map<std::string, double> metrics;
  CHECK_THROWS_AS(get_adv_estimator_fn("gdpo")(in, config), DataError);  // no columns given
  in.non_tensor_batch = &columns;
  in.metrics = &metrics;
  std::tie(adv, ret) = get_adv_estimator_fn("gdpo")(in, config);
  std::vector<torch::Tensor> components;
  for (const auto& values : {std::vector<float>{1.0f, 0.0f, 0.5f, 0.25f}, std::vector<float>{0, 1, 1, 0}}) {
    components.push_back(gdpo_component_rewards(torch::tensor(values), in.attention_mask, prompt, in.response_mask));
  }
  std::tie(want, want_ret) =
      compute_gdpo_outcome_advantage(components, in.response_mask, in.index, 1e-6, true, config.gdpo_reward_weights);
  CHECK(torch::equal(adv, want));
  CHECK(metrics.at("gdpo/a/max") == 1.0);
  CHECK(metrics.at("gdpo/b/mean") == 0.5);
  columns["b"][2] = "x";
  CHECK_THROWS_WITH(get_adv_estimator_fn("gdpo")(in, config), Catch::Contains("every value must be a number"));
  columns["b"][2] = 1;
  config.gdpo_reward_keys.push_back("c");
  CHECK_THROWS_WITH(get_adv_estimator_fn("gdpo")(in, config), Catch::Contains("GDPO reward key 'c'"));

  // the optimal token baselines: old_log_probs and sum_pi_squared
  CHECK_THROWS_WITH(get_adv_estimator_fn("optimal_token_baseline")(in, config),
                    Catch::Contains("requires sum_pi_squared"));
  in.old_log_probs = -torch::rand({bs, len});
  in.sum_pi_squared = torch::rand({bs, len});
  std::tie(adv, ret) = get_adv_estimator_fn("tir_optimal_token_baseline")(in, config);
  std::tie(want, want_ret) = compute_multi_turn_optimal_token_baseline_advantage(
      in.token_level_rewards, in.response_mask, in.index, in.old_log_probs, in.sum_pi_squared, torch::Tensor(), true,
      1e-8);
  CHECK(torch::equal(adv, want));
}
