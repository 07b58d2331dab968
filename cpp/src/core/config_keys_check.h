// The refused-key check of Config::validate() (private to libverl; the table is verl/core/config_keys.h).
#pragma once

#include "verl/core/config.h"
#include "verl/core/json.h"

namespace verl::config_keys {

// Throws one ConfigError for the refused keys whose value `config` changed from the default tree (raw and
// resolved, see config_keys.h); the message names each key and its value and says it is not supported yet.
void check_refused(const Config& config, const Json& default_raw, const Json& default_resolved, const Json& resolved);

}  // namespace verl::config_keys
