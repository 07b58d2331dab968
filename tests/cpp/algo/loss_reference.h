// Test-only: verl's agg_loss written out with plain loops, the independent reference the loss tests
// (test_agg_loss, test_policy_loss, test_value_loss) compare libverl against.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/torch.h>

namespace verl::test {

// loss and mask: float64 (bs, T); the mask may hold any non-negative weights.
inline double reference_agg(const torch::Tensor& loss, const torch::Tensor& mask, const std::string& mode,
                            int64_t dp_size = 1, std::optional<double> batch_num_tokens = {},
                            std::optional<double> global_batch_size = {},
                            std::optional<double> loss_scale_factor = {}) {
  auto l = loss.accessor<double, 2>();
  auto m = mask.accessor<double, 2>();
  double total = 0, tokens = 0, seq_sum = 0, seq_mean_sum = 0, seqs = 0;
  for (int64_t i = 0; i < loss.size(0); ++i) {
    double row = 0, row_tokens = 0;
    for (int64_t j = 0; j < loss.size(1); ++j) {
      if (m[i][j] == 0) continue;
      row += l[i][j] * m[i][j];
      row_tokens += m[i][j];
    }
    total += row;
    tokens += row_tokens;
    if (row_tokens > 0) {
      seqs += 1;
      seq_sum += row;
      seq_mean_sum += row / (row_tokens + 1e-8);
    }
  }
  const double dp = static_cast<double>(dp_size);
  if (mode == "token-mean") return total / batch_num_tokens.value_or(tokens) * dp;
  if (mode == "token-sum") return total * dp;
  if (mode == "seq-mean-token-mean") return seq_mean_sum / global_batch_size.value_or(seqs) * dp;
  const double seq_mean = seq_sum / global_batch_size.value_or(seqs) * dp;
  if (mode == "seq-mean-token-sum") return seq_mean;
  return seq_mean / loss_scale_factor.value_or(static_cast<double>(loss.size(1)));  // seq-mean-token-sum-norm
}

}  // namespace verl::test
