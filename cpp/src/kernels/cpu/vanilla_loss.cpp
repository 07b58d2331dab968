// verl::vanilla_token_losses on CPU (kernels/ops.h): the per-token vanilla (dual-clip PPO) policy
// loss, its derivative w.r.t. log_prob and the metrics' masked sums in one pass. verl evaluates the
// same formula as ~25 full-matrix tensor ops forward and ~15 backward.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cmath>
#include <mutex>

namespace verl::kernels::cpu {
namespace {

struct Sums {
  double clipfrac = 0, clipfrac_lower = 0, neg_kl = 0, mask = 0, loss = 0;
  int64_t bad_old = 0, bad_new = 0, bad_adv = 0;

  void add(const Sums& o) {
    clipfrac += o.clipfrac;
    clipfrac_lower += o.clipfrac_lower;
    neg_kl += o.neg_kl;
    mask += o.mask;
    loss += o.loss;
    bad_old += o.bad_old;
    bad_new += o.bad_new;
    bad_adv += o.bad_adv;
  }
};

// autograd's split of a gradient between the operands of maximum/minimum: all to the winner, half
// each on a tie.
template <typename T>
T winner_share(bool wins, bool tie) {
  return tie ? T(0.5) : (wins ? T(1) : T(0));
}

template <typename scalar_t, typename mask_t>
Sums token_losses(const scalar_t* old_lp, const scalar_t* new_lp, const scalar_t* adv, const mask_t* mask,
                  scalar_t* loss, scalar_t* dloss, bool reduce, int64_t begin, int64_t end, scalar_t lo,
                  scalar_t hi, scalar_t clip_c) {
  Sums s;
  for (int64_t i = begin; i < end; ++i) {
    const auto m = static_cast<scalar_t>(mask[i]);
    if (mask[i] == mask_t(0)) {
      if (!reduce) loss[i] = 0;
      dloss[i] = 0;
      continue;
    }
    s.mask += m;
    s.bad_old += !std::isfinite(old_lp[i]);
    s.bad_new += !std::isfinite(new_lp[i]);
    s.bad_adv += !std::isfinite(adv[i]);
    const scalar_t a = adv[i];
    // Each step is one ATen op of verl's formula, rounded to scalar_t the same way.
    const scalar_t log_ratio = new_lp[i] - old_lp[i];
    const bool kl_unclamped = log_ratio >= scalar_t(-20) && log_ratio <= scalar_t(20);
    const scalar_t negative_approx_kl = std::min(std::max(log_ratio, scalar_t(-20)), scalar_t(20));
    const scalar_t ratio = std::exp(negative_approx_kl);
    s.neg_kl += static_cast<double>(-negative_approx_kl * m);
    const scalar_t neg_a = -a;
    const scalar_t pg_losses1 = neg_a * ratio;
    const bool ratio_unclipped = ratio >= lo && ratio <= hi;
    const scalar_t pg_losses2 = neg_a * std::min(std::max(ratio, lo), hi);
    const scalar_t clip_pg_losses1 = std::max(pg_losses1, pg_losses2);
    s.clipfrac += (pg_losses2 > pg_losses1) ? static_cast<double>(m) : 0.0;
    const scalar_t pg_losses3 = neg_a * clip_c;
    const scalar_t clip_pg_losses2 = std::min(pg_losses3, clip_pg_losses1);
    const bool negative = a < scalar_t(0);
    s.clipfrac_lower += (clip_pg_losses1 > pg_losses3 && negative) ? static_cast<double>(m) : 0.0;
    const scalar_t token_loss = negative ? clip_pg_losses2 : clip_pg_losses1;
    if (reduce) {
      s.loss += static_cast<double>(token_loss * m);  // verl's masked_sum: loss * mask over the mask
    } else {
      loss[i] = token_loss;
    }

    // d loss / d log_prob, backwards through the same ops.
    const scalar_t d_clip1 =
        negative ? winner_share<scalar_t>(clip_pg_losses1 < pg_losses3, clip_pg_losses1 == pg_losses3) : scalar_t(1);
    const bool tie12 = pg_losses1 == pg_losses2;
    const scalar_t d_l1 = d_clip1 * winner_share<scalar_t>(pg_losses1 > pg_losses2, tie12);
    const scalar_t d_l2 = d_clip1 * winner_share<scalar_t>(pg_losses2 > pg_losses1, tie12);
    const scalar_t d_ratio = d_l1 * neg_a + (ratio_unclipped ? d_l2 * neg_a : scalar_t(0));
    const scalar_t d_token = kl_unclamped ? d_ratio * ratio : scalar_t(0);
    dloss[i] = reduce ? d_token * m : d_token;
  }
  return s;
}

// The kernel run over all tokens: fills pg_losses and dloss, returns the sums.
Sums run_kernel(const torch::Tensor& old_lp, const torch::Tensor& new_lp, const torch::Tensor& adv,
                const torch::Tensor& mask, torch::Tensor& pg_losses, torch::Tensor& dloss, bool reduce,
                double clip_low, double clip_high, double clip_ratio_c) {
  Sums total;
  std::mutex total_mutex;
  const int64_t n = new_lp.numel();
  AT_DISPATCH_FLOATING_TYPES(new_lp.scalar_type(), "vanilla_token_losses", [&] {
    using value_t = scalar_t;
    // 1 - clip_low etc. rounded to the dtype, as ATen rounds Python scalars.
    const auto lo = static_cast<value_t>(1 - clip_low), hi = static_cast<value_t>(1 + clip_high);
    const auto clip_c = static_cast<value_t>(clip_ratio_c);
    AT_DISPATCH_ALL_TYPES_AND3(torch::kBool, torch::kHalf, torch::kBFloat16, mask.scalar_type(),
                               "vanilla_token_losses_mask", [&] {
      const value_t *o = old_lp.data_ptr<value_t>(), *l = new_lp.data_ptr<value_t>(), *a = adv.data_ptr<value_t>();
      const scalar_t* m = mask.data_ptr<scalar_t>();
      value_t* out = reduce ? nullptr : pg_losses.data_ptr<value_t>();
      value_t* d = dloss.data_ptr<value_t>();
      at::parallel_for(0, n, 1 << 15, [&](int64_t begin, int64_t end) {
        const Sums part = token_losses<value_t, scalar_t>(o, l, a, m, out, d, reduce, begin, end, lo, hi, clip_c);
        const std::lock_guard<std::mutex> lock(total_mutex);
        total.add(part);
      });
    });
  });
  return total;
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> vanilla_token_losses(
    const torch::Tensor& old_log_prob, const torch::Tensor& log_prob, const torch::Tensor& advantages,
    const torch::Tensor& response_mask, double clip_low, double clip_high, double clip_ratio_c, bool reduce) {
  const torch::Tensor new_lp = log_prob.contiguous();
  torch::Tensor dloss = torch::empty_like(new_lp, torch::MemoryFormat::Contiguous);
  torch::Tensor pg_losses = reduce ? torch::Tensor() : torch::empty_like(dloss);
  const Sums s = run_kernel(old_log_prob.contiguous(), new_lp, advantages.contiguous(), response_mask.contiguous(),
                            pg_losses, dloss, reduce, clip_low, clip_high, clip_ratio_c);
  if (reduce) pg_losses = torch::scalar_tensor(s.loss, new_lp.options());
  const torch::Tensor sums = torch::tensor({s.clipfrac, s.clipfrac_lower, s.neg_kl, s.mask, double(s.bad_old),
                                            double(s.bad_new), double(s.bad_adv)},
                                           torch::kDouble);
  return {pg_losses, dloss, sums};
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CPU, m) { m.impl("vanilla_token_losses", TORCH_FN(vanilla_token_losses)); }

}  // namespace verl::kernels::cpu
