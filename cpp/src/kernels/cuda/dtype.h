// torch's dtypes and strides as the CUDA launchers take them (launch.h). Private to libverl.
#pragma once

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/types.h>

#include "verl/core/error.h"
#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {

inline Dtype launcher_dtype(torch::ScalarType t, const char* who) {
  switch (t) {
    case torch::kFloat: return Dtype::kFloat32;
    case torch::kDouble: return Dtype::kFloat64;
    case torch::kHalf: return Dtype::kFloat16;
    case torch::kBFloat16: return Dtype::kBFloat16;
    default: VERL_FAIL(InvalidArgument, who, ": no CUDA kernel for dtype ", t);
  }
}

inline Strides4 strides4(const torch::Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)}; }

// The current stream of the tensor's device (what ATen's own kernels use), through c10's generic
// device interface: libverl then needs nothing of libc10_cuda (whose soname a C++ program's loader
// would have to find besides LibTorch's).
inline cudaStream_t stream_of(const torch::Tensor& t) {
  const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
  return static_cast<cudaStream_t>(cuda.getStream(t.device()).native_handle());
}

inline void check_launch(cudaError_t err, const char* who) {
  VERL_CHECK(err == cudaSuccess, who, ": CUDA kernel launch failed: ", cudaGetErrorString(err));
}

}  // namespace verl::kernels::cuda
