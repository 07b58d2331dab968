// verl::rms_norm as ATen ops, any device (kernels/ops.h); model::RMSNorm's forward.
#include "kernels/aten/compositions.h"

#include <torch/library.h>
#include <torch/torch.h>

namespace verl::kernels::aten {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  torch::Tensor h = x.to(torch::kFloat);
  h = h * torch::rsqrt(h.pow(2).mean(-1, true) + eps);
  return weight * h.to(x.scalar_type());
}

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) { m.impl("rms_norm", TORCH_FN(rms_norm)); }

}  // namespace verl::kernels::aten
