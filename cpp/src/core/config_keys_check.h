// The refused-key check of Config::validate() (private to libverl; the table is verl/core/config_keys.h).
#pragma once

#include "verl/core/config.h"
#include "verl/core/json.h"

namespace verl::config_keys {

// Throws one ConfigError for the refused keys whose value `config` changed from the default tree (raw and
// resolved, see config_keys.h); the message names each key and its value and says it is not supported yet.
void check_refused(const Config& config, const Json& default_raw, const Json& default_resolved, const Json& resolved);

// Throws one ConfigError for keys added to the PPO tree with +key=... that no entry of the table covers and that
// verl-cpp does not read: verl (Hydra) accepts such keys and its code or a backend may read them, but here nothing
// would -- a silently ignored setting. Keys verl reads although its YAML lacks them (algorithm.gdpo_reward_keys,
// ...) pass. The PPO trainer calls it; a Config alone may hold any keys.
void check_added_keys(const Config& config);

}  // namespace verl::config_keys
