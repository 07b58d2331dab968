// Recognises a transformers *ForSequenceClassification config (a reward model: last-token pooling, score head
// without bias). Used by model_config.cpp (score bias) and checkpoint.cpp (architecture written on save).
#pragma once

#include <string>

#include "verl/core/json.h"

namespace verl::model {

// Takes verl::Json (ordered_json) as the config is stored: a nlohmann::json parameter would
// silently copy the whole config through an implicit conversion.
inline bool is_sequence_classifier(const Json& config_json) {
  if (!config_json.is_object()) return false;
  const auto it = config_json.find("architectures");
  if (it == config_json.end() || !it->is_array()) return false;
  for (const Json& a : *it) {
    if (a.is_string() && a.get<std::string>().ends_with("ForSequenceClassification")) return true;
  }
  return false;
}

}  // namespace verl::model
