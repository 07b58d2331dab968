// The JSON value type libverl uses for config trees, non-tensor columns and meta_info.
// Insertion-ordered so configs print in the order they were written.
#pragma once

#include <nlohmann/json.hpp>

#include "verl/core/version.h"

// Json crosses libverl's ABI (configs, non-tensor columns, meta_info), so every translation unit --
// libverl's, verl._C's, an application's -- must see the json.hpp libverl was built with. Two
// copies on the include paths once gave an undefined symbol (g++-12) and a segfault (g++-13) at
// import; this turns that into a compile error naming both versions.
static_assert(NLOHMANN_JSON_VERSION_MAJOR == VERL_NLOHMANN_JSON_VERSION_MAJOR &&
                  NLOHMANN_JSON_VERSION_MINOR == VERL_NLOHMANN_JSON_VERSION_MINOR &&
                  NLOHMANN_JSON_VERSION_PATCH == VERL_NLOHMANN_JSON_VERSION_PATCH,
              "this translation unit includes another nlohmann/json release than libverl was built with "
              "(see VERL_NLOHMANN_JSON_VERSION_* in verl/core/version.h): put that json.hpp first on the "
              "include path, or rebuild libverl against yours");

namespace verl {
using Json = nlohmann::ordered_json;
}  // namespace verl
