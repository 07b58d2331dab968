// Element types of the CUDA kernels and the type each accumulates in: float for float / half /
// bfloat16, double for double (what the CPU kernels accumulate in). Device code only; private to libverl.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace verl::kernels::cuda {

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

}  // namespace verl::kernels::cuda
