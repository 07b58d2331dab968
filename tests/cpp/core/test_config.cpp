// verl::Config: verl's defaults, overrides, interpolation, validation and YAML I/O.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "verl/core/config.h"
#include "verl/core/config_default.h"
#include "verl/core/error.h"

using verl::Config;
using verl::config_default;
using verl::ConfigError;
using verl::Json;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("config: defaults are verl's") {
  Config c;
  CHECK(c.get_as<std::string>("algorithm.adv_estimator") == "gae");
  CHECK(c.get_as<int64_t>("actor_rollout_ref.rollout.n") == 1);
  CHECK(c.get_as<double>("actor_rollout_ref.actor.optim.lr") == 1e-6);
  CHECK(c.get_as<double>("critic.optim.lr") == 1e-5);
  CHECK(c.get_as<bool>("algorithm.norm_adv_by_std_in_grpo"));
  CHECK(c.get("trainer.logger") == Json::array({"console", "wandb"}));
  CHECK(c.get_as<int64_t>("data.max_prompt_length") == 512);
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("config_default: a key's default as the YAML gives it, interpolations resolved") {
  Config c;
  for (const char* key : {"actor_rollout_ref.actor.fsdp_config.dtype", "critic.fsdp.dtype",
                          "actor_rollout_ref.rollout.n", "critic.forward_max_token_len_per_gpu", "trainer.logger"}) {
    CHECK(config_default(key) == c.get(key));
  }
  CHECK(config_default("critic.forward_max_token_len_per_gpu") == 32768);  // ${.ppo_max_token_len_per_gpu}
  CHECK_THROWS_AS(config_default("critic.fsdp.dtyp"), ConfigError);
}

TEST_CASE("config: interpolations follow the keys they point at") {
  Config c = Config::load("", {"data.max_prompt_length=256", "actor_rollout_ref.actor.ppo_mini_batch_size=16",
                               "trainer.project_name=proj", "trainer.experiment_name=exp"});
  CHECK(c.get_as<int64_t>("actor_rollout_ref.rollout.prompt_length") == 256);   // ${oc.select:data.max_prompt_length,512}
  CHECK(c.get_as<int64_t>("critic.ppo_mini_batch_size") == 16);                // ${oc.select:actor...,256}
  CHECK(c.get_as<std::string>("trainer.default_local_dir") == "checkpoints/proj/exp");  // text around ${...}
  CHECK(c.get("actor_rollout_ref.actor.checkpoint.load_contents") ==
        Json::array({"model", "optimizer", "extra"}));  // ${.save_contents}, relative
  CHECK(c.get_as<int64_t>("critic.forward_max_token_len_per_gpu") == 32768);  // ${.ppo_max_token_len_per_gpu}
  CHECK(c.raw("actor_rollout_ref.rollout.prompt_length").get<std::string>().find("${") == 0);
}

TEST_CASE("config: overrides of every value type") {
  Config c;
  c.apply_overrides({"actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.optim.lr=3e-6",
                     "actor_rollout_ref.actor.use_kl_loss=true", "algorithm.adv_estimator=grpo",
                     "data.val_batch_size=null", "trainer.logger=[console,jsonl]",
                     "actor_rollout_ref.actor.optim.betas=[0.8,0.95]", "trainer.experiment_name=2024",
                     "+actor_rollout_ref.rollout.engine_kwargs.sglang.mem_fraction_static=0.1",
                     "actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4"});
  CHECK(c.get_as<int64_t>("actor_rollout_ref.rollout.n") == 8);
  CHECK(c.get_as<double>("actor_rollout_ref.actor.optim.lr") == 3e-6);
  CHECK(c.get_as<bool>("actor_rollout_ref.actor.use_kl_loss"));
  CHECK(c.get_as<std::string>("algorithm.adv_estimator") == "grpo");
  CHECK(c.get("data.val_batch_size").is_null());
  CHECK(c.get("trainer.logger") == Json::array({"console", "jsonl"}));
  CHECK(c.get("actor_rollout_ref.actor.optim.betas") == Json::array({0.8, 0.95}));
  CHECK(c.get_as<std::string>("trainer.experiment_name") == "2024");  // a string key keeps strings
  CHECK(c.get_as<double>("actor_rollout_ref.rollout.engine_kwargs.sglang.mem_fraction_static") == 0.1);
  CHECK(c.get_as<int64_t>("actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space") == 4);  // free-form map
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("config: an int where a float belongs is fine, a string where an int belongs is not") {
  Config c;
  c.apply_override("actor_rollout_ref.actor.optim.lr=1");
  CHECK(c.get_as<double>("actor_rollout_ref.actor.optim.lr") == 1.0);
  CHECK_THROWS_AS(c.apply_override("actor_rollout_ref.rollout.n=abc"), verl::ConfigTypeError);
  CHECK_THROWS_WITH(c.apply_override("actor_rollout_ref.rollout.n=abc"),
                    Catch::Contains("actor_rollout_ref.rollout.n") && Catch::Contains("\"abc\""));
  CHECK_THROWS_AS(c.apply_override("actor_rollout_ref.rollout.n=1.5"), verl::ConfigTypeError);
  CHECK_THROWS_AS(c.apply_override("actor_rollout_ref.actor.use_kl_loss=1"), verl::ConfigTypeError);
  // verl writes `entropy_coeff: 0` but the field is a float: the schema's "number" rule wins over the default
  c.apply_override("actor_rollout_ref.actor.entropy_coeff=0.001");
  CHECK(c.get_as<double>("actor_rollout_ref.actor.entropy_coeff") == 0.001);
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("config: unknown key names the closest valid key") {
  Config c;
  CHECK_THROWS_AS(c.apply_override("actor_rollout_ref.rollout.nn=5"), verl::ConfigError);
  CHECK_THROWS_WITH(c.apply_override("actor_rollout_ref.rollout.nn=5"),
                    Catch::Contains("did you mean 'actor_rollout_ref.rollout.n'"));
  CHECK_THROWS_WITH(c.apply_override("algorithm.gama=0.9"), Catch::Contains("'algorithm.gamma'"));
  CHECK_THROWS_WITH(c.get("trainer.total_epoch"), Catch::Contains("'trainer.total_epochs'"));
}

TEST_CASE("config: range and choice checks name key and value") {
  CHECK_THROWS_WITH(Config::load("", {"actor_rollout_ref.rollout.top_p=1.5"}),
                    Catch::Contains("actor_rollout_ref.rollout.top_p") && Catch::Contains("1.5"));
  CHECK_THROWS_AS(Config::load("", {"actor_rollout_ref.rollout.n=0"}), verl::ConfigError);
  CHECK_THROWS_AS(Config::load("", {"algorithm.gamma=1.1"}), verl::ConfigError);
  CHECK_THROWS_WITH(Config::load("", {"actor_rollout_ref.actor.loss_agg_mode=token-sum"}),
                    Catch::Contains("token-mean"));
  CHECK_THROWS_AS(Config::load("", {"actor_rollout_ref.actor.clip_ratio_c=1.0"}), verl::ConfigError);
  // An interpolated value is checked after resolution.
  CHECK_THROWS_WITH(Config::load("", {"data.max_response_length=-3"}), Catch::Contains("max_response_length"));
}

TEST_CASE("config: + adds new keys, ++ sets or adds, ~ deletes") {
  Config c;
  c.apply_override("+trainer.my_flag=true");
  CHECK(c.get_as<bool>("trainer.my_flag"));
  CHECK_THROWS_WITH(c.apply_override("+trainer.my_flag=false"), Catch::Contains("already exists"));
  c.apply_override("++trainer.my_flag=false");
  CHECK_FALSE(c.get_as<bool>("trainer.my_flag"));
  c.apply_override("trainer.my_flag=true");  // once added, a plain override works
  c.apply_override("~trainer.my_flag");
  CHECK_FALSE(c.has("trainer.my_flag"));
  c.apply_override("++new_section.value=[1,2]");
  CHECK(c.get("new_section.value") == Json::array({1, 2}));
  CHECK_THROWS_AS(c.apply_override("no_equals_sign"), verl::ConfigError);
}

TEST_CASE("config: YAML files merge, and errors name file and line") {
  const std::string good = write_temp("verl_cfg_good.yaml",
                                      "defaults:\n  - ppo_trainer\n  - _self_\n"
                                      "algorithm:\n  _target_: verl.trainer.config.AlgoConfig\n  adv_estimator: rloo\n"
                                      "actor_rollout_ref:\n  rollout:\n    n: 4\n");
  Config c = Config::load(good);
  CHECK(c.get_as<std::string>("algorithm.adv_estimator") == "rloo");
  CHECK(c.get_as<int64_t>("actor_rollout_ref.rollout.n") == 4);
  CHECK(c.get_as<double>("algorithm.gamma") == 1.0);  // untouched defaults stay

  const std::string malformed = write_temp("verl_cfg_bad.yaml", "algorithm:\n  gamma: 0.9\n   lam: [1, 2\n");
  CHECK_THROWS_AS(Config::load(malformed), verl::ConfigError);
  CHECK_THROWS_WITH(Config::load(malformed), Catch::Contains("verl_cfg_bad.yaml:3"));

  const std::string unknown = write_temp("verl_cfg_unknown.yaml", "algorithm:\n  gama: 0.9\n");
  CHECK_THROWS_WITH(Config::load(unknown),
                    Catch::Contains("verl_cfg_unknown.yaml") && Catch::Contains("'algorithm.gamma'"));
  CHECK_THROWS_WITH(Config::load("/nonexistent/x.yaml"), Catch::Contains("/nonexistent/x.yaml"));
}

TEST_CASE("config: YAML output reads back to the same tree") {
  Config c = Config::load("", {"trainer.experiment_name='007'", "actor_rollout_ref.actor.optim.lr=1e-7"});
  Config back;
  back.merge_yaml_string(c.to_yaml(false));
  CHECK(back.to_json(false) == c.to_json(false));
  CHECK(back.get_as<std::string>("trainer.experiment_name") == "007");
  CHECK(c.to_yaml().find("default_local_dir: checkpoints/verl_examples/007") != std::string::npos);
}

TEST_CASE("config: mandatory values and interpolation cycles are errors") {
  Config c;
  CHECK_THROWS_WITH(c.get("reward.reward_model.rollout.name"), Catch::Contains("mandatory"));
  c.apply_overrides({"++x.a=${x.b}", "++x.b=${x.a}"});
  CHECK_THROWS_WITH(c.get("x.a"), Catch::Contains("cycle"));
  c.apply_override("++x.c=${does.not.exist}");
  CHECK_THROWS_WITH(c.get("x.c"), Catch::Contains("does.not.exist"));
}
