// verl::gae_scan on CUDA (kernels/ops.h): gae_scan.cu, one thread per row.
#include <torch/library.h>
#include <torch/torch.h>

#include "kernels/aten/compositions.h"
#include "kernels/cuda/dtype.h"

namespace verl::kernels::cuda {
namespace {

torch::Tensor gae_scan(const torch::Tensor& rewards_in, const torch::Tensor& values_in, const torch::Tensor& mask,
                       double gamma, double lam) {
  aten::check_gae_inputs(rewards_in, values_in, mask);
  VERL_CHECK(values_in.device() == rewards_in.device() && mask.device() == rewards_in.device(),
             "gae: rewards, values and mask must be on one device");
  const c10::DeviceGuard guard(rewards_in.device());
  const torch::Tensor rewards = rewards_in.contiguous(), values = values_in.contiguous();
  const torch::Tensor valid = mask.ne(0).contiguous();
  torch::Tensor advantages = torch::empty_like(rewards, torch::MemoryFormat::Contiguous);
  check_launch(launch_gae_scan(rewards.const_data_ptr(), values.const_data_ptr(), valid.const_data_ptr<bool>(),
                               advantages.data_ptr(), rewards.size(0), rewards.size(1), gamma, gamma * lam,
                               launcher_dtype(rewards.scalar_type(), "gae"), stream_of(rewards)),
               "gae_scan");
  return advantages;
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CUDA, m) { m.impl("gae_scan", TORCH_FN(gae_scan)); }

}  // namespace verl::kernels::cuda
