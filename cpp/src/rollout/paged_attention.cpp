// CPU paged attention: one work item per (row, query head, query token); keys and values are read
// in place from their blocks, so a decode step touches each cached token once instead of
// gathering the whole context into a new tensor first.
#include "verl/rollout/paged_attention.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "verl/core/error.h"

namespace verl::rollout {

torch::Tensor paged_attention_cpu(const torch::Tensor& q_in, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                                  const torch::Tensor& block_tables_in, const torch::Tensor& positions_in,
                                  double scale) {
  VERL_CHECK(q_in.device().is_cpu() && k_pool.device().is_cpu(), "paged_attention_cpu: CPU tensors only");
  VERL_CHECK(q_in.dim() == 4 && k_pool.dim() == 4 && k_pool.sizes() == v_pool.sizes(),
             "paged_attention_cpu: q (bs, heads, q, d) and pools (blocks, block_size, kv_heads, d) expected");
  VERL_CHECK(k_pool.is_contiguous() && v_pool.is_contiguous(), "paged_attention_cpu: pools must be contiguous");
  const int64_t bs = q_in.size(0), heads = q_in.size(1), q_len = q_in.size(2), d = q_in.size(3);
  const int64_t block_size = k_pool.size(1), kv_heads = k_pool.size(2);
  VERL_CHECK(k_pool.size(3) == d && heads % kv_heads == 0, "paged_attention_cpu: head_dim / kv_heads mismatch");
  const int64_t group = heads / kv_heads;
  torch::Tensor q = q_in.contiguous();
  torch::Tensor tables = block_tables_in.to(torch::kLong).contiguous();
  torch::Tensor positions = positions_in.to(torch::kLong).contiguous();
  const int64_t max_blocks = tables.size(1);
  torch::Tensor out = torch::empty_like(q);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, q.scalar_type(), "paged_attention_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* qp = q.data_ptr<scalar_t>();
    const scalar_t* kp = k_pool.data_ptr<scalar_t>();
    const scalar_t* vp = v_pool.data_ptr<scalar_t>();
    const int64_t* tp = tables.data_ptr<int64_t>();
    const int64_t* pp = positions.data_ptr<int64_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    const int64_t token_stride = kv_heads * d;  // between consecutive slots of a block
    const int64_t items = bs * heads * q_len;
    at::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) {
      std::vector<acc_t> scores, acc(d), qv(d);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t t = item % q_len, h = (item / q_len) % heads, i = item / (q_len * heads);
        const int64_t kvh = h / group;
        const int64_t len = std::min(pp[i * q_len + t] + 1, max_blocks * block_size);
        const scalar_t* qrow = qp + ((i * heads + h) * q_len + t) * d;
        for (int64_t c = 0; c < d; ++c) qv[c] = static_cast<acc_t>(qrow[c]) * static_cast<acc_t>(scale);
        scores.resize(len);
        acc_t mx = -std::numeric_limits<acc_t>::infinity();
        const int64_t* table = tp + i * max_blocks;
        for (int64_t j = 0; j < len; ++j) {
          const scalar_t* krow = kp + (table[j / block_size] * block_size + j % block_size) * token_stride + kvh * d;
          acc_t s = 0;
          for (int64_t c = 0; c < d; ++c) s += qv[c] * static_cast<acc_t>(krow[c]);
          scores[j] = s;
          mx = std::max(mx, s);
        }
        acc_t sum = 0;
        for (int64_t j = 0; j < len; ++j) {
          scores[j] = std::exp(scores[j] - mx);
          sum += scores[j];
        }
        std::fill(acc.begin(), acc.end(), acc_t(0));
        for (int64_t j = 0; j < len; ++j) {
          const scalar_t* vrow = vp + (table[j / block_size] * block_size + j % block_size) * token_stride + kvh * d;
          const acc_t w = scores[j];
          for (int64_t c = 0; c < d; ++c) acc[c] += w * static_cast<acc_t>(vrow[c]);
        }
        scalar_t* orow = op + ((i * heads + h) * q_len + t) * d;
        const acc_t inv = acc_t(1) / sum;
        for (int64_t c = 0; c < d; ++c) orow[c] = static_cast<scalar_t>(acc[c] * inv);
      }
    });
  });
  return out;
}

}  // namespace verl::rollout
