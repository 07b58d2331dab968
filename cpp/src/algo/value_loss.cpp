// Clipped value loss and entropy loss (see value_loss.h), following verl's core_algos.py.
#include "verl/algo/value_loss.h"

#include <torch/torch.h>

#include "algo/loss_common.h"
#include "verl/algo/agg_loss.h"
#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {

ValueLossOutput compute_value_loss(const torch::Tensor& vpreds, const torch::Tensor& returns,
                                   const torch::Tensor& values, const torch::Tensor& response_mask,
                                   double cliprange_value, const std::string& loss_agg_mode, int64_t dp_size,
                                   std::optional<double> batch_num_tokens, std::optional<double> global_batch_size,
                                   std::optional<double> loss_scale_factor) {
  detail::check_loss_inputs({response_mask, "response_mask"},
                            {{vpreds, "vpreds"}, {returns, "returns"}, {values, "values"}});
  const torch::Tensor v = detail::zero_outside(vpreds, response_mask);
  const torch::Tensor r = detail::zero_outside(returns, response_mask);
  const torch::Tensor old = detail::zero_outside(values, response_mask);
  // verl_F.clip_by_value: max(min(x, hi), lo), so lo wins should the range be empty.
  const torch::Tensor vpredclipped = torch::maximum(torch::minimum(v, old + cliprange_value), old - cliprange_value);
  const torch::Tensor vf_losses1 = (v - r).pow(2);
  const torch::Tensor vf_losses2 = (vpredclipped - r).pow(2);
  const torch::Tensor clipped_vf_losses = torch::maximum(vf_losses1, vf_losses2);
  const GlobalBatchInfo info{dp_size, batch_num_tokens, global_batch_size, loss_scale_factor};
  ValueLossOutput out;
  out.vf_loss = 0.5 * detail::agg_loss_unchecked(clipped_vf_losses, response_mask, loss_agg_mode, info);
  out.vf_clipfrac = masked_mean(torch::gt(vf_losses2, vf_losses1).to(torch::kFloat), response_mask);
  return out;
}

torch::Tensor compute_entropy_loss(const torch::Tensor& logits, const torch::Tensor& response_mask,
                                   const std::string& loss_agg_mode) {
  VERL_CHECK(logits.defined() && response_mask.defined(),
             "compute_entropy_loss: logits and response_mask are required");
  VERL_CHECK(logits.dim() == 3 && logits.sizes().slice(0, 2) == response_mask.sizes(),
             "logits must be (bs, response_length, vocab) over response_mask (bs, response_length), got shapes ",
             logits.sizes(), " and ", response_mask.sizes());
  VERL_CHECK(response_mask.numel() > 0 && logits.size(2) > 0, "empty batch: logits have shape ", logits.sizes());
  check_finite(logits, "logits", response_mask.unsqueeze(-1));
  const torch::Tensor token_entropy = entropy_from_logits(logits);  // (bs, response_length)
  return agg_loss(token_entropy, response_mask, loss_agg_mode);
}

}  // namespace verl::algo
