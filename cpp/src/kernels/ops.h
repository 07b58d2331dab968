// The hot ops of libverl, one dispatch point each: a typed C++ entry point that calls the op
// registered with LibTorch's dispatcher as verl::<name> (ops.cpp defines the schemas). Each op has
// a kernel per device -- cpu/ (AVX2 + portable loops), cuda/ (nvcc, when VERL_WITH_CUDA is on) --
// and an ATen composition (aten/) registered as CompositeExplicitAutograd, which any other device
// (and CUDA, for ops that have no CUDA kernel yet) runs. Algorithm and model code call these and
// never branch on the device. The ops are also visible from Python as torch.ops.verl.<name>.
//
// Why the dispatcher rather than a table of our own: it already picks the kernel from the tensors'
// device (and knows every backend torch knows), it gives Autograd and Meta keys where an op needs
// them, and the registrations are static objects in libverl's own object files -- a shared
// library keeps every object file, so none is dropped by the linker, and registration needs no
// exported symbol (libverl is built with hidden visibility).
//
// None of these ops is differentiable: the entry points dispatch below autograd (callers run them
// under no-grad or on inputs that need no gradient; vanilla_token_losses returns its derivative
// explicitly). Private to libverl; VERL_API only for tests/cpp, which link the shared library.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::kernels {

// Attention reading K/V in place from the paged pool. q (bs, heads, q, d) any strides; k_pool /
// v_pool (num_blocks, block_size, kv_heads, d) contiguous; block_tables (bs, max_blocks);
// positions (bs, q). Query t of row i attends to the row's tokens 0..positions[i, t] (clamped to
// the table's capacity), head h to kv head h / (heads / kv_heads). Softmax in float32 (float64 for
// double). Returns (bs, heads, q, d), a permuted view of a (bs, q, heads, d) tensor.
// allow_simd = false forces the CPU's portable loop (the reference of its AVX2 kernel). sliding_window > 0: query t
// of row i attends to positions (positions[i, t] - sliding_window, positions[i, t]] only.
VERL_API torch::Tensor paged_attention(const torch::Tensor& q, const torch::Tensor& k_pool,
                                       const torch::Tensor& v_pool, const torch::Tensor& block_tables,
                                       const torch::Tensor& positions, double scale, bool allow_simd = true,
                                       int64_t sliding_window = 0);

// pool (num_blocks, block_size, kv_heads, d) contiguous: the slot slots[i * q + t] (flat over
// blocks x block_size) <- token t of row i of x (bs, kv_heads, q, d), converted to the pool's
// dtype. slots int64 contiguous, in range (the caller checks: PagedKVCache::set_batch).
VERL_API void kv_cache_write(torch::Tensor& pool, const torch::Tensor& slots, const torch::Tensor& x);

// verl::rollout::sample's computation (see verl/rollout/sampler.h for the contract), the per-row
// settings as arrays of one entry per logits row. Returns (tokens int64, logprobs float32).
VERL_API std::tuple<torch::Tensor, torch::Tensor> sample(const torch::Tensor& logits,
                                                         const std::vector<double>& temperature,
                                                         const std::vector<int64_t>& top_k,
                                                         const std::vector<double>& top_p,
                                                         const std::vector<double>& min_p,
                                                         const std::vector<double>& uniform, bool allow_simd = true);

// GAE's raw advantages (verl's multi-turn recurrence, cpu/gae.h): rewards, values (bs, T) float32
// or float64, one dtype; mask (bs, T) bool / integer / floating.
VERL_API torch::Tensor gae_scan(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask,
                                double gamma, double lam);

// compute_gae_advantage_return's result: (masked_whiten(advantages, mask != 0), advantages + values).
// NaN/Inf of rewards or values inside the mask, or fewer than two positions inside it, throw.
VERL_API std::tuple<torch::Tensor, torch::Tensor> gae_advantage_return(const torch::Tensor& rewards,
                                                                       const torch::Tensor& values,
                                                                       const torch::Tensor& mask, double gamma,
                                                                       double lam);

