// verl's one-step off-policy trainer (verl/experimental/one_step_off_policy/ray_trainer.py) in one process: the
// rollout engine generates the next batch from its own copy of the weights on a thread of its own while the actor
// trains on this one. See PPOTrainer::submit_rollouts in verl/trainer/ppo_trainer.h.
#include "trainer/one_step_off_policy.h"

#include <chrono>

#include "verl/core/error.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::trainer {
namespace detail {

namespace {
constexpr const char* kAsyncSuffix = "_async";
// The submitted batch's own stages and the names they are reported under (verl's generate_async; the reward,
// which verl's recipe scores after the wait, is scored on the rollout thread here).
const std::pair<const char*, const char*> kThreadStages[] = {{"gen", "generate_async"}, {"reward", "reward_async"}};
}  // namespace

bool is_overlapped_stage(const std::string& stage) {
  const std::string suffix = kAsyncSuffix;
  return stage.size() > suffix.size() && stage.compare(stage.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace detail

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
}  // namespace

void PPOTrainer::check_no_rollout_in_flight(const char* what) const {
  VERL_CHECK_AS(InvalidArgument, !rollout_in_flight_, what,
                ": a submitted rollout batch is being generated; call wait_rollouts() first");
}

void PPOTrainer::submit_rollouts(const DataProto& prompts) {
  VERL_CHECK_AS(ConfigError, !settings_.hybrid_engine,
                "submit_rollouts generates while the actor trains, from a copy of the weights the rollout engine "
                "holds: set actor_rollout_ref.hybrid_engine=false (the hybrid engine generates from the weights "
                "being trained)");
  check_no_rollout_in_flight("submit_rollouts");
  VERL_CHECK_AS(DataError, prompts.size() > 0, "submit_rollouts: the prompt batch is empty");
  // verl's _fit_update_weights before _async_gen_next_batch: the weights of the last completed update.
  const auto sync_start = Clock::now();
  if (pool_) {
    sync_pool_weights();
  } else {
    ready_engine();
  }
  sync_rollout_weights_seconds_ = seconds_since(sync_start);
  // Trained after the batches already waited for: its uids and seeds are those of that step.
  const int64_t step_no = global_step_ + 1 + waited_not_optimized_;
  rollout_in_flight_ = true;  // before the thread starts: it reads the flag (ready_engine, hand_over_weights)
  try {
    rollout_future_ = std::async(std::launch::async, [this, prompts, step_no] {
      return scored_rollouts(prompts, step_no, /*gen_index=*/0);
    });
  } catch (...) {
    rollout_in_flight_ = false;
    throw;
  }
}

void PPOTrainer::discard_rollouts() {
  if (rollout_in_flight_ && rollout_future_.valid()) {
    try {
      rollout_future_.get();
    } catch (...) {  // dropped with its batch
    }
  }
  rollout_in_flight_ = false;
  waited_not_optimized_ = 0;
  sync_rollout_weights_seconds_.reset();
}

DataProto PPOTrainer::wait_rollouts() {
  VERL_CHECK_AS(InvalidArgument, rollout_in_flight_ && rollout_future_.valid(),
                "wait_rollouts: no rollout batch was submitted (submit_rollouts)");
  const auto wait_start = Clock::now();
  DataProto batch;
  try {
    batch = rollout_future_.get();
  } catch (...) {
    rollout_in_flight_ = false;
    throw;
  }
  rollout_in_flight_ = false;
  ++waited_not_optimized_;
  const double waited = seconds_since(wait_start);

  Json& timing = batch.meta_info()["timing_s"];
  if (!timing.is_object()) timing = Json::object();
  for (const auto& [stage, name] : detail::kThreadStages) {
    auto it = timing.find(stage);
    if (it == timing.end()) continue;
    timing[name] = it->get<double>();
    timing.erase(stage);
  }
  timing["gen"] = waited;  // verl's timing_s/gen in this trainer: how long the step waited for its batch
  return batch;
}

}  // namespace verl::trainer
