// Optimizer checkpoints (see verl/trainer/checkpointing.h).
#include "verl/trainer/checkpointing.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <torch/serialize.h>
#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::trainer {

void save_optimizer_state(workers::Optimizer& optimizer, const std::string& path) {
  const std::string tmp = path + ".tmp";
  try {
    torch::serialize::OutputArchive archive;
    optimizer.adamw().save(archive);
    archive.write("scheduler_step_count", torch::tensor(optimizer.scheduler_step_count(), torch::kLong));
    archive.write("skipped_steps", torch::tensor(optimizer.skipped_steps(), torch::kLong));
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    VERL_FAIL(CheckpointError, "cannot write optimizer state '", path, "': ", e.what());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  VERL_CHECK_AS(CheckpointError, !ec, "cannot write optimizer state '", path, "': ", ec.message());
}

void load_optimizer_state(workers::Optimizer& optimizer, const std::string& path) {
  VERL_CHECK_AS(CheckpointError, std::filesystem::is_regular_file(path), "optimizer state '", path, "' not found");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    optimizer.adamw().load(archive);
    torch::Tensor step;
    archive.read("scheduler_step_count", step);
    optimizer.set_scheduler_step_count(step.item<int64_t>());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    VERL_FAIL(CheckpointError, "cannot read optimizer state '", path, "': ", e.what());
  }
}

}  // namespace verl::trainer
