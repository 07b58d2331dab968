// agg_loss: reduces a (bs, response_length) loss matrix to the scalar that is backpropagated, with
// verl's aggregation modes and global-batch normalisation. Used by policy_loss, value_loss, the workers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::algo {

// verl's ActorConfig.global_batch_info: what the worker knows about the whole (data-parallel)
// mini-batch, so that the loss of one micro-batch on one rank is normalised like the global one.
// Unset normalisers are computed from the micro-batch itself (only allowed with dp_size == 1).
struct VERL_API GlobalBatchInfo {
  int64_t dp_size = 1;
  std::optional<double> batch_num_tokens;   // valid tokens in the global batch ("token-mean")
  std::optional<double> global_batch_size;  // sequences in the global batch (the "seq-mean-*" modes)
  std::optional<double> loss_scale_factor;  // "seq-mean-token-sum-norm" divisor; default response_length
};

// The modes agg_loss accepts, in verl's order.
VERL_API const std::vector<std::string>& loss_agg_modes();

// loss_mat (bs, response_length) float, loss_mask (bs, response_length) bool/int/float -> scalar.
//   token-mean:              sum(loss * mask) / batch_num_tokens * dp_size
//   token-sum:               sum(loss * mask) * dp_size
//   seq-mean-token-sum:      sum_seq(sum_tok(loss * mask)) / global_batch_size * dp_size
//   seq-mean-token-mean:     sum_seq(sum_tok(loss * mask) / (tokens_in_seq + 1e-8)) / global_batch_size * dp_size
//   seq-mean-token-sum-norm: seq-mean-token-sum / loss_scale_factor (default: response_length)
// Fully masked rows do not count as sequences. Positions outside the mask are ignored, NaN included.
// Throws InvalidArgument for an unknown mode (listing the valid ones), an empty batch, mismatched
// shapes, NaN/Inf in loss_mat inside the mask, a missing global normaliser when dp_size > 1 (as
// verl), and a mask without any valid token when the normaliser is taken from it (verl: 0/0 = NaN).
VERL_API torch::Tensor agg_loss(const torch::Tensor& loss_mat, const torch::Tensor& loss_mask,
                                const std::string& loss_agg_mode, int64_t dp_size = 1,
                                std::optional<double> batch_num_tokens = std::nullopt,
                                std::optional<double> global_batch_size = std::nullopt,
                                std::optional<double> loss_scale_factor = std::nullopt);

// Same, with the normalisers taken from `info` (verl's `**config.global_batch_info`).
VERL_API torch::Tensor agg_loss(const torch::Tensor& loss_mat, const torch::Tensor& loss_mask,
                                const std::string& loss_agg_mode, const GlobalBatchInfo& info);

}  // namespace verl::algo
