// CPU paged attention: one work item per (row, kv head, query token); keys and values are read
// in place from their blocks, so a decode step touches each cached token once instead of
// gathering the whole context into a new tensor first. float32 runs an AVX2/FMA kernel where
// the CPU has one (chosen at run time: the library itself is built for baseline x86-64); every
// other dtype and CPU runs the portable loop below, which is also the kernel's test reference.
#include "verl/rollout/paged_attention.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "verl/core/error.h"
#include "rollout/simd_avx2.h"
#include "rollout/thread_scratch.h"


namespace verl::rollout {

namespace {

// Everything a work item needs, as raw pointers and sizes.
template <typename scalar_t>
struct PagedArgs {
  const scalar_t* q;
  int64_t qs0, qs1, qs2, qs3;  // q strides (bs, heads, q, d)
  const scalar_t* k;
  const scalar_t* v;
  const int64_t* tables;     // (bs, max_blocks)
  const int64_t* positions;  // (bs, q)
  scalar_t* out;             // (bs, q, heads, d)
  int64_t q_len, heads, kv_heads, group, d, block_size, max_blocks;
  double scale;

  int64_t token_stride() const { return kv_heads * d; }  // between consecutive slots of a block
};

// Portable kernel: any dtype, accumulation in opmath (float for reduced types, double for double).
template <typename scalar_t>
void paged_items_generic(const PagedArgs<scalar_t>& a, int64_t begin, int64_t end) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t d = a.d, group = a.group, block_size = a.block_size, token_stride = a.token_stride();
  std::vector<acc_t> scores, acc(group * d), qv(group * d), kbuf(d), vbuf(d), inv(group);
  for (int64_t item = begin; item < end; ++item) {
    const int64_t t = item % a.q_len, kvh = (item / a.q_len) % a.kv_heads, i = item / (a.q_len * a.kv_heads);
    const int64_t len = std::min(a.positions[i * a.q_len + t] + 1, a.max_blocks * block_size);
    for (int64_t g = 0; g < group; ++g) {
      const scalar_t* qrow = a.q + i * a.qs0 + (kvh * group + g) * a.qs1 + t * a.qs2;
      for (int64_t c = 0; c < d; ++c)
        qv[g * d + c] = static_cast<acc_t>(qrow[c * a.qs3]) * static_cast<acc_t>(a.scale);
    }
    scores.resize(group * len);
    const int64_t* table = a.tables + i * a.max_blocks;
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
      const acc_t* krow = row_of(a.k, j, kbuf);
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
      const acc_t* vrow = row_of(a.v, j, vbuf);
      for (int64_t g = 0; g < group; ++g) {
        const acc_t w = scores[g * len + j];
        acc_t* ag = acc.data() + g * d;
        for (int64_t c = 0; c < d; ++c) ag[c] += w * vrow[c];
      }
    }
    for (int64_t g = 0; g < group; ++g) {
      scalar_t* orow = a.out + ((i * a.q_len + t) * a.heads + kvh * group + g) * d;
      for (int64_t c = 0; c < d; ++c) orow[c] = static_cast<scalar_t>(acc[g * d + c] * inv[g]);
    }
  }
}

#ifdef VERL_HAVE_AVX2_KERNELS
// The float32 kernel with 256-bit FMA (simd_avx2.h). Scores of up to 8 keys of a block are
// computed together (8 accumulators, one horizontal reduction for all 8), the softmax runs 8 lanes
// at a time, and the weighted sum of values adds each value row with FMAs.
using simd::exp_ps;
using simd::hmax_ps;
using simd::hsum8_ps;
using simd::hsum_ps;

__attribute__((target("avx2,fma"))) inline float dot_avx2(const float* a, const float* b, int64_t d) {
  __m256 s0 = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= d; c += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), s0);
  float s = hsum_ps(s0);
  for (; c < d; ++c) s += a[c] * b[c];
  return s;
}

