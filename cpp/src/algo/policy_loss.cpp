// Policy losses (see policy_loss.h), each following verl's trainer/ppo/core_algos.py formula for formula.
#include "verl/algo/policy_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "algo/loss_common.h"
#include "algo/vanilla_loss_kernel.h"
#include "verl/algo/functional.h"
#include "verl/algo/sppo.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace {

using detail::agg_loss_unchecked;

// The validated inputs of one loss call, zeroed outside the mask (see detail::zero_outside).
struct Inputs {
  torch::Tensor old_log_prob, log_prob, advantages, mask, weights;  // weights undefined = none
};

Inputs prepare(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob, const torch::Tensor& advantages,
               const torch::Tensor& response_mask, const torch::Tensor& rollout_is_weights) {
  detail::check_loss_inputs({response_mask, "response_mask"},
                            {{old_log_prob, "old_log_prob"}, {log_prob, "log_prob"}, {advantages, "advantages"}},
                            {{rollout_is_weights, "rollout_is_weights"}});
  Inputs in;
  in.mask = response_mask;
  in.old_log_prob = detail::zero_outside(old_log_prob, response_mask);
  in.log_prob = detail::zero_outside(log_prob, response_mask);
  in.advantages = detail::zero_outside(advantages, response_mask);
  if (rollout_is_weights.defined()) in.weights = detail::zero_outside(rollout_is_weights, response_mask);
  return in;
}

torch::Tensor apply_weights(const torch::Tensor& pg_losses, const Inputs& in) {
  return in.weights.defined() ? pg_losses * in.weights : pg_losses;
}

double value_of(const torch::Tensor& t) { return t.detach().item<double>(); }

// verl's `tensor.float()`: indicator metrics are float32 whatever the input dtype.
torch::Tensor as_float(const torch::Tensor& t) { return t.to(torch::kFloat); }

// log(pi / pi_old), clamped to [-20, 20] "for stability" where verl does so.
torch::Tensor clamped_log_ratio(const Inputs& in) { return torch::clamp(in.log_prob - in.old_log_prob, -20.0, 20.0); }

double clip_low(const PolicyLossConfig& c) { return c.clip_ratio_low.value_or(c.clip_ratio); }
double clip_high(const PolicyLossConfig& c) { return c.clip_ratio_high.value_or(c.clip_ratio); }

// The PPO token losses shared by vanilla and the deprecated compute_policy_loss, before weights.
struct DualClipTerms {
  torch::Tensor pg_losses, pg_clipfrac, ppo_kl, pg_clipfrac_lower;
};

DualClipTerms dual_clip_terms(const Inputs& in, double cliprange_low, double cliprange_high, double clip_ratio_c) {
  VERL_CHECK(clip_ratio_c > 1.0,
             "The lower bound of the clip_ratio_c for dual-clip PPO should be greater than 1.0, but get the value: ",
             clip_ratio_c, ".");
  const torch::Tensor& adv = in.advantages;
  const torch::Tensor negative_approx_kl = clamped_log_ratio(in);
  const torch::Tensor ratio = torch::exp(negative_approx_kl);
  DualClipTerms t;
  t.ppo_kl = masked_mean(-negative_approx_kl, in.mask);
  const torch::Tensor pg_losses1 = -adv * ratio;
  const torch::Tensor pg_losses2 = -adv * torch::clamp(ratio, 1 - cliprange_low, 1 + cliprange_high);
  const torch::Tensor clip_pg_losses1 = torch::maximum(pg_losses1, pg_losses2);  // max(-rA, -clip(r)A)
  t.pg_clipfrac = masked_mean(as_float(torch::gt(pg_losses2, pg_losses1)), in.mask);
  // Dual clip: for A < 0 the loss is also bounded by -A * clip_ratio_c.
  const torch::Tensor pg_losses3 = -adv * clip_ratio_c;
  const torch::Tensor clip_pg_losses2 = torch::minimum(pg_losses3, clip_pg_losses1);
  t.pg_clipfrac_lower = masked_mean(as_float(torch::gt(clip_pg_losses1, pg_losses3) & (adv < 0)), in.mask);
  t.pg_losses = torch::where(adv < 0, clip_pg_losses2, clip_pg_losses1);
  return t;
}

