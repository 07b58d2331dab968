// verl::softmax_row_stats's CUDA kernel (launch.h): one block per row, which it reads once in its own dtype (a
// bf16 row of a 151,936-token vocabulary is 297 KiB; the composition converts it to float32 and makes about six
// passes over the copy). Each thread keeps an online softmax of its elements -- a running maximum m, the sum of
// exp(x - m) and of exp(x - m) * x -- merged over the block in a fixed order, so a row's result does not depend on
// the other rows. Rows whose maximum is infinite are summed again shifted by 0, as ATen's logsumexp shifts them.
#include <cmath>

#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {
namespace {

constexpr int kThreads = 256;

template <typename Acc>
struct Stats {
  Acc m, s, t;  // running maximum, sum of exp(x - m), sum of exp(x - m) * x
};

// The weight exp(from - to) of a partial sum kept at maximum `from` in one kept at `to` >= from (0 for an empty
// partial sum, whose maximum is -inf).
template <typename Acc>
__device__ inline Acc shift(Acc from, Acc to) {
  return from == -INFINITY ? Acc(0) : exp(from - to);
}

template <typename Acc>
__device__ inline Stats<Acc> merge(const Stats<Acc>& a, const Stats<Acc>& b) {
  const Acc m = a.m > b.m ? a.m : b.m;
  const Acc wa = shift(a.m, m), wb = shift(b.m, m);
  return {m, a.s * wa + b.s * wb, a.t * wa + b.t * wb};
}

template <typename T>
__global__ void softmax_row_stats_kernel(const T* logits, int64_t vocab, const int64_t* labels, bool mean,
                                         typename Elem<T>::Acc* lse, typename Elem<T>::Acc* picked,
                                         typename Elem<T>::Acc* mean_x) {
  using Acc = typename Elem<T>::Acc;
  __shared__ Stats<Acc> warp_stats[kThreads / 32];
  __shared__ Acc row_shift, row_sum;
  const int64_t row = blockIdx.x;
  const T* x = logits + row * vocab;
  Stats<Acc> st{-INFINITY, 0, 0};
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const Acc v = Elem<T>::load(x[j]);
    if (v > st.m) {  // rare after the first elements
      const Acc w = shift(st.m, v);
      st.s *= w;
      st.t *= w;
      st.m = v;
    }
    const Acc e = st.m == -INFINITY ? Acc(0) : exp(v - st.m);  // v = m = -inf: exp(NaN) otherwise
    st.s += e;
    if (mean) st.t += e * v;
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Stats<Acc> other{__shfl_xor_sync(0xffffffffu, st.m, offset), __shfl_xor_sync(0xffffffffu, st.s, offset),
                           __shfl_xor_sync(0xffffffffu, st.t, offset)};
    st = merge(st, other);
  }
  if ((threadIdx.x & 31) == 0) warp_stats[threadIdx.x >> 5] = st;
  __syncthreads();
  if (threadIdx.x == 0) {
    Stats<Acc> total = warp_stats[0];
    for (int w = 1; w < kThreads / 32; ++w) total = merge(total, warp_stats[w]);
    row_shift = total.m;
    row_sum = total.s;
    if (isfinite(total.m)) {
      lse[row] = log(total.s) + total.m;
      if (mean) mean_x[row] = total.t / total.s;
    }
    if (labels != nullptr) picked[row] = Elem<T>::load(x[labels[row]]);
  }
  __syncthreads();
  if (isfinite(row_shift)) return;
  // An infinite (or NaN, or all -inf) maximum: ATen shifts by 0. Sum exp(x), then E_p[x] with p = exp(x - lse).
  Acc s = 0;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) s += exp(Elem<T>::load(x[j]));
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
  if ((threadIdx.x & 31) == 0) warp_stats[threadIdx.x >> 5].s = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    Acc total = 0;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_stats[w].s;
    row_sum = log(total);
    lse[row] = row_sum;
  }
  __syncthreads();
  if (!mean) return;
  Acc t = 0;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const Acc v = Elem<T>::load(x[j]);
    t += exp(v - row_sum) * v;
  }
  for (int offset = 16; offset > 0; offset >>= 1) t += __shfl_xor_sync(0xffffffffu, t, offset);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) warp_stats[threadIdx.x >> 5].t = t;
  __syncthreads();
  if (threadIdx.x == 0) {
    Acc total = 0;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_stats[w].t;
    mean_x[row] = total;
  }
}

template <typename T>
cudaError_t launch(const void* logits, int64_t rows, int64_t vocab, const int64_t* labels, bool mean, void* lse,
                   void* picked, void* mean_x, cudaStream_t stream) {
  using Acc = typename Elem<T>::Acc;
  if (rows == 0) return cudaSuccess;
  softmax_row_stats_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const T*>(logits), vocab, labels, mean, static_cast<Acc*>(lse), static_cast<Acc*>(picked),
      static_cast<Acc*>(mean_x));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_softmax_row_stats(const void* logits, int64_t rows, int64_t vocab, const int64_t* labels,
                                     bool mean, void* lse, void* picked, void* mean_x, Dtype dtype,
                                     cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kFloat32: return launch<float>(logits, rows, vocab, labels, mean, lse, picked, mean_x, stream);
    case Dtype::kFloat64: return launch<double>(logits, rows, vocab, labels, mean, lse, picked, mean_x, stream);
    case Dtype::kFloat16: return launch<__half>(logits, rows, vocab, labels, mean, lse, picked, mean_x, stream);
    case Dtype::kBFloat16:
      return launch<__nv_bfloat16>(logits, rows, vocab, labels, mean, lse, picked, mean_x, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace verl::kernels::cuda
