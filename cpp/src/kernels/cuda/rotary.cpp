// verl::rotary on CUDA (kernels/ops.h): rotary.cu, one launch instead of ATen's six.
#include <torch/library.h>
#include <torch/torch.h>

#include "kernels/cuda/dtype.h"

namespace verl::kernels::cuda {
namespace {

torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos_in, const torch::Tensor& sin_in) {
  VERL_CHECK(x.dim() == 4 && x.size(3) % 2 == 0 && cos_in.dim() == 3 && cos_in.sizes() == sin_in.sizes() &&
                 cos_in.size(0) == x.size(0) && cos_in.size(1) == x.size(2) && cos_in.size(2) == x.size(3),
             "rotary: x (bs, heads, q, d) with d even and cos / sin (bs, q, d) expected, got ", x.sizes(), ", ",
             cos_in.sizes(), " and ", sin_in.sizes());
  VERL_CHECK(cos_in.scalar_type() == x.scalar_type() && sin_in.scalar_type() == x.scalar_type(),
             "rotary: cos and sin must have x's dtype");
  VERL_CHECK(cos_in.device() == x.device() && sin_in.device() == x.device(), "rotary: x, cos and sin must be on one device");
  const c10::DeviceGuard guard(x.device());
  const torch::Tensor cos = cos_in.contiguous(), sin = sin_in.contiguous();
  // Same memory layout as x (a transposed view stays transposed), as ATen's elementwise ops do.
  torch::Tensor out = at::empty_like(x, at::MemoryFormat::Preserve);
  check_launch(launch_rotary(x.const_data_ptr(), strides4(x), cos.const_data_ptr(), sin.const_data_ptr(),
                             out.data_ptr(), strides4(out), x.size(0), x.size(1), x.size(2), x.size(3),
                             launcher_dtype(x.scalar_type(), "rotary"), stream_of(x)),
               "rotary");
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CUDA, m) { m.impl("rotary", TORCH_FN(rotary)); }

}  // namespace verl::kernels::cuda
