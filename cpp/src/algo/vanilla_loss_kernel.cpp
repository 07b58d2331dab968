// Fused per-token vanilla PPO loss (see vanilla_loss_kernel.h): the verl::vanilla_token_losses op
// (kernels/ops.h; one pass forward, the saved derivative backward) as an autograd function.
#include "algo/vanilla_loss_kernel.h"

#include <torch/torch.h>

#include "verl/core/error.h"
#include "kernels/ops.h"

namespace verl::algo::detail {
namespace {

// Forward: the kernel; outputs pg_losses (or, with `reduce`, the 0-dim masked sum of mask * pg_losses)
// and the sums as a non-differentiable (7,) float64 tensor. Backward: grad log_prob = grad output *
// d output / d log_prob, saved by the forward (with `reduce` already multiplied by the mask).
struct VanillaLossFunction : public torch::autograd::Function<VanillaLossFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& log_prob,
                                                const torch::Tensor& old_log_prob, const torch::Tensor& advantages,
                                                const torch::Tensor& response_mask, double clip_low,
                                                double clip_high, double clip_ratio_c, bool reduce) {
    auto [pg_losses, dloss, sums] = kernels::vanilla_token_losses(old_log_prob, log_prob, advantages, response_mask,
                                                                  clip_low, clip_high, clip_ratio_c, reduce);
    ctx->save_for_backward({dloss});
    ctx->mark_non_differentiable({sums});
    return {pg_losses, sums};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::Tensor dloss = ctx->get_saved_variables()[0];
    return {grads[0] * dloss, torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(),  torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool vanilla_fusable(const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                     const torch::Tensor& advantages, const torch::Tensor& response_mask) {
  const torch::ScalarType t = log_prob.scalar_type();
  const bool grad_mode = torch::GradMode::is_enabled();
  const torch::Device device = log_prob.device();
  return old_log_prob.device() == device && advantages.device() == device && response_mask.device() == device &&
         kernels::has_kernel_for("vanilla_token_losses", log_prob) && (t == torch::kFloat || t == torch::kDouble) &&
         old_log_prob.scalar_type() == t && advantages.scalar_type() == t && !response_mask.is_complex() &&
         !(grad_mode && (old_log_prob.requires_grad() || advantages.requires_grad()));
}

VanillaTokenLosses vanilla_token_losses(const torch::Tensor& old_log_prob_in, const torch::Tensor& log_prob_in,
                                        const torch::Tensor& advantages_in, const torch::Tensor& response_mask_in,
                                        double clip_low, double clip_high, double clip_ratio_c, bool reduce) {
  VERL_CHECK(vanilla_fusable(old_log_prob_in, log_prob_in, advantages_in, response_mask_in),
             "vanilla_token_losses: inputs the fused kernel cannot take");
  const torch::autograd::variable_list outputs = VanillaLossFunction::apply(
      log_prob_in, old_log_prob_in, advantages_in, response_mask_in, clip_low, clip_high, clip_ratio_c, reduce);
  const torch::Tensor sums = outputs[1].cpu();
  const double* v = sums.data_ptr<double>();
  const auto bad_old = static_cast<int64_t>(v[4]), bad_new = static_cast<int64_t>(v[5]),
             bad_adv = static_cast<int64_t>(v[6]);
  VERL_CHECK(bad_old == 0, "old_log_prob holds NaN or Inf at ", bad_old, " position(s) inside the mask");
  VERL_CHECK(bad_new == 0, "log_prob holds NaN or Inf at ", bad_new, " position(s) inside the mask");
  VERL_CHECK(bad_adv == 0, "advantages holds NaN or Inf at ", bad_adv, " position(s) inside the mask");

  VanillaTokenLosses out;
  out.pg_losses = outputs[0];
  out.clipfrac_sum = v[0];
  out.clipfrac_lower_sum = v[1];
  out.neg_kl_sum = v[2];
  out.mask_sum = v[3];
  return out;
}

}  // namespace verl::algo::detail
