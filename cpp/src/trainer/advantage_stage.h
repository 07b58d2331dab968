// The "adv" stage of a PPO step, between the value passes and the updates (verl's RayPPOTrainer.fit): the KL penalty
// in the reward (apply_kl_penalty), the rollout correction's rejection mask and IS weights, the advantage estimator
// (verl's compute_advantage, with GDPO, the optimal token baselines and SPPO) and Safe-RLHF's Lagrangian. It reads
// the batch's tensors by verl's names and returns what it computed as typed results; the trainer puts them in the
// batch.
#pragma once

#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "verl/algo/kl.h"
#include "verl/data/data_proto.h"
#include "verl/trainer/metrics.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::trainer::detail {

// verl's apply_kl_penalty: token_level_rewards = scores - beta * kl_penalty(old_log_probs, ref_log_prob) on the
// response tokens, beta the controller's value before it moves with this batch's mean KL.
struct KlPenalty {
  torch::Tensor token_level_rewards;
  double current_kl = 0;  // actor/reward_kl_penalty
  double beta = 0;        // actor/reward_kl_penalty_coeff
};
KlPenalty apply_kl_penalty(const torch::Tensor& scores, const torch::Tensor& old_log_probs,
                           const torch::Tensor& ref_log_prob, const torch::Tensor& response_mask,
                           const std::string& kl_penalty, algo::KLController& controller, int64_t batch_size);

struct AdvantageOutput {
  torch::Tensor advantages, returns;
  torch::Tensor cost_advantages, cost_returns;  // Safe-RLHF only
  Metrics metrics;                              // gdpo/*, safe_rlhf/*
};
// The advantages of `batch` (token_level_rewards, response_mask, the uid column, values, reward_baselines, and what
// the estimator needs) under settings.adv_estimator. With Safe-RLHF, `safe_rlhf_lambda` moves with the batch's
// constraint violation and the cost's advantages are weighed against the reward's.
AdvantageOutput compute_advantage(const PPOTrainerConfig& settings, const DataProto& batch, double& safe_rlhf_lambda);

}  // namespace verl::trainer::detail
