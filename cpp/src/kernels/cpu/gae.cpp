// GAE's reverse-time recurrence and whitening on CPU (see gae.h): fused per-row kernels.
#include "kernels/cpu/gae.h"

#include <cmath>
#include <mutex>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "kernels/aten/compositions.h"

namespace verl::kernels::cpu {
namespace {

void check_cpu(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask) {
  VERL_CHECK(rewards.is_cpu() && values.is_cpu() && mask.is_cpu(), "gae: the fused kernels need CPU tensors");
}

// Outputs of the scan besides the raw advantages; null pointers are not written.
template <typename scalar_t>
struct ScanOutputs {
  scalar_t* advantages;
  scalar_t* returns = nullptr;         // advantages + values
  scalar_t* masked_advantages = nullptr;  // mask != 0 ? advantages : 0 (what masked_sum sums)
};

struct Counts {
  int64_t nonfinite_rewards = 0, nonfinite_values = 0, valid = 0;
};

// Rows [begin, end) of the reverse scan.
template <typename scalar_t, typename mask_t>
Counts scan_rows(const scalar_t* rewards, const scalar_t* values, const mask_t* mask, const ScanOutputs<scalar_t>& out,
                 int64_t length, scalar_t gamma, scalar_t gamma_lam, int64_t begin, int64_t end) {
  Counts c;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t base = row * length;
    const scalar_t* r = rewards + base;
    const scalar_t* v = values + base;
    const mask_t* m = mask + base;
    scalar_t next_value = 0, last_gae = 0;
    for (int64_t t = length - 1; t >= 0; --t) {
      const bool valid = m[t] != mask_t(0);
      if (valid) {
        c.valid += 1;
        c.nonfinite_rewards += !std::isfinite(r[t]);
        c.nonfinite_values += !std::isfinite(v[t]);
        // verl's tensor expression, each product and sum rounded to scalar_t as its own ATen op.
        const scalar_t discounted_next = gamma * next_value;
        const scalar_t delta = (r[t] + discounted_next) - v[t];
        const scalar_t carried = gamma_lam * last_gae;
        last_gae = delta + carried;
        next_value = v[t];
      }
      out.advantages[base + t] = last_gae;
      if (out.returns) out.returns[base + t] = last_gae + v[t];
      if (out.masked_advantages) out.masked_advantages[base + t] = valid ? last_gae : scalar_t(0);
    }
  }
  return c;
}

// Runs scan_rows over all rows in parallel, dispatched on the dtypes.
Counts run_scan(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask,
                torch::Tensor& advantages, torch::Tensor* returns, torch::Tensor* masked, double gamma, double lam) {
  Counts total;
  std::mutex total_mutex;
  const int64_t bs = rewards.size(0), length = rewards.size(1);
  AT_DISPATCH_FLOATING_TYPES(rewards.scalar_type(), "gae_scan", [&] {
    using value_t = scalar_t;
    ScanOutputs<value_t> out{advantages.data_ptr<value_t>()};
    if (returns) out.returns = returns->data_ptr<value_t>();
    if (masked) out.masked_advantages = masked->data_ptr<value_t>();
    const value_t* r = rewards.data_ptr<value_t>();
    const value_t* v = values.data_ptr<value_t>();
    const auto g = static_cast<value_t>(gamma), gl = static_cast<value_t>(gamma * lam);
    // ~16k steps per task: enough work to amortise a task, enough tasks to balance the threads.
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(length, 1));
    AT_DISPATCH_ALL_TYPES_AND3(torch::kBool, torch::kHalf, torch::kBFloat16, mask.scalar_type(), "gae_scan_mask", [&] {
      const scalar_t* m = mask.data_ptr<scalar_t>();
      at::parallel_for(0, bs, grain, [&](int64_t begin, int64_t end) {
        const Counts part = scan_rows<value_t, scalar_t>(r, v, m, out, length, g, gl, begin, end);
        const std::lock_guard<std::mutex> lock(total_mutex);
        total.nonfinite_rewards += part.nonfinite_rewards;
        total.nonfinite_values += part.nonfinite_values;
        total.valid += part.valid;
      });
    });
  });
  return total;
}

// Element-wise pass over n elements, in parallel.
template <typename F>
void for_each_index(int64_t n, const F& f) {
  at::parallel_for(0, n, 1 << 15, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) f(i);
  });
}

}  // namespace