Metrics clip_metrics(const torch::Tensor& pg_clipfrac, const torch::Tensor& ppo_kl, double pg_clipfrac_lower) {
  return {{"actor/pg_clipfrac", value_of(pg_clipfrac)},
          {"actor/ppo_kl", value_of(ppo_kl)},
          {"actor/pg_clipfrac_lower", pg_clipfrac_lower}};
}

// The two DPPO losses differ only in which tokens stay inside the trust region (`valid`, 0/1 float).
PolicyLossOutput dppo_loss(const Inputs& in, const torch::Tensor& negative_approx_kl, const torch::Tensor& valid,
                           const std::string& loss_agg_mode, const PolicyLossConfig& config) {
  const torch::Tensor ratio = torch::exp(negative_approx_kl);
  const torch::Tensor ppo_kl = masked_mean(-negative_approx_kl, in.mask);
  // verl reads config.get("clip_ratio_c", 20.0): an ActorConfig always has clip_ratio_c (default
  // 3.0), so the truncation bound is clip_ratio_c, and 20 only for a dict config without the key.
  const double clip_ratio_c = config.clip_ratio_c;
  const torch::Tensor truncated_ratio = torch::clamp_max(ratio, clip_ratio_c).detach();
  // Truncated IS instead of PPO's clip: the gradient flows through log_prob only.
  const torch::Tensor pg_losses = apply_weights(-in.advantages * truncated_ratio * in.log_prob * valid, in);
  PolicyLossOutput out;
  out.pg_loss = agg_loss_unchecked(pg_losses, in.mask, loss_agg_mode, config.global_batch_info);
  const torch::Tensor pg_clipfrac = masked_mean(1.0 - valid, in.mask);
  const torch::Tensor pg_clipfrac_lower = masked_mean(as_float(ratio > clip_ratio_c) * valid, in.mask);
  out.metrics = clip_metrics(pg_clipfrac, ppo_kl, value_of(pg_clipfrac_lower));
  return out;
}

}  // namespace

ClippedPolicyLoss compute_policy_loss(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                      const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                      std::optional<double> cliprange, std::optional<double> cliprange_low,
                                      std::optional<double> cliprange_high, double clip_ratio_c,
                                      const std::string& loss_agg_mode) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, {});
  if (!cliprange_low) cliprange_low = cliprange;
  if (!cliprange_high) cliprange_high = cliprange;
  VERL_CHECK(cliprange_low && cliprange_high,
             "compute_policy_loss needs cliprange, or both cliprange_low and cliprange_high");
  const DualClipTerms t = dual_clip_terms(in, *cliprange_low, *cliprange_high, clip_ratio_c);
  return {agg_loss_unchecked(t.pg_losses, in.mask, loss_agg_mode, GlobalBatchInfo{}), t.pg_clipfrac, t.ppo_kl,
          t.pg_clipfrac_lower};
}

PolicyLossOutput detail::compute_policy_loss_vanilla_aten(const torch::Tensor& old_log_prob,
                                                          const torch::Tensor& log_prob,
                                                          const torch::Tensor& advantages,
                                                          const torch::Tensor& response_mask,
                                                          const std::string& loss_agg_mode,
                                                          const PolicyLossConfig& config,
                                                          const torch::Tensor& rollout_is_weights) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const DualClipTerms t = dual_clip_terms(in, clip_low(config), clip_high(config), config.clip_ratio_c);
  PolicyLossOutput out;
  out.pg_loss = agg_loss_unchecked(apply_weights(t.pg_losses, in), in.mask, loss_agg_mode, config.global_batch_info);
  out.metrics = clip_metrics(t.pg_clipfrac, t.ppo_kl, value_of(t.pg_clipfrac_lower));
  return out;
}

