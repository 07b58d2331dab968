// CPU paged attention: one work item per (row, query head, query token); keys and values are read
// in place from their blocks, so a decode step touches each cached token once instead of
// gathering the whole context into a new tensor first.
#include "verl/rollout/paged_attention.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <type_traits>
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
  // q is read through its strides (after RoPE it is a transposed view; no copy needed).
  const torch::Tensor& q = q_in;
  torch::Tensor tables = block_tables_in.to(torch::kLong).contiguous();
  torch::Tensor positions = positions_in.to(torch::kLong).contiguous();
  const int64_t max_blocks = tables.size(1);
  // Written as (bs, q, heads, d), the layout o_proj wants, and returned as a permuted view.
  torch::Tensor out = torch::empty({bs, q_len, heads, d}, q.options());
  const int64_t qs0 = q.stride(0), qs1 = q.stride(1), qs2 = q.stride(2), qs3 = q.stride(3);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, q.scalar_type(), "paged_attention_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* qp = q.data_ptr<scalar_t>();
    const scalar_t* kp = k_pool.data_ptr<scalar_t>();
    const scalar_t* vp = v_pool.data_ptr<scalar_t>();
    const int64_t* tp = tables.data_ptr<int64_t>();
    const int64_t* pp = positions.data_ptr<int64_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    const int64_t token_stride = kv_heads * d;  // between consecutive slots of a block
    // One work item per (row, kv head, query token): the kv head's `group` query heads share each
    // key / value read. Dot products use 8 independent partial sums so the compiler vectorises them.
    const int64_t items = bs * kv_heads * q_len;
    at::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) {
      std::vector<acc_t> scores, acc(group * d), qv(group * d), kbuf(d), vbuf(d);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t t = item % q_len, kvh = (item / q_len) % kv_heads, i = item / (q_len * kv_heads);
        const int64_t len = std::min(pp[i * q_len + t] + 1, max_blocks * block_size);
        for (int64_t g = 0; g < group; ++g) {
          const scalar_t* qrow = qp + i * qs0 + (kvh * group + g) * qs1 + t * qs2;
          for (int64_t c = 0; c < d; ++c) qv[g * d + c] = static_cast<acc_t>(qrow[c * qs3]) * static_cast<acc_t>(scale);
        }
        scores.resize(group * len);
        const int64_t* table = tp + i * max_blocks;
        auto row_of = [&](const scalar_t* pool, int64_t j, std::vector<acc_t>& buf) -> const acc_t* {
          const scalar_t* r = pool + (table[j / block_size] * block_size + j % block_size) * token_stride + kvh * d;
          if constexpr (std::is_same_v<scalar_t, acc_t>) {
            return reinterpret_cast<const acc_t*>(r);  // same type: no conversion
          } else {
            for (int64_t c = 0; c < d; ++c) buf[c] = static_cast<acc_t>(r[c]);
            return buf.data();
          }
        };
        for (int64_t j = 0; j < len; ++j) {
          const acc_t* krow = row_of(kp, j, kbuf);
          for (int64_t g = 0; g < group; ++g) {
            const acc_t* qg = qv.data() + g * d;
            acc_t part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t c = 0;
            for (; c + 8 <= d; c += 8)
              for (int l = 0; l < 8; ++l) part[l] += qg[c + l] * krow[c + l];
            acc_t sdot = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
            for (; c < d; ++c) sdot += qg[c] * krow[c];
            scores[g * len + j] = sdot;
          }
        }
        std::fill(acc.begin(), acc.end(), acc_t(0));
        std::vector<acc_t> inv(group);
        for (int64_t g = 0; g < group; ++g) {
          acc_t* sg = scores.data() + g * len;
          acc_t mx = -std::numeric_limits<acc_t>::infinity();
          for (int64_t j = 0; j < len; ++j) mx = std::max(mx, sg[j]);
          acc_t sum = 0;
          for (int64_t j = 0; j < len; ++j) {
            sg[j] = std::exp(sg[j] - mx);
            sum += sg[j];
          }
          inv[g] = acc_t(1) / sum;
        }
        for (int64_t j = 0; j < len; ++j) {
          const acc_t* vrow = row_of(vp, j, vbuf);
          for (int64_t g = 0; g < group; ++g) {
            const acc_t w = scores[g * len + j];
            acc_t* ag = acc.data() + g * d;
            for (int64_t c = 0; c < d; ++c) ag[c] += w * vrow[c];
          }
        }
        for (int64_t g = 0; g < group; ++g) {
          scalar_t* orow = op + ((i * q_len + t) * heads + kvh * group + g) * d;
          for (int64_t c = 0; c < d; ++c) orow[c] = static_cast<scalar_t>(acc[g * d + c] * inv[g]);
        }
      }
    });
  });
  return out.permute({0, 2, 1, 3});
}

}  // namespace verl::rollout