// acc[0, d) += w * x[0, d)
__attribute__((target("avx2,fma"))) inline void axpy_avx2(float* acc, float w, const float* x, int64_t d) {
  const __m256 wv = _mm256_set1_ps(w);
  int64_t c = 0;
  for (; c + 8 <= d; c += 8) _mm256_storeu_ps(acc + c, _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + c), _mm256_loadu_ps(acc + c)));
  for (; c < d; ++c) acc[c] += w * x[c];
}

// out[0, n) = q . rows[o * stride] for n keys (n <= 8), d a multiple of 8.
__attribute__((target("avx2,fma"))) inline void dot8_avx2(const float* q, const float* rows, int64_t stride, int64_t n,
                                                          int64_t d, float* out) {
  __m256 acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = _mm256_setzero_ps();
  for (int64_t c = 0; c < d; c += 8) {
    const __m256 qv = _mm256_loadu_ps(q + c);
    for (int64_t k = 0; k < n; ++k) acc[k] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(rows + k * stride + c), acc[k]);
  }
  alignas(32) float sums[8];
  _mm256_store_ps(sums, hsum8_ps(acc));
  for (int64_t k = 0; k < n; ++k) out[k] = sums[k];
}

// In place: s[0, n) = softmax(s[0, n)).
__attribute__((target("avx2,fma"))) inline void softmax_avx2(float* s, int64_t n) {
  __m256 mv = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(s + j));
  float mx = hmax_ps(mv);
  for (; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
  const __m256 mxv = _mm256_set1_ps(mx);
  __m256 sv = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(s + j), mxv));
    _mm256_storeu_ps(s + j, e);
    sv = _mm256_add_ps(sv, e);
  }
  float sum = hsum_ps(sv);
  if (j < n) {  // the tail through a padded vector, so every weight comes from the same exp
    alignas(32) float tail[8];
    for (int k = 0; k < 8; ++k) tail[k] = j + k < n ? s[j + k] - mx : -std::numeric_limits<float>::infinity();
    _mm256_store_ps(tail, exp_ps(_mm256_load_ps(tail)));
    for (int64_t k = 0; j + k < n; ++k) {
      s[j + k] = tail[k];
      sum += tail[k];
    }
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, _mm256_mul_ps(_mm256_loadu_ps(s + j), inv));
  for (; j < n; ++j) s[j] *= 1.0f / sum;
}

// Asks for the n rows (d floats, `stride` apart) of a block before they are used: blocks are
// scattered through the pool, so each is a cold miss (and a new page) the hardware prefetcher
// cannot foresee.
__attribute__((target("avx2,fma"))) inline void prefetch_rows(const float* rows, int64_t n, int64_t stride, int64_t d) {
  for (int64_t o = 0; o < n; ++o)
    for (int64_t c = 0; c < d; c += 16) _mm_prefetch(reinterpret_cast<const char*>(rows + o * stride + c), _MM_HINT_T0);
}

