// The advantage estimators' per-row passes as ATen ops, any device (kernels/ops.h):
// verl::row_sums, verl::group_mean_std and verl::scale_rows_by_mask.
#include "kernels/aten/compositions.h"

#include <torch/library.h>
#include <torch/torch.h>

namespace verl::kernels::aten {

torch::Tensor row_sums(const torch::Tensor& rewards) { return rewards.sum(-1); }

// Group sums by index_add_; singleton groups get mean 0 and std 1.
std::tuple<torch::Tensor, torch::Tensor> group_mean_std(const torch::Tensor& scores, const torch::Tensor& id,
                                                        const torch::Tensor& count) {
  auto group_sum = [&](const torch::Tensor& x) { return torch::zeros({count.size(0)}, x.options()).index_add_(0, id, x); };
  torch::Tensor mean = group_sum(scores) / count;
  const torch::Tensor centered = scores - mean.index_select(0, id);
  torch::Tensor std = (group_sum(centered * centered) / (count - 1).clamp_min(1)).sqrt();
  const torch::Tensor single = count <= 1;
  mean = torch::where(single, torch::zeros({}, mean.options()), mean);
  std = torch::where(single, torch::ones({}, std.options()), std);
  return {mean, std};
}

torch::Tensor scale_rows_by_mask(const torch::Tensor& scalar, const torch::Tensor& mask) {
  return scalar.unsqueeze(-1) * mask;
}

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) {
  m.impl("row_sums", TORCH_FN(row_sums));
  m.impl("group_mean_std", TORCH_FN(group_mean_std));
  m.impl("scale_rows_by_mask", TORCH_FN(scale_rows_by_mask));
}

}  // namespace verl::kernels::aten
