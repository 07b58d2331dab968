// verl::kv_cache_write on CUDA (kernels/ops.h): kv_cache_write.cu, one launch per call.
#include <torch/library.h>
#include <torch/torch.h>

#include "kernels/cuda/dtype.h"

namespace verl::kernels::cuda {
namespace {

void kv_cache_write(torch::Tensor& pool, const torch::Tensor& slots_in, const torch::Tensor& x_in) {
  VERL_CHECK(x_in.dim() == 4 && pool.dim() == 4 && pool.is_contiguous() && x_in.size(1) == pool.size(2) &&
                 x_in.size(3) == pool.size(3),
             "kv_cache_write: x (bs, kv_heads, q, d) and a contiguous pool (blocks, block_size, kv_heads, d) "
             "expected, got ", x_in.sizes(), " and ", pool.sizes());
  const int64_t bs = x_in.size(0), kv_heads = x_in.size(1), q = x_in.size(2), d = x_in.size(3);
  VERL_CHECK(slots_in.numel() == bs * q, "PagedKVCache: slot_mapping has ", slots_in.numel(), " entries for ",
             bs * q, " new tokens");
  VERL_CHECK(x_in.device() == pool.device() && slots_in.device() == pool.device(),
             "kv_cache_write: pool, slots and x must be on one device");
  const c10::DeviceGuard guard(pool.device());
  const torch::Tensor x = x_in.to(pool.scalar_type());
  const torch::Tensor slots = slots_in.to(torch::kLong).contiguous();
  check_launch(launch_kv_cache_write(pool.data_ptr(), x.const_data_ptr(), strides4(x), slots.const_data_ptr<int64_t>(),
                                     bs, kv_heads, q, d, static_cast<int>(pool.element_size()), stream_of(pool)),
               "kv_cache_write");
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CUDA, m) { m.impl("kv_cache_write", TORCH_FN(kv_cache_write)); }

}  // namespace verl::kernels::cuda
