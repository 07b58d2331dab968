// Rollout correction, verl's rollout_corr_helper: importance-sampling weights pi_train / pi_rollout
// (token or sequence level, truncated or IcePop-masked), rejection of tokens / sequences whose divergence
// from the rollout policy exceeds a bound, and verl's off-policy diagnostics. Used by the "bypass_mode"
// policy loss (policy_loss.h), the bindings and the trainer.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::algo {

// verl's RolloutCorrectionConfig (algorithm.rollout_correction), with verl's names and defaults. Thresholds
// are verl's threshold specifications as text: "2.0" (an upper bound), "0.5_2.0" (lower_upper), and for
// rejection sampling one entry per option, comma separated. Numbers are written as Python's str(float) does
// (round-trip exact), so a float threshold and its text mean the same bound.
struct VERL_API RolloutCorrectionConfig {
  std::optional<std::string> rollout_is;  // "token" / "sequence"; nullopt: no IS weights
  std::optional<std::string> rollout_is_threshold = "2.0";  // nullopt: no IS weights either
  bool rollout_is_batch_normalize = false;                  // weights / their batch mean
  std::optional<std::string> rollout_rs;                    // "token_k1,seq_mean_k3", ...; nullopt: no rejection
  std::optional<std::string> rollout_rs_threshold;          // required when rollout_rs is set
  bool bypass_mode = false;           // old_log_prob := rollout_log_prob, loss "bypass_mode"
  std::string loss_type = "ppo_clip";  // bypass mode's loss: "ppo_clip" or "reinforce"

  // Whether the decoupled correction gives IS weights (rollout_is and its threshold set).
  bool weighs() const { return rollout_is.has_value() && rollout_is_threshold.has_value(); }
  // Whether it changes what the actor trains on (IS weights or a rejection mask); else it only measures.
  bool acts() const { return weighs() || rollout_rs.has_value(); }
};

using RolloutCorrectionMetrics = std::map<std::string, double>;

// A numeric threshold as threshold text: the shortest decimal that reads back as the same double.
VERL_API std::string rollout_threshold_text(double threshold);

// Importance weights of log_ratio = log pi_train - log pi_rollout, (bs, response_length) each, weights zero
// outside response_mask and detached. rollout_is "token": exp(clamp(log_ratio, +-20)) per token;
// "sequence": exp(clamp(masked sum of log_ratio, +-20)) on every token of the row. A single-bound threshold
// truncates at it (TIS); "lower_upper" zeroes weights outside [lower, upper] (IcePop). batch_normalize
// divides by the masked batch mean (per token, or per sequence for "sequence") when it exceeds 1e-8.
// Metrics under verl's names without prefix (rollout_is_mean, rollout_is_eff_sample_size, ...).
// InvalidArgument for an unknown level or a malformed / non-positive threshold, or an all-zero mask.
struct VERL_API RolloutCorrectionWeights {
  torch::Tensor weights;  // (bs, response_length)
  RolloutCorrectionMetrics metrics;
};
VERL_API RolloutCorrectionWeights compute_rollout_correction_weights(const torch::Tensor& log_ratio,
                                                                     const torch::Tensor& response_mask,
                                                                     const std::string& rollout_is = "token",
                                                                     const std::string& rollout_is_threshold = "2.0",
                                                                     bool rollout_is_batch_normalize = false);

// Rejection mask from divergence estimators of log_ratio: k1 = -log_ratio, k2 = log_ratio^2 / 2,
// k3 = exp(log_ratio) - 1 - log_ratio (log_ratio clamped to +-20), per token ("token_k1/2/3") or per
// sequence as the masked sum, mean or max ("seq_sum_k*", "seq_mean_k*", "seq_max_k2/3"). Every listed
// option must pass. k1 options keep values within [log lower, log upper] (a single bound u means
// [1/u, u]); the others keep values <= the bound. Returns response_mask * keep in response_mask's dtype,
// and per-option metrics (rollout_rs_<option>_*) plus rollout_rs_masked_fraction /
// rollout_rs_seq_masked_fraction. InvalidArgument for an unknown option or a bad threshold.
struct VERL_API RolloutRejection {
  torch::Tensor response_mask;  // (bs, response_length), rejected tokens 0
  RolloutCorrectionMetrics metrics;
};
VERL_API RolloutRejection compute_rollout_rejection_mask(const torch::Tensor& log_ratio,
                                                         const torch::Tensor& response_mask,
                                                         const std::string& rollout_rs,
                                                         const std::string& rollout_rs_threshold);

// verl's off-policy diagnostics (no prefix): training_ppl, training_log_ppl, and with rollout_log_prob
// defined kl, k3_kl, rollout_ppl, rollout_log_ppl, log_ppl_diff(_max/_min), log_ppl_abs_diff, ppl_ratio,
// chi2_token, chi2_seq. old_log_prob is the training policy's.
VERL_API RolloutCorrectionMetrics compute_offpolicy_metrics(const torch::Tensor& old_log_prob,
                                                            const torch::Tensor& rollout_log_prob,
                                                            const torch::Tensor& response_mask);

// The whole pipeline, verl's compute_rollout_correction_and_rejection_mask: IS weights when
// config.rollout_is and its threshold are set (undefined otherwise), the rejection mask when
// config.rollout_rs is set (a copy of response_mask otherwise), the off-policy metrics; every metric
// prefixed "rollout_corr/". old_log_prob (training), rollout_log_prob, response_mask: (bs, response_length).
// InvalidArgument for mismatched shapes, an all-zero mask, or rollout_rs without rollout_rs_threshold.
struct VERL_API RolloutCorrection {
  torch::Tensor rollout_is_weights;  // (bs, response_length) or undefined
  torch::Tensor response_mask;       // (bs, response_length)
  RolloutCorrectionMetrics metrics;
};
VERL_API RolloutCorrection compute_rollout_correction_and_rejection_mask(const torch::Tensor& old_log_prob,
                                                                         const torch::Tensor& rollout_log_prob,
                                                                         const torch::Tensor& response_mask,
                                                                         const RolloutCorrectionConfig& config);

}  // namespace verl::algo
