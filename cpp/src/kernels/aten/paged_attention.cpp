// verl::paged_attention as ATen ops, any device (kernels/ops.h): each row's blocks gathered into
// a contiguous context, a causal-by-position mask, and one SDPA with the query heads of a kv head
// as extra query rows (grouped-query attention without repeating K/V).
#include "kernels/aten/compositions.h"

#include <torch/library.h>
#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::kernels::aten {

torch::Tensor paged_attention(const torch::Tensor& q, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                              const torch::Tensor& block_tables, const torch::Tensor& positions, double scale,
                              bool /*allow_simd: the CPU kernel's switch*/, int64_t sliding_window) {
  VERL_CHECK(q.dim() == 4 && k_pool.dim() == 4 && k_pool.sizes() == v_pool.sizes(),
             "paged_attention: q (bs, heads, q, d) and pools (blocks, block_size, kv_heads, d) expected");
  VERL_CHECK(q.scalar_type() == k_pool.scalar_type() && k_pool.scalar_type() == v_pool.scalar_type(),
             "paged_attention: q and the pools must share a dtype");
  const int64_t bs = q.size(0), heads = q.size(1), q_len = q.size(2), d = q.size(3);
  const int64_t block_size = k_pool.size(1), kv_heads = k_pool.size(2), group = heads / kv_heads;
  VERL_CHECK(k_pool.size(3) == d && heads % kv_heads == 0, "paged_attention: head_dim / kv_heads mismatch");
  const torch::Tensor tables = block_tables.to(q.device(), torch::kLong);
  const torch::Tensor pos = positions.to(q.device(), torch::kLong);
  VERL_CHECK(tables.dim() == 2 && tables.size(0) == bs && pos.sizes() == torch::IntArrayRef({bs, q_len}),
             "paged_attention: block_tables (bs, max_blocks) and positions (bs, q) expected, got ", tables.sizes(),
             " and ", pos.sizes());
  const int64_t ctx = tables.size(1) * block_size;
  const torch::Tensor flat = tables.reshape({-1});
  const torch::Tensor k = k_pool.index_select(0, flat).view({bs, ctx, kv_heads, d}).transpose(1, 2);
  const torch::Tensor v = v_pool.index_select(0, flat).view({bs, ctx, kv_heads, d}).transpose(1, 2);
  // Query t of row i sees context slots 0..positions[i, t]; as query rows (group, q) per kv head.
  const torch::Tensor slot = torch::arange(ctx, pos.options()).view({1, 1, ctx});
  torch::Tensor visible = slot <= pos.unsqueeze(-1);  // (bs, q, ctx)
  if (sliding_window > 0) visible = visible.logical_and(slot > pos.unsqueeze(-1) - sliding_window);
  const torch::Tensor mask = visible.unsqueeze(1).expand({bs, group, q_len, ctx}).reshape({bs, 1, group * q_len, ctx});
  const torch::Tensor qg = q.reshape({bs, kv_heads, group * q_len, d});
  const torch::Tensor out = at::scaled_dot_product_attention(qg, k, v, mask, 0.0, false, scale);
  // (bs, heads, q, d) as a permuted view of (bs, q, heads, d), the layout the CPU kernel returns.
  return out.reshape({bs, heads, q_len, d}).transpose(1, 2).contiguous().transpose(1, 2);
}

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) { m.impl("paged_attention", TORCH_FN(paged_attention)); }

}  // namespace verl::kernels::aten
