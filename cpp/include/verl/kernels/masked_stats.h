// The masked statistics of verl's torch_functional (verl/utils/torch_functional.py), as the kernel layer composes
// them (kernels/aten/masked_stats.cpp; the GAE op whitens with them). verl::algo names them too
// (verl/algo/functional.h). Differentiable through autograd, any device and float dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::kernels::aten {

// Sum of values where mask != 0 (NaNs outside the mask do not leak in). axis: dims to reduce;
// std::nullopt reduces everything. values and mask have the same shape.
VERL_API torch::Tensor masked_sum(const torch::Tensor& values, const torch::Tensor& mask,
                                  std::optional<std::vector<int64_t>> axis = std::nullopt);
// masked_sum / (mask.sum(axis) + 1e-8), exactly as verl.
VERL_API torch::Tensor masked_mean(const torch::Tensor& values, const torch::Tensor& mask,
                                   std::optional<std::vector<int64_t>> axis = std::nullopt);
// Variance over the masked elements (all of them, scalar result). unbiased applies Bessel's
// correction and then needs at least two masked elements: InvalidArgument otherwise (as verl).
VERL_API torch::Tensor masked_var(const torch::Tensor& values, const torch::Tensor& mask, bool unbiased = true);
// (values - mean) * rsqrt(var + 1e-8) over the masked elements; shift_mean=false adds the mean back.
VERL_API torch::Tensor masked_whiten(const torch::Tensor& values, const torch::Tensor& mask, bool shift_mean = true);

// Throws InvalidArgument naming both shapes unless a and b have the same shape.
VERL_API void check_same_shape(const torch::Tensor& a, const char* a_name, const torch::Tensor& b, const char* b_name);
// Throws InvalidArgument if t (restricted to mask != 0 when given) holds NaN or Inf.
VERL_API void check_finite(const torch::Tensor& t, const char* name, const torch::Tensor& mask = {});

}  // namespace verl::kernels::aten
