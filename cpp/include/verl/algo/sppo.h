// SPPO (Self-Play Preference Optimization, arXiv 2405.00675, the paper's form; verl's recipe/sppo regresses onto
// r - softmean(r) instead): the win-rate advantage
// (algorithm.adv_estimator=sppo) and the squared regression loss (actor policy_loss.loss_mode=sppo). Used by the
// PPO trainer's advantage stage, the actor's policy-loss registry and the bindings.
//
// Iteration t samples K responses per prompt from pi_t and estimates each one's win probability against pi_t from
// the others of its group, P(y > pi_t | x) ~ mean_{y' != y} P(y > y'), with the Bradley-Terry preference of the
// scores a reward function or reward model gives: P(y > y') = sigmoid(r(y) - r(y')). The new policy regresses
//   log pi(y|x) - log pi_t(y|x)  onto  eta * (P(y > pi_t | x) - 1/2)
// (squared loss). pi_t is the policy that generated the batch (the old-log-prob pass), so the reference moves on
// with every training step, as in verl's recipe.
#pragma once

#include <string>

#include <torch/types.h>

#include "verl/algo/advantage.h"
#include "verl/algo/policy_loss.h"
#include "verl/core/config.h"
#include "verl/core/export.h"

namespace verl::algo {

// scores (bs,) floating, finite; index (bs,) integer group ids (equal id = same prompt) -> (bs,) float64 win
// probabilities: the mean of sigmoid(score_i - score_j) over the other rows j of i's group, 1/2 for a group of one.
// InvalidArgument for an empty batch, mismatched sizes, a non-integer index or a non-finite score.
VERL_API torch::Tensor compute_sppo_win_rate(const torch::Tensor& scores, const torch::Tensor& index);

// The SPPO regression target as an advantage: score = row sum of token_level_rewards (as the outcome estimators),
// a = eta * (win rate - 1/2) broadcast over the row and multiplied by the mask; advantages == returns, in the
// rewards' dtype. eta must be finite and > 0 (InvalidArgument otherwise); the checks of advantage.h apply.
VERL_API AdvantageResult compute_sppo_advantage(const torch::Tensor& token_level_rewards,
                                                const torch::Tensor& response_mask, const torch::Tensor& index,
                                                double eta);

// The SPPO loss on (bs, response_length) tensors as every policy loss (policy_loss.h): per sequence,
// log_ratio = sum over the mask of (log_prob - old_log_prob), target = the row's advantage (the value at its first
// response token: compute_sppo_advantage's eta * (P - 1/2)), loss = (log_ratio - target)^2; the batch loss is the
// mean over sequences with at least one response token (verl's recipe), normalised by
// config.global_batch_info.global_batch_size when set (micro-batches add up to the mini-batch's loss). A per-
// sequence loss, so loss_agg_mode is not read. rollout_is_weights must be undefined (InvalidArgument: token
// importance weights have no meaning for a sequence regression). Metrics: actor/log_ratio_mean,
// actor/preference_mean (the mean target), over the sequences with response tokens. In policy_loss_registry() as
// "sppo".
VERL_API PolicyLossOutput compute_policy_loss_sppo(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                                   const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                                   const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                   const torch::Tensor& rollout_is_weights = {});

// policy_loss.loss_mode=sppo regresses whole-sequence log-ratios: ConfigError for rollout importance weights
// (algorithm.rollout_correction.rollout_is) or a loss_agg_mode other than its default, which would have no effect.
VERL_API void check_sppo_loss_config(const Config& config);

}  // namespace verl::algo
