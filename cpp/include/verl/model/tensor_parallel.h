// Tensor parallelism for the decoder (Megatron-LM's layout, as vLLM shards a Qwen2 / Llama for generation): t ranks
// each hold a 1/t piece of every large weight and run one copy of the model together.
//   column-parallel (split on the output features, dim 0): q/k/v_proj and gate/up_proj weights and biases -- each
//                    rank owns whole attention heads (q heads and their kv heads) and 1/t of the MLP's width;
//   row-parallel    (split on the input features, dim 1): o_proj and down_proj weights; their partial outputs are
//                    summed over the t ranks (all-reduce) and their bias is added once (rank 0 holds it, the others
//                    a zero bias);
//   vocab-parallel  (rows, dim 0): the embedding and the untied lm_head, ceil(vocab / t) rows per rank, the last
//                    rank's padded with zero rows. An embedding lookup reads the rank's own rows (zeros for the
//                    others' ids) and sums over the ranks -- exact, one non-zero term per element; the head's logits
//                    are gathered from the ranks, so the sampler sees the whole vocabulary, bit for bit the same on
//                    every rank of the group;
//   replicated:      the norms.
// A fused column-parallel weight (Phi-3's qkv_proj [q; k; v] and gate_up_proj [gate; up], and their LoRA B) is split
// segment by segment: rank k holds [q rows of rank k; k rows of rank k; v rows of rank k] (resp. [gate slice k; up
// slice k]), so that its slice is the fused projection of the rank's own heads / MLP share -- not a contiguous range
// of the fused rows.
// tensor_parallel_shard is the one definition of who holds what: CausalLM loads its shard with it, and the
// 3D-HybridEngine re-shards by it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"
#include "verl/model/model_config.h"

namespace verl::model {

enum class ShardDim {
  kReplicated,
  kColumn,  // dim 0, output features
  kRow,     // dim 1, input features (weights); a row-parallel bias lives on rank 0 only
  kVocab,   // dim 0, vocabulary rows padded to a multiple of the group size
};

// How the parameter with this HF name (model.layers.3.self_attn.q_proj.weight, ...) is split.
VERL_API ShardDim shard_dim(const std::string& name);

// The config of one rank's modules in a group of `size`: attention heads, kv heads and the MLP width divided by
// `size` (head_dim kept), vocab_size = vocab_rows_per_rank; everything else unchanged. ConfigError naming
// actor_rollout_ref.rollout.tensor_model_parallel_size when they do not divide.
VERL_API ModelConfig tensor_parallel_shard_config(const ModelConfig& c, int64_t size);

// Rows of the vocabulary each rank holds: ceil(vocab_size / size).
VERL_API int64_t vocab_rows_per_rank(int64_t vocab_size, int64_t size);

// Whether `name` is a parameter of a fused projection (qkv_proj, gate_up_proj), whose column-parallel tensors (weight,
// bias, LoRA B) are split segment by segment.
VERL_API bool is_fused_projection(const std::string& name);

// The row segments of the fused column-parallel parameter `name` of a model of `c` (qkv_proj: {q, kv, kv} rows;
// gate_up_proj: {intermediate, intermediate}), each split on its own; empty for every other parameter.
VERL_API std::vector<int64_t> fused_row_segments(const ModelConfig& c, const std::string& name);

// Rank `rank`'s piece of `whole` (the parameter `name` of the whole model), a new contiguous tensor with whole's
// dtype and device. `segments`: fused_row_segments of a fused column-parallel parameter (empty otherwise); a fused
// parameter (qkv_proj, gate_up_proj) without them is an InvalidArgument rather than a wrong slice.
VERL_API torch::Tensor tensor_parallel_shard(const std::string& name, const torch::Tensor& whole, int64_t rank,
                                             int64_t size, const std::vector<int64_t>& segments = {});
// The same for a parameter of a model of `c`, its segments from the config.
VERL_API torch::Tensor tensor_parallel_shard(const ModelConfig& c, const std::string& name, const torch::Tensor& whole,
                                             int64_t rank, int64_t size);
// Writes rank `rank`'s piece `shard` (tensor_parallel_shard's, column-parallel) back into `whole` where it came from.
VERL_API void tensor_parallel_unshard_column(torch::Tensor& whole, const torch::Tensor& shard, int64_t rank,
                                             int64_t size, const std::vector<int64_t>& segments = {});

}  // namespace verl::model
