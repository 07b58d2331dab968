// verl::config_keys: every key of both trees is honoured, refused or of no effect; Config::load refuses a changed
// refused key for C++ applications too (the Python tests walk the same table: tests/python/core/test_config_keys.py).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/config_keys.h"

using verl::Config;
using verl::Json;
namespace keys = verl::config_keys;

namespace {

void leaves(const Json& node, const std::string& path, std::vector<std::string>& out) {
  if (!node.is_object() || node.empty()) {
    out.push_back(path);
    return;
  }
  for (const auto& [k, v] : node.items()) leaves(v, path.empty() ? k : path + "." + k, out);
}

}  // namespace

TEST_CASE("config_keys: every default leaf of both trees has exactly one entry") {
  for (bool sft : {false, true}) {
    const Config c = sft ? Config::load_sft() : Config();
    std::vector<std::string> all;
    leaves(c.to_json(false), "", all);
    for (const std::string& leaf : all) {
      int covering = 0;
      for (const auto& e : keys::entries(sft))
        covering += leaf == e.key || leaf.rfind(e.key + ".", 0) == 0 ? 1 : 0;
      INFO(leaf);
      CHECK(covering == 1);
      CHECK(keys::find_entry(leaf, sft) != nullptr);
    }
  }
}

TEST_CASE("config_keys: a refused key with another value is a ConfigError naming it") {
  CHECK_THROWS_AS(Config::load("", {"actor_rollout_ref.model.lora.rank=8"}), verl::ConfigError);
  CHECK_THROWS_WITH(Config::load("", {"actor_rollout_ref.rollout.multi_turn.use_inference_chat_template=true"}),
                    Catch::Contains("'actor_rollout_ref.rollout.multi_turn.use_inference_chat_template' = true") &&
                        Catch::Contains("not supported by verl-cpp yet"));
  CHECK_THROWS_WITH(Config::load("", {"actor_rollout_ref.rollout.pipeline_model_parallel_size=2"}),
                    Catch::Contains("actor_rollout_ref.rollout.pipeline_model_parallel_size"));
  // Config::validate() checks it too, for trees changed after loading.
  Config c;
  c.set("actor_rollout_ref.actor.fsdp_config.offload_policy", true);
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("offload_policy"));
}

TEST_CASE("config_keys: defaults, no-effect keys and same_as values are accepted") {
  CHECK_NOTHROW(Config::load("", {"actor_rollout_ref.model.lora.rank=0", "actor_rollout_ref.rollout.name=native",
                                  "actor_rollout_ref.model.use_liger=true", "actor_rollout_ref.actor.use_torch_compile=false"}));
  CHECK_NOTHROW(Config::load("", {"actor_rollout_ref.model.path=/m", "critic.model.path=/m",
                                  "actor_rollout_ref.actor.fsdp_config.dtype=float32",
                                  "actor_rollout_ref.rollout.dtype=fp32"}));  // fp32 == float32 == the compute dtype
  CHECK_THROWS_WITH(Config::load("", {"actor_rollout_ref.model.path=/m", "critic.model.path=/other"}),
                    Catch::Contains("critic.model.path"));
  CHECK(keys::find_entry("actor_rollout_ref.model.use_liger", false)->cls == keys::KeyClass::kNoEffect);
  CHECK(std::string(keys::class_name(keys::KeyClass::kRefused)) == "refused");
}