PolicyLossOutput compute_policy_loss_vanilla(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                             const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                             const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                             const torch::Tensor& rollout_is_weights) {
  if (!detail::vanilla_fusable(old_log_prob, log_prob, advantages, response_mask)) {
    return detail::compute_policy_loss_vanilla_aten(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
                                            rollout_is_weights);
  }
  // CPU: the token losses, their gradient and the metric sums in one fused pass (same formula).
  detail::check_loss_shapes({response_mask, "response_mask"},
                            {{old_log_prob, "old_log_prob"}, {log_prob, "log_prob"}, {advantages, "advantages"}});
  detail::check_loss_inputs({response_mask, "response_mask"}, {}, {{rollout_is_weights, "rollout_is_weights"}});
  VERL_CHECK(config.clip_ratio_c > 1.0,
             "The lower bound of the clip_ratio_c for dual-clip PPO should be greater than 1.0, but get the value: ",
             config.clip_ratio_c, ".");
  // token-mean / token-sum without weights only need the masked token sum: the kernel takes it, and
  // no (bs, T) loss matrix is built.
  const bool reduce = !rollout_is_weights.defined() && (loss_agg_mode == "token-mean" || loss_agg_mode == "token-sum");
  const detail::VanillaTokenLosses t =
      detail::vanilla_token_losses(old_log_prob, log_prob, advantages, response_mask, clip_low(config),
                                   clip_high(config), config.clip_ratio_c, reduce);
  PolicyLossOutput out;
  if (reduce) {
    const auto num_tokens = [&] { return torch::scalar_tensor(t.mask_sum, t.pg_losses.options()); };
    out.pg_loss = detail::agg_token_total(t.pg_losses, num_tokens, loss_agg_mode, config.global_batch_info);
  } else {
    torch::Tensor pg_losses = t.pg_losses;
    if (rollout_is_weights.defined()) pg_losses = pg_losses * detail::zero_outside(rollout_is_weights, response_mask);
    out.pg_loss = agg_loss_unchecked(pg_losses, response_mask, loss_agg_mode, config.global_batch_info);
  }
  // verl's masked_mean: masked sum / (mask.sum() + 1e-8), in the dtype ATen's promotion gives the
  // metric: float32 for the clip fractions (`.float()` indicators) unless the mask is float64.
  auto masked_mean_of = [&](double sum, torch::ScalarType values_dtype) {
    if (torch::promote_types(values_dtype, response_mask.scalar_type()) == torch::kDouble) {
      return sum / (t.mask_sum + 1e-8);
    }
    return static_cast<double>(static_cast<float>(sum) / (static_cast<float>(t.mask_sum) + 1e-8F));
  };
  out.metrics = {{"actor/pg_clipfrac", masked_mean_of(t.clipfrac_sum, torch::kFloat)},
                 {"actor/ppo_kl", masked_mean_of(t.neg_kl_sum, log_prob.scalar_type())},
                 {"actor/pg_clipfrac_lower", masked_mean_of(t.clipfrac_lower_sum, torch::kFloat)}};
  return out;
}

PolicyLossOutput compute_policy_loss_dppo_tv(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                             const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                             const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                             const torch::Tensor& rollout_is_weights) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  // clip_ratio_low/high are total-variation thresholds here, not ratio clips.
  const torch::Tensor prob_change = torch::exp(in.log_prob) - torch::exp(in.old_log_prob);
  const torch::Tensor valid = torch::where(in.advantages > 0, prob_change <= clip_high(config),
                                           prob_change >= -clip_low(config));
  return dppo_loss(in, clamped_log_ratio(in), as_float(valid.detach()), loss_agg_mode, config);
}