// x * cos + rotate_half(x) * sin with every product and the sum rounded to x's dtype as the
// separate ATen ops round them. x (bs, heads, q, d), d even; cos / sin (bs, q, d) of x's dtype.
VERL_API torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// RMSNorm as model::RMSNorm computes it (kernels::aten::rms_norm): x (..., dim), weight (dim,). CUDA: one fused
// kernel where x and weight share a dtype (its sum of squares adds in its own order, so the result may differ
// from the op sequence's in the last bit); other devices, and CUDA with mixed dtypes, run the op sequence itself
// -- so the CPU has no kernel of its own, and stays bitwise equal to the trainer's forward.
VERL_API torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// The per-row softmax statistics of logits (rows, vocab) floating, in their own dtype: (lse, picked, mean_x), each
// (rows, 1) in float32 (float64 for double logits): lse = logsumexp(x) (ATen's: shifted by the row's max, 0 where
// that is infinite); picked = x[labels[i]] for labels (rows, 1) int64 in range (a (0, 1) tensor without labels:
// labels.numel() == 0); mean_x = sum softmax(x) * x = E_p[x] where `mean` (else (0, 1)). The log-prob and entropy
// chunks of algo/functional.cpp. The composition converts the rows to float first and runs ATen's ops (the CPU's
// arithmetic, bitwise that of before); CUDA: one kernel reading each row once in its own dtype, an online softmax
// whose sums add in their own order.
VERL_API std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> softmax_row_stats(const torch::Tensor& logits,
                                                                                   const torch::Tensor& labels,
                                                                                   bool mean);

// Per-group mean and unbiased std of scores (bs,) floating, group_id (bs,) int64 in [0, G),
// count (G,) of scores' dtype: (mean, std), each (G,); groups of one get mean 0, std 1.
VERL_API std::tuple<torch::Tensor, torch::Tensor> group_mean_std(const torch::Tensor& scores,
                                                                 const torch::Tensor& group_id,
                                                                 const torch::Tensor& count);

// The sum of each row of rewards (bs, T) floating, (bs,). CPU: accumulated in double, rounded once.
VERL_API torch::Tensor row_sums(const torch::Tensor& rewards);

// scalar (bs,) float32/float64 times mask (bs, T) of any real dtype: scalar.unsqueeze(-1) * mask.
VERL_API torch::Tensor scale_rows_by_mask(const torch::Tensor& scalar, const torch::Tensor& mask);

// verl's compute_policy_loss_vanilla per token (algo/vanilla_loss_kernel.h): old_log_prob, log_prob,
// advantages (bs, T) of one dtype, float32 or float64; response_mask (bs, T) of any real dtype.
// Returns (pg_losses (bs, T) -- with `reduce` the 0-dim sum of pg_losses * mask instead --, the
// derivative of that output w.r.t. log_prob (bs, T), and the float64 sums (clipfrac, clipfrac_lower,
// neg_kl, mask, NaN/Inf counts inside the mask of old_log_prob, log_prob, advantages)). CPU only:
// other devices run verl's formula as differentiable ATen ops (policy_loss.cpp), see has_kernel_for.
VERL_API std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> vanilla_token_losses(
    const torch::Tensor& old_log_prob, const torch::Tensor& log_prob, const torch::Tensor& advantages,
    const torch::Tensor& response_mask, double clip_low, double clip_high, double clip_ratio_c, bool reduce);

// The bytes one chunk of a row-wise pass over logits (log-probs, entropy) may hold on `device`.
// CPU, measured on a 2-core machine (vocab 151936, float32): chunks of a few rows are several times slower (ATen's
// row reductions over so few rows parallelise badly), ~32 MiB (53 rows) beats both smaller chunks and verl's 512-row
// slices. 31 MiB, not 32: chunk-sized tensors (verl::softmax_row_stats's composition allocates its scratch per
// chunk) must stay under glibc's largest mmap threshold, 32 MiB, to be reused heap memory after the first free; at
// exactly 32 MiB (1024 rows of an 8192-token vocabulary) each was mmapped and page-faulted afresh: 2.4x slower
// log-probs (0.38 vs 0.16 s for 32768 x 8192 float32 logits, 2 threads).
// A GPU reduces a row per thread block: 55 rows would leave most of an H100's 132 SMs idle, and a chunk's dozen
// kernels would cost more in launches than in work. There a chunk may hold 1 GiB (the caller's row cap, 1024 rows by
// default, usually binds first: 594 MiB of a 151,936-token vocabulary in float32; verl chunks its entropy by 2048
// rows); the caching allocator reuses them.
VERL_API int64_t row_chunk_bytes(const c10::Device& device);

// Whether verl::<op> has a kernel of its own for `key` (e.g. c10::DispatchKey::CUDA), rather than
// the ATen composition: for tests and reports.
VERL_API bool has_kernel(const char* op, c10::DispatchKey key);

// Whether verl::<op> can run on tensors like `t` (a kernel for its device, or the ATen composition):
// for the fused paths that exist only where a device has a kernel (vanilla_token_losses).
VERL_API bool has_kernel_for(const char* op, const torch::Tensor& t);

}  // namespace verl::kernels
