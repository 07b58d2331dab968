// Constraints on config values beyond "same type as the default": ranges and allowed choices.
// Private to libverl; config.cpp checks them in Config::validate().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "verl/core/json.h"

namespace verl::config_schema {

struct Rule {
  enum class Kind { kInt, kNumber, kString, kStringOrList };
  std::string key;
  Kind kind;
  std::optional<double> min = std::nullopt;  // inclusive unless min_exclusive
  std::optional<double> max = std::nullopt;  // inclusive
  bool min_exclusive = false;
  std::vector<std::string> choices = {};
  bool nullable = false;
};

// Which config tree the rules are for: the same dotted path can mean different things in each
// (data.truncation allows "middle" for RL prompts, not for SFT rows).
enum class Tree { kPPO, kSFT };

// Every rule of a tree, keyed by dotted path.
const std::vector<Rule>& rules(Tree tree);
const Rule* find_rule(const std::string& key, Tree tree);

// Empty when `value` has the rule's type, else the reason ("must be an integer", ...).
std::string type_violation(const Rule& rule, const Json& value);
// For a value of the right type: empty when it is in range / among the choices, else the reason.
std::string value_violation(const Rule& rule, const Json& value);

}  // namespace verl::config_schema
