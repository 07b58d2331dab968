// verl::paged_attention's CUDA kernels (launch.h): keys and values read in place through the block
// table -- no gather of each row's context into a new tensor per layer and step. Accumulation in float
// (double for double inputs), as the CPU kernel.
//
// paged_attention_warp_kernel (up to 8 query heads per kv head, head_dim 4, 8, 16 or 32 times 16 bytes: 64 and
// 128 in bf16, every model we load): one block per (row, query token, kv head), one warp per query head, each
// walking all the row's keys once with an online softmax. The block's warps read the same key and value rows at
// about the same time, so most of those reads after the first are cache hits.
//
// paged_attention_gqa_kernel (other even head_dims <= 128): one block per (row, query token, kv head). (1) scores,
// one key per thread at a time, into a scratch row per head; (2) each head's softmax max and sum by warp shuffles
// and one shared-memory step; (3) the weighted sum of the values, each warp over a quarter of the keys with its
// lanes on consecutive channel pairs (coalesced reads), the warps' partial sums added in shared memory.
//
// paged_attention_kernel (any other shape): one block per (row, query token, head), the scores as
// above, block reductions, then one channel per thread over all keys.
#include <type_traits>

#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {
namespace {

constexpr int kThreads = 128;

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

// Key j's slot in the pool through the row's block table. 32-bit division: a context is below 2^31 tokens (the
// launcher checks), and 64-bit division is a long instruction sequence that bounded these loops.
__device__ inline int64_t slot_of(const int64_t* table, int64_t j, int64_t block_size) {
  const uint32_t key = static_cast<uint32_t>(j), size = static_cast<uint32_t>(block_size), block = key / size;
  return table[block] * block_size + (key - block * size);
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
  auto row = [&](const T* pool, int64_t j) { return pool + slot_of(table, j, block_size) * token_stride + kvh * d; };

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
  auto row = [&](const T* pool, int64_t j) { return pool + slot_of(table, j, block_size) * token_stride + kvh * d; };

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

// ---- the warp kernel ----
//
// Warp g of the block serves query head kvh * groups + g. It walks the row's keys kKeys = 32 / kLanes at a time,
// one key per group of kLanes lanes: a lane holds 16 bytes (V elements) of the key's and the value's channels
// and the query's matching channels, the dot product is summed over the group's lanes by shuffles, and a running
// maximum rescales the warp's softmax sum and value sums (online softmax). The rows of the next two steps are
// loaded while the current one is added. Measured on an H200 (bf16, 14 / 2 heads, d 64, 512 rows of ~100
// tokens; benchmarks/rollout/bench_paged_attention.py): 42.5 us per call, the GQA kernel 60 us -- 68 us before
// both stopped dividing in 64 bits per key (Nsight Compute had the warps issuing most cycles: 64-bit division is a
// long instruction sequence).
template <typename T>
struct Vec16 {
  static constexpr int kElems = 16 / static_cast<int>(sizeof(T));
};

__device__ inline void unpack(const uint4& raw, float (&out)[4]) {
  const float4 f = *reinterpret_cast<const float4*>(&raw);
  out[0] = f.x, out[1] = f.y, out[2] = f.z, out[3] = f.w;
}
__device__ inline void unpack(const uint4& raw, double (&out)[2]) {
  const double2 f = *reinterpret_cast<const double2*>(&raw);
  out[0] = f.x, out[1] = f.y;
}
__device__ inline float2 to_float2(__nv_bfloat162 v) { return __bfloat1622float2(v); }
__device__ inline float2 to_float2(__half2 v) { return __half22float2(v); }
template <typename Pair>  // __nv_bfloat162 or __half2
__device__ inline void unpack_pairs(const uint4& raw, float (&out)[8]) {
  const Pair* p = reinterpret_cast<const Pair*>(&raw);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = to_float2(p[k]);
    out[2 * k] = f.x, out[2 * k + 1] = f.y;
  }
}
template <typename T, typename Acc, int V>
__device__ inline void unpack_as(const uint4& raw, Acc (&out)[V]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    unpack_pairs<__nv_bfloat162>(raw, out);
  } else if constexpr (std::is_same_v<T, __half>) {
    unpack_pairs<__half2>(raw, out);
  } else {
    unpack(raw, out);
  }
}

