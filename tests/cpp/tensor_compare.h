// Comparisons the C++ tests share: the largest absolute difference between two tensors, and between the
// parameters of two models with the same names.
#pragma once

#include <algorithm>

#include <torch/torch.h>

#include "verl/model/transformer.h"

namespace verl::testing {

inline double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

inline double max_param_diff(const model::CausalLM& a, const model::CausalLM& b) {
  const auto sa = a.named_state();
  const auto sb = b.named_state();
  double d = 0;
  for (const auto& [k, t] : sa) d = std::max(d, max_diff(t, sb.at(k)));
  return d;
}

}  // namespace verl::testing
