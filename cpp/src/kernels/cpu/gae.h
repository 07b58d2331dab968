// GAE's reverse-time recurrence and whitening on CPU: the kernels of verl::gae_scan and
// verl::gae_advantage_return (kernels/ops.h), and their tests. Private to libverl.
// VERL_API on the functions tests/cpp calls: the tests link the shared libverl (hidden visibility),
// so these are exported for them; the header is not installed and they are not API.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::kernels::cpu {

// Raw GAE advantages with verl's multi-turn semantics: at a position with mask == 0 (an
// observation token) neither the TD step nor the bootstrap value is taken; the next value and the
// running advantage carry through unchanged. Per row, from the last position backwards:
//   delta      = r[t] + gamma * next_value - v[t]
//   last_gae   = mask[t] != 0 ? delta + (gamma * lam) * last_gae : last_gae
//   next_value = mask[t] != 0 ? v[t] : next_value
//   adv[t]     = last_gae
// gamma and gamma * lam are rounded to the tensors' dtype first, as ATen does with Python scalars,
// and every product and sum is rounded separately (no FMA), so float32 results are verl's bitwise.
//   rewards, values (bs, T) float32 or float64, same dtype; mask (bs, T) bool/integer/floating
//   -> advantages (bs, T), rewards' dtype

// The fused CPU kernel: one reverse pass per row (rows in parallel). Counts NaN/Inf of rewards
// and values inside the mask on the way (positions outside it are never read).
struct GaeScan {
  torch::Tensor advantages;
  int64_t nonfinite_rewards = 0;
  int64_t nonfinite_values = 0;
};
VERL_API GaeScan gae_scan_cpu(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask,
                              double gamma, double lam);

// compute_gae_advantage_return's whole result on CPU in three passes: the scan (also writing
// returns = advantages + values and the masked advantages), then masked_whiten's two reductions
// and its final scaling. Every tensor ATen sums and every scalar step are those of
// masked_whiten(advantages, mask != 0), so the result equals the unfused path bitwise.
// Throws InvalidArgument for NaN/Inf inside the mask and, as masked_var, for fewer than two
// positions inside the mask.
struct GaeResult {
  torch::Tensor advantages;  // (bs, T) whitened
  torch::Tensor returns;     // (bs, T) raw advantages + values
};
VERL_API GaeResult gae_advantage_return_cpu(const torch::Tensor& rewards, const torch::Tensor& values,
                                            const torch::Tensor& mask, double gamma, double lam);

}  // namespace verl::kernels::cpu
