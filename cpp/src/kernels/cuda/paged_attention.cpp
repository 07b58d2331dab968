// verl::paged_attention on CUDA (kernels/ops.h): paged_attention.cu, one launch per call, K/V read
// through the block table in place.
#include <torch/library.h>
#include <torch/torch.h>

#include "kernels/aten/compositions.h"
#include "kernels/cuda/dtype.h"

namespace verl::kernels::cuda {
namespace {

torch::Tensor paged_attention(const torch::Tensor& q, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                              const torch::Tensor& block_tables, const torch::Tensor& positions, double scale,
                              bool allow_simd, int64_t sliding_window) {
  // The CUDA kernels read whole contexts: a sliding window runs the ATen composition (a masked SDPA over the
  // gathered blocks; PagedKVCache zero-fills its CUDA pools, which that path needs).
  if (sliding_window > 0)
    return aten::paged_attention(q, k_pool, v_pool, block_tables, positions, scale, allow_simd, sliding_window);
  VERL_CHECK(q.dim() == 4 && k_pool.dim() == 4 && k_pool.sizes() == v_pool.sizes(),
             "paged_attention: q (bs, heads, q, d) and pools (blocks, block_size, kv_heads, d) expected");
  VERL_CHECK(k_pool.is_contiguous() && v_pool.is_contiguous(), "paged_attention: pools must be contiguous");
  VERL_CHECK(q.scalar_type() == k_pool.scalar_type() && k_pool.scalar_type() == v_pool.scalar_type(),
             "paged_attention: q and the pools must share a dtype");
  VERL_CHECK(k_pool.device() == q.device() && v_pool.device() == q.device(),
             "paged_attention: q and the pools must be on one device");
  const int64_t bs = q.size(0), heads = q.size(1), q_len = q.size(2), d = q.size(3);
  const int64_t block_size = k_pool.size(1), kv_heads = k_pool.size(2);
  VERL_CHECK(k_pool.size(3) == d && heads % kv_heads == 0, "paged_attention: head_dim / kv_heads mismatch");
  const c10::DeviceGuard guard(q.device());
  const torch::Tensor tables = block_tables.to(q.device(), torch::kLong).contiguous();
  const torch::Tensor pos = positions.to(q.device(), torch::kLong).contiguous();
  VERL_CHECK(tables.dim() == 2 && tables.size(0) == bs && pos.sizes() == torch::IntArrayRef({bs, q_len}),
             "paged_attention: block_tables (bs, max_blocks) and positions (bs, q) expected, got ", tables.sizes(),
             " and ", pos.sizes());
  const int64_t max_blocks = tables.size(1);
  // The kernels index a row's context in 32 bits.
  VERL_CHECK(max_blocks * block_size < (int64_t{1} << 31), "paged_attention: a context of ", max_blocks * block_size,
             " tokens (block_tables ", tables.sizes(), " x block_size ", block_size, ") exceeds the kernels' 2^31");
  // Written as (bs, q, heads, d), the layout o_proj wants, and returned as a permuted view (as on CPU).
  torch::Tensor out = torch::empty({bs, q_len, heads, d}, q.options());
  const Dtype dtype = launcher_dtype(q.scalar_type(), "paged_attention");
  // The scores scratch only where the kernel reads it (not the warp kernel: the engine's decode).
  torch::Tensor scores;
  if (paged_attention_needs_scores(k_pool.const_data_ptr(), v_pool.const_data_ptr(), heads, kv_heads, d, dtype)) {
    const auto acc_dtype = q.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    scores = torch::empty({bs * q_len * heads, max_blocks * block_size}, q.options().dtype(acc_dtype));
  }
  check_launch(launch_paged_attention(q.const_data_ptr(), strides4(q), k_pool.const_data_ptr(), v_pool.const_data_ptr(),
                                      tables.const_data_ptr<int64_t>(), pos.const_data_ptr<int64_t>(), out.data_ptr(),
                                      scores.defined() ? scores.data_ptr() : nullptr, bs, q_len, heads, kv_heads, d,
                                      block_size, max_blocks, scale, dtype, stream_of(q)),
               "paged_attention");
  return out.permute({0, 2, 1, 3});
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CUDA, m) { m.impl("paged_attention", TORCH_FN(paged_attention)); }

}  // namespace verl::kernels::cuda
