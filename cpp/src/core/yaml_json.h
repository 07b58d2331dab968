// YAML <-> JSON for the config: scalar typing as OmegaConf does it (1e-6 is a float, True is a
// bool, quoted scalars stay strings) and an emitter whose output reads back to the same values.
// Private to libverl; used by config.cpp.
#pragma once

#include <string>

#include "verl/core/json.h"

namespace verl::yaml {

// Parses a YAML document into JSON. `origin` names the file (or "<string>") in error messages;
// malformed YAML throws ConfigError "origin:line:column: problem".
Json parse(const std::string& text, const std::string& origin);

// Types an unquoted scalar: null, bool, int, float, or the string itself.
Json type_plain_scalar(const std::string& text);

// Block-style YAML of a JSON value (maps and lists nested, scalars quoted where needed).
std::string emit(const Json& value);

}  // namespace verl::yaml
