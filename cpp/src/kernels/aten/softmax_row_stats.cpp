// verl::softmax_row_stats as ATen ops, any device (kernels/ops.h): what algo/functional.cpp's log-prob and entropy
// chunks computed before the op existed, in the same order, so CPU results are bitwise those of before.
#include <limits>

#include <torch/library.h>
#include <torch/torch.h>

#include "kernels/aten/compositions.h"
#include "verl/core/error.h"

namespace verl::kernels::aten {

namespace {

// log sum exp of each row of x (rows, vocab) into lse (rows, 1), through `scratch` (x's size): ATen's logsumexp
// (shift by the row max, 0 where that is infinite) without its temporaries.
void logsumexp_rows(const torch::Tensor& x, torch::Tensor& lse, torch::Tensor& row_max, torch::Tensor& scratch) {
  at::amax_out(row_max, x, {-1}, /*keepdim=*/true);
  row_max.masked_fill_(row_max.abs() == std::numeric_limits<double>::infinity(), 0);
  at::sub_out(scratch, x, row_max).exp_();
  at::sum_out(lse, scratch, {-1}, /*keepdim=*/true);
  lse.log_().add_(row_max);
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> softmax_row_stats(const torch::Tensor& logits,
                                                                          const torch::Tensor& labels, bool mean) {
  VERL_CHECK(logits.dim() == 2 && logits.is_floating_point(),
             "softmax_row_stats: logits must be (rows, vocab) floating, got ", logits.sizes(), " ", logits.scalar_type());
  const int64_t rows = logits.size(0);
  VERL_CHECK(logits.size(1) > 0, "softmax_row_stats: logits need a non-empty vocab dimension, got ", logits.sizes());
  VERL_CHECK(labels.numel() == 0 || labels.sizes() == torch::IntArrayRef({rows, 1}),
             "softmax_row_stats: labels must be (rows, 1) or empty, got ", labels.sizes());
  const auto compute = logits.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  const torch::Tensor x = logits.to(compute);
  const auto opts = x.options();
  torch::Tensor lse = torch::empty({rows, 1}, opts), row_max = torch::empty({rows, 1}, opts);
  torch::Tensor scratch = torch::empty_like(x);
  logsumexp_rows(x, lse, row_max, scratch);
  torch::Tensor picked = torch::empty({labels.numel() == 0 ? 0 : rows, 1}, opts);
  if (labels.numel() != 0) at::gather_out(picked, x, -1, labels);
  torch::Tensor mean_x = torch::empty({mean ? rows : 0, 1}, opts);
  if (mean) {
    at::sub_out(scratch, x, lse).exp_();
    at::sum_out(mean_x, scratch.mul_(x), {-1}, /*keepdim=*/true);
  }
  return {lse, picked, mean_x};
}

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) { m.impl("softmax_row_stats", TORCH_FN(softmax_row_stats)); }

}  // namespace verl::kernels::aten