PolicyLossOutput compute_policy_loss_dppo_kl(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                             const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                             const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                             const torch::Tensor& rollout_is_weights) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor prob = torch::exp(in.log_prob);
  const torch::Tensor old_prob = torch::exp(in.old_log_prob);
  // KL(Bernoulli(old_prob) || Bernoulli(prob)): the sampled token vs everything else.
  const torch::Tensor binary_kl = old_prob * (in.old_log_prob - in.log_prob) +
                                  (1 - old_prob) * torch::log((1.0 - old_prob + 1e-8) / (1.0 - prob + 1e-8));
  // Only a move in the advantage's direction can leave the trust region.
  const torch::Tensor valid_positive = (binary_kl <= clip_high(config)) | (prob <= old_prob);
  const torch::Tensor valid_negative = (binary_kl <= clip_low(config)) | (prob >= old_prob);
  const torch::Tensor valid = torch::where(in.advantages > 0, valid_positive, valid_negative);
  return dppo_loss(in, clamped_log_ratio(in), as_float(valid.detach()), loss_agg_mode, config);
}

PolicyLossOutput compute_policy_loss_gspo(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                          const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                          const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                          const torch::Tensor& rollout_is_weights) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor negative_approx_kl = in.log_prob - in.old_log_prob;  // not clamped, as verl
  // log s_i = mean over the sequence's tokens of log(pi / pi_old); empty rows divide by 1.
  const torch::Tensor seq_lengths = in.mask.sum(-1).clamp_min(1);
  const torch::Tensor negative_approx_kl_seq = (negative_approx_kl * in.mask).sum(-1) / seq_lengths;  // (bs,)
  // log s_i,t = sg[log s_i] + log_prob - sg[log_prob]: the value of s_i, the gradient of pi_t.
  const torch::Tensor log_seq_importance_ratio = torch::clamp_max(
      in.log_prob - in.log_prob.detach() + negative_approx_kl_seq.detach().unsqueeze(-1), 10.0);
  const torch::Tensor seq_importance_ratio = torch::exp(log_seq_importance_ratio);
  const torch::Tensor pg_losses1 = -in.advantages * seq_importance_ratio;
  const torch::Tensor pg_losses2 =
      -in.advantages * torch::clamp(seq_importance_ratio, 1 - clip_low(config), 1 + clip_high(config));
  const torch::Tensor pg_losses = apply_weights(torch::maximum(pg_losses1, pg_losses2), in);
  PolicyLossOutput out;
  out.pg_loss = agg_loss_unchecked(pg_losses, in.mask, loss_agg_mode, config.global_batch_info);
  const torch::Tensor pg_clipfrac = masked_mean(as_float(torch::gt(pg_losses2, pg_losses1)), in.mask);
  out.metrics = clip_metrics(pg_clipfrac, masked_mean(-negative_approx_kl, in.mask), 0.0);
  return out;
}

PolicyLossOutput compute_policy_loss_sapo(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                          const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                          const std::string& /*loss_agg_mode*/, const PolicyLossConfig& config,
                                          const torch::Tensor& rollout_is_weights) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor negative_approx_kl = clamped_log_ratio(in);
  const torch::Tensor ratio = torch::exp(negative_approx_kl);
  const torch::Tensor tau_pos = torch::full({}, config.tau_pos, in.advantages.options());
  const torch::Tensor tau_neg = torch::full({}, config.tau_neg, in.advantages.options());
  const torch::Tensor taus = torch::where(in.advantages > 0, tau_pos, tau_neg);
  // Gate f(r) = sigmoid(tau (r - 1)) * 4 / tau: slope 1 at r = 1, smoothly flat far from it.
  const torch::Tensor gates = torch::sigmoid(taus * (ratio - 1.0)) * (4.0 / taus);
  const torch::Tensor pg_losses = apply_weights(-gates * in.advantages, in);
  PolicyLossOutput out;
  // verl aggregates SAPO per sequence whatever loss_agg_mode the caller passes.
  out.pg_loss = agg_loss_unchecked(pg_losses, in.mask, "seq-mean-token-mean", config.global_batch_info);
  out.metrics = {{"actor/pg_clipfrac", 0.0},
                 {"actor/ppo_kl", value_of(masked_mean(-negative_approx_kl, in.mask))},
                 {"actor/pg_clipfrac_lower", 0.0}};
  return out;
}

