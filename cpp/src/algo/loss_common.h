// Private helpers shared by agg_loss, policy_loss and value_loss: input validation and the
// aggregation itself without re-validating a loss matrix the caller built from checked inputs.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>

#include <torch/types.h>

#include "verl/algo/agg_loss.h"

namespace verl::algo::detail {

struct NamedTensor {
  const torch::Tensor& tensor;
  const char* name;
};

// Throws InvalidArgument unless `mask` is a non-empty (bs, response_length) tensor and every value
// is a floating tensor of the same shape and device, finite wherever mask != 0. Undefined values
// are allowed only when `optional_values` names them (and are then skipped).
void check_loss_inputs(NamedTensor mask, std::initializer_list<NamedTensor> values,
                       std::initializer_list<NamedTensor> optional_values = {});

// check_loss_inputs without the finiteness checks, for callers that check finiteness in a fused kernel.
void check_loss_shapes(NamedTensor mask, std::initializer_list<NamedTensor> values);

// t where mask != 0, 0 elsewhere: padding garbage (NaN, -inf log-probs) cannot reach a loss or
// its gradient. For finite inputs every loss and gradient is unchanged, since verl masks them too.
torch::Tensor zero_outside(const torch::Tensor& t, const torch::Tensor& mask);

// token-mean / token-sum of a loss whose masked token sum `total` (0-dim) is already taken;
// num_tokens() gives the mask's sum (called only when the normaliser is the local token count).
torch::Tensor agg_token_total(const torch::Tensor& total, const std::function<torch::Tensor()>& num_tokens,
                              const std::string& loss_agg_mode, const GlobalBatchInfo& info);

// agg_loss on a loss matrix whose inputs the caller has validated (shape, emptiness, finiteness).
torch::Tensor agg_loss_unchecked(const torch::Tensor& loss_mat, const torch::Tensor& loss_mask,
                                 const std::string& loss_agg_mode, const GlobalBatchInfo& info);

}  // namespace verl::algo::detail
