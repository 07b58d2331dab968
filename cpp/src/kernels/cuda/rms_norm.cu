// verl::rms_norm's CUDA kernel (launch.h): one block per row. The row's sum of squares in float32, then
// x * rsqrt(mean + eps) in float32 rounded to the row's dtype and multiplied by the weight in that dtype's
// arithmetic: the roundings of RMSNorm's op sequence (kernels::aten::rms_norm). Only the order in which the squares
// are added (and rsqrtf) differ from ATen's kernels, so results may differ from the op sequence's in the last bit.
#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void rms_norm_kernel(const T* x, const T* weight, T* out, int64_t dim, float eps) {
  using Acc = typename Elem<T>::Acc;
  // The op sequence normalises in float32 whatever x's dtype (HF's RMSNorm does), double included.
  auto as_float = [](T v) { return static_cast<float>(Elem<T>::load(v)); };
  __shared__ float warp_sums[kThreads / 32];
  const T* xr = x + blockIdx.x * dim;
  T* o = out + blockIdx.x * dim;
  float sum = 0;
  for (int64_t c = threadIdx.x; c < dim; c += kThreads) {
    const float v = as_float(xr[c]);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum;
  __syncthreads();
  float total = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  // ATen's mean multiplies the sum by 1 / n; the scalar eps is added in float.
  const float scale = rsqrtf(total * (1.0f / static_cast<float>(dim)) + eps);
  for (int64_t c = threadIdx.x; c < dim; c += kThreads) {
    const T normed = Elem<T>::store(static_cast<Acc>(as_float(xr[c]) * scale));  // .to(x's dtype)
    o[c] = Elem<T>::store(Elem<T>::load(weight[c]) * Elem<T>::load(normed));    // weight * normed in T's arithmetic
  }
}

template <typename T>
cudaError_t launch(const void* x, const void* weight, void* out, int64_t rows, int64_t dim, double eps,
                   cudaStream_t stream) {
  if (rows == 0 || dim == 0) return cudaSuccess;
  rms_norm_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<T*>(out), dim, static_cast<float>(eps));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_rms_norm(const void* x, const void* weight, void* out, int64_t rows, int64_t dim, double eps,
                            Dtype dtype, cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kFloat32: return launch<float>(x, weight, out, rows, dim, eps, stream);
    case Dtype::kFloat64: return launch<double>(x, weight, out, rows, dim, eps, stream);
    case Dtype::kFloat16: return launch<__half>(x, weight, out, rows, dim, eps, stream);
    case Dtype::kBFloat16: return launch<__nv_bfloat16>(x, weight, out, rows, dim, eps, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace verl::kernels::cuda
