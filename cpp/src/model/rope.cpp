// RoPE: the ATen op sequence, and the verl::rotary op (kernels/ops.h: a fused kernel per device, with
// the same roundings: one per mul / add) where no gradient is wanted.
#include "verl/model/rope.h"

#include "verl/core/error.h"
#include "kernels/aten/compositions.h"
#include "kernels/ops.h"

namespace verl::model {

torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const bool needs_grad =
      torch::GradMode::is_enabled() && (x.requires_grad() || cos.requires_grad() || sin.requires_grad());
  const bool fused = !needs_grad && x.dim() == 4 && x.size(3) % 2 == 0 &&
                     cos.scalar_type() == x.scalar_type() && sin.scalar_type() == x.scalar_type() &&
                     cos.dim() == 3 && cos.sizes() == sin.sizes() && cos.size(0) == x.size(0) &&
                     cos.size(1) == x.size(2) && cos.size(2) == x.size(3);
  return fused ? kernels::rotary(x, cos, sin) : kernels::aten::rotary(x, cos, sin);
}

}  // namespace verl::model