GaeScan gae_scan_cpu(const torch::Tensor& rewards_in, const torch::Tensor& values_in, const torch::Tensor& mask_in,
                     double gamma, double lam) {
  aten::check_gae_inputs(rewards_in, values_in, mask_in);
  check_cpu(rewards_in, values_in, mask_in);
  const torch::Tensor rewards = rewards_in.contiguous(), values = values_in.contiguous(), mask = mask_in.contiguous();
  GaeScan out;
  out.advantages = torch::empty_like(rewards, torch::MemoryFormat::Contiguous);
  const Counts c = run_scan(rewards, values, mask, out.advantages, nullptr, nullptr, gamma, lam);
  out.nonfinite_rewards = c.nonfinite_rewards;
  out.nonfinite_values = c.nonfinite_values;
  return out;
}

GaeResult gae_advantage_return_cpu(const torch::Tensor& rewards_in, const torch::Tensor& values_in,
                                   const torch::Tensor& mask_in, double gamma, double lam) {
  aten::check_gae_inputs(rewards_in, values_in, mask_in);
  check_cpu(rewards_in, values_in, mask_in);
  const torch::Tensor rewards = rewards_in.contiguous(), values = values_in.contiguous(), mask = mask_in.contiguous();
  GaeResult out;
  out.advantages = torch::empty_like(rewards, torch::MemoryFormat::Contiguous);
  out.returns = torch::empty_like(out.advantages);
  torch::Tensor masked = torch::empty_like(out.advantages);  // scratch: the tensors masked_whiten sums
  const Counts c = run_scan(rewards, values, mask, out.advantages, &out.returns, &masked, gamma, lam);
  VERL_CHECK(c.nonfinite_rewards == 0, "token_level_rewards holds NaN or Inf at ", c.nonfinite_rewards,
             " position(s) inside the mask");
  VERL_CHECK(c.nonfinite_values == 0, "values holds NaN or Inf at ", c.nonfinite_values,
             " position(s) inside the mask");

  // masked_whiten(advantages, mask != 0) step by step, with the same roundings: the mask's sum is
  // an exact count; mean = sum / (count + 1e-8); var = masked mean of (adv - mean)^2 times
  // count / (count - 1); result (adv - mean) * rsqrt(var + 1e-8).
  VERL_CHECK(c.valid != 0, "At least one element in the mask has to be 1.");
  VERL_CHECK(c.valid != 1, "The sum of the mask is one, which can cause a division by zero.");
  const int64_t n = out.advantages.numel();
  AT_DISPATCH_FLOATING_TYPES(out.advantages.scalar_type(), "gae_whiten", [&] {
    const auto count = static_cast<scalar_t>(c.valid);
    const scalar_t denominator = count + static_cast<scalar_t>(1e-8);
    const scalar_t mean = masked.sum().item<scalar_t>() / denominator;
    using value_t = scalar_t;
    value_t* adv = out.advantages.data_ptr<value_t>();
    value_t* sq = masked.data_ptr<value_t>();
    AT_DISPATCH_ALL_TYPES_AND3(torch::kBool, torch::kHalf, torch::kBFloat16, mask.scalar_type(), "gae_whiten_mask",
                               [&] {
      const scalar_t* m = mask.data_ptr<scalar_t>();
      for_each_index(n, [&](int64_t i) {
        const value_t centered = adv[i] - mean;
        sq[i] = m[i] != scalar_t(0) ? centered * centered : value_t(0);
      });
    });
    const double bessel = static_cast<double>(c.valid) / static_cast<double>(c.valid - 1);
    const scalar_t variance = (masked.sum().item<scalar_t>() / denominator) * static_cast<scalar_t>(bessel);
    const scalar_t inv_std = scalar_t(1) / std::sqrt(variance + static_cast<scalar_t>(1e-8));
    for_each_index(n, [&](int64_t i) { adv[i] = (adv[i] - mean) * inv_std; });
  });
  return out;
}

namespace {

torch::Tensor gae_scan_op(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask,
                          double gamma, double lam) {
  return gae_scan_cpu(rewards, values, mask, gamma, lam).advantages;
}

std::tuple<torch::Tensor, torch::Tensor> gae_advantage_return_op(const torch::Tensor& rewards,
                                                                 const torch::Tensor& values, const torch::Tensor& mask,
                                                                 double gamma, double lam) {
  GaeResult r = gae_advantage_return_cpu(rewards, values, mask, gamma, lam);
  return {r.advantages, r.returns};
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CPU, m) {
  m.impl("gae_scan", TORCH_FN(gae_scan_op));
  m.impl("gae_advantage_return", TORCH_FN(gae_advantage_return_op));
}

}  // namespace verl::kernels::cpu
