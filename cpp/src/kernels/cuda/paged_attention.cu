// verl::paged_attention's CUDA kernels (launch.h): keys and values read in place through the block
// table -- no gather of each row's context into a new tensor per layer and step. Accumulation in float
// (double for double inputs), as the CPU kernel.
//
// paged_attention_gqa_kernel (up to 8 query heads per kv head, even head_dim <= 128: every model we
// load): one block per (row, query token, kv head), so each key and value is read once for all the
// query heads it serves instead of once per head. (1) scores, one key per thread at a time, into a
// scratch row per head; (2) each head's softmax max and sum by warp shuffles and one shared-memory
// step; (3) the weighted sum of the values, each warp over a quarter of the keys with its lanes on
// consecutive channel pairs (coalesced reads), the warps' partial sums added in shared memory.
//
// paged_attention_kernel (any other shape): one block per (row, query token, head), the scores as
// above, block reductions, then one channel per thread over all keys.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {
namespace {

constexpr int kThreads = 128;

template <typename T>
struct Elem;  // T <-> its accumulation type
template <>
struct Elem<float> {
  using Acc = float;
  __device__ static Acc load(float v) { return v; }
  __device__ static float store(Acc v) { return v; }
};
template <>
struct Elem<double> {
  using Acc = double;
  __device__ static Acc load(double v) { return v; }
  __device__ static double store(Acc v) { return v; }
};
template <>
struct Elem<__half> {
  using Acc = float;
  __device__ static Acc load(__half v) { return __half2float(v); }
  __device__ static __half store(Acc v) { return __float2half_rn(v); }
};
template <>
struct Elem<__nv_bfloat16> {
  using Acc = float;
  __device__ static Acc load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(Acc v) { return __float2bfloat16_rn(v); }
};

// The block's maximum (Max) or sum of `v`; every thread gets the result. `buffer` holds kThreads.
template <bool Max, typename Acc>
__device__ Acc block_reduce(Acc v, Acc* buffer) {
  buffer[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const Acc other = buffer[threadIdx.x + stride];
      buffer[threadIdx.x] = Max ? (other > buffer[threadIdx.x] ? other : buffer[threadIdx.x]) : buffer[threadIdx.x] + other;
    }
    __syncthreads();
  }
  const Acc result = buffer[0];
  __syncthreads();
  return result;
}

template <typename T>
__global__ void paged_attention_kernel(const T* q, Strides4 qs, const T* k_pool, const T* v_pool, const int64_t* tables,
                                       const int64_t* positions, T* out, typename Elem<T>::Acc* scores, int64_t q_len,
                                       int64_t heads, int64_t kv_heads, int64_t d, int64_t block_size,
                                       int64_t max_blocks, double scale) {
  using Acc = typename Elem<T>::Acc;
  extern __shared__ unsigned char shared_bytes[];
  Acc* qv = reinterpret_cast<Acc*>(shared_bytes);  // d
  Acc* buffer = qv + d;                              // kThreads
  const int64_t item = blockIdx.x, h = blockIdx.y;   // item = row * q_len + query token
  const int64_t i = item / q_len, t = item % q_len, kvh = h / (heads / kv_heads);
  const int64_t max_len = max_blocks * block_size;
  const int64_t len = positions[item] + 1 < max_len ? positions[item] + 1 : max_len;
  const int64_t token_stride = kv_heads * d;
  const int64_t* table = tables + i * max_blocks;
  for (int64_t c = threadIdx.x; c < d; c += kThreads)
    qv[c] = Elem<T>::load(q[i * qs.s0 + h * qs.s1 + t * qs.s2 + c * qs.s3]) * static_cast<Acc>(scale);
  __syncthreads();
  Acc* s = scores + (item * heads + h) * max_len;
  auto row = [&](const T* pool, int64_t j) {
    return pool + (table[j / block_size] * block_size + j % block_size) * token_stride + kvh * d;
  };

  Acc local_max = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += kThreads) {
    const T* kr = row(k_pool, j);
    Acc dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += qv[c] * Elem<T>::load(kr[c]);
    s[j] = dot;
    local_max = dot > local_max ? dot : local_max;
  }
  const Acc mx = block_reduce<true>(local_max, buffer);
  Acc local_sum = 0;
  for (int64_t j = threadIdx.x; j < len; j += kThreads) {
    const Acc e = exp(s[j] - mx);
    s[j] = e;
    local_sum += e;
  }
  const Acc inv = Acc(1) / block_reduce<false>(local_sum, buffer);  // (its barriers publish s[] to the block)
  T* o = out + (item * heads + h) * d;
  for (int64_t c = threadIdx.x; c < d; c += kThreads) {
    Acc acc = 0;
    for (int64_t j = 0; j < len; ++j) acc += s[j] * Elem<T>::load(row(v_pool, j)[c]);
    o[c] = Elem<T>::store(acc * inv);
  }
}