// Work items [begin, end) (see paged_items_generic). `qv` holds group * d floats, `acc` too,
// `scores` group * max_blocks * block_size: the caller's per-thread buffers.
__attribute__((target("avx2,fma"))) void paged_items_avx2(const PagedArgs<float>& a, int64_t begin, int64_t end,
                                                          float* qv, float* acc, float* scores) {
  const int64_t d = a.d, group = a.group, bsz = a.block_size, token_stride = a.token_stride();
  const float scale = static_cast<float>(a.scale);
  const bool batched = d % 8 == 0;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t t = item % a.q_len, kvh = (item / a.q_len) % a.kv_heads, i = item / (a.q_len * a.kv_heads);
    int64_t len = a.positions[i * a.q_len + t] + 1;
    if (len > a.max_blocks * bsz) len = a.max_blocks * bsz;
    for (int64_t g = 0; g < group; ++g) {
      const float* qrow = a.q + i * a.qs0 + (kvh * group + g) * a.qs1 + t * a.qs2;
      for (int64_t c = 0; c < d; ++c) qv[g * d + c] = qrow[c * a.qs3] * scale;
    }
    const int64_t* table = a.tables + i * a.max_blocks;
    // Scores block by block: slot j lives at table[j / bsz] * bsz + j % bsz.
    for (int64_t j0 = 0; j0 < len; j0 += bsz) {
      const float* kb = a.k + table[j0 / bsz] * bsz * token_stride + kvh * d;
      const int64_t n = len - j0 < bsz ? len - j0 : bsz;
      if (j0 + bsz < len) {
        const int64_t next = len - j0 - bsz < bsz ? len - j0 - bsz : bsz;
        prefetch_rows(a.k + table[j0 / bsz + 1] * bsz * token_stride + kvh * d, next, token_stride, d);
      } else {
        prefetch_rows(a.v + table[0] * bsz * token_stride + kvh * d, len < bsz ? len : bsz, token_stride, d);
      }
      for (int64_t g = 0; g < group; ++g) {
        float* sg = scores + g * len + j0;
        if (batched) {
          for (int64_t o = 0; o < n; o += 8)
            dot8_avx2(qv + g * d, kb + o * token_stride, token_stride, n - o < 8 ? n - o : 8, d, sg + o);
        } else {
          for (int64_t o = 0; o < n; ++o) sg[o] = dot_avx2(qv + g * d, kb + o * token_stride, d);
        }
      }
    }
    for (int64_t g = 0; g < group; ++g) softmax_avx2(scores + g * len, len);
    if (batched) {
      // Weighted sum of values in registers: per query head, 32 lanes of head_dim at a time over
      // every key (the first tile streams the blocks in, later tiles re-read them from cache).
      for (int64_t g = 0; g < group; ++g) {
        float* orow = a.out + ((i * a.q_len + t) * a.heads + kvh * group + g) * d;
        const float* sg = scores + g * len;
        for (int64_t c0 = 0; c0 < d; c0 += 32) {
          const int64_t lanes = d - c0 < 32 ? (d - c0) / 8 : 4;
          __m256 r[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
          const bool first = g == 0 && c0 == 0;
          for (int64_t j0 = 0; j0 < len; j0 += bsz) {
            const float* vb = a.v + table[j0 / bsz] * bsz * token_stride + kvh * d + c0;
            const int64_t n = len - j0 < bsz ? len - j0 : bsz;
            if (first && j0 + bsz < len) {
              const int64_t next = len - j0 - bsz < bsz ? len - j0 - bsz : bsz;
              prefetch_rows(a.v + table[j0 / bsz + 1] * bsz * token_stride + kvh * d, next, token_stride, d);
            }
            for (int64_t o = 0; o < n; ++o) {
              const __m256 w = _mm256_set1_ps(sg[j0 + o]);
              const float* vr = vb + o * token_stride;
              for (int64_t l = 0; l < lanes; ++l) r[l] = _mm256_fmadd_ps(w, _mm256_loadu_ps(vr + 8 * l), r[l]);
            }
          }
          for (int64_t l = 0; l < lanes; ++l) _mm256_storeu_ps(orow + c0 + 8 * l, r[l]);
        }
      }
      continue;
    }
    for (int64_t c = 0; c < group * d; ++c) acc[c] = 0.0f;
    for (int64_t j0 = 0; j0 < len; j0 += bsz) {
      const float* vb = a.v + table[j0 / bsz] * bsz * token_stride + kvh * d;
      const int64_t n = len - j0 < bsz ? len - j0 : bsz;
      if (j0 + bsz < len) {
        const int64_t next = len - j0 - bsz < bsz ? len - j0 - bsz : bsz;
        prefetch_rows(a.v + table[j0 / bsz + 1] * bsz * token_stride + kvh * d, next, token_stride, d);
      }
      for (int64_t o = 0; o < n; ++o)
        for (int64_t g = 0; g < group; ++g) axpy_avx2(acc + g * d, scores[g * len + j0 + o], vb + o * token_stride, d);
    }
    for (int64_t g = 0; g < group; ++g) {
      float* orow = a.out + ((i * a.q_len + t) * a.heads + kvh * group + g) * d;
      for (int64_t c = 0; c < d; ++c) orow[c] = acc[g * d + c];
    }
  }
}
#endif

