// Batches whose training targets are marked by a loss mask (the SFT and DPO trainers): checking them, packing the
// rows' real tokens back to back (padding removed) and the log-probs of the target tokens, one forward for both
// trainers. Private to libverl.
//
// A batch is a DataProto with input_ids, attention_mask, loss_mask (bs, seq): padding anywhere attention_mask is 0,
// loss_mask nonzero where a token is a target, predicted from the real token before it in its row (a row's first
// real token is never a target).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/data/data_proto.h"
#include "verl/model/transformer.h"

namespace verl::trainer::detail {

struct TargetBatch {
  torch::Tensor input_ids;       // (bs, seq) int64 on the model's device
  torch::Tensor attention_mask;  // (bs, seq) bool
  torch::Tensor loss_mask;       // (bs, seq) bool
};

// Checks keys, shapes, dtypes and token ids before anything runs, so a bad batch leaves the model, its
// gradients and the optimizer as they were. DataError starting with `what` ("SFT batch", "DPO batch").
TargetBatch check_target_batch(const DataProto& data, const model::CausalLM& model, const char* what);

// The rows `rows` of `b`, in that order.
TargetBatch take_rows(const TargetBatch& b, const std::vector<int64_t>& rows);

// Data parallelism: rank `rank` of `ranks` trains on the contiguous share [rank * n / ranks, (rank + 1) * n / ranks)
// of the batch's n units of `unit` rows (a DPO pair is 2 rows). ConfigError naming `batch_key` when the units do not
// divide over the ranks. One rank: `b` itself.
TargetBatch rank_share(const TargetBatch& b, int64_t rank, int64_t ranks, int64_t unit, const std::string& batch_key);

// The rows' real tokens packed back to back, and which packed positions predict a target: position q predicts
// q + 1 when that token is in the same row and marked by loss_mask.
struct PackedTargets {
  torch::Tensor ids;          // (total,) int64
  torch::Tensor cu_seqlens;   // (rows + 1,) int64
  torch::Tensor predicts;     // (num_targets,) int64 packed positions whose next token is a target
  torch::Tensor labels;       // (num_targets,) int64 those targets
  torch::Tensor target_rows;  // (num_targets,) int64 the row of each target
};
PackedTargets pack_targets(const TargetBatch& b);

// log p(target) for every target of `b` (differentiable unless under NoGradGuard), in at least float32; nullopt
// (no forward at all) when the rows hold no target, unless `forward_without_targets`: a ZeRO-3 rank runs every
// micro-batch's forward and backward, since each gathers weights with the other ranks (the result is then empty).
// remove_padding runs the packed forward, else the padded one.
std::optional<torch::Tensor> target_log_probs(model::CausalLM& model, const TargetBatch& b, const PackedTargets& p,
                                              bool remove_padding, bool forward_without_targets = false);

}  // namespace verl::trainer::detail