// ---- the GQA kernel ----

constexpr int kWarps = kThreads / 32;
constexpr int kMaxGroup = 8;  // query heads per kv head
constexpr int kMaxPairs = 2;  // channel pairs per lane: head_dim <= 2 * 32 * kMaxPairs = 128

// Two consecutive elements (4- or 8-byte aligned: every row starts at an even element) as Acc.
__device__ inline void load2(const float* p, float& a, float& b) {
  const float2 v = *reinterpret_cast<const float2*>(p);
  a = v.x;
  b = v.y;
}
__device__ inline void load2(const double* p, double& a, double& b) {
  a = p[0];
  b = p[1];
}
__device__ inline void load2(const __half* p, float& a, float& b) {
  const float2 v = __half22float2(*reinterpret_cast<const __half2*>(p));
  a = v.x;
  b = v.y;
}
__device__ inline void load2(const __nv_bfloat16* p, float& a, float& b) {
  const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
  a = v.x;
  b = v.y;
}

// v[g] for g < groups becomes the block's maximum (Max) or sum of it; `red` holds kWarps * kMaxGroup.
template <bool Max, typename Acc>
__device__ void reduce_groups(Acc (&v)[kMaxGroup], int groups, Acc* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (g < groups) {
      Acc x = v[g];
      for (int offset = 16; offset > 0; offset >>= 1) {
        const Acc y = __shfl_xor_sync(0xffffffffu, x, offset);
        x = Max ? (y > x ? y : x) : x + y;
      }
      if (lane == 0) red[warp * kMaxGroup + g] = x;
    }
  }
  __syncthreads();
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (g < groups) {
      Acc x = red[g];
      for (int w = 1; w < kWarps; ++w) {
        const Acc y = red[w * kMaxGroup + g];
        x = Max ? (y > x ? y : x) : x + y;
      }
      v[g] = x;
    }
  }
  __syncthreads();  // red is written again by the next reduction
}

