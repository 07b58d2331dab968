// The ATen compositions of the verl ops (kernels/ops.h), registered as CompositeExplicitAutograd:
// what every device without a kernel of its own runs, and the portable references the device
// kernels are tested against. Declared here so that the CPU kernels can fall back on them (the
// sampler's truncated rows) and tests/cpp/kernels can run them on CPU tensors, where the dispatcher
// picks the CPU kernel. Private to libverl; VERL_API for the tests.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include <c10/util/ArrayRef.h>
#include <torch/types.h>

#include "verl/core/export.h"
#include "verl/kernels/masked_stats.h"
#include "verl/kernels/sample_rows.h"

namespace verl::kernels::aten {

// Each row's blocks gathered into one context, a causal-by-position mask, one SDPA. Unwritten
// slots inside the gathered blocks must be finite (masked scores still multiply their values):
// PagedKVCache zero-fills its pools wherever this path can run.
VERL_API torch::Tensor paged_attention(const torch::Tensor& q, const torch::Tensor& k_pool,
                                       const torch::Tensor& v_pool, const torch::Tensor& block_tables,
                                       const torch::Tensor& positions, double scale, bool allow_simd,
                                       int64_t sliding_window);

// One index_copy_ of the new tokens into their slots.
VERL_API void kv_cache_write(torch::Tensor& pool, const torch::Tensor& slots, const torch::Tensor& x);

// Any rows: truncation by topk / sort, the draw by an inverse CDF (cumsum in float64, searchsorted).
VERL_API SampleResult sample_rows(const torch::Tensor& logits, const SamplerRows& rows);

// Whether row i of a (rows, vocab) batch is truncated (top-k below vocab, top-p below 1 or min-p above
// 0; greedy rows never are). Device kernels draw untruncated rows themselves and leave truncated ones
// to sample_rows: the split is per row, so a row's path does not depend on its batch.
VERL_API bool truncates(const SamplerRows& rows, int64_t i, int64_t vocab);

// The op's per-row arrays as SamplerRows.
SamplerRows sampler_rows(c10::ArrayRef<double> temperature, c10::ArrayRef<int64_t> top_k,
                                  c10::ArrayRef<double> top_p, c10::ArrayRef<double> min_p,
                                  c10::ArrayRef<double> uniform);

// rewards / values (bs, T) of one dtype, float32 or float64; mask (bs, T) bool, integer or floating.
void check_gae_inputs(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask);

// GAE's raw advantages (the recurrence of kernels/cpu/gae.h) as ~10 ATen ops on (bs,) slices per
// time step; no finiteness checks.
VERL_API torch::Tensor gae_scan_aten(const torch::Tensor& rewards, const torch::Tensor& values,
                                     const torch::Tensor& mask, double gamma, double lam);

// Finiteness checks, the verl::gae_scan op (a device's own kernel where it has one), returns and
// masked_whiten.
VERL_API std::tuple<torch::Tensor, torch::Tensor> gae_advantage_return(const torch::Tensor& rewards,
                                                                       const torch::Tensor& values,
                                                                       const torch::Tensor& mask, double gamma,
                                                                       double lam);

VERL_API torch::Tensor row_sums(const torch::Tensor& rewards);  // rewards.sum(-1)

// Group sums by index_add_; groups of one get mean 0 and std 1.
VERL_API std::tuple<torch::Tensor, torch::Tensor> group_mean_std(const torch::Tensor& scores,
                                                                 const torch::Tensor& group_id,
                                                                 const torch::Tensor& count);

VERL_API torch::Tensor scale_rows_by_mask(const torch::Tensor& scalar, const torch::Tensor& mask);  // scalar[:, None] * mask

// softmax_row_stats (ops.h) on a float32 (float64) copy of the rows, by ATen ops.
VERL_API std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> softmax_row_stats(const torch::Tensor& logits,
                                                                                   const torch::Tensor& labels,
                                                                                   bool mean);

// Masked statistics: verl/kernels/masked_stats.h.

// verl::rotary: x * cos + rotate_half(x) * sin. The model's forward runs it itself where it needs gradients
// (model::apply_rotary): autograd-capable, any device. x (..., heads, q, d); cos / sin (..., q, d).
VERL_API torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// verl::rms_norm: weight * (x / sqrt(mean(x^2) + eps)), the statistics in float32. model::RMSNorm's forward
// (autograd-capable, any device): the trainer's forward and the op are bitwise one computation.
VERL_API torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

}  // namespace verl::kernels::aten
