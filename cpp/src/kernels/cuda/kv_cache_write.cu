// verl::kv_cache_write's CUDA kernel (launch.h): one thread per element of the new tokens, writing
// its slot of the pool. A copy, so the element type is only its size.
#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {
namespace {

template <typename Word>
__global__ void kv_cache_write_kernel(Word* pool, const Word* x, Strides4 xs, const int64_t* slots, int64_t bs,
                                      int64_t kv_heads, int64_t q, int64_t d) {
  const int64_t n = bs * q * kv_heads * d;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // e runs over (i, t, h, c), c fastest: consecutive threads write consecutive pool elements.
    const int64_t c = e % d, h = (e / d) % kv_heads, t = (e / (d * kv_heads)) % q, i = e / (d * kv_heads * q);
    pool[(slots[i * q + t] * kv_heads + h) * d + c] = x[i * xs.s0 + h * xs.s1 + t * xs.s2 + c * xs.s3];
  }
}

template <typename Word>
cudaError_t launch(void* pool, const void* x, Strides4 xs, const int64_t* slots, int64_t bs, int64_t kv_heads,
                   int64_t q, int64_t d, cudaStream_t stream) {
  const int64_t n = bs * q * kv_heads * d;
  if (n == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads < 65535 ? (n + kThreads - 1) / kThreads : 65535;
  kv_cache_write_kernel<Word><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<Word*>(pool), static_cast<const Word*>(x), xs, slots, bs, kv_heads, q, d);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_kv_cache_write(void* pool, const void* x, Strides4 xs, const int64_t* slots, int64_t bs,
                                  int64_t kv_heads, int64_t q, int64_t d, int element_bytes, cudaStream_t stream) {
  switch (element_bytes) {
    case 2: return launch<uint16_t>(pool, x, xs, slots, bs, kv_heads, q, d, stream);
    case 4: return launch<uint32_t>(pool, x, xs, slots, bs, kv_heads, q, d, stream);
    case 8: return launch<uint64_t>(pool, x, xs, slots, bs, kv_heads, q, d, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace verl::kernels::cuda
