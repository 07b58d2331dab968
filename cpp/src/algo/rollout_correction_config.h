// algorithm.rollout_correction.* read from a verl::Config: the trainer's decoupled correction and, in bypass
// mode, the actor's "bypass_mode" loss read the same settings. Private to libverl.
#pragma once

#include "verl/algo/rollout_correction.h"
#include "verl/core/config.h"

namespace verl::algo::detail {

// verl's RolloutCorrectionConfig from algorithm.rollout_correction (absent keys keep verl's defaults; a null
// map is verl's "no correction"). ConfigTypeError / ConfigError naming the key for a value of the wrong type,
// an unknown rollout_is or loss_type, a loss_type other than ppo_clip outside bypass mode, rollout_rs without
// its threshold.
RolloutCorrectionConfig rollout_correction_from_config(const Config& config);

}  // namespace verl::algo::detail
