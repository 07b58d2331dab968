// verl::rms_norm on CUDA (kernels/ops.h): rms_norm.cu, one launch instead of ATen's eight. Other dtype
// pairings (a float32 weight over bfloat16 activations, say) run the composition, which promotes as ATen does.
#include <torch/library.h>
#include <torch/torch.h>

#include "kernels/cuda/dtype.h"
#include "kernels/aten/compositions.h"

namespace verl::kernels::cuda {
namespace {

torch::Tensor rms_norm(const torch::Tensor& x_in, const torch::Tensor& weight_in, double eps) {
  VERL_CHECK(x_in.dim() >= 1 && weight_in.dim() == 1 && weight_in.size(0) == x_in.size(-1),
             "rms_norm: x (..., dim) and weight (dim,) expected, got ", x_in.sizes(), " and ", weight_in.sizes());
  VERL_CHECK(weight_in.device() == x_in.device(), "rms_norm: x and weight must be on one device");
  if (weight_in.scalar_type() != x_in.scalar_type()) return aten::rms_norm(x_in, weight_in, eps);
  const c10::DeviceGuard guard(x_in.device());
  const torch::Tensor x = x_in.contiguous(), weight = weight_in.contiguous();
  torch::Tensor out = torch::empty_like(x);
  const int64_t dim = x.size(-1);
  check_launch(launch_rms_norm(x.const_data_ptr(), weight.const_data_ptr(), out.data_ptr(), dim == 0 ? 0 : x.numel() / dim,
                               dim, eps, launcher_dtype(x.scalar_type(), "rms_norm"), stream_of(x)),
               "rms_norm");
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CUDA, m) { m.impl("rms_norm", TORCH_FN(rms_norm)); }

}  // namespace verl::kernels::cuda
