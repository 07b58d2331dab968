// The JSON value type libverl uses for config trees, non-tensor columns and meta_info.
// Insertion-ordered so configs print in the order they were written.
#pragma once

#include <nlohmann/json.hpp>

namespace verl {
using Json = nlohmann::ordered_json;
}  // namespace verl
