#include "algo/rollout_correction_config.h"

#include <optional>
#include <string>

#include "verl/core/error.h"

namespace verl::algo::detail {

namespace {

const std::string kPrefix = "algorithm.rollout_correction.";

Json value_of(const Config& config, const std::string& leaf) {
  const std::string key = kPrefix + leaf;
  return config.has(key) ? config.get(key) : Json();
}

// A string key that may be null (verl's Optional[str]); absent: `fallback`.
std::optional<std::string> optional_text(const Config& config, const std::string& leaf,
                                         std::optional<std::string> fallback) {
  if (!config.has(kPrefix + leaf)) return fallback;
  const Json v = value_of(config, leaf);
  if (v.is_null()) return std::nullopt;
  VERL_CHECK_AS(ConfigTypeError, v.is_string(), kPrefix, leaf, " must be null or a string, got ", v.dump());
  return v.get<std::string>();
}

// A threshold: null, a number, or verl's threshold text ("0.5_2.0", "1.5,0.1"); absent: `fallback`.
std::optional<std::string> threshold_text(const Config& config, const std::string& leaf,
                                          std::optional<std::string> fallback) {
  if (!config.has(kPrefix + leaf)) return fallback;
  const Json v = value_of(config, leaf);
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  VERL_CHECK_AS(ConfigTypeError, v.is_number(), kPrefix, leaf, " must be null, a number or a threshold string, got ",
                v.dump());
  return rollout_threshold_text(v.get<double>());
}

bool flag(const Config& config, const std::string& leaf, bool fallback) {
  if (!config.has(kPrefix + leaf)) return fallback;
  const Json v = value_of(config, leaf);
  VERL_CHECK_AS(ConfigTypeError, v.is_boolean(), kPrefix, leaf, " must be true or false, got ", v.dump());
  return v.get<bool>();
}

}  // namespace

RolloutCorrectionConfig rollout_correction_from_config(const Config& config) {
  RolloutCorrectionConfig c;
  c.rollout_is = optional_text(config, "rollout_is", c.rollout_is);
  c.rollout_is_threshold = threshold_text(config, "rollout_is_threshold", c.rollout_is_threshold);
  c.rollout_is_batch_normalize = flag(config, "rollout_is_batch_normalize", c.rollout_is_batch_normalize);
  c.rollout_rs = optional_text(config, "rollout_rs", c.rollout_rs);
  c.rollout_rs_threshold = threshold_text(config, "rollout_rs_threshold", c.rollout_rs_threshold);
  c.bypass_mode = flag(config, "bypass_mode", c.bypass_mode);
  c.loss_type = optional_text(config, "loss_type", c.loss_type).value_or(c.loss_type);
  VERL_CHECK_AS(ConfigError, !c.rollout_is || *c.rollout_is == "token" || *c.rollout_is == "sequence", kPrefix,
                "rollout_is must be null, token or sequence, got '", c.rollout_is.value_or(""), "'");
  VERL_CHECK_AS(ConfigError, !c.rollout_rs || c.rollout_rs_threshold, kPrefix,
                "rollout_rs_threshold must be set when rollout_rs is");
  VERL_CHECK_AS(ConfigError, c.loss_type == "ppo_clip" || c.loss_type == "reinforce", kPrefix,
                "loss_type must be ppo_clip or reinforce (bypass mode's loss), got '", c.loss_type, "'");
  // verl reads loss_type in bypass mode only; another value there would be a setting silently ignored.
  VERL_CHECK_AS(ConfigError, c.bypass_mode || c.loss_type == "ppo_clip", kPrefix, "loss_type = '", c.loss_type,
                "' is read in bypass mode only: set ", kPrefix, "bypass_mode=true (or leave loss_type at ppo_clip)");
  return c;
}

}  // namespace verl::algo::detail
