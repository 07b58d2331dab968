// verl::paged_attention's CUDA kernel (launch.h): keys and values read in place through the block
// table -- no gather of each row's context into a new tensor per layer and step. One block per
// (row, query token, head): the scaled query in shared memory; (1) the scores of the context's
// keys, one key per thread at a time, into a scratch row; (2) the softmax's max and sum by block
// reductions, in float (double for double inputs) as the CPU kernel; (3) the weighted sum of the
// values, one channel per thread, so consecutive threads read consecutive elements of a value row.
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

template <typename T>
cudaError_t launch(const void* q, Strides4 qs, const void* k_pool, const void* v_pool, const int64_t* tables,
                   const int64_t* positions, void* out, void* scores, int64_t bs, int64_t q_len, int64_t heads,
                   int64_t kv_heads, int64_t d, int64_t block_size, int64_t max_blocks, double scale,
                   cudaStream_t stream) {
  using Acc = typename Elem<T>::Acc;
  if (bs * q_len * heads == 0) return cudaSuccess;
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

}  // namespace verl::kernels::cuda