template <typename T>
__global__ void paged_attention_gqa_kernel(const T* q, Strides4 qs, const T* k_pool, const T* v_pool,
                                           const int64_t* tables, const int64_t* positions, T* out,
                                           typename Elem<T>::Acc* scores, int64_t q_len, int64_t heads,
                                           int64_t kv_heads, int64_t d, int64_t block_size, int64_t max_blocks,
                                           double scale) {
  using Acc = typename Elem<T>::Acc;
  const int groups = static_cast<int>(heads / kv_heads);
  extern __shared__ __align__(16) unsigned char gqa_shared[];
  Acc* qv = reinterpret_cast<Acc*>(gqa_shared);  // groups * d: the scaled queries
  Acc* red = qv + groups * d;                        // kWarps * kMaxGroup: reductions
  Acc* inv = red + kWarps * kMaxGroup;               // kMaxGroup: 1 / softmax sums
  Acc* part = inv + kMaxGroup;                       // kWarps * groups * d: the warps' value sums
  const int64_t item = blockIdx.x, kvh = blockIdx.y;  // item = row * q_len + query token
  const int64_t i = item / q_len, t = item % q_len;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t max_len = max_blocks * block_size;
  const int64_t len = positions[item] + 1 < max_len ? positions[item] + 1 : max_len;
  const int64_t token_stride = kv_heads * d;
  const int64_t* table = tables + i * max_blocks;
  for (int64_t x = threadIdx.x; x < groups * d; x += kThreads) {
    const int64_t h = kvh * groups + x / d, c = x % d;
    qv[x] = Elem<T>::load(q[i * qs.s0 + h * qs.s1 + t * qs.s2 + c * qs.s3]) * static_cast<Acc>(scale);
  }
  __syncthreads();
  Acc* s = scores + (item * heads + kvh * groups) * max_len;  // head g's scores at s + g * max_len
  auto row = [&](const T* pool, int64_t j) {
    return pool + (table[j / block_size] * block_size + j % block_size) * token_stride + kvh * d;
  };

  Acc mx[kMaxGroup];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) mx[g] = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += kThreads) {
    const T* kr = row(k_pool, j);
    Acc dot[kMaxGroup];
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) dot[g] = 0;
    for (int64_t c = 0; c < d; c += 2) {
      Acc k0, k1;
      load2(kr + c, k0, k1);
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g)
        if (g < groups) dot[g] += qv[g * d + c] * k0 + qv[g * d + c + 1] * k1;
    }
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      if (g < groups) {
        s[g * max_len + j] = dot[g];
        mx[g] = dot[g] > mx[g] ? dot[g] : mx[g];
      }
    }
  }
  reduce_groups<true>(mx, groups, red);
  Acc sum[kMaxGroup];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) sum[g] = 0;
  for (int64_t j = threadIdx.x; j < len; j += kThreads) {  // the same keys as above: this thread's own scores
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      if (g < groups) {
        const Acc e = exp(s[g * max_len + j] - mx[g]);
        s[g * max_len + j] = e;
        sum[g] += e;
      }
    }
  }
  reduce_groups<false>(sum, groups, red);  // its barriers also publish s[] to the block
  if (threadIdx.x == 0)
    for (int g = 0; g < groups; ++g) inv[g] = Acc(1) / sum[g];

  Acc acc[kMaxGroup][kMaxPairs][2];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g)
#pragma unroll
    for (int p = 0; p < kMaxPairs; ++p) acc[g][p][0] = acc[g][p][1] = 0;
  const int64_t pairs = d / 2;
  // This lane's channel pairs of key j's value row.
  auto load_value = [&](int64_t j, Acc (&v0)[kMaxPairs], Acc (&v1)[kMaxPairs]) {
    const T* vr = row(v_pool, j);
#pragma unroll
    for (int p = 0; p < kMaxPairs; ++p) {
      v0[p] = v1[p] = 0;
      const int64_t pair = lane + 32 * p;
      if (pair < pairs) load2(vr + 2 * pair, v0[p], v1[p]);
    }
  };
  auto add_value = [&](int64_t j, const Acc (&v0)[kMaxPairs], const Acc (&v1)[kMaxPairs]) {
    Acc w[kMaxGroup];
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) w[g] = g < groups ? s[g * max_len + j] : Acc(0);
#pragma unroll
    for (int p = 0; p < kMaxPairs; ++p) {
      if (lane + 32 * p < pairs) {
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
          if (g < groups) {
            acc[g][p][0] += w[g] * v0[p];
            acc[g][p][1] += w[g] * v1[p];
          }
        }
      }
    }
  };
  // Each warp takes its keys kValueUnroll at a time and issues their rows' loads before it uses any of them, so the
  // loads' latencies overlap instead of adding up (one value row in flight per warp at a time bounded this loop).
  // The keys are still added in ascending order: the same sums, to the bit, as one key at a time.
  constexpr int kValueUnroll = 4;
  int64_t j = warp;
  for (; j + (kValueUnroll - 1) * kWarps < len; j += kValueUnroll * kWarps) {
    Acc v0[kValueUnroll][kMaxPairs], v1[kValueUnroll][kMaxPairs];
#pragma unroll
    for (int u = 0; u < kValueUnroll; ++u) load_value(j + u * kWarps, v0[u], v1[u]);
#pragma unroll
    for (int u = 0; u < kValueUnroll; ++u) add_value(j + u * kWarps, v0[u], v1[u]);
  }
  for (; j < len; j += kWarps) {
    Acc v0[kMaxPairs], v1[kMaxPairs];
    load_value(j, v0, v1);
    add_value(j, v0, v1);
  }
