// Tensor helpers every RL loss builds on, with verl's names and semantics
// (verl/utils/torch_functional.py). Used by algo/advantage, algo/policy_loss, the workers.
// All functions are differentiable through autograd and run on any device and float dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"
#include "verl/kernels/masked_stats.h"

namespace verl::algo {

// The masked statistics (masked_sum / masked_mean / masked_var / masked_whiten) and the input checks
// (check_same_shape, check_finite): the kernel layer's, documented in verl/kernels/masked_stats.h.
using kernels::aten::check_finite;
using kernels::aten::check_same_shape;
using kernels::aten::masked_mean;
using kernels::aten::masked_sum;
using kernels::aten::masked_var;
using kernels::aten::masked_whiten;

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

}  // namespace verl::algo
