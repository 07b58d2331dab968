// verl::paged_attention on CPU (kernels/ops.h): keys and values are read in place from their blocks,
// so a decode step touches each cached token once instead of gathering the whole context first.
// float32 and bfloat16 with head_dim a multiple of 8 run an AVX2/FMA kernel where the CPU has one
// (chosen at run time: the library itself is built for baseline x86-64; bfloat16 is widened to
// float32 as it is loaded and accumulated in float32, as the portable loop does); every other case
// runs the portable loop below, one work item per (row, kv head, query token), which is also the
// kernel's test reference.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include <torch/library.h>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "kernels/cpu/simd_avx2.h"
#include "kernels/cpu/thread_scratch.h"

namespace verl::kernels::cpu {

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
  int64_t sliding_window;  // 0: every position up to the query's; else the last sliding_window of them

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
    const int64_t end_pos = std::min(a.positions[i * a.q_len + t] + 1, a.max_blocks * block_size);
    // The keys [first, end_pos): a sliding window drops the older ones.
    const int64_t first = a.sliding_window > 0 ? std::max<int64_t>(0, end_pos - a.sliding_window) : 0;
    const int64_t len = end_pos - first;
    for (int64_t g = 0; g < group; ++g) {
      const scalar_t* qrow = a.q + i * a.qs0 + (kvh * group + g) * a.qs1 + t * a.qs2;
      for (int64_t c = 0; c < d; ++c)
        qv[g * d + c] = static_cast<acc_t>(qrow[c * a.qs3]) * static_cast<acc_t>(a.scale);
    }
    scores.resize(group * len);
    const int64_t* table = a.tables + i * a.max_blocks;
    auto row_of = [&](const scalar_t* pool, int64_t key, std::vector<acc_t>& buf) -> const acc_t* {
      const int64_t j = first + key;  // the key's position in the row
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
// The float32 / bfloat16 kernel with 256-bit FMA (simd_avx2.h), for head_dim a multiple of 8. One work item is
// one query token of one row with all its heads, so each block of the row is read as one
// contiguous run (block_size x kv_heads x head_dim floats) rather than once per kv head in strided
// halves. Decode is bound by reading the scattered blocks: a core keeps few demand misses in flight,
// so blocks are prefetched into L2 (which tracks many more) kPrefetchBlocks ahead, across the key
// pass, the value pass and the next item. Scores of 8 keys come from 8 accumulators and one
// horizontal reduction, the softmax runs 8 lanes at a time, and the value sum keeps its
// accumulators in registers.
using simd::exp_ps;
using simd::hsum8_ps;
using simd::hsum_ps;

constexpr int64_t kPrefetchBlocks = 2;

// Eight elements from p as floats: bfloat16 is the upper half of a float32, so widening is a shift.
__attribute__((target("avx2,fma"))) inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
__attribute__((target("avx2,fma"))) inline __m256 load8(const c10::BFloat16* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// Asks L2 for `bytes` contiguous bytes: a block (or its first rows) before it is read.
__attribute__((target("avx2,fma"))) inline void prefetch_span(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch(c + o, _MM_HINT_T2);
}

// Block b of a context of `len` keys: its first min(block_size, len - b * block_size) token rows.
// (A plain function, not a lambda: GCC drops the prefetches of a target-attributed function
// inlined into a lambda, which carries no target attribute.)
template <typename T>
__attribute__((target("avx2,fma"))) inline void prefetch_block(const PagedArgs<T>& a, const T* pool,
                                                               const int64_t* table, int64_t len, int64_t b) {
  const int64_t rows = len - b * a.block_size < a.block_size ? len - b * a.block_size : a.block_size;
  prefetch_span(pool + table[b] * a.block_size * a.token_stride(),
                rows * a.token_stride() * static_cast<int64_t>(sizeof(T)));
}

// out[0, N) = q . rows[o * stride] for N keys (N <= 8), d a multiple of 8. N is a template
// argument so the eight accumulators stay in registers (a run-time count kept them on the stack).
template <int N, typename T>
__attribute__((target("avx2,fma"))) inline void dot8_avx2(const float* q, const T* rows, int64_t stride, int64_t d,
                                                          float* out) {
  __m256 acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = _mm256_setzero_ps();
  for (int64_t c = 0; c < d; c += 8) {
    const __m256 qv = _mm256_loadu_ps(q + c);
    for (int k = 0; k < N; ++k) acc[k] = _mm256_fmadd_ps(qv, load8(rows + k * stride + c), acc[k]);
  }
  if constexpr (N == 8) {
    _mm256_storeu_ps(out, hsum8_ps(acc));
  } else {
    alignas(32) float sums[8];
    _mm256_store_ps(sums, hsum8_ps(acc));
    for (int k = 0; k < N; ++k) out[k] = sums[k];
  }
}

// Scores of n <= 8 keys: the full case, or a block's tail through one switch.
template <typename T>
__attribute__((target("avx2,fma"))) inline void dot_keys_avx2(const float* q, const T* rows, int64_t stride,
                                                              int64_t n, int64_t d, float* out) {
  switch (n) {
    case 8: return dot8_avx2<8>(q, rows, stride, d, out);
    case 7: return dot8_avx2<7>(q, rows, stride, d, out);
    case 6: return dot8_avx2<6>(q, rows, stride, d, out);
    case 5: return dot8_avx2<5>(q, rows, stride, d, out);
    case 4: return dot8_avx2<4>(q, rows, stride, d, out);
    case 3: return dot8_avx2<3>(q, rows, stride, d, out);
    case 2: return dot8_avx2<2>(q, rows, stride, d, out);
    default: return dot8_avx2<1>(q, rows, stride, d, out);
  }
}

// In place: s[0, n) = softmax(s[0, n)).
__attribute__((target("avx2,fma"))) inline void softmax_avx2(float* s, int64_t n) {
  const float mx = simd::max_ps(s, n);
  const __m256 mxv = _mm256_set1_ps(mx);
  __m256 sv = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(s + j), mxv));
    _mm256_storeu_ps(s + j, e);
    sv = _mm256_add_ps(sv, e);
  }
  float sum = hsum_ps(sv);
  if (j < n) {
    simd::exp_shifted_tail_ps(s + j, n - j, mx, s + j);
    for (int64_t k = j; k < n; ++k) sum += s[k];
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, _mm256_mul_ps(_mm256_loadu_ps(s + j), inv));
  for (; j < n; ++j) s[j] *= 1.0f / sum;
}

