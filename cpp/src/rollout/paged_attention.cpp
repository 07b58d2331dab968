// paged_attention_cpu: the verl::paged_attention op (kernels/ops.h) on CPU tensors.
#include "verl/rollout/paged_attention.h"

#include "verl/core/error.h"
#include "kernels/ops.h"

namespace verl::rollout {

torch::Tensor paged_attention_cpu(const torch::Tensor& q, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                                  const torch::Tensor& block_tables, const torch::Tensor& positions, double scale,
                                  bool allow_simd) {
  VERL_CHECK(q.device().is_cpu() && k_pool.device().is_cpu() && v_pool.device().is_cpu(),
             "paged_attention_cpu: q and the pools must all be CPU tensors");
  return kernels::paged_attention(q, k_pool, v_pool, block_tables, positions, scale, allow_simd);
}

}  // namespace verl::rollout
