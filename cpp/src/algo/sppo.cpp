// SPPO's win-rate advantage and squared loss (see sppo.h).
#include "verl/algo/sppo.h"

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "algo/loss_common.h"
#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace {

// sigmoid(d) without overflow for large |d|.
double sigmoid(double d) {
  if (d >= 0) return 1.0 / (1.0 + std::exp(-d));
  const double e = std::exp(d);
  return e / (1.0 + e);
}

}  // namespace

torch::Tensor compute_sppo_win_rate(const torch::Tensor& scores, const torch::Tensor& index) {
  VERL_CHECK(scores.defined() && index.defined(), "compute_sppo_win_rate: scores and index are required");
  VERL_CHECK(scores.dim() == 1 && scores.numel() > 0, "compute_sppo_win_rate: scores must be a non-empty (bs,) "
             "tensor, got shape ", scores.sizes());
  VERL_CHECK(scores.is_floating_point(), "compute_sppo_win_rate: scores must be floating point, got ",
             scores.scalar_type());
  VERL_CHECK(index.dim() == 1 && index.size(0) == scores.size(0), "compute_sppo_win_rate: index must have shape [",
             scores.size(0), "] (one group id per row), got ", index.sizes());
  VERL_CHECK(!index.is_floating_point() && !index.is_complex() && index.scalar_type() != torch::kBool,
             "compute_sppo_win_rate: index must hold integer group ids, got ", index.scalar_type());
  // A group holds a handful of responses (rollout.n), so the pairs are few: one host copy, float64 sums.
  const torch::Tensor s = scores.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const torch::Tensor ids = index.to(torch::kCPU, torch::kLong).contiguous();
  const torch::Tensor bad = ~torch::isfinite(s);
  VERL_CHECK(!bad.any().item<bool>(), "compute_sppo_win_rate: ", bad.sum().item<int64_t>(),
             " score(s) are NaN or Inf; preferences need finite scores");
  const int64_t bs = s.size(0);
  const double* sv = s.data_ptr<double>();
  const int64_t* iv = ids.data_ptr<int64_t>();
  auto [sorted_ids, order] = ids.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
  const int64_t* ov = order.data_ptr<int64_t>();
  torch::Tensor out = torch::empty({bs}, torch::kDouble);
  double* pv = out.data_ptr<double>();
  for (int64_t begin = 0; begin < bs;) {
    int64_t end = begin + 1;
    while (end < bs && iv[ov[end]] == iv[ov[begin]]) ++end;
    const int64_t n = end - begin;
    for (int64_t a = begin; a < end; ++a) {
      const int64_t i = ov[a];
      if (n == 1) {
        pv[i] = 0.5;  // no opponent: no evidence either way
        continue;
      }
      double wins = 0.0;
      for (int64_t b = begin; b < end; ++b) {
        if (b != a) wins += sigmoid(sv[i] - sv[ov[b]]);
      }
      pv[i] = wins / static_cast<double>(n - 1);
    }
    begin = end;
  }
  return out.to(scores.device());
}

AdvantageResult compute_sppo_advantage(const torch::Tensor& token_level_rewards, const torch::Tensor& response_mask,
                                       const torch::Tensor& index, double eta) {
  VERL_CHECK(std::isfinite(eta) && eta > 0, "compute_sppo_advantage: eta must be a finite number > 0, got ", eta);
  VERL_CHECK(token_level_rewards.defined() && response_mask.defined(),
             "compute_sppo_advantage: token_level_rewards and response_mask are required");
  VERL_CHECK(token_level_rewards.dim() == 2 && token_level_rewards.numel() > 0,
             "compute_sppo_advantage: token_level_rewards must be a non-empty (bs, response_length) tensor, got shape ",
             token_level_rewards.sizes());
  VERL_CHECK(token_level_rewards.is_floating_point(), "compute_sppo_advantage: token_level_rewards must be floating "
             "point, got ", token_level_rewards.scalar_type());
  check_same_shape(token_level_rewards, "token_level_rewards", response_mask, "response_mask");
  torch::NoGradGuard no_grad;
  const torch::Tensor scores = token_level_rewards.to(torch::kDouble).sum(-1);
  const torch::Tensor target = eta * (compute_sppo_win_rate(scores, index) - 0.5);
  const torch::Tensor mask = response_mask.to(token_level_rewards.device()).ne(0).to(torch::kDouble);
  const torch::Tensor advantages = (target.unsqueeze(-1) * mask).to(token_level_rewards.scalar_type());
  return {advantages, advantages};
}

PolicyLossOutput compute_policy_loss_sppo(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                                          const torch::Tensor& advantages, const torch::Tensor& response_mask,
                                          const std::string& /*loss_agg_mode*/, const PolicyLossConfig& config,
                                          const torch::Tensor& rollout_is_weights) {
  detail::check_loss_inputs({response_mask, "response_mask"},
                            {{old_log_prob, "old_log_prob"}, {log_prob, "log_prob"}, {advantages, "advantages"}});
  VERL_CHECK(!rollout_is_weights.defined(), "policy loss 'sppo' regresses whole-sequence log-ratios and takes no "
             "token importance weights (rollout_is_weights); leave algorithm.rollout_correction.rollout_is unset");
  const torch::Tensor valid = response_mask.ne(0);
  // The row's first response token: where its (row-constant) target is read and its loss is placed.
  const torch::Tensor first = valid & (valid.to(torch::kLong).cumsum(-1) == 1);
  const torch::Tensor lp = detail::zero_outside(log_prob, valid);
  const torch::Tensor old = detail::zero_outside(old_log_prob, valid);
  const torch::Tensor log_ratio = (lp - old).sum(-1);                                   // (bs,)
  const torch::Tensor target = detail::zero_outside(advantages, first).sum(-1);        // (bs,)
  const torch::Tensor seq_loss = (log_ratio - target.to(log_ratio.scalar_type())).square();
  // One entry per sequence at its first token: "seq-mean-token-sum" is then the mean over sequences, with the
  // global batch's normalisation.
  const torch::Tensor loss_mat = seq_loss.unsqueeze(-1) * first.to(seq_loss.scalar_type());
  PolicyLossOutput out;
  out.pg_loss = detail::agg_loss_unchecked(loss_mat, first, "seq-mean-token-sum", config.global_batch_info);
  const torch::Tensor rows = valid.any(-1);
  const double n = std::max<double>(rows.sum().item<double>(), 1.0);
  out.metrics["actor/log_ratio_mean"] = (log_ratio.detach() * rows).sum().item<double>() / n;
  out.metrics["actor/preference_mean"] = (target * rows).sum().item<double>() / n;
  return out;
}

}  // namespace verl::algo
