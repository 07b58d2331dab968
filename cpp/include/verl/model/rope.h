// Rotary position embedding applied to queries / keys: the one RoPE expression the decoder uses
// (training, log-prob passes and rollout alike), with a fused CPU loop for inference.
#pragma once

#include <torch/torch.h>

#include "verl/core/export.h"

namespace verl::model {

// x (bs, heads, q, head_dim), any strides; cos / sin (bs, q, head_dim) in x's dtype.
// Returns x * cos + rotate_half(x) * sin (rotate_half(x) = cat(-x2, x1) over the two halves of
// head_dim), rounded per operation exactly as those ATen ops round. On CPU, when no gradient is
// needed, one loop computes it (bit-identical to the op sequence, which autograd and other
// devices run).
VERL_API torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

}  // namespace verl::model
