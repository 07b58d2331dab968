// Megatron-LM's tensor-parallel layout of the decoder's parameters (see verl/model/tensor_parallel.h).
#include "verl/model/tensor_parallel.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::model {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ShardDim shard_dim(const std::string& name) {
  if (name == "model.embed_tokens.weight" || name == "lm_head.weight") return ShardDim::kVocab;
  // A LoRA adapter (B A) of a column-parallel linear splits B's rows and keeps A whole; of a row-parallel one, A's
  // input features, keeping B whole (each rank's B (A_r x_r) is a partial sum, added up with the base's).
  const bool lora_a = name.find(".lora_A.") != std::string::npos, lora_b = name.find(".lora_B.") != std::string::npos;
  for (const char* column : {".q_proj.", ".k_proj.", ".v_proj.", ".gate_proj.", ".up_proj.", ".qkv_proj.",
                             ".gate_up_proj."}) {
    if (name.find(column) != std::string::npos) return lora_a ? ShardDim::kReplicated : ShardDim::kColumn;
  }
  for (const char* row : {".o_proj.", ".down_proj."}) {
    if (name.find(row) != std::string::npos) return lora_b ? ShardDim::kReplicated : ShardDim::kRow;
  }
  return ShardDim::kReplicated;
}

ModelConfig tensor_parallel_shard_config(const ModelConfig& c, int64_t size) {
  const char* key = "actor_rollout_ref.rollout.tensor_model_parallel_size";
  VERL_CHECK_AS(ConfigError, size >= 1, key, " must be >= 1, got ", size);
  for (const auto& [what, n] : {std::pair<const char*, int64_t>{"num_attention_heads", c.num_attention_heads},
                                {"num_key_value_heads", c.num_key_value_heads},
                                {"intermediate_size", c.intermediate_size}}) {
    VERL_CHECK_AS(ConfigError, n % size == 0, key, " = ", size, " does not divide the model's ", what, " (", n,
                    "): every rank must hold whole heads and an equal share of the MLP");
  }
  ModelConfig out = c;
  out.num_attention_heads = c.num_attention_heads / size;
  out.num_key_value_heads = c.num_key_value_heads / size;
  out.intermediate_size = c.intermediate_size / size;
  out.vocab_size = vocab_rows_per_rank(c.vocab_size, size);
  return out;
}

int64_t vocab_rows_per_rank(int64_t vocab_size, int64_t size) { return (vocab_size + size - 1) / size; }

bool is_fused_projection(const std::string& name) {
  return name.find(".qkv_proj.") != std::string::npos || name.find(".gate_up_proj.") != std::string::npos;
}

namespace {

// The segments of a fused column-parallel parameter checked against its rows and the group size.
void check_segments(const std::string& name, int64_t rows, int64_t size, const std::vector<int64_t>& segments) {
  int64_t total = 0;
  for (int64_t s : segments) {
    VERL_CHECK(s > 0 && s % size == 0, "tensor_parallel_shard: ", untrusted::escape(name), "'s segment of ", s,
               " rows does not split in ", size);
    total += s;
  }
  VERL_CHECK(total == rows, "tensor_parallel_shard: ", untrusted::escape(name), " has ", rows,
             " rows, its segments ", total);
}

}  // namespace

std::vector<int64_t> fused_row_segments(const ModelConfig& c, const std::string& name) {
  if (shard_dim(name) != ShardDim::kColumn || !is_fused_projection(name)) return {};
  if (name.find(".qkv_proj.") != std::string::npos) return {c.q_size(), c.kv_size(), c.kv_size()};
  return {c.intermediate_size, c.intermediate_size};
}

torch::Tensor tensor_parallel_shard(const ModelConfig& c, const std::string& name, const torch::Tensor& whole,
                                    int64_t rank, int64_t size) {
  return tensor_parallel_shard(name, whole, rank, size, fused_row_segments(c, name));
}

void tensor_parallel_unshard_column(torch::Tensor& whole, const torch::Tensor& shard, int64_t rank, int64_t size,
                                   const std::vector<int64_t>& segments) {
  const std::vector<int64_t> parts = segments.empty() ? std::vector<int64_t>{whole.size(0)} : segments;
  int64_t at = 0, from = 0;
  for (int64_t part : parts) {
    const int64_t n = part / size;
    whole.narrow(0, at + rank * n, n).copy_(shard.narrow(0, from, n));
    at += part;
    from += n;
  }
}

torch::Tensor tensor_parallel_shard(const std::string& name, const torch::Tensor& whole, int64_t rank, int64_t size,
                                    const std::vector<int64_t>& segments) {
  VERL_CHECK(size >= 1 && rank >= 0 && rank < size, "tensor_parallel_shard: rank ", rank, " of ", size);
  const ShardDim dim = shard_dim(name);
  const bool bias = ends_with(name, ".bias");
  if (dim == ShardDim::kColumn && is_fused_projection(name)) {
    VERL_CHECK(!segments.empty(), "tensor_parallel_shard: ", untrusted::escape(name),
               " is a fused projection: its slice needs the model's row segments (fused_row_segments)");
    VERL_CHECK(whole.dim() >= 1, "tensor_parallel_shard: ", untrusted::escape(name), " is a scalar");
    check_segments(name, whole.size(0), size, segments);
    std::vector<torch::Tensor> pieces;
    int64_t at = 0;
    for (int64_t part : segments) {
      pieces.push_back(whole.narrow(0, at + rank * (part / size), part / size));
      at += part;
    }
    return torch::cat(pieces, 0).contiguous();
  }
  VERL_CHECK(segments.empty(), "tensor_parallel_shard: ", untrusted::escape(name), " is not a fused projection");
  auto split = [&](int64_t d) {
    VERL_CHECK(whole.dim() > d && whole.size(d) % size == 0, "tensor_parallel_shard: ", untrusted::escape(name),
               " ", whole.sizes(), " does not split in ", size, " along dim ", d);
    const int64_t n = whole.size(d) / size;
    return whole.narrow(d, rank * n, n).contiguous();
  };
  switch (dim) {
    case ShardDim::kReplicated:
      return whole.contiguous();
    case ShardDim::kColumn:
      return split(0);
    case ShardDim::kRow:
      // y = sum over ranks of x_r W_r^T, then + b: the bias is added by rank 0 alone.
      if (bias) return rank == 0 ? whole.contiguous() : torch::zeros_like(whole);
      return split(1);
    case ShardDim::kVocab: {
      const int64_t vocab = whole.size(0), rows = vocab_rows_per_rank(vocab, size);
      torch::Tensor out = torch::zeros({rows, whole.size(1)}, whole.options());
      const int64_t begin = std::min(vocab, rank * rows), end = std::min(vocab, begin + rows);
      if (end > begin) out.narrow(0, 0, end - begin).copy_(whole.narrow(0, begin, end - begin));
      return out;
    }
  }
  VERL_FAIL(InvalidArgument, "tensor_parallel_shard: unknown shard dim");
}

}  // namespace verl::model