// The SIMD kernel where one exists for the dtype and the CPU; false means "run the portable loop".
template <typename scalar_t>
bool run_simd(const PagedArgs<scalar_t>&, int64_t) {
  return false;
}

bool run_simd(const PagedArgs<float>& a, int64_t items) {
#ifdef VERL_HAVE_AVX2_KERNELS
  if (!simd::cpu_has_avx2_fma()) return false;
  at::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) {
    float* qv = detail::thread_scratch<float, 0>(static_cast<size_t>(a.group * a.d));
    float* acc = detail::thread_scratch<float, 1>(static_cast<size_t>(a.group * a.d));
    float* scores = detail::thread_scratch<float, 2>(static_cast<size_t>(a.group * a.max_blocks * a.block_size));
    paged_items_avx2(a, begin, end, qv, acc, scores);
  });
  return true;
#else
  (void)a;
  (void)items;
  return false;
#endif
}

}  // namespace

torch::Tensor paged_attention_cpu(const torch::Tensor& q_in, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                                  const torch::Tensor& block_tables_in, const torch::Tensor& positions_in,
                                  double scale, bool allow_simd) {
  VERL_CHECK(q_in.device().is_cpu() && k_pool.device().is_cpu(), "paged_attention_cpu: CPU tensors only");
  VERL_CHECK(q_in.dim() == 4 && k_pool.dim() == 4 && k_pool.sizes() == v_pool.sizes(),
             "paged_attention_cpu: q (bs, heads, q, d) and pools (blocks, block_size, kv_heads, d) expected");
  VERL_CHECK(k_pool.is_contiguous() && v_pool.is_contiguous(), "paged_attention_cpu: pools must be contiguous");
  VERL_CHECK(q_in.scalar_type() == k_pool.scalar_type() && k_pool.scalar_type() == v_pool.scalar_type(),
             "paged_attention_cpu: q and the pools must share a dtype");
  const int64_t bs = q_in.size(0), heads = q_in.size(1), q_len = q_in.size(2), d = q_in.size(3);
  const int64_t block_size = k_pool.size(1), kv_heads = k_pool.size(2);
  VERL_CHECK(k_pool.size(3) == d && heads % kv_heads == 0, "paged_attention_cpu: head_dim / kv_heads mismatch");
  // q is read through its strides (after RoPE it is a transposed view; no copy needed).
  const torch::Tensor& q = q_in;
  torch::Tensor tables = block_tables_in.to(torch::kLong).contiguous();
  torch::Tensor positions = positions_in.to(torch::kLong).contiguous();
  VERL_CHECK(tables.dim() == 2 && tables.size(0) == bs && positions.sizes() == torch::IntArrayRef({bs, q_len}),
             "paged_attention_cpu: block_tables (bs, max_blocks) and positions (bs, q) expected, got ", tables.sizes(),
             " and ", positions.sizes());
  const int64_t max_blocks = tables.size(1);
  // Written as (bs, q, heads, d), the layout o_proj wants, and returned as a permuted view.
  torch::Tensor out = torch::empty({bs, q_len, heads, d}, q.options());
  const int64_t items = bs * kv_heads * q_len;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, q.scalar_type(), "paged_attention_cpu", [&] {
    PagedArgs<scalar_t> a{q.data_ptr<scalar_t>(), q.stride(0), q.stride(1), q.stride(2), q.stride(3),
                          k_pool.data_ptr<scalar_t>(), v_pool.data_ptr<scalar_t>(), tables.data_ptr<int64_t>(),
                          positions.data_ptr<int64_t>(), out.data_ptr<scalar_t>(), q_len, heads, kv_heads,
                          heads / kv_heads, d, block_size, max_blocks, scale};
    if (allow_simd && run_simd(a, items)) return;
    at::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) { paged_items_generic(a, begin, end); });
  });
  return out.permute({0, 2, 1, 3});
}

}  // namespace verl::rollout