template <typename T, int kLanes>
__global__ void __launch_bounds__(32 * kMaxGroup) paged_attention_warp_kernel(
    const T* q, Strides4 qs, const T* k_pool, const T* v_pool, const int64_t* tables, const int64_t* positions, T* out,
    int64_t q_len, int64_t heads, int64_t kv_heads, int64_t block_size, int64_t max_blocks, double scale) {
  using Acc = typename Elem<T>::Acc;
  constexpr int V = Vec16<T>::kElems;
  constexpr int d = kLanes * V;
  constexpr int kKeys = 32 / kLanes;  // keys per warp step
  const int groups = static_cast<int>(heads / kv_heads);
  const int64_t item = blockIdx.x, kvh = blockIdx.y;  // item = row * q_len + query token
  const int64_t i = item / q_len, t = item % q_len;
  const int lane = threadIdx.x & 31;
  const int64_t h = kvh * groups + (threadIdx.x >> 5);  // this warp's query head
  const int key = lane / kLanes, part = lane % kLanes;  // this lane's key of the step, its channels
  const int64_t max_len = max_blocks * block_size;
  const int64_t len = positions[item] + 1 < max_len ? positions[item] + 1 : max_len;
  const int64_t token_stride = kv_heads * d;
  const int64_t* table = tables + i * max_blocks;

  Acc qr[V];
#pragma unroll
  for (int v = 0; v < V; ++v)
    qr[v] = Elem<T>::load(q[i * qs.s0 + h * qs.s1 + t * qs.s2 + (part * V + v) * qs.s3]) * static_cast<Acc>(scale);
  Acc m = -INFINITY, l = 0, acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = 0;

  // This lane's 16 bytes of key j's and its value's rows, raw: converted when used, so that the loads of the next
  // two steps stay in flight meanwhile. The keys advance kKeys a step; the lane follows its key's block and offset
  // instead of dividing (64-bit division is a long instruction sequence, the bulk of this loop's instructions).
  int64_t next = key, next_block = key / block_size, next_offset = key % block_size;
  auto fetch = [&](uint4& kraw, uint4& vraw) {
    if (next < len) {
      const int64_t offset = (table[next_block] * block_size + next_offset) * token_stride + kvh * d + part * V;
      kraw = *reinterpret_cast<const uint4*>(k_pool + offset);
      vraw = *reinterpret_cast<const uint4*>(v_pool + offset);
    } else {
      kraw = vraw = make_uint4(0, 0, 0, 0);
    }
    next += kKeys;
    for (next_offset += kKeys; next_offset >= block_size; next_offset -= block_size) ++next_block;
  };
  uint4 k_ahead[2], v_ahead[2];
  fetch(k_ahead[0], v_ahead[0]);
  fetch(k_ahead[1], v_ahead[1]);
  for (int64_t base = 0; base < len; base += kKeys) {
    const int64_t j = base + key;
    const uint4 k_raw = k_ahead[0], v_raw = v_ahead[0];
    k_ahead[0] = k_ahead[1];
    v_ahead[0] = v_ahead[1];
    fetch(k_ahead[1], v_ahead[1]);
    Acc kv[V], vv[V];
    unpack_as<T, Acc, V>(k_raw, kv);
    unpack_as<T, Acc, V>(v_raw, vv);
    Acc dot = 0;
#pragma unroll
    for (int v = 0; v < V; ++v) dot += qr[v] * kv[v];
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    const Acc score = j < len ? dot : Acc(-INFINITY);
    Acc step_max = score;  // over the step's keys
#pragma unroll
    for (int offset = kLanes; offset < 32; offset <<= 1) {
      const Acc other = __shfl_xor_sync(0xffffffffu, step_max, offset);
      step_max = other > step_max ? other : step_max;
    }
    if (step_max > m) {  // warp-uniform; rarely true after the first keys (the rescale would be 1)
      const Acc rescale = exp(m - step_max);  // step_max is finite: the step's first key is in range
      m = step_max;
      l *= rescale;
#pragma unroll
      for (int v = 0; v < V; ++v) acc[v] *= rescale;
    }
    const Acc p = exp(score - m);
    l += p;
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] += p * vv[v];
  }
  // The step's key groups share the running maximum: their sums add.
#pragma unroll
  for (int offset = kLanes; offset < 32; offset <<= 1) {
    l += __shfl_xor_sync(0xffffffffu, l, offset);
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] += __shfl_xor_sync(0xffffffffu, acc[v], offset);
  }
  if (key == 0) {
    T* o = out + (item * heads + h) * d + part * V;  // out (bs, q, heads, d)
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = Elem<T>::store(acc[v] / l);
  }
}

// Lanes per key of the warp kernel for head_dim d (16 bytes each), or 0 where it does not apply.
template <typename T>
int warp_lanes(int64_t d) {
  constexpr int V = Vec16<T>::kElems;
  if (d % V != 0) return 0;
  const int64_t lanes = d / V;
  return lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32 ? static_cast<int>(lanes) : 0;
}

template <typename T, int kLanes>
void launch_warp(const T* q, Strides4 qs, const T* k_pool, const T* v_pool, const int64_t* tables,
                  const int64_t* positions, T* out, int64_t bs, int64_t q_len, int64_t heads, int64_t kv_heads,
                  int64_t block_size, int64_t max_blocks, double scale, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(bs * q_len), static_cast<unsigned>(kv_heads));
  const unsigned threads = static_cast<unsigned>(32 * (heads / kv_heads));
  paged_attention_warp_kernel<T, kLanes><<<grid, threads, 0, stream>>>(
      q, qs, k_pool, v_pool, tables, positions, out, q_len, heads, kv_heads, block_size, max_blocks, scale);
}

