// Masked statistics as ATen ops (see kernels/aten/compositions.h): verl's torch_functional masked_* helpers, which
// algo/functional.h names publicly and the GAE composition whitens with.
#include "kernels/aten/compositions.h"

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::kernels::aten {

namespace {

torch::Tensor sum_over(const torch::Tensor& t, const std::optional<std::vector<int64_t>>& axis) {
  return axis ? t.sum(*axis) : t.sum();
}

}  // namespace

void check_same_shape(const torch::Tensor& a, const char* a_name, const torch::Tensor& b, const char* b_name) {
  VERL_CHECK(a.sizes() == b.sizes(), a_name, " and ", b_name, " must have the same shape, got ", a.sizes(), " and ",
             b.sizes());
}

void check_finite(const torch::Tensor& t, const char* name, const torch::Tensor& mask) {
  if (!t.is_floating_point()) return;
  torch::Tensor bad = ~torch::isfinite(t);
  if (mask.defined()) bad = bad & (mask != 0);
  VERL_CHECK(!bad.any().item<bool>(), name, " holds NaN or Inf at ", bad.sum().item<int64_t>(),
             " position(s)", mask.defined() ? " inside the mask" : "");
}

torch::Tensor masked_sum(const torch::Tensor& values, const torch::Tensor& mask,
                         std::optional<std::vector<int64_t>> axis) {
  check_same_shape(values, "values", mask, "mask");
  const torch::Tensor valid = torch::where(mask.to(torch::kBool), values, torch::zeros({}, values.options()));
  return sum_over(valid * mask, axis);
}

torch::Tensor masked_mean(const torch::Tensor& values, const torch::Tensor& mask,
                          std::optional<std::vector<int64_t>> axis) {
  return masked_sum(values, mask, axis) / (sum_over(mask, axis) + 1e-8);
}

torch::Tensor masked_var(const torch::Tensor& values, const torch::Tensor& mask, bool unbiased) {
  const torch::Tensor mean = masked_mean(values, mask);
  torch::Tensor variance = masked_mean((values - mean).pow(2), mask);
  if (unbiased) {
    const double count = mask.sum().item<double>();
    VERL_CHECK(count != 0, "At least one element in the mask has to be 1.");
    VERL_CHECK(count != 1, "The sum of the mask is one, which can cause a division by zero.");
    variance = variance * (count / (count - 1));
  }
  return variance;
}

torch::Tensor masked_whiten(const torch::Tensor& values, const torch::Tensor& mask, bool shift_mean) {
  const torch::Tensor mean = masked_mean(values, mask);
  torch::Tensor whitened = (values - mean) * torch::rsqrt(masked_var(values, mask) + 1e-8);
  return shift_mean ? whitened : whitened + mean;
}

}  // namespace verl::kernels::aten
