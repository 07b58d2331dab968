// verl::kv_cache_write as ATen ops, any device (kernels/ops.h): one index_copy_ of the new tokens
// into their slots.
#include "kernels/aten/compositions.h"

#include <torch/library.h>
#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::kernels::aten {

void kv_cache_write(torch::Tensor& pool, const torch::Tensor& slots, const torch::Tensor& x) {
  const int64_t bs = x.size(0), kv_heads = x.size(1), q = x.size(2), d = x.size(3);
  VERL_CHECK(slots.numel() == bs * q, "PagedKVCache: slot_mapping has ", slots.numel(), " entries for ", bs * q,
             " new tokens");
  pool.view({-1, kv_heads, d}).index_copy_(0, slots, x.transpose(1, 2).reshape({-1, kv_heads, d}));
}

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) { m.impl("kv_cache_write", TORCH_FN(kv_cache_write)); }

}  // namespace verl::kernels::aten
