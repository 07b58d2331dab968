// Where every weight of a CausalLM sits in ZeRO-3's shards (workers/fully_sharded.h): the units, the flat image of
// each unit and which piece of it each of N ranks keeps, for a rollout of tensor-parallel size t. A pure function of
// the parameters' names and shapes, N and t -- no communicator, no tensors held -- so that the sharded model, its
// per-rank checkpoint files (workers/sharded_checkpoint.h) and the model merger that joins those files all use the
// one definition.
//
// Units as verl's FSDP wrap policy cuts the model: one per decoder layer (model.layers.i.*: unit i + 1) and a root unit
// (0) with everything else. With t = 1 a unit's image is its parameters end to end, padded to a multiple of N, and
// rank r keeps elements [r*S, (r+1)*S). With t > 1 (g = N / t; rank r has TP rank k = r % t in micro-DP group
// j = r / t) the image is laid out by TP slice: block k holds slice k of every parameter (tensor_parallel_shard's
// for the split ones; a 1/t flat chunk of the replicated ones and of a row-parallel bias), padded to g * S, and rank
// (k, j) keeps piece j of block k -- at (j * t + k) * S of the image gathered in rank order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/core/json.h"
#include "verl/model/tensor_parallel.h"

namespace verl::workers::detail {

struct VERL_API ShardedParameter {
  std::string name;  // HF name
  std::vector<int64_t> shape;
  // A fused column-parallel weight's row segments (model::fused_row_segments: Phi-3's qkv_proj, gate_up_proj), each
  // split t ways on its own; empty for the others. Part of the layout (to_json) so that the merger splits alike.
  std::vector<int64_t> segments = {};
  bool operator==(const ShardedParameter&) const = default;
};

class VERL_API ShardLayout {
 public:
  struct Piece {
    size_t parameter = 0;  // index in parameters()
    std::string name;
    std::vector<int64_t> shape;
    std::vector<int64_t> segments;  // ShardedParameter::segments
    int64_t offset = 0;  // in the unit's natural (parameter after parameter) image
    int64_t numel = 0;
    model::ShardDim dim = model::ShardDim::kReplicated;
    bool chunked = false;              // stored as t flat chunks (replicated parameters, a row-parallel bias)
    std::vector<int64_t> slice_shape;  // of its slice in each block (t = 1: its shape)
    int64_t slice_numel = 0;
    int64_t block_offset = 0;  // of its slice in each block
  };
  struct Unit {
    std::vector<Piece> pieces;
    int64_t numel = 0;          // real elements
    int64_t block_numel = 0;    // elements of one block (all t blocks are alike)
    int64_t shard_numel = 0;    // S: g * S >= block_numel
    int64_t master_offset = 0;  // where its shard sits in a rank's flat state (every unit's shard end to end)
  };

  // InvalidArgument when t does not divide N or a split dimension (a column-parallel weight's rows, a row-parallel
  // one's columns), or a name is not a parameter of a decoder model.
  ShardLayout(std::vector<ShardedParameter> parameters, int64_t world_size, int64_t generation_tp);

  static size_t unit_of(const std::string& name);

  const std::vector<ShardedParameter>& parameters() const { return parameters_; }
  const std::vector<Unit>& units() const { return units_; }
  int64_t world_size() const { return world_size_; }
  int64_t generation_tp() const { return tp_; }
  // Elements of one rank's flat state: every unit's S, end to end.
  int64_t shard_numel() const { return shard_numel_; }

  // The laid-out image of unit `unit` (N * S elements, zero padding) of per-parameter tensors `whole(piece)` (the
  // parameters' shapes; an undefined tensor counts as zeros).
  torch::Tensor pack(size_t unit, const std::function<torch::Tensor(const Piece&)>& whole,
                     const torch::TensorOptions& options) const;
  // Writes the laid-out image `image` back into per-parameter tensors `whole(piece)` (the parameters' shapes).
  void unpack(size_t unit, const torch::Tensor& image, const std::function<torch::Tensor(const Piece&)>& whole) const;
  // Rank `rank`'s flat state (shard_numel()) of per-parameter tensors in parameters() order.
  torch::Tensor slice(const std::vector<torch::Tensor>& per_parameter, int64_t rank) const;
  // Per-parameter tensors (parameters() order) from every rank's flat state: `rank_state(r)` (shard_numel() elements,
  // read a unit at a time through narrow).
  std::vector<torch::Tensor> join(const std::function<torch::Tensor(int64_t rank)>& rank_state) const;

  // {"world_size", "generation_tp", "parameters": [[name, [shape...]] or [name, [shape...], [segments...]], ...]}:
  // enough to rebuild the layout.
  Json to_json() const;
  // The layout `j` describes (untrusted: a checkpoint file); CheckpointError naming `source` when it is malformed.
  static ShardLayout from_json(const Json& j, const std::string& source);

  bool operator==(const ShardLayout& other) const {
    return world_size_ == other.world_size_ && tp_ == other.tp_ && parameters_ == other.parameters_;
  }

 private:
  std::vector<ShardedParameter> parameters_;
  int64_t world_size_ = 1;
  int64_t tp_ = 1;
  std::vector<Unit> units_;
  int64_t shard_numel_ = 0;
};

}  // namespace verl::workers::detail
