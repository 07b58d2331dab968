// verl::rotary as ATen ops, any device (kernels/ops.h); the model's rotary embedding where it needs gradients.
#include "kernels/aten/compositions.h"

#include <torch/library.h>
#include <torch/torch.h>

namespace verl::kernels::aten {

namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  return x * cos.unsqueeze(1) + rotate_half(x) * sin.unsqueeze(1);
}

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) { m.impl("rotary", TORCH_FN(rotary)); }

}  // namespace verl::kernels::aten
