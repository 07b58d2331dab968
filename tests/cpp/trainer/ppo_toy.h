// The toy PPO setup of the trainer tests: a tiny float64 transformer with transformers' initialisation, a left-padded
// prompt batch, a config sized for them, and a reward on the fraction of target tokens.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/data/data_proto.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::testing::ppo_toy {

constexpr int64_t kVocab = 32, kPrompt = 6, kResponse = 5, kPrompts = 4, kN = 4, kTarget = 7;

inline std::shared_ptr<model::CausalLM> tiny_model(int64_t seed = 0) {
  Json j = {{"model_type", "qwen2"},         {"vocab_size", kVocab},        {"hidden_size", 32},
            {"intermediate_size", 48},       {"num_hidden_layers", 2},      {"num_attention_heads", 4},
            {"num_key_value_heads", 2},      {"rms_norm_eps", 1e-6},        {"rope_theta", 10000.0},
            {"max_position_embeddings", 64}, {"tie_word_embeddings", false}, {"eos_token_id", 1}};
  torch::manual_seed(seed);
  auto m = std::make_shared<model::CausalLM>(model::ModelConfig::from_json(j));
  // transformers' initialisation (normal(0, 0.02), norms at 1): sampled responses vary.
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : m->named_state()) {
    if (name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0) {
      p.fill_(1.0);
    } else {
      p.normal_(0.0, 0.02);
    }
  }
  m->to(torch::kDouble);
  return m;
}

// kPrompts left-padded prompts of 3..6 tokens (ids 2..kVocab-1).
inline DataProto prompt_batch(int64_t seed = 3) {
  torch::manual_seed(seed);
  torch::Tensor ids = torch::randint(2, kVocab, {kPrompts, kPrompt}, torch::kLong);
  torch::Tensor lens = torch::tensor({3, 6, 4, 5}, torch::kLong);
  torch::Tensor cols = torch::arange(kPrompt).unsqueeze(0);
  torch::Tensor mask = (cols >= (kPrompt - lens).unsqueeze(1)).to(torch::kLong);
  ids = ids * mask;
  torch::Tensor pos = (mask.cumsum(-1) - 1).clamp_min(0);
  DataProto::Column ds(kPrompts, Json("toy"));
  return DataProto({{"input_ids", ids}, {"attention_mask", mask}, {"position_ids", pos}}, {{"data_source", ds}});
}

inline Config toy_config(const std::string& estimator, std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {
      "algorithm.adv_estimator=" + estimator,
      "data.max_prompt_length=" + std::to_string(kPrompt),
      "data.max_response_length=" + std::to_string(kResponse),
      "data.train_batch_size=" + std::to_string(kPrompts),
      "actor_rollout_ref.rollout.n=" + std::to_string(kN),
      "actor_rollout_ref.rollout.max_num_seqs=32",
      "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
      "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8",
      "actor_rollout_ref.actor.ppo_mini_batch_size=2",
      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
      "actor_rollout_ref.actor.optim.lr=0.01",
      "critic.ppo_micro_batch_size_per_gpu=4",
      "critic.forward_micro_batch_size_per_gpu=8",
      "critic.optim.lr=0.01",
      // float64 models computing in float64 (mixed precision off): exact agreement checks stay exact.
      // tests/cpp/workers/test_mixed_precision.cpp runs the trainer in verl's default bf16 compute.
      "actor_rollout_ref.actor.fsdp_config.dtype=float32",
      "actor_rollout_ref.ref.fsdp_config.dtype=float32",
      "critic.fsdp.dtype=float32",
  };
  o.insert(o.end(), extra.begin(), extra.end());
  return Config::load("", o);
}

// Fraction of the valid response tokens equal to kTarget, on the last valid token (verl's placement).
inline trainer::RewardOutput target_fraction(const DataProto& batch) {
  torch::Tensor responses = batch.tensor("responses");
  torch::Tensor mask = batch.tensor("response_mask").to(torch::kDouble);
  torch::Tensor hits = (responses == kTarget).to(torch::kDouble) * mask;
  torch::Tensor length = mask.sum(-1);
  torch::Tensor score = hits.sum(-1) / length.clamp_min(1);
  torch::Tensor scores = torch::zeros(responses.sizes(), torch::kFloat32);
  torch::Tensor last = (length - 1).clamp_min(0).to(torch::kLong);
  scores.scatter_(1, last.unsqueeze(1), score.to(torch::kFloat32).unsqueeze(1));
  trainer::RewardOutput out;
  out.token_level_scores = scores;
  out.extra_info["acc"] = std::vector<Json>(static_cast<size_t>(responses.size(0)), Json(1.0));
  return out;
}

}  // namespace verl::testing::ppo_toy