enum class Kernel { kWarp, kGqa, kGeneric };

// The kernel for these pools and shapes. Alignment is the pools' own: a pool viewed at an offset that breaks it (the
// engine's pools are whole allocations) is read in narrower pieces by the next kernel down.
template <typename T>
Kernel choose_kernel(const void* k_pool, const void* v_pool, int64_t heads, int64_t kv_heads, int64_t d) {
  auto aligned = [&](uintptr_t bytes) {
    return reinterpret_cast<uintptr_t>(k_pool) % bytes == 0 && reinterpret_cast<uintptr_t>(v_pool) % bytes == 0;
  };
  const int64_t groups = heads / kv_heads;
  if (groups > kMaxGroup) return Kernel::kGeneric;
  if (aligned(16) && warp_lanes<T>(d) != 0) return Kernel::kWarp;
  if (aligned(2 * sizeof(T)) && d % 2 == 0 && d <= 2 * 32 * kMaxPairs) return Kernel::kGqa;
  return Kernel::kGeneric;
}

template <typename T>
cudaError_t launch(const void* q, Strides4 qs, const void* k_pool, const void* v_pool, const int64_t* tables,
                   const int64_t* positions, void* out, void* scores, int64_t bs, int64_t q_len, int64_t heads,
                   int64_t kv_heads, int64_t d, int64_t block_size, int64_t max_blocks, double scale,
                   cudaStream_t stream) {
  using Acc = typename Elem<T>::Acc;
  if (bs * q_len * heads == 0) return cudaSuccess;
  const int64_t groups = heads / kv_heads;
  const Kernel kernel = choose_kernel<T>(k_pool, v_pool, heads, kv_heads, d);
  if (kernel == Kernel::kWarp) {
    const T *qt = static_cast<const T*>(q), *kt = static_cast<const T*>(k_pool), *vt = static_cast<const T*>(v_pool);
    T* ot = static_cast<T*>(out);
    switch (warp_lanes<T>(d)) {
      case 4: launch_warp<T, 4>(qt, qs, kt, vt, tables, positions, ot, bs, q_len, heads, kv_heads, block_size, max_blocks, scale, stream); break;
      case 8: launch_warp<T, 8>(qt, qs, kt, vt, tables, positions, ot, bs, q_len, heads, kv_heads, block_size, max_blocks, scale, stream); break;
      case 16: launch_warp<T, 16>(qt, qs, kt, vt, tables, positions, ot, bs, q_len, heads, kv_heads, block_size, max_blocks, scale, stream); break;
      default: launch_warp<T, 32>(qt, qs, kt, vt, tables, positions, ot, bs, q_len, heads, kv_heads, block_size, max_blocks, scale, stream); break;
    }
    return cudaGetLastError();
  }
  if (kernel == Kernel::kGqa) {
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
                                   cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kFloat32:
      return launch<float>(q, qs, k_pool, v_pool, tables, positions, out, scores, bs, q_len, heads, kv_heads, d,
                           block_size, max_blocks, scale, stream);
    case Dtype::kFloat64:
      return launch<double>(q, qs, k_pool, v_pool, tables, positions, out, scores, bs, q_len, heads, kv_heads, d,
                            block_size, max_blocks, scale, stream);
    case Dtype::kFloat16:
      return launch<__half>(q, qs, k_pool, v_pool, tables, positions, out, scores, bs, q_len, heads, kv_heads, d,
                            block_size, max_blocks, scale, stream);
    case Dtype::kBFloat16:
      return launch<__nv_bfloat16>(q, qs, k_pool, v_pool, tables, positions, out, scores, bs, q_len, heads, kv_heads,
                                   d, block_size, max_blocks, scale, stream);
  }
  return cudaErrorInvalidValue;
}

bool paged_attention_needs_scores(const void* k_pool, const void* v_pool, int64_t heads, int64_t kv_heads, int64_t d,
                                  Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat32: return choose_kernel<float>(k_pool, v_pool, heads, kv_heads, d) != Kernel::kWarp;
    case Dtype::kFloat64: return choose_kernel<double>(k_pool, v_pool, heads, kv_heads, d) != Kernel::kWarp;
    case Dtype::kFloat16: return choose_kernel<__half>(k_pool, v_pool, heads, kv_heads, d) != Kernel::kWarp;
    case Dtype::kBFloat16: return choose_kernel<__nv_bfloat16>(k_pool, v_pool, heads, kv_heads, d) != Kernel::kWarp;
  }
  return true;
}

}  // namespace verl::kernels::cuda
