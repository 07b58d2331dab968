// verl::kv_cache_write on CPU (kernels/ops.h): a loop over x's strides -- no transposed copy, and
// none of index_copy_'s per-element indexing.
#include <ATen/Dispatch.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <algorithm>

#include "verl/core/error.h"

namespace verl::kernels::cpu {
namespace {

void kv_cache_write(torch::Tensor& pool, const torch::Tensor& slots, const torch::Tensor& x_in) {
  const int64_t bs = x_in.size(0), kv_heads = x_in.size(1), q = x_in.size(2), d = x_in.size(3);
  VERL_CHECK(slots.numel() == bs * q, "PagedKVCache: slot_mapping has ", slots.numel(), " entries for ", bs * q,
             " new tokens");
  const torch::Tensor x = x_in.to(pool.scalar_type());
  const int64_t* sp = slots.data_ptr<int64_t>();  // int64, contiguous and in range: set_batch checked
  const int64_t s0 = x.stride(0), s1 = x.stride(1), s2 = x.stride(2), s3 = x.stride(3);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, pool.scalar_type(), "PagedKVCache.write", [&] {
    scalar_t* dst = pool.data_ptr<scalar_t>();
    const scalar_t* src = x.data_ptr<scalar_t>();
    for (int64_t i = 0; i < bs; ++i)
      for (int64_t t = 0; t < q; ++t) {
        scalar_t* row = dst + sp[i * q + t] * kv_heads * d;
        for (int64_t h = 0; h < kv_heads; ++h) {
          const scalar_t* from = src + i * s0 + h * s1 + t * s2;
          scalar_t* to = row + h * d;
          if (s3 == 1) {
            std::copy(from, from + d, to);
          } else {
            for (int64_t c = 0; c < d; ++c) to[c] = from[c * s3];
          }
        }
      }
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CPU, m) { m.impl("kv_cache_write", TORCH_FN(kv_cache_write)); }

}  // namespace verl::kernels::cpu
