// Policy-gradient losses with verl's names, formulas and metric names (vanilla PPO, GSPO, SAPO, GPG,
// Clip-Cov, KL-Cov, GMPO, CISPO, DPPO, DRO) and their registry. Used by the actor worker and bindings.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include <torch/types.h>

#include "verl/algo/agg_loss.h"
#include "verl/algo/rollout_correction.h"
#include "verl/core/export.h"
#include "verl/core/registry.h"

namespace verl::algo {

// The fields of verl's ActorConfig (actor_rollout_ref.actor) that the policy losses read, with
// verl's names and defaults.
struct VERL_API PolicyLossConfig {
  // verl's PolicyLossConfig (actor.policy_loss).
  struct PolicyLoss {
    std::string loss_mode = "vanilla";
    double clip_cov_ratio = 0.0002;  // clip_cov: fraction of tokens whose gradient is cut
    double clip_cov_lb = 1.0;        // clip_cov: covariance window (lb, ub) of the candidates
    double clip_cov_ub = 5.0;
    double kl_cov_ratio = 0.0002;      // kl_cov: fraction of tokens that get the KL penalty
    double ppo_kl_coef = 0.1;          // kl_cov: coefficient of |log ratio| on those tokens
    std::optional<double> dro_beta;  // dro: quadratic log-ratio penalty, required (> 0) by "dro"
    // bypass_mode: the rollout correction to apply (verl puts algorithm.rollout_correction here).
    std::optional<RolloutCorrectionConfig> rollout_correction;
  };