PolicyLossOutput compute_policy_loss_gpg(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                         const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                         const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                         const torch::Tensor& rollout_is_weights) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor pg_losses = apply_weights(-in.log_prob * in.advantages, in);
  return {agg_loss_unchecked(pg_losses, in.mask, loss_agg_mode, config.global_batch_info), {}};
}

PolicyLossOutput compute_policy_loss_clip_cov(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                              const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                              const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                              const torch::Tensor& rollout_is_weights) {
  const auto& opts = config.policy_loss;
  VERL_CHECK(opts.clip_cov_ratio > 0, "policy_loss.clip_cov_ratio should be larger than 0, got ",
             opts.clip_cov_ratio);
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor& adv = in.advantages;
  const torch::Tensor negative_approx_kl = in.log_prob - in.old_log_prob;  // not clamped, as verl
  const torch::Tensor ratio = torch::exp(negative_approx_kl);
  const torch::Tensor ppo_kl = masked_mean(-negative_approx_kl, in.mask);
  const torch::Tensor pg_losses1 = -adv * ratio;
  const torch::Tensor pg_losses2 = -adv * torch::clamp(ratio, 1 - clip_low(config), 1 + clip_high(config));
  const torch::Tensor valid = in.mask > 0;
  const torch::Tensor clip_by_origin = (pg_losses2 > pg_losses1) & valid;

  // Candidates: valid tokens PPO did not clip whose covariance term lies in (lb, ub). The covariance
  // only selects tokens, so it is computed without gradient.
  const torch::Tensor lp = in.log_prob.detach();
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const torch::Tensor cov_all = ((adv - masked_mean(adv, in.mask)) * (lp - masked_mean(lp, in.mask)))
                                    .masked_fill(in.mask == 0, neg_inf)
                                    .masked_fill(clip_by_origin, neg_inf);
  const auto clip_num =
      std::max<int64_t>(static_cast<int64_t>(opts.clip_cov_ratio * in.mask.sum().item<double>()), 1);
  const torch::Tensor candidates =
      torch::nonzero((cov_all < opts.clip_cov_ub) & (cov_all > opts.clip_cov_lb) & valid);  // (n, 2)
  torch::Tensor corr = torch::ones_like(adv);
  if (candidates.size(0) > 0) {
    // A random subset of clip_num candidates: verl draws torch.randperm from the default CPU generator.
    const torch::Tensor perm = torch::randperm(candidates.size(0), torch::TensorOptions().dtype(torch::kLong));
    const torch::Tensor chosen = candidates.index_select(
        0, perm.slice(0, 0, std::min(clip_num, candidates.size(0))).to(candidates.device()));
    corr.index_put_({chosen.select(1, 0), chosen.select(1, 1)}, 0);
  }
  const torch::Tensor pg_clipfrac = masked_mean(as_float(corr == 0), in.mask);
  const torch::Tensor pg_losses = apply_weights(torch::maximum(pg_losses1, pg_losses2) * corr, in);
  PolicyLossOutput out;
  out.pg_loss = agg_loss_unchecked(pg_losses, in.mask, loss_agg_mode, config.global_batch_info);
  out.metrics = {{"actor/pg_clipfrac", value_of(pg_clipfrac)}, {"actor/ppo_kl", value_of(ppo_kl)}};
  return out;
}

