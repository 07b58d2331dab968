// Advantage estimators with verl's names and semantics (verl/trainer/ppo/core_algos.py) and the
// registry that maps algorithm.adv_estimator to one of them. Used by the trainer and the bindings.
//
// Shapes and dtypes shared by every estimator:
//   token_level_rewards (bs, response_length) float32 / float64 / bfloat16 / float16, bs >= 1
//   response_mask       (bs, response_length) any dtype; 1 = response token, 0 = padding or, in
//                       multi-turn rollouts, an observation token. Read as 0/1 (nonzero = 1).
//   index               (bs,) integer group ids (any values; equal id = same prompt), any device
//   returns             {advantages, returns}, both (bs, response_length), dtype of the rewards
//                       (GAE: of rewards and values promoted), on the rewards' device.
// Estimators run under torch::NoGradGuard as verl's do (torch.no_grad): the outputs are constants
// for the policy loss. Half precision inputs are computed in float32 and cast back.
// verl's `config` argument and the `epsilon` that rloo, opo, gpg and reinforce_plus_plus_baseline
// accept but never read are left out.
// Errors (verl::InvalidArgument): empty batch, mismatched shapes (both shapes named), NaN/Inf in
// an input where it would reach the output. The outcome estimators sum the whole reward row, as
// verl does, so the whole row must be finite; token-level ones only look inside the mask.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/core/json.h"
#include "verl/core/registry.h"

namespace verl::algo {

using AdvantageResult = std::pair<torch::Tensor, torch::Tensor>;  // (advantages, returns)

// uid strings -> (bs,) int64 group ids numbered 0, 1, ... in order of first appearance.
VERL_API torch::Tensor group_ids(const std::vector<std::string>& uids);

// Generalized Advantage Estimation. values (bs, response_length). Positions with mask 0 (e.g.
// tool observations between turns) are skipped: the next value and the running advantage are
// carried through them unchanged, and their values never reach any advantage. Returns are the
// raw advantages + values; advantages are then whitened over the mask (needs >= 2 mask tokens).
VERL_API AdvantageResult compute_gae_advantage_return(const torch::Tensor& token_level_rewards,
                                                      const torch::Tensor& values, const torch::Tensor& response_mask,
                                                      double gamma, double lam);

// GRPO: score = row sum of rewards; a = (score - mean_g) / (std_g + epsilon) with std unbiased,
// or score - mean_g when !norm_adv_by_std_in_grpo (Dr.GRPO). A singleton group uses mean 0 and
// std 1 (verl's convention), so its advantage is score / (1 + epsilon), not 0. Broadcast over the
// row and multiplied by the mask; advantages == returns.
VERL_API AdvantageResult compute_grpo_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                        const torch::Tensor& response_mask, const torch::Tensor& index,
                                                        double epsilon = 1e-6, bool norm_adv_by_std_in_grpo = true);
// The same estimate through verl.utils.group_mean_std (index_add over groups). Here both variants
// share that scatter path; the results agree with compute_grpo_outcome_advantage.
VERL_API AdvantageResult compute_grpo_vectorized_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                                   const torch::Tensor& response_mask,
                                                                   const torch::Tensor& index, double epsilon = 1e-6,
                                                                   bool norm_adv_by_std_in_grpo = true);
// Pass@k (arXiv 2503.19595): only the best response of each group gets a nonzero advantage,
// r_max - r_second_max (divided by std_g + epsilon when norm_adv_by_std_in_grpo). Every group
// needs >= 2 responses (InvalidArgument otherwise, as verl).
VERL_API AdvantageResult compute_grpo_passk_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                              const torch::Tensor& response_mask,
                                                              const torch::Tensor& index, double epsilon = 1e-6,
                                                              bool norm_adv_by_std_in_grpo = true);
// RLOO (arXiv 2402.14740): a = score - mean of the other responses of the group
// = (n * score - sum_g) / (n - 1). A singleton group keeps its raw score (verl's loop version).
VERL_API AdvantageResult compute_rloo_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                        const torch::Tensor& response_mask, const torch::Tensor& index);
// RLOO through bincount-style sums. Equal to compute_rloo_outcome_advantage except that a singleton
// group gets advantage 0 (verl's vectorized version differs from its loop version there).
VERL_API AdvantageResult compute_rloo_vectorized_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                                   const torch::Tensor& response_mask,
                                                                   const torch::Tensor& index);
// OPO (arXiv 2505.23585): baseline = length-weighted mean score of the group, length =
// response_mask.sum(-1); singleton groups use baseline 0.
VERL_API AdvantageResult compute_opo_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                       const torch::Tensor& response_mask, const torch::Tensor& index);
// REINFORCE++ (arXiv 2501.03262): returns = discounted reward-to-go over response tokens (mask-0
// positions carry the running return and get return 0); advantages = masked_whiten(returns) * mask.
VERL_API AdvantageResult compute_reinforce_plus_plus_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                                       const torch::Tensor& response_mask,
                                                                       double gamma);
// REINFORCE++ with a group-mean baseline: (score - mean_g) broadcast over the row, then whitened
// over the whole batch's mask and multiplied by it. Singleton groups use mean 0.
VERL_API AdvantageResult compute_reinforce_plus_plus_baseline_outcome_advantage(
    const torch::Tensor& token_level_rewards, const torch::Tensor& response_mask, const torch::Tensor& index);
