// A role's LoRA settings from verl's keys (<model block>.lora_rank / lora_alpha / target_modules / exclude_modules /
// lora_adapter_path: actor_rollout_ref.model, critic.model, the SFT trainer's model) and their application to the
// role's model before its training engine is built (docs/architecture.md, "LoRA").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/model/lora.h"
#include "verl/model/transformer.h"

namespace verl::workers {

struct LoraSettings {
  model::LoraConfig config;                // from the keys (lora_adapter_path's adapter_config.json wins, as PEFT's)
  std::optional<std::string> adapter_path;  // lora_adapter_path: a PEFT adapter directory to start from
};

// The settings of `model_block` (e.g. "actor_rollout_ref.model"), or nullopt when LoRA is off (lora_rank 0 and no
// lora_adapter_path, verl's rule). ConfigError naming the key for a malformed value.
VERL_API std::optional<LoraSettings> lora_settings(const Config& config, const std::string& model_block);

// Puts the adapters on `model`: those of adapter_path (PEFT's files, their settings), else new ones drawn from
// `seed`. A model that has adapters already (a caller's own) keeps them. Freezes the base (CausalLM::add_adapters).
VERL_API void apply_lora(model::CausalLM& model, const LoraSettings& settings, uint64_t seed);

}  // namespace verl::workers
