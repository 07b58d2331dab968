// fsdp_config.param_offload / optimizer_offload on CUDA: a ConfigError naming the key until offload is
// implemented (on the CPU they are a no-op: tests/python/trainer/test_offload_keys.py). Skipped without a GPU.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/trainer/ppo_trainer.h"

using namespace verl;

TEST_CASE("PPOTrainer refuses param/optimizer offload on CUDA", "[trainer][offload][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("CUDA not available; skipped");
    return;
  }
  const Json j = {{"model_type", "qwen2"},        {"vocab_size", 16},          {"hidden_size", 8},
                  {"intermediate_size", 8},       {"num_hidden_layers", 1},    {"num_attention_heads", 2},
                  {"num_key_value_heads", 1},     {"rms_norm_eps", 1e-6},      {"rope_theta", 10000.0},
                  {"max_position_embeddings", 16}, {"tie_word_embeddings", false}, {"eos_token_id", 1}};
  auto model = std::make_shared<model::CausalLM>(model::ModelConfig::from_json(j));
  model->to(torch::Device(torch::kCUDA));
  auto reward = [](const DataProto&) -> trainer::RewardOutput { return {}; };
  for (const char* key : {"actor_rollout_ref.actor.fsdp_config.param_offload",
                          "actor_rollout_ref.ref.fsdp_config.optimizer_offload", "critic.fsdp.param_offload"}) {
    INFO(key);
    const Config config = Config::load("", {"algorithm.adv_estimator=grpo", std::string(key) + "=true"});
    CHECK_THROWS_AS(trainer::PPOTrainer(config, {model, nullptr, nullptr, nullptr}, reward), ConfigError);
    CHECK_THROWS_WITH(trainer::PPOTrainer(config, {model, nullptr, nullptr, nullptr}, reward),
                      Catch::Contains(std::string("config key '") + key + "' = true") &&
                          Catch::Contains("not implemented on cuda"));
  }
}
