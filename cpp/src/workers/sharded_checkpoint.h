// The trainer's side of the per-rank checkpoint files (verl/workers/sharded_checkpoint.h): writing a rank's shard and
// loading a sharded checkpoint into a ZeRO-3 model or into one process's whole model.
#pragma once

#include <filesystem>

#include "verl/core/export.h"
#include "verl/model/transformer.h"
#include "verl/workers/optim.h"
#include "verl/workers/sharded_checkpoint.h"
#include "workers/fully_sharded.h"

namespace verl::workers::detail {

// This rank's files (model_world_size_N_rank_r / optim_...: N the shard group's size, r the rank in it) into `dir`,
// which must exist; each is written to a temporary file, fsynced and renamed. No collective: every rank of the first
// shard group writes its own (with HSDP the other groups hold the same shards and write nothing). `optimizer`: the model's (sharded
// over it).
VERL_API void save_shard(const std::filesystem::path& dir, FullyShardedModel& model, const Optimizer& optimizer);

// Loads the checkpoint in `dir` into this rank's shards: at the layout it was written with (same N, same t, same
// parameters and dtype) from this rank's own files, bit for bit; otherwise from every rank's files joined into the
// whole tensors, of which the rank keeps its slice (the whole weights and moments are then in host memory on every
// rank while it loads, as a one-process checkpoint's are). Moments and step counts go into `optimizer`. Everything is
// checked before anything changes, except the weights' names and shapes against the model: a mismatch there throws
// before the optimizer is touched.
VERL_API void load_shard(const std::filesystem::path& dir, FullyShardedModel& model, Optimizer& optimizer);
// The same into one process's whole model and its (unsharded) optimizer.
VERL_API void load_shard(const std::filesystem::path& dir, model::CausalLM& model, Optimizer& optimizer);

}  // namespace verl::workers::detail
