// Recognises a transformers *ForSequenceClassification config (a reward model: last-token pooling, score head
// without bias). Used by model_config.cpp (score bias) and checkpoint.cpp (architecture written on save).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace verl::model {

inline bool is_sequence_classifier(const nlohmann::json& config_json) {
  if (!config_json.is_object() || !config_json.contains("architectures") || !config_json["architectures"].is_array())
    return false;
  for (const nlohmann::json& a : config_json["architectures"]) {
    if (a.is_string() && a.get<std::string>().ends_with("ForSequenceClassification")) return true;
  }
  return false;
}

}  // namespace verl::model