PolicyLossOutput compute_policy_loss_kl_cov(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                            const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                            const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                            const torch::Tensor& rollout_is_weights) {
  const auto& opts = config.policy_loss;
  VERL_CHECK(opts.kl_cov_ratio > 0, "policy_loss.kl_cov_ratio should be larger than 0, got ", opts.kl_cov_ratio);
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor negative_approx_kl = in.log_prob - in.old_log_prob;  // not clamped, as verl
  const torch::Tensor abs_kl = negative_approx_kl.abs();
  const torch::Tensor ratio = torch::exp(negative_approx_kl);
  const torch::Tensor ppo_kl_abs = masked_mean(abs_kl, in.mask);
  const torch::Tensor pg_losses1 = -in.advantages * ratio;
  const torch::Tensor pg_losses_kl = pg_losses1 + opts.ppo_kl_coef * abs_kl;

  // The valid tokens in row-major order, their centred covariance (A, log_prob) without gradient,
  // and the max(1, int(n * kl_cov_ratio)) largest of them get the KL penalty.
  torch::Tensor pg_losses = pg_losses1;
  const torch::Tensor valid_idx = torch::nonzero((in.mask > 0).reshape(-1)).squeeze(-1);  // flat, (n,)
  const int64_t n = valid_idx.numel();
  if (n > 0) {
    const torch::Tensor valid_adv = in.advantages.detach().reshape(-1).index_select(0, valid_idx);
    const torch::Tensor valid_logp = in.log_prob.detach().reshape(-1).index_select(0, valid_idx);
    const torch::Tensor cov = (valid_adv - valid_adv.mean()) * (valid_logp - valid_logp.mean());
    const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * opts.kl_cov_ratio));
    const torch::Tensor top = std::get<1>(torch::topk(cov, k, /*dim=*/0, /*largest=*/true));
    torch::Tensor penalised = torch::zeros({in.mask.numel()}, in.mask.options().dtype(torch::kBool));
    penalised.index_fill_(0, valid_idx.index_select(0, top), true);
    pg_losses = torch::where(penalised.view(in.mask.sizes()), pg_losses_kl, pg_losses1);
  }
  PolicyLossOutput out;
  out.pg_loss = agg_loss_unchecked(apply_weights(pg_losses, in), in.mask, loss_agg_mode, config.global_batch_info);
  out.metrics = {{"actor/ppo_kl", value_of(ppo_kl_abs)}};
  return out;
}

PolicyLossOutput compute_policy_loss_geo_mean(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                              const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                              const std::string& /*loss_agg_mode*/, const PolicyLossConfig& config,
                                              const torch::Tensor& rollout_is_weights) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor& adv = in.advantages;
  const torch::Tensor negative_approx_kl = in.log_prob - in.old_log_prob;  // verl leaves the clamp commented out
  const torch::Tensor ppo_kl = masked_mean(-negative_approx_kl, in.mask);
  // Token-level clip in log space, [-clip_ratio_low, clip_ratio_high], taken only when it lowers
  // the objective sign(A) * log r.
  const torch::Tensor sgn_advantage = torch::sign(adv);
  const torch::Tensor negative_approx_kl_clamp = torch::clamp(negative_approx_kl, -clip_low(config), clip_high(config));
  const torch::Tensor negative_approx_kl_min =
      sgn_advantage * torch::minimum(sgn_advantage * negative_approx_kl, sgn_advantage * negative_approx_kl_clamp);
  // Per sequence: the geometric mean of the ratios and the mean advantage.
  const torch::Tensor tokens = in.mask.sum(-1) + 1e-8;  // (bs,)
  const torch::Tensor ratio = torch::exp((negative_approx_kl_min * in.mask).sum(-1) / tokens);
  const torch::Tensor advantage = (adv * in.mask).sum(-1) / tokens;
  torch::Tensor pg_losses = -advantage * ratio;  // (bs,)
  if (in.weights.defined()) {
    // Token IS weights become one per sequence through their geometric mean.
    pg_losses = pg_losses * torch::exp((torch::log(in.weights + 1e-10) * in.mask).sum(-1) / tokens);
  }
  PolicyLossOutput out;
  // verl averages over sequences (fully masked ones included, as 0), ignoring loss_agg_mode and
  // global_batch_info.
  out.pg_loss = pg_losses.mean();
  const torch::Tensor clipped = torch::ne(negative_approx_kl, negative_approx_kl_clamp);
  out.metrics = clip_metrics(masked_mean(as_float(clipped & (adv > 0)), in.mask), ppo_kl,
                             value_of(masked_mean(as_float(clipped & (adv < 0)), in.mask)));
  return out;
}

