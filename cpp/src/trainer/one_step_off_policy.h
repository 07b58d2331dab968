// The timing names of verl's one-step off-policy trainer (PPOTrainer::submit_rollouts / wait_rollouts). Private to
// libverl.
#pragma once

#include <string>

namespace verl::trainer::detail {

// A stage of a submitted batch that ran on the rollout thread beside the previous step ("generate_async",
// "reward_async"): reported, but not part of timing_s/step.
bool is_overlapped_stage(const std::string& stage);

}  // namespace verl::trainer::detail