#pragma unroll
  for (int p = 0; p < kMaxPairs; ++p) {
    const int64_t pair = lane + 32 * p;
    if (pair < pairs) {
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g) {
        if (g < groups) {
          part[(warp * groups + g) * d + 2 * pair] = acc[g][p][0];
          part[(warp * groups + g) * d + 2 * pair + 1] = acc[g][p][1];
        }
      }
    }
  }
  __syncthreads();
  T* o = out + (item * heads + kvh * groups) * d;  // out (bs, q, heads, d): this kv head's query heads
  for (int64_t x = threadIdx.x; x < groups * d; x += kThreads) {
    Acc total = 0;
    for (int w = 0; w < kWarps; ++w) total += part[w * groups * d + x];
    o[x] = Elem<T>::store(total * inv[x / d]);
  }
}

template <typename T>
cudaError_t launch(const void* q, Strides4 qs, const void* k_pool, const void* v_pool, const int64_t* tables,
                   const int64_t* positions, void* out, void* scores, int64_t bs, int64_t q_len, int64_t heads,
                   int64_t kv_heads, int64_t d, int64_t block_size, int64_t max_blocks, double scale,
                   bool pools_paired, cudaStream_t stream) {
  using Acc = typename Elem<T>::Acc;
  if (bs * q_len * heads == 0) return cudaSuccess;
  const int64_t groups = heads / kv_heads;
  if (pools_paired && groups <= kMaxGroup && d % 2 == 0 && d <= 2 * 32 * kMaxPairs) {
    const dim3 grid(static_cast<unsigned>(bs * q_len), static_cast<unsigned>(kv_heads));
    const size_t shared =
        static_cast<size_t>(groups * d + kWarps * kMaxGroup + kMaxGroup + kWarps * groups * d) * sizeof(Acc);
    paged_attention_gqa_kernel<T><<<grid, kThreads, shared, stream>>>(
        static_cast<const T*>(q), qs, static_cast<const T*>(k_pool), static_cast<const T*>(v_pool), tables,
        positions, static_cast<T*>(out), static_cast<Acc*>(scores), q_len, heads, kv_heads, d, block_size,
        max_blocks, scale);
    return cudaGetLastError();
  }
  const dim3 grid(static_cast<unsigned>(bs * q_len), static_cast<unsigned>(heads));
  const size_t shared = static_cast<size_t>(d + kThreads) * sizeof(Acc);
  paged_attention_kernel<T><<<grid, kThreads, shared, stream>>>(
      static_cast<const T*>(q), qs, static_cast<const T*>(k_pool), static_cast<const T*>(v_pool), tables, positions,
      static_cast<T*>(out), static_cast<Acc*>(scores), q_len, heads, kv_heads, d, block_size, max_blocks, scale);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_paged_attention(const void* q, Strides4 qs, const void* k_pool, const void* v_pool,
                                   const int64_t* tables, const int64_t* positions, void* out, void* scores,
                                   int64_t bs, int64_t q_len, int64_t heads, int64_t kv_heads, int64_t d,
                                   int64_t block_size, int64_t max_blocks, double scale, Dtype dtype,
                                   bool pools_paired, cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kFloat32:
      return launch<float>(q, qs, k_pool, v_pool, tables, positions, out, scores, bs, q_len, heads, kv_heads, d,
                           block_size, max_blocks, scale, pools_paired, stream);
    case Dtype::kFloat64:
      return launch<double>(q, qs, k_pool, v_pool, tables, positions, out, scores, bs, q_len, heads, kv_heads, d,
                            block_size, max_blocks, scale, pools_paired, stream);
    case Dtype::kFloat16:
      return launch<__half>(q, qs, k_pool, v_pool, tables, positions, out, scores, bs, q_len, heads, kv_heads, d,
                            block_size, max_blocks, scale, pools_paired, stream);
    case Dtype::kBFloat16:
      return launch<__nv_bfloat16>(q, qs, k_pool, v_pool, tables, positions, out, scores, bs, q_len, heads, kv_heads,
                                   d, block_size, max_blocks, scale, pools_paired, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace verl::kernels::cuda