  double clip_ratio = 0.2;
  // nullopt falls back to clip_ratio. verl's defaults are 0.2 each, not "unset", so changing only
  // clip_ratio leaves the PPO clip range at [0.8, 1.2], exactly as in verl.
  std::optional<double> clip_ratio_low = 0.2;
  std::optional<double> clip_ratio_high = 0.2;
  double clip_ratio_c = 3.0;  // dual-clip lower bound (vanilla; > 1), truncation bound (dppo_*)
  std::string loss_agg_mode = "token-mean";
  double tau_pos = 1.0;   // sapo gate temperature for A > 0
  double tau_neg = 1.05;  // sapo gate temperature for A <= 0
  PolicyLoss policy_loss;
  GlobalBatchInfo global_batch_info;
};

using Metrics = std::map<std::string, double>;

struct VERL_API PolicyLossOutput {
  torch::Tensor pg_loss;  // scalar, differentiable w.r.t. log_prob
  Metrics metrics;        // "actor/pg_clipfrac", "actor/ppo_kl", ... as the loss reports them
};

// Every policy loss takes (bs, response_length) tensors: old_log_prob, log_prob (differentiable),
// advantages, response_mask (bool/int/float) and rollout_is_weights (rollout-correction
// importance weights; an undefined tensor means none). All must share shape and device; an
// empty batch, a shape mismatch or NaN/Inf inside the mask throws InvalidArgument.
using PolicyLossFn = std::function<PolicyLossOutput(
    const torch::Tensor& old_log_prob, const torch::Tensor& log_prob, const torch::Tensor& advantages,
    const torch::Tensor& response_mask, const std::string& loss_agg_mode, const PolicyLossConfig& config,
    const torch::Tensor& rollout_is_weights)>;

// PPO clipped objective with clip-higher (clip_ratio_low/high) and dual clip (clip_ratio_c > 1,
// applied where A < 0). Metrics: actor/pg_clipfrac, actor/ppo_kl, actor/pg_clipfrac_lower.
VERL_API PolicyLossOutput compute_policy_loss_vanilla(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                      const torch::Tensor& advantages,
                                                      const torch::Tensor& response_mask,
                                                      const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                      const torch::Tensor& rollout_is_weights = {});

// DPPO-Binary-TV (arXiv 2602.04879): REINFORCE on log_prob with a detached ratio truncated at
// clip_ratio_c, tokens whose probability moved more than clip_ratio_low/high (total variation)
// in the advantage's direction masked out.
VERL_API PolicyLossOutput compute_policy_loss_dppo_tv(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                      const torch::Tensor& advantages,
                                                      const torch::Tensor& response_mask,
                                                      const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                      const torch::Tensor& rollout_is_weights = {});

// DPPO-Binary-KL: as dppo_tv with the binary KL divergence as the trust-region measure.
VERL_API PolicyLossOutput compute_policy_loss_dppo_kl(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                      const torch::Tensor& advantages,
                                                      const torch::Tensor& response_mask,
                                                      const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                      const torch::Tensor& rollout_is_weights = {});

// GSPO (arXiv 2507.18071): PPO clip on the sequence-level ratio exp(mean log ratio), token gradients.
VERL_API PolicyLossOutput compute_policy_loss_gspo(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                   const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                                   const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                   const torch::Tensor& rollout_is_weights = {});

// SAPO (arXiv 2511.20347): smooth sigmoid gate on the ratio instead of a hard clip. Always
// aggregates "seq-mean-token-mean" whatever loss_agg_mode says (as verl).
VERL_API PolicyLossOutput compute_policy_loss_sapo(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                   const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                                   const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                   const torch::Tensor& rollout_is_weights = {});

// GPG: -log_prob * A. No metrics.
VERL_API PolicyLossOutput compute_policy_loss_gpg(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                  const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                                  const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                  const torch::Tensor& rollout_is_weights = {});

// Clip-Cov: PPO clip, plus the gradient of a random clip_cov_ratio share of the tokens whose
// centred covariance (A, log_prob) lies in (clip_cov_lb, clip_cov_ub) is cut. The random choice
// draws torch::randperm from the default CPU generator, as verl. Metrics: pg_clipfrac, ppo_kl.
VERL_API PolicyLossOutput compute_policy_loss_clip_cov(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                       const torch::Tensor& advantages,
                                                       const torch::Tensor& response_mask,
                                                       const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                       const torch::Tensor& rollout_is_weights = {});

// KL-Cov: -A * ratio, plus ppo_kl_coef * |log ratio| on the kl_cov_ratio share of tokens with the
// largest covariance (A, log_prob). Metric: actor/ppo_kl (the mean |log ratio|).
VERL_API PolicyLossOutput compute_policy_loss_kl_cov(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                     const torch::Tensor& advantages,
                                                     const torch::Tensor& response_mask,
                                                     const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                     const torch::Tensor& rollout_is_weights = {});

// GMPO (arXiv 2507.20673): geometric mean of token-clipped ratios per sequence times the
// sequence's mean advantage, averaged over sequences. Ignores loss_agg_mode (as verl).
VERL_API PolicyLossOutput compute_policy_loss_geo_mean(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                       const torch::Tensor& advantages,
                                                       const torch::Tensor& response_mask,
                                                       const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                       const torch::Tensor& rollout_is_weights = {});

// DRO: -(log_prob * A - beta/2 * (log ratio)^2), beta = policy_loss.dro_beta. Metric: actor/ppo_kl.
VERL_API PolicyLossOutput compute_policy_loss_dro(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                  const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                                  const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                  const torch::Tensor& rollout_is_weights = {});

// CISPO (arXiv 2506.13585): -sg(clip(ratio)) * A * log_prob.
VERL_API PolicyLossOutput compute_policy_loss_cispo(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                    const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                                    const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                    const torch::Tensor& rollout_is_weights = {});

// verl's "bypass_mode" (rollout correction's loss when old_log_prob is the rollout's own log-prob, nothing
// recomputed): config.policy_loss.rollout_correction (required, InvalidArgument otherwise) gives IS weights and a
// rejection mask of log_prob (detached) against old_log_prob (rollout_correction.h); loss_type "ppo_clip" runs
// vanilla on the kept tokens without the weights (the ratio already is pi / pi_rollout), "reinforce" runs
// compute_policy_loss_reinforce with them. rollout_is_weights is ignored (computed here, as verl). Metrics: the
// loss's plus the rollout_corr/* ones. (cpp/src/algo/bypass_mode_loss.cpp)
VERL_API PolicyLossOutput compute_policy_loss_bypass_mode(const torch::Tensor& old_log_prob,
                                                          const torch::Tensor& log_prob,
                                                          const torch::Tensor& advantages,
                                                          const torch::Tensor& response_mask,
                                                          const std::string& loss_agg_mode,
                                                          const PolicyLossConfig& config,
                                                          const torch::Tensor& rollout_is_weights = {});

// verl's deprecated compute_policy_loss: vanilla PPO without config, weights or global batch info.
struct VERL_API ClippedPolicyLoss {
  torch::Tensor pg_loss;            // scalar
  torch::Tensor pg_clipfrac;        // scalar: share of masked tokens where the clip was taken
  torch::Tensor ppo_kl;             // scalar: masked mean of old_log_prob - log_prob
  torch::Tensor pg_clipfrac_lower;  // scalar: share where the dual clip (A < 0) was taken
};
// cliprange_low/high default to cliprange; InvalidArgument when one ends up unset or clip_ratio_c <= 1.
VERL_API ClippedPolicyLoss compute_policy_loss(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                               const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                               std::optional<double> cliprange,
                                               std::optional<double> cliprange_low = std::nullopt,
                                               std::optional<double> cliprange_high = std::nullopt,
                                               double clip_ratio_c = 3.0,
                                               const std::string& loss_agg_mode = "token-mean");

// The policy-loss registry, holding every built-in above under verl's name ("vanilla", "dppo_tv",
// "dppo_kl", "gspo", "sapo", "gpg", "clip_cov", "kl_cov", "geo_mean", "dro", "cispo", "bypass_mode").
VERL_API Registry<PolicyLossFn>& policy_loss_registry();
// Registers fn under name; the same identity again is a no-op, another one under a taken name throws.
VERL_API void register_policy_loss(const std::string& name, PolicyLossFn fn, const void* identity);
// The loss registered under name; InvalidArgument listing the registered names otherwise.
VERL_API PolicyLossFn get_policy_loss_fn(const std::string& name);

}  // namespace verl::algo
