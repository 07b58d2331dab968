// PF-PPO (policy filtration, arXiv 2409.06957), verl's compute_pf_ppo_reweight_data: the batch is
// resampled with replacement, each response drawn with probability proportional to a weight of its
// score, so high-|score| (reliable) rewards dominate the PPO update.
#pragma once

#include <optional>
#include <string>

#include <ATen/core/Generator.h>

#include <torch/types.h>

#include "verl/core/config.h"
#include "verl/core/export.h"

namespace verl::algo {

// algorithm.use_pf_ppo / algorithm.pf_ppo.*.
struct VERL_API PfPpoConfig {
  bool enable = false;
  std::string reweight_method = "pow";
  double weight_pow = 2.0;
};

// From a verl config; ConfigError for another reweight method, or with an adv_estimator other than gae (verl
// resamples after GAE only).
VERL_API PfPpoConfig pf_ppo_config(const Config& config);

// Sampling weights of the scores (bs,) (each response's token_level_scores summed), verl's
// reweight methods: "pow" |score|^weight_pow; "max_min" 1 for the batch's highest and lowest score,
// 0 otherwise; "max_random" 0.4 for the highest, 0.1 otherwise. Then clamp(w + 1e-8, min=1e-8), so
// every response stays drawable. InvalidArgument for another method.
VERL_API torch::Tensor pf_ppo_weights(const torch::Tensor& scores, const std::string& reweight_method,
                                      double weight_pow = 2.0);

// The rows of the resampled batch: bs draws with replacement from pf_ppo_weights of
// token_level_scores.sum(-1), with torch::multinomial on `generator`, or without one on the default
// generator (the one torch.manual_seed seeds, so a seeded call draws what verl's draws). A generator's
// device must be the scores' device. token_level_scores is a non-empty (bs, response_length) float
// tensor, finite. Returns (bs,) int64 on its device.
VERL_API torch::Tensor pf_ppo_sample_indices(const torch::Tensor& token_level_scores,
                                             const std::string& reweight_method = "pow", double weight_pow = 2.0,
                                             std::optional<at::Generator> generator = std::nullopt);

}  // namespace verl::algo
