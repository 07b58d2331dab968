// GAE as ATen ops, any device (kernels/ops.h): verl::gae_scan's reverse loop over time steps
// (~10 ops on (bs,) slices per step), and verl::gae_advantage_return as the checks, the scan (the
// verl::gae_scan op: a device's own kernel where it has one), returns and masked_whiten.
#include "kernels/aten/compositions.h"

#include <torch/library.h>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "kernels/ops.h"

namespace verl::kernels::aten {
namespace {

// (bs, T) -> (T, bs) contiguous, so the per-step ATen ops read and write whole contiguous rows.
torch::Tensor time_major(const torch::Tensor& t) { return t.t().contiguous(); }

}  // namespace

void check_gae_inputs(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask) {
  VERL_CHECK(rewards.dim() == 2 && rewards.sizes() == values.sizes() && rewards.sizes() == mask.sizes(),
             "gae: rewards, values and mask must have one (bs, T) shape, got ", rewards.sizes(), ", ", values.sizes(),
             " and ", mask.sizes());
  VERL_CHECK(rewards.scalar_type() == values.scalar_type() &&
                 (rewards.scalar_type() == torch::kFloat || rewards.scalar_type() == torch::kDouble),
             "gae: rewards and values must both be float32 or both float64, got ", rewards.scalar_type(), " and ",
             values.scalar_type());
  VERL_CHECK(!mask.is_complex(), "gae: mask must be bool, integer or floating, got ", mask.scalar_type());
}

torch::Tensor gae_scan_aten(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask,
                            double gamma, double lam) {
  check_gae_inputs(rewards, values, mask);
  torch::NoGradGuard no_grad;
  const torch::Tensor r_t = time_major(rewards), v_t = time_major(values), valid_t = time_major(mask.ne(0));
  torch::Tensor adv_t = torch::empty_like(r_t);
  const int64_t bs = rewards.size(0);
  torch::Tensor next_value = torch::zeros({bs}, r_t.options());
  torch::Tensor last_gae = torch::zeros({bs}, r_t.options());
  const double gamma_lam = gamma * lam;
  for (int64_t t = r_t.size(0) - 1; t >= 0; --t) {
    const torch::Tensor delta = r_t[t] + gamma * next_value - v_t[t];
    const torch::Tensor gae = delta + gamma_lam * last_gae;
    // verl blends with mask arithmetic; `where` gives the same result for a 0/1 mask and keeps
    // non-finite values at skipped positions from leaking.
    next_value = torch::where(valid_t[t], v_t[t], next_value);
    last_gae = torch::where(valid_t[t], gae, last_gae);
    adv_t[t].copy_(last_gae);
  }
  return adv_t.t().contiguous();
}

std::tuple<torch::Tensor, torch::Tensor> gae_advantage_return(const torch::Tensor& rewards,
                                                              const torch::Tensor& values, const torch::Tensor& mask,
                                                              double gamma, double lam) {
  check_gae_inputs(rewards, values, mask);
  torch::NoGradGuard no_grad;
  const torch::Tensor valid = mask.ne(0);
  check_finite(rewards, "token_level_rewards", valid);
  check_finite(values, "values", valid);
  const torch::Tensor advantages = kernels::gae_scan(rewards, values, mask, gamma, lam);
  const torch::Tensor returns = advantages + values;
  return {masked_whiten(advantages, valid.to(rewards.scalar_type())), returns};
}

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) {
  m.impl("gae_scan", TORCH_FN(gae_scan_aten));
  m.impl("gae_advantage_return", TORCH_FN(gae_advantage_return));
}

}  // namespace verl::kernels::aten
