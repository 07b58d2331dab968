// Attention that reads keys/values straight from the paged pool (no gather copy): the rollout engine's CPU kernel
// (decode steps and packed prefill token rows). PagedKVCache calls the verl::paged_attention op, which also has a
// CUDA kernel; this entry point is the CPU one alone (its tests compare the SIMD kernel with the portable loop).
#pragma once

#include <torch/torch.h>

#include "verl/core/export.h"

namespace verl::rollout {

// q (bs, heads, q, d); k_pool / v_pool (num_blocks, block_size, kv_heads, d); block_tables
// (bs, max_blocks) int64; positions (bs, q) int64. Query t of row i attends to the row's tokens
// 0..positions[i, t] (causal by position), read through its block table; head h uses kv head
// h / (heads / kv_heads). Softmax in float32 (float64 for double inputs). Returns (bs, heads, q, d).
// float32 and bfloat16 with head_dim a multiple of 8 use an AVX2/FMA kernel when the CPU has one; allow_simd =
// false forces the portable loop (the reference the SIMD kernel is tested against).
VERL_API torch::Tensor paged_attention_cpu(const torch::Tensor& q, const torch::Tensor& k_pool,
                                           const torch::Tensor& v_pool, const torch::Tensor& block_tables,
                                           const torch::Tensor& positions, double scale, bool allow_simd = true);

}  // namespace verl::rollout
