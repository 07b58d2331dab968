// Reading optional / nullable keys of verl::Config for the worker configs (private).
#pragma once

#include <optional>
#include <string>

#include "verl/core/config.h"

namespace verl::workers::config_util {

// The value, or nullopt when the key is absent or null. Wrong types throw ConfigTypeError naming the key.
template <typename T>
std::optional<T> get_optional(const Config& config, const std::string& key) {
  if (!config.has(key)) return std::nullopt;
  if (config.get(key).is_null()) return std::nullopt;
  return config.get_as<T>(key);
}

// The value, or `fallback` when the key is absent or null.
template <typename T>
T get_or(const Config& config, const std::string& key, T fallback) {
  return get_optional<T>(config, key).value_or(std::move(fallback));
}

}  // namespace verl::workers::config_util
