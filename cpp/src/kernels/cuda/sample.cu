// verl::sample's CUDA kernel for untruncated rows (launch.h): one block per row, in three passes over
// the row's logits (read in their own dtype, each converted to float as it loads) and no (rows, vocab)
// temporaries -- where the ATen form builds log_softmax, exp and a float64 cumsum over the whole
// vocabulary (8.6 % of the GPU time of an H100 rollout, issue 17).
// Thread t owns the contiguous slice [t * chunk, (t + 1) * chunk): (1) max and first argmax of
// x = logits / T; (2) the slice's sum of w = exp(x - max) in double, and an exclusive scan of the
// slice sums in thread order (fixed, so the draw is deterministic); (3) the thread whose slice holds
// u * sum walks it to the first token whose cumulative mass exceeds u * sum -- the CPU kernel's
// inverse CDF with the same counter-based u, so a row's token does not depend on its batch.
#include <cfloat>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/launch.h"

namespace verl::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// A logit as float, as converting the whole row to float32 first would give it (exact for the reduced types).
__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(double v) { return static_cast<float>(v); }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__global__ void sample_plain_kernel(const T* logits, int64_t vocab, const int64_t* rows, const double* params,
                                    int64_t* tokens, float* logprobs) {
  __shared__ float max_of[kThreads];
  __shared__ int64_t arg_of[kThreads];
  __shared__ double sum_of[kThreads];
  __shared__ int64_t drawn;
  const int t = threadIdx.x;
  const int64_t row = rows[blockIdx.x];
  const double temperature = params[2 * blockIdx.x], uniform = params[2 * blockIdx.x + 1];
  const bool greedy = temperature == 0.0;
  const float temp = greedy ? 1.0f : static_cast<float>(temperature);
  const T* in = logits + row * vocab;
  const int64_t chunk = (vocab + kThreads - 1) / kThreads;
  const int64_t c0 = t * chunk < vocab ? t * chunk : vocab, c1 = c0 + chunk < vocab ? c0 + chunk : vocab;
  // x_j: the logits divided by T in float (T = 1 rows are the logits themselves: division by 1 is exact).
  auto x = [&](int64_t j) {
    const float v = to_float(in[j]);
    return temp == 1.0f ? v : __fdiv_rn(v, temp);
  };

  float mx = -FLT_MAX;
  int64_t arg = vocab;
  for (int64_t j = c0; j < c1; ++j) {
    const float v = x(j);
    if (v > mx || arg == vocab) {
      mx = v;
      arg = j;
    }
  }
  max_of[t] = mx;
  arg_of[t] = arg;
  __syncthreads();
  if (t == 0) {  // first maximum over the slices in order, as argmax
    for (int k = 1; k < kThreads; ++k)
      if (arg_of[k] < vocab && (arg_of[0] == vocab || max_of[k] > max_of[0])) {
        max_of[0] = max_of[k];
        arg_of[0] = arg_of[k];
      }
  }
  __syncthreads();
  const float row_max = max_of[0];
  const int64_t row_arg = arg_of[0];

  double part = 0.0;
  for (int64_t j = c0; j < c1; ++j) part += static_cast<double>(expf(x(j) - row_max));
  sum_of[t] = part;
  __syncthreads();
  if (t == 0) {  // exclusive scan of the slice sums, in thread order; sum_of[0] ends as the total
    double acc = 0.0;
    for (int k = 0; k < kThreads; ++k) {
      const double s = sum_of[k];
      sum_of[k] = acc;
      acc += s;
    }
    drawn = greedy ? row_arg : -1;
    sum_of[0] = acc;   // slice 0 starts at 0: keep the total in its place, read below
  }
  __syncthreads();
  const double total = sum_of[0];
  const double before = t == 0 ? 0.0 : sum_of[t];
  if (!greedy) {
    const double target = uniform * total;
    const double after = t + 1 < kThreads ? sum_of[t + 1] : total;
    if (before <= target && target < after) {
      // Summed again token by token, the slice can end a rounding short of `after`: walk on past it
      // (as the CPU kernel walks on past its chunk).
      double acc = before;
      for (int64_t j = c0; j < vocab; ++j) {
        acc += static_cast<double>(expf(x(j) - row_max));
        if (acc > target) {
          drawn = j;
          break;
        }
      }
    }
  }
  __syncthreads();
  if (t == 0) {
    int64_t tok = drawn;
    if (tok < 0) {  // rounding: u * sum at the very top; take the last token with mass
      for (tok = vocab - 1; tok > 0 && expf(x(tok) - row_max) == 0.0f; --tok) {
      }
    }
    tokens[row] = tok;
    logprobs[row] = static_cast<float>(static_cast<double>(x(tok) - x(row_arg)) - log(total));
  }
}

template <typename T>
cudaError_t launch_typed(const void* logits, int64_t vocab, const int64_t* rows, const double* params,
                         int64_t num_rows, int64_t* tokens, float* logprobs, cudaStream_t stream) {
  sample_plain_kernel<T><<<static_cast<unsigned>(num_rows), kThreads, 0, stream>>>(
      static_cast<const T*>(logits), vocab, rows, params, tokens, logprobs);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_sample_plain(const void* logits, Dtype dtype, int64_t vocab, const int64_t* rows,
                                const double* params, int64_t num_rows, int64_t* tokens, float* logprobs,
                                cudaStream_t stream) {
  if (num_rows == 0) return cudaSuccess;
  switch (dtype) {
    case Dtype::kFloat32: return launch_typed<float>(logits, vocab, rows, params, num_rows, tokens, logprobs, stream);
    case Dtype::kFloat64: return launch_typed<double>(logits, vocab, rows, params, num_rows, tokens, logprobs, stream);
    case Dtype::kFloat16: return launch_typed<__half>(logits, vocab, rows, params, num_rows, tokens, logprobs, stream);
    case Dtype::kBFloat16:
      return launch_typed<__nv_bfloat16>(logits, vocab, rows, params, num_rows, tokens, logprobs, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace verl::kernels::cuda