PolicyLossOutput compute_policy_loss_dro(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                         const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                         const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                         const torch::Tensor& rollout_is_weights) {
  const std::optional<double> beta = config.policy_loss.dro_beta;
  VERL_CHECK(beta && *beta > 0, "policy_loss.dro_beta must be a positive value when using DRO");
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor log_ratio = in.log_prob - in.old_log_prob;
  const torch::Tensor pg_losses =
      apply_weights(-(in.log_prob * in.advantages - 0.5 * *beta * log_ratio.square()), in);
  PolicyLossOutput out;
  out.pg_loss = agg_loss_unchecked(pg_losses, in.mask, loss_agg_mode, config.global_batch_info);
  out.metrics = {{"actor/ppo_kl", value_of(masked_mean(-log_ratio, in.mask))}};
  return out;
}

PolicyLossOutput compute_policy_loss_cispo(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                           const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                           const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                           const torch::Tensor& rollout_is_weights) {
  const Inputs in = prepare(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const torch::Tensor negative_approx_kl = clamped_log_ratio(in);
  const torch::Tensor ratio = torch::exp(negative_approx_kl);
  const torch::Tensor clipped_ratio = torch::clamp(ratio, 1 - clip_low(config), 1 + clip_high(config));
  // The clipped ratio is a constant weight: the gradient flows through log_prob only.
  const torch::Tensor pg_losses = apply_weights(-clipped_ratio.detach() * in.advantages * in.log_prob, in);
  PolicyLossOutput out;
  out.pg_loss = agg_loss_unchecked(pg_losses, in.mask, loss_agg_mode, config.global_batch_info);
  const torch::Tensor pg_clipfrac = masked_mean(as_float(ratio != clipped_ratio), in.mask);
  out.metrics = clip_metrics(pg_clipfrac, masked_mean(-negative_approx_kl, in.mask), 0.0);
  return out;
}

Registry<PolicyLossFn>& policy_loss_registry() {
  // Never destroyed: entries may wrap Python callables, which must not be released after the
  // interpreter has shut down.
  static Registry<PolicyLossFn>* registry = [] {
    auto* r = new Registry<PolicyLossFn>("policy loss");
    auto add = [r](const char* name, auto* fn) { r->add(name, fn, reinterpret_cast<const void*>(fn)); };
    add("vanilla", &compute_policy_loss_vanilla);
    add("dppo_tv", &compute_policy_loss_dppo_tv);
    add("dppo_kl", &compute_policy_loss_dppo_kl);
    add("gspo", &compute_policy_loss_gspo);
    add("sapo", &compute_policy_loss_sapo);
    add("gpg", &compute_policy_loss_gpg);
    add("clip_cov", &compute_policy_loss_clip_cov);
    add("kl_cov", &compute_policy_loss_kl_cov);
    add("geo_mean", &compute_policy_loss_geo_mean);
    add("dro", &compute_policy_loss_dro);
    add("cispo", &compute_policy_loss_cispo);
    add("bypass_mode", &compute_policy_loss_bypass_mode);
    add("sppo", &compute_policy_loss_sppo);  // the SPPO paper's squared loss (verl/algo/sppo.h)
    return r;
  }();
  return *registry;
}

void register_policy_loss(const std::string& name, PolicyLossFn fn, const void* identity) {
  VERL_CHECK(static_cast<bool>(fn), "register_policy_loss: the function for '", name, "' is empty");
  policy_loss_registry().add(name, std::move(fn), identity);
}

PolicyLossFn get_policy_loss_fn(const std::string& name) { return policy_loss_registry().get(name); }

}  // namespace verl::algo
