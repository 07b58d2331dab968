// verl::gae_scan's CUDA kernel (launch.h): one thread per row walks it backwards. Every product and
// sum is its own correctly rounded operation (__fmul_rn & co. are never contracted into FMAs), so
// the result is bitwise that of the CPU kernel and of the ATen loop.
#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {
namespace {

__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ inline double sub_rn(double a, double b) { return __dsub_rn(a, b); }

template <typename T>
__global__ void gae_scan_kernel(const T* rewards, const T* values, const bool* valid, T* advantages, int64_t bs,
                                int64_t length, T gamma, T gamma_lam) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (row >= bs) return;
  const int64_t base = row * length;
  T next_value = 0, last_gae = 0;
  for (int64_t t = length - 1; t >= 0; --t) {
    if (valid[base + t]) {
      const T v = values[base + t];
      const T delta = sub_rn(add_rn(rewards[base + t], mul_rn(gamma, next_value)), v);
      last_gae = add_rn(delta, mul_rn(gamma_lam, last_gae));
      next_value = v;
    }
    advantages[base + t] = last_gae;
  }
}

template <typename T>
cudaError_t launch(const void* rewards, const void* values, const bool* valid, void* advantages, int64_t bs,
                   int64_t length, double gamma, double gamma_lam, cudaStream_t stream) {
  if (bs == 0 || length == 0) return cudaSuccess;
  constexpr int kThreads = 128;
  // gamma and gamma * lam rounded to T first, as ATen rounds a Python scalar to the tensor's dtype.
  gae_scan_kernel<T><<<static_cast<unsigned>((bs + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      static_cast<const T*>(rewards), static_cast<const T*>(values), valid, static_cast<T*>(advantages), bs, length,
      static_cast<T>(gamma), static_cast<T>(gamma_lam));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_gae_scan(const void* rewards, const void* values, const bool* valid, void* advantages, int64_t bs,
                            int64_t length, double gamma, double gamma_lam, Dtype dtype, cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kFloat32: return launch<float>(rewards, values, valid, advantages, bs, length, gamma, gamma_lam, stream);
    case Dtype::kFloat64: return launch<double>(rewards, values, valid, advantages, bs, length, gamma, gamma_lam, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace verl::kernels::cuda