// acc[0, 8 * LANES) += sum_o w[o] * rows[o * stride][0, 8 * LANES) over n rows. LANES is a template
// argument so the accumulators stay in registers; even and odd rows go to two accumulator sets so
// consecutive FMAs do not wait on each other's latency.
template <int LANES, typename T>
__attribute__((target("avx2,fma"))) inline void add_weighted_rows_avx2(const T* rows, int64_t stride, int64_t n,
                                                                       const float* w, float* acc) {
  __m256 r0[LANES], r1[LANES];
  for (int l = 0; l < LANES; ++l) {
    r0[l] = _mm256_loadu_ps(acc + 8 * l);
    r1[l] = _mm256_setzero_ps();
  }
  int64_t o = 0;
  for (; o + 2 <= n; o += 2) {
    const __m256 w0 = _mm256_set1_ps(w[o]), w1 = _mm256_set1_ps(w[o + 1]);
    const T* v0 = rows + o * stride;
    const T* v1 = v0 + stride;
    for (int l = 0; l < LANES; ++l) {
      r0[l] = _mm256_fmadd_ps(w0, load8(v0 + 8 * l), r0[l]);
      r1[l] = _mm256_fmadd_ps(w1, load8(v1 + 8 * l), r1[l]);
    }
  }
  if (o < n) {
    const __m256 w0 = _mm256_set1_ps(w[o]);
    for (int l = 0; l < LANES; ++l) r0[l] = _mm256_fmadd_ps(w0, load8(rows + o * stride + 8 * l), r0[l]);
  }
  for (int l = 0; l < LANES; ++l) _mm256_storeu_ps(acc + 8 * l, _mm256_add_ps(r0[l], r1[l]));
}

// acc[0, d) += the weighted sum of n value rows, 32 lanes of head_dim at a time.
template <typename T>
__attribute__((target("avx2,fma"))) inline void add_weighted_values_avx2(const T* rows, int64_t stride, int64_t n,
                                                                         const float* w, int64_t d, float* acc) {
  for (int64_t c0 = 0; c0 < d; c0 += 32) {
    switch (d - c0 < 32 ? (d - c0) / 8 : 4) {
      case 4: add_weighted_rows_avx2<4>(rows + c0, stride, n, w, acc + c0); break;
      case 3: add_weighted_rows_avx2<3>(rows + c0, stride, n, w, acc + c0); break;
      case 2: add_weighted_rows_avx2<2>(rows + c0, stride, n, w, acc + c0); break;
      default: add_weighted_rows_avx2<1>(rows + c0, stride, n, w, acc + c0); break;
    }
  }
}

