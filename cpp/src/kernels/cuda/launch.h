// The CUDA kernels' launchers, as plain C++ over raw pointers: the .cu files that define them
// include no LibTorch header (nvcc compiles each in seconds), and the registrations beside them
// (*.cpp, compiled by the host compiler) take the tensors apart, check them and pick the stream.
// Every launcher enqueues on `stream` and returns the launch's error code. Private to libverl.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace verl::kernels::cuda {

// Element types the launchers take (the registrations map torch's dtypes onto these).
enum class Dtype { kFloat32, kFloat64, kFloat16, kBFloat16 };

// A 4-d tensor's strides, in elements.
struct Strides4 {
  int64_t s0, s1, s2, s3;
};

// pool (slots, kv_heads, d) contiguous, flat slot slots[i * q + t] <- x[i, h, t, :] (bs, kv_heads, q, d
// with strides `xs`), elements of `element_bytes` (2, 4 or 8) bytes copied as they are.
cudaError_t launch_kv_cache_write(void* pool, const void* x, Strides4 xs, const int64_t* slots, int64_t bs,
                                  int64_t kv_heads, int64_t q, int64_t d, int element_bytes, cudaStream_t stream);

// GAE's raw advantages, one thread per row (the recurrence of kernels/cpu/gae.h, the same roundings:
// no contraction into FMAs). rewards, values, advantages (bs, T) contiguous of `dtype` (kFloat32 or
// kFloat64); valid (bs, T) contiguous bool.
cudaError_t launch_gae_scan(const void* rewards, const void* values, const bool* valid, void* advantages, int64_t bs,
                            int64_t length, double gamma, double gamma_lam, Dtype dtype, cudaStream_t stream);

// out = x * cos + rotate_half(x) * sin, each product and the sum rounded to `dtype` (reduced types
// computed in float and rounded after each op, as ATen's elementwise kernels). x (bs, heads, q, d)
// with strides `xs`, out with strides `os`; cos / sin (bs, q, d) contiguous.
cudaError_t launch_rotary(const void* x, Strides4 xs, const void* cos, const void* sin, void* out, Strides4 os,
                          int64_t bs, int64_t heads, int64_t q, int64_t d, Dtype dtype, cudaStream_t stream);

// out = weight * (x * rsqrt(mean(x^2) + eps)), per row of `dim` elements: x, out (rows, dim) and weight (dim,)
// contiguous, all of `dtype`; normalised in float32 (double too), rounded to `dtype`, then multiplied by the weight
// in `dtype`'s arithmetic (kernels::aten::rms_norm' roundings).
cudaError_t launch_rms_norm(const void* x, const void* weight, void* out, int64_t rows, int64_t dim, double eps,
                            Dtype dtype, cudaStream_t stream);

// verl::softmax_row_stats (kernels/ops.h) of logits (rows, vocab) contiguous of `dtype`: lse, picked (when labels,
// (rows,) int64 in range in device memory, is not null) and mean_x (when `mean`), each (rows,) of the accumulation
// type (float; double for kFloat64).
cudaError_t launch_softmax_row_stats(const void* logits, int64_t rows, int64_t vocab, const int64_t* labels,
                                     bool mean, void* lse, void* picked, void* mean_x, Dtype dtype,
                                     cudaStream_t stream);

// verl::sample's untruncated rows: for each i < num_rows, row r = rows[i] of logits (rows, vocab)
// contiguous of `dtype`, each logit taken as float (what converting the rows to float32 first gives), with
// params[2 i] its temperature (0 = greedy) and params[2 i + 1] its uniform draw: tokens[r] and logprobs[r] (float32;
// the CPU kernel's contract, kernels/cpu/sample.cpp). rows and params in device memory.
cudaError_t launch_sample_plain(const void* logits, Dtype dtype, int64_t vocab, const int64_t* rows,
                                const double* params, int64_t num_rows, int64_t* tokens, float* logprobs,
                                cudaStream_t stream);

// Paged attention (the contract of verl::paged_attention, kernels/ops.h): q (bs, heads, q_len, d) with
// strides `qs`; k_pool / v_pool (blocks, block_size, kv_heads, d) contiguous; tables (bs, max_blocks)
// and positions (bs, q_len) int64 contiguous; out (bs, q_len, heads, d) contiguous; scores a scratch
// of bs * q_len * heads * max_blocks * block_size elements of the accumulation type (float; double
// for kFloat64) where paged_attention_needs_scores says so, else unused (may be null). The kernel is chosen from
// the shapes and the pools' alignment (paged_attention.cu).
cudaError_t launch_paged_attention(const void* q, Strides4 qs, const void* k_pool, const void* v_pool,
                                   const int64_t* tables, const int64_t* positions, void* out, void* scores,
                                   int64_t bs, int64_t q_len, int64_t heads, int64_t kv_heads, int64_t d,
                                   int64_t block_size, int64_t max_blocks, double scale, Dtype dtype,
                                   cudaStream_t stream);

// Whether launch_paged_attention's kernel for these pools and shapes reads the `scores` scratch: every kernel but
// the warp kernel, which keeps its softmax in registers.
bool paged_attention_needs_scores(const void* k_pool, const void* v_pool, int64_t heads, int64_t kv_heads, int64_t d,
                                  Dtype dtype);

}  // namespace verl::kernels::cuda
