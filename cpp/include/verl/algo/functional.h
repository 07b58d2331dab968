// Tensor helpers every RL loss builds on, with verl's names and semantics
// (verl/utils/torch_functional.py). Used by algo/advantage, algo/policy_loss, the workers.
// All functions are differentiable through autograd and run on any device and float dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::algo {

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

// 1 up to and including the first EOS of each row, 0 after it.
//   response_id (bs, response_length) int -> (bs, response_length) of `dtype` (default int64)
VERL_API torch::Tensor get_response_mask(const torch::Tensor& response_id, const std::vector<int64_t>& eos_token,
                                         torch::ScalarType dtype = torch::kLong);

// Entropy of softmax(logits) over the last dim: (..., vocab) -> (...), float32 (float64 for
// float64 logits). Computed in chunks of at most `chunk_size` rows and 32 MiB of logits (1 GiB on a GPU), with a
// custom backward: the forward keeps two floats per row (logsumexp, E_p[x]), the backward writes
// each chunk's gradient straight into the one (..., vocab) gradient tensor. So no second
// (..., vocab) tensor exists in forward, and none besides the gradient in backward.
VERL_API torch::Tensor entropy_from_logits(const torch::Tensor& logits, int64_t chunk_size = 1024);

// log softmax(logits)[label]: logits (..., vocab), labels (...) int64 or int32 -> (...), same
// chunking; the forward keeps logsumexp per row for the backward.
VERL_API torch::Tensor logprobs_from_logits(const torch::Tensor& logits, const torch::Tensor& labels,
                                            int64_t chunk_size = 1024);

// Throws InvalidArgument naming both shapes unless a and b have the same shape.
VERL_API void check_same_shape(const torch::Tensor& a, const char* a_name, const torch::Tensor& b, const char* b_name);
// Throws InvalidArgument if t (restricted to mask != 0 when given) holds NaN or Inf.
VERL_API void check_finite(const torch::Tensor& t, const char* name, const torch::Tensor& mask = {});

}  // namespace verl::algo
