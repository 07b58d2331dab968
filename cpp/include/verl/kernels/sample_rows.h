// The sampling op's row settings and result (kernels/ops.h's verl::sample; verl/rollout/sampler.h's contract): the
// kernel layer's own types, which the rollout names as rollout::SamplerRows / rollout::SampleResult.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::kernels {

// Per-row sampling settings (one entry per logits row).
struct VERL_API SamplerRows {
  std::vector<double> temperature;  // 0 = greedy
  std::vector<int64_t> top_k;       // <= 0 = off
  std::vector<double> top_p;        // 1 = off
  std::vector<double> min_p;        // 0 = off
  std::vector<double> uniform;      // the row's draw in [0, 1) (rollout::stream_uniform)
  size_t size() const { return temperature.size(); }
  void clear();
  void push(double t, int64_t k, double p, double mp, double u);
};

struct VERL_API SampleResult {
  torch::Tensor tokens;    // (rows,) int64
  torch::Tensor logprobs;  // (rows,) float32: log_softmax(logits / T)[token] (T = 1 for greedy rows)
};

}  // namespace verl::kernels