// Work items [begin, end): item = row * q_len + query token, every head. `qv` and `acc` hold
// heads * d floats, `scores` heads * max_blocks * block_size: the caller's per-thread buffers.
template <typename T>
__attribute__((target("avx2,fma"))) void paged_rows_avx2(const PagedArgs<T>& a, int64_t begin, int64_t end,
                                                         float* qv, float* acc, float* scores) {
  const int64_t d = a.d, heads = a.heads, group = a.group, bsz = a.block_size, token_stride = a.token_stride();
  const int64_t max_len = a.max_blocks * bsz;
  const float scale = static_cast<float>(a.scale);
  auto context = [&](int64_t item) { return std::min(a.positions[item] + 1, max_len); };
  auto table_of = [&](int64_t item) { return a.tables + (item / a.q_len) * a.max_blocks; };
  for (int64_t item = begin; item < end; ++item) {
    const int64_t t = item % a.q_len, i = item / a.q_len;
    const int64_t len = context(item), nb = (len + bsz - 1) / bsz;
    const int64_t* table = table_of(item);
    for (int64_t h = 0; h < heads; ++h) {
      const T* qrow = a.q + i * a.qs0 + h * a.qs1 + t * a.qs2;
      for (int64_t c = 0; c < d; ++c) qv[h * d + c] = static_cast<float>(qrow[c * a.qs3]) * scale;
    }
    if (item == begin)
      for (int64_t b = 0; b < std::min(kPrefetchBlocks, nb); ++b) prefetch_block(a, a.k, table, len, b);
    // Keys: scores[h * len + j]; ahead, the rest of the keys, then the first values.
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t ahead = b + kPrefetchBlocks;
      if (ahead < nb)
        prefetch_block(a, a.k, table, len, ahead);
      else if (ahead - nb < nb)
        prefetch_block(a, a.v, table, len, ahead - nb);
      const T* kb = a.k + table[b] * bsz * token_stride;
      const int64_t n = std::min(bsz, len - b * bsz);
      for (int64_t h = 0; h < heads; ++h) {
        const T* kh = kb + (h / group) * d;
        float* sh = scores + h * len + b * bsz;
        for (int64_t o = 0; o < n; o += 8)
          dot_keys_avx2(qv + h * d, kh + o * token_stride, token_stride, std::min<int64_t>(8, n - o), d, sh + o);
      }
    }
    for (int64_t h = 0; h < heads; ++h) softmax_avx2(scores + h * len, len);
    // Values; ahead, the rest of the values, then the next item's first keys.
    const bool has_next = item + 1 < end;
    const int64_t next_len = has_next ? context(item + 1) : 0, next_nb = (next_len + bsz - 1) / bsz;
    std::fill(acc, acc + heads * d, 0.0f);
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t ahead = b + kPrefetchBlocks;
      if (ahead < nb)
        prefetch_block(a, a.v, table, len, ahead);
      else if (ahead - nb < next_nb)
        prefetch_block(a, a.k, table_of(item + 1), next_len, ahead - nb);
      const T* vb = a.v + table[b] * bsz * token_stride;
      const int64_t n = std::min(bsz, len - b * bsz);
      for (int64_t h = 0; h < heads; ++h)
        add_weighted_values_avx2(vb + (h / group) * d, token_stride, n, scores + h * len + b * bsz, d, acc + h * d);
    }
    // float -> bfloat16 rounds to nearest even, as the portable loop's static_cast does.
    for (int64_t h = 0; h < heads; ++h)
      std::copy(acc + h * d, acc + (h + 1) * d, a.out + ((i * a.q_len + t) * heads + h) * d);
  }
}
#endif

// The SIMD kernel where one exists for the dtype, head_dim and CPU; false means "run the portable loop".
template <typename scalar_t>
bool run_simd(const PagedArgs<scalar_t>& a, int64_t rows) {
#ifdef VERL_HAVE_AVX2_KERNELS
  if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, c10::BFloat16>) {
    if (!simd::cpu_has_avx2_fma() || a.d % 8 != 0) return false;
    at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
      float* qv = detail::thread_scratch<float, 0>(static_cast<size_t>(a.heads * a.d));
      float* acc = detail::thread_scratch<float, 1>(static_cast<size_t>(a.heads * a.d));
      float* scores = detail::thread_scratch<float, 2>(static_cast<size_t>(a.heads * a.max_blocks * a.block_size));
      paged_rows_avx2(a, begin, end, qv, acc, scores);
    });
    return true;
  }
#endif
  (void)a;
  (void)rows;
  return false;
}

torch::Tensor paged_attention(const torch::Tensor& q_in, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                                  const torch::Tensor& block_tables_in, const torch::Tensor& positions_in,
                                  double scale, bool allow_simd, int64_t sliding_window) {
  VERL_CHECK(q_in.device().is_cpu() && k_pool.device().is_cpu() && v_pool.device().is_cpu(),
             "paged_attention_cpu: q and the pools must all be CPU tensors");
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
                          heads / kv_heads, d, block_size, max_blocks, scale, sliding_window};
    // The AVX2 kernel reads whole contexts; a sliding window runs the portable loop, which starts at the window.
    if (allow_simd && sliding_window == 0 && run_simd(a, bs * q_len)) return;
    at::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) { paged_items_generic(a, begin, end); });
  });
  return out.permute({0, 2, 1, 3});
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CPU, m) { m.impl("paged_attention", TORCH_FN(paged_attention)); }

}  // namespace verl::kernels::cpu
