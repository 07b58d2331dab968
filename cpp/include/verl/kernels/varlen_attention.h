// Causal attention over packed variable-length sequences (padding removed, boundaries given by
// cumulative lengths) at O(sum len_i^2) cost instead of the O(total^2) of a block-diagonal mask.
// Used by CausalLM::forward_packed (training's remove-padding path) and the rollout's packed prefill. The kernel
// layer's choice of implementation by device and dtype: On CUDA in bf16 / fp16 one
// flash-attention varlen call (ATen's _flash_attention_forward, differentiable) does all sequences;
// elsewhere plain ATen ops (SDPA per group of equal lengths, narrow, index_select), so it runs on any
// device and is differentiable.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"

namespace verl::kernels {

// How packed sequences are batched for attention: sequences of equal length form one group and
// go through one SDPA call as a (count, heads, length, head_dim) batch; every sequence is
// causal on its own, so no mask is needed (is_causal). Built once per forward on the CPU.
struct VERL_API VarlenLayout {
  struct Group {
    int64_t length = 0;  // tokens per sequence
    int64_t count = 0;   // sequences in the group
    int64_t first_start = 0;
    // The group's sequences lie end to end from first_start: a view, no gather needed.
    bool contiguous = true;
    torch::Tensor token_index;  // (count * length,) int64 on the device; defined when !contiguous
  };

  // cu_seqlens (n+1,) integer, cu_seqlens[0] = 0, non-decreasing, cu_seqlens[n] = total; any
  // device. Zero-length sequences are allowed (they contribute nothing). Bad input: InvalidArgument.
  static VarlenLayout build(const torch::Tensor& cu_seqlens, int64_t total, torch::Device device);

  torch::Tensor cu_seqlens;  // (n+1,) int64 on the CPU
  int64_t total = 0;
  // On a CUDA device: cu_seqlens as int32 there and the longest sequence, flash attention's varlen inputs.
  torch::Tensor cu_seqlens_device;
  int64_t max_length = 0;
  std::vector<Group> groups;
  // (total,) int64 on the device: token t of the packed input is row inverse[t] of the groups'
  // concatenated outputs. Undefined when that concatenation already is in packed order.
  torch::Tensor inverse;
};

// q (heads, total, head_dim); k, v (kv_heads, total, head_dim) with heads % kv_heads == 0 (GQA:
// kv head j serves query heads [j * heads/kv_heads, (j+1) * heads/kv_heads)), RoPE already applied.
// Returns (heads, total, head_dim): softmax(q k^T * scale) v, causal within each sequence; with `sliding_window` > 0
// token i of a sequence sees only its tokens j > i - sliding_window (transformers' sliding-window attention).
VERL_API torch::Tensor varlen_causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                               const VarlenLayout& layout, double scale, int64_t sliding_window = 0);

}  // namespace verl::kernels