// ReMax (arXiv 2310.10505): returns = reward-to-go of the masked rewards; advantages = returns -
// reward_baselines * mask. reward_baselines (bs,) is the greedy response's reward.
VERL_API AdvantageResult compute_remax_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                         const torch::Tensor& reward_baselines,
                                                         const torch::Tensor& response_mask);
// GPG: a = alpha * (score - mean_g) / f_norm with alpha = bs / max(#nonzero scores, 1) over the
// whole batch (verl computes alpha itself and ignores its `alpha` argument, so there is none here).
// Singleton groups use mean 0.
VERL_API AdvantageResult compute_gpg_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                       const torch::Tensor& response_mask, const torch::Tensor& index,
                                                       double f_norm = 1.0);

// ---- registry (verl's register_adv_est / get_adv_estimator_fn) --------------------------------

// What an estimator may read from the batch: optional fields, undefined (null) where the batch has none; an estimator
// that needs one throws naming it (InvalidArgument; DataError for gdpo, sppo and the optimal token baselines, which
// read what the trainer's batch may lack).
struct VERL_API AdvantageInputs {
  torch::Tensor token_level_rewards;  // (bs, response_length), always required
  torch::Tensor response_mask;        // (bs, response_length), always required
  torch::Tensor index;                // (bs,) group ids (group_ids(uid)); grouped estimators
  torch::Tensor values;               // (bs, response_length); gae
  torch::Tensor reward_baselines;     // (bs,); remax
  torch::Tensor old_log_probs;        // (bs, response_length); optimal_token_baseline, tir_optimal_token_baseline
  torch::Tensor sum_pi_squared;       // (bs, response_length); the same (the actor's sum of pi^2 per token)
  torch::Tensor rollout_is_weights;   // (bs, response_length); the same, when rollout correction made them
  torch::Tensor attention_mask;       // (bs, prompt_length + response_length); gdpo (each score on the last token)
  // gdpo: the batch's non-tensor columns (the reward function's extra-info, bs values each) -- verl's
  // compute_advantage passes non_tensor_batch likewise.
  const std::map<std::string, std::vector<Json>>* non_tensor_batch = nullptr;
  std::map<std::string, double>* metrics = nullptr;  // where an estimator reports metrics (gdpo/<key>/mean, ...)
};

// The algorithm.* settings estimators read, with verl's names and defaults.
struct VERL_API AdvantageConfig {
  double gamma = 1.0;                   // algorithm.gamma: gae, reinforce_plus_plus
  double lam = 1.0;                     // algorithm.lam: gae
  bool norm_adv_by_std_in_grpo = true;  // algorithm.norm_adv_by_std_in_grpo: grpo, grpo_vectorized, grpo_passk
  double epsilon = 1e-6;                // the estimators' epsilon argument (verl's default)
  double sppo_eta = 1.0;                // algorithm.sppo_eta: sppo
  std::vector<std::string> gdpo_reward_keys;                // +algorithm.gdpo_reward_keys: gdpo
  std::optional<std::vector<double>> gdpo_reward_weights;  // +algorithm.gdpo_reward_weights: gdpo (null: all 1)
};

// algorithm.adv_estimator's settings from a verl config, with every estimator's rule and its ConfigError: the
// estimator registered; gdpo's reward keys (required there, refused elsewhere) and weights; sppo_eta > 0 (and left at
// its default for another estimator); the optimal token baselines' sum_pi_squared
// (actor.calculate_sum_pi_squared=true, rollout_correction.bypass_mode=false).
VERL_API AdvantageConfig advantage_config(const Config& config);

// What an estimator needs from the rest of the step, beyond the rewards, the mask and the groups.
struct VERL_API EstimatorNeeds {
  bool values = false;            // a critic's values (gae)
  bool reward_baselines = false;  // the greedy response's reward (remax)
  bool sum_pi_squared = false;    // the actor's sum of pi^2 from the old-log-prob pass (the optimal token baselines)
  bool cost_form = true;  // Safe-RLHF can apply it to the costs (reads rewards, values and groups only)
};
// The needs of the estimator registered as `name` (an estimator registered by a user reads the rewards, the mask and
// the groups, and has a cost form).
VERL_API EstimatorNeeds estimator_needs(const std::string& name);

using AdvantageFn = std::function<AdvantageResult(const AdvantageInputs&, const AdvantageConfig&)>;

// Every built-in under verl's AdvantageEstimator name: gae, grpo, grpo_vectorized, grpo_passk,
// rloo, rloo_vectorized, opo, reinforce_plus_plus, reinforce_plus_plus_baseline, remax, gpg, gdpo, sppo,
// optimal_token_baseline, tir_optimal_token_baseline.
// A built-in called without an input it needs throws InvalidArgument naming input and estimator.
VERL_API Registry<AdvantageFn>& adv_estimator_registry();
// Adds fn under name; the same identity again is a no-op, another one under a taken name throws.
VERL_API void register_adv_est(const std::string& name, AdvantageFn fn, const void* identity);
// The estimator registered under name; InvalidArgument listing the registered names otherwise.
VERL_API AdvantageFn get_adv_estimator_fn(const std::string& name);

}  // namespace verl::algo
