// The optimizer part of a training checkpoint: AdamW moments and step counts plus the LR scheduler's
// position, in one torch archive per worker (verl saves the optimizer and lr_scheduler state next to the
// HF model in global_step_N/{actor,critic}/). Written to a temporary file and renamed, so a crash leaves
// the previous file intact. Used by PPOTrainer's Python front-end and C++ applications.
#pragma once

#include <string>

#include "verl/workers/optim.h"

namespace verl::trainer {

// Throws CheckpointError naming the file when it cannot be written.
void save_optimizer_state(workers::Optimizer& optimizer, const std::string& path);
// Restores a state written by save_optimizer_state for the same parameters (same model shapes). Throws
// CheckpointError naming the file when it is missing, unreadable or does not fit the parameters.
void load_optimizer_state(workers::Optimizer& optimizer, const std::string& path);

}  // namespace verl::trainer
