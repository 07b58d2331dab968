// The defaults of verl's config keys as C++ values, read from the embedded ppo_trainer.yaml: a C++ config struct
// whose field has a YAML key initialises it from here, so the YAML stays the one place a default is written.
// Used by the worker config structs (verl/workers/actor.h, critic.h).
#pragma once

#include <string>

#include "verl/core/export.h"
#include "verl/core/json.h"

namespace verl {

// The default value of `key` in ppo_trainer.yaml, interpolations resolved (what Config().get(key) returns), without
// building a Config per call. ConfigError (with the closest key) for a key the YAML does not have.
VERL_API Json config_default(const std::string& key);

}  // namespace verl
