// verl::rotary's CUDA kernel (launch.h): one thread per output element. Each product and the sum is
// rounded to the tensor's dtype as ATen's separate elementwise kernels round them -- reduced types
// computed in float and rounded after every op, float / double never contracted into an FMA -- so
// the result is bitwise that of kernels::aten::rotary on the same device, and of the CPU kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {
namespace {

// The type's arithmetic: products and sums rounded to T.
struct F32 {
  using T = float;
  __device__ static T mul(T a, T b) { return __fmul_rn(a, b); }
  __device__ static T add(T a, T b) { return __fadd_rn(a, b); }
  __device__ static T neg(T a) { return -a; }
};
struct F64 {
  using T = double;
  __device__ static T mul(T a, T b) { return __dmul_rn(a, b); }
  __device__ static T add(T a, T b) { return __dadd_rn(a, b); }
  __device__ static T neg(T a) { return -a; }
};
template <typename Half, typename ToFloat, typename FromFloat>
struct Reduced {
  using T = Half;
  __device__ static T mul(T a, T b) { return FromFloat{}(__fmul_rn(ToFloat{}(a), ToFloat{}(b))); }
  __device__ static T add(T a, T b) { return FromFloat{}(__fadd_rn(ToFloat{}(a), ToFloat{}(b))); }
  __device__ static T neg(T a) { return FromFloat{}(-ToFloat{}(a)); }  // exact
};
struct Bf16ToFloat {
  __device__ float operator()(__nv_bfloat16 a) const { return __bfloat162float(a); }
};
struct FloatToBf16 {
  __device__ __nv_bfloat16 operator()(float a) const { return __float2bfloat16_rn(a); }
};
struct HalfToFloat {
  __device__ float operator()(__half a) const { return __half2float(a); }
};
struct FloatToHalf {
  __device__ __half operator()(float a) const { return __float2half_rn(a); }
};
using BF16 = Reduced<__nv_bfloat16, Bf16ToFloat, FloatToBf16>;
using F16 = Reduced<__half, HalfToFloat, FloatToHalf>;

template <typename Math>
__global__ void rotary_kernel(const typename Math::T* x, Strides4 xs, const typename Math::T* cos,
                              const typename Math::T* sin, typename Math::T* out, Strides4 os, int64_t bs,
                              int64_t heads, int64_t q, int64_t d) {
  using T = typename Math::T;
  const int64_t n = bs * heads * q * d, half = d / 2;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = e % d, t = (e / d) % q, h = (e / (d * q)) % heads, b = e / (d * q * heads);
    const T* xr = x + b * xs.s0 + h * xs.s1 + t * xs.s2;
    const int64_t cs = (b * q + t) * d + j;
    const T rv = j < half ? Math::neg(xr[(j + half) * xs.s3]) : xr[(j - half) * xs.s3];
    out[b * os.s0 + h * os.s1 + t * os.s2 + j * os.s3] = Math::add(Math::mul(xr[j * xs.s3], cos[cs]),
                                                                   Math::mul(rv, sin[cs]));
  }
}

template <typename Math>
cudaError_t launch(const void* x, Strides4 xs, const void* cos, const void* sin, void* out, Strides4 os, int64_t bs,
                   int64_t heads, int64_t q, int64_t d, cudaStream_t stream) {
  using T = typename Math::T;
  const int64_t n = bs * heads * q * d;
  if (n == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads < 65535 ? (n + kThreads - 1) / kThreads : 65535;
  rotary_kernel<Math><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const T*>(x), xs, static_cast<const T*>(cos), static_cast<const T*>(sin), static_cast<T*>(out), os,
      bs, heads, q, d);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_rotary(const void* x, Strides4 xs, const void* cos, const void* sin, void* out, Strides4 os,
                          int64_t bs, int64_t heads, int64_t q, int64_t d, Dtype dtype, cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kFloat32: return launch<F32>(x, xs, cos, sin, out, os, bs, heads, q, d, stream);
    case Dtype::kFloat64: return launch<F64>(x, xs, cos, sin, out, os, bs, heads, q, d, stream);
    case Dtype::kFloat16: return launch<F16>(x, xs, cos, sin, out, os, bs, heads, q, d, stream);
    case Dtype::kBFloat16: return launch<BF16>(x, xs, cos, sin, out, os, bs, heads, q, d, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace verl::kernels::cuda
