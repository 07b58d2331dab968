// The critic's clipped value loss and the entropy bonus, as verl's compute_value_loss and
// compute_entropy_loss. Used by the critic and actor workers and the bindings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::algo {

struct VERL_API ValueLossOutput {
  torch::Tensor vf_loss;      // scalar: 0.5 * agg(max((v - R)^2, (clip(v, old +- c) - R)^2))
  torch::Tensor vf_clipfrac;  // scalar: masked share of tokens where the clipped term was larger
};

// PPO's clipped value loss. vpreds (differentiable), returns, values (the old values) and
// response_mask are (bs, response_length); vpreds is clipped to values +- cliprange_value.
// dp_size .. loss_scale_factor are forwarded to agg_loss. InvalidArgument for an empty batch,
// mismatched shapes or NaN/Inf inside the mask.
VERL_API ValueLossOutput compute_value_loss(const torch::Tensor& vpreds, const torch::Tensor& returns,
                                            const torch::Tensor& values, const torch::Tensor& response_mask,
                                            double cliprange_value, const std::string& loss_agg_mode = "token-mean",
                                            int64_t dp_size = 1, std::optional<double> batch_num_tokens = std::nullopt,
                                            std::optional<double> global_batch_size = std::nullopt,
                                            std::optional<double> loss_scale_factor = std::nullopt);

// agg_loss of the entropy of softmax(logits): logits (bs, response_length, vocab), response_mask
// (bs, response_length) -> scalar. Uses entropy_from_logits (chunked, float32 or wider).
VERL_API torch::Tensor compute_entropy_loss(const torch::Tensor& logits, const torch::Tensor& response_mask,
                                            const std::string& loss_agg_mode = "token-mean");

}  // namespace verl::algo
