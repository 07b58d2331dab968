// PEFT's adapter directories: adapter_config.json + adapter_model.safetensors, as peft's save_pretrained writes them
// and PeftModel.from_pretrained(base, dir) loads them. Tensors are named base_model.model.<module>.lora_A.weight
// (PeftModelForCausalLM's prefix, the adapter name dropped); verl-cpp's own names lack the prefix
// (verl/model/lora.h). Used for the trainers' global_step_N/<role>/lora_adapter directories and lora_adapter_path.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/model/lora.h"
#include "verl/model/transformer.h"

namespace verl::model {

inline constexpr const char* kAdapterConfigName = "adapter_config.json";
inline constexpr const char* kAdapterWeightsName = "adapter_model.safetensors";
inline constexpr const char* kPeftPrefix = "base_model.model.";

// An adapter read from a directory: its settings and its tensors by verl-cpp's names.
struct PeftAdapter {
  LoraConfig config;
  std::map<std::string, torch::Tensor> state;
};

// Writes `model`'s adapters (in their dtype) to `dir` atomically: an existing `dir` is replaced whole, and a failed
// save leaves it as it was. target_modules lists the adapted modules (by their last name, as PEFT writes all-linear,
// when that selects exactly them; else by whole name). InvalidArgument when the model has no adapters.
VERL_API std::vector<std::filesystem::path> save_peft_adapter(const CausalLM& model, const std::filesystem::path& dir,
                                                             const std::string& base_model_name_or_path = "");

// Reads `dir`. CheckpointError naming the file when a file is missing or malformed, or a tensor is not a LoRA
// factor of a linear (an embedding adapter, DoRA magnitudes, a modules_to_save copy); ConfigError naming the
// adapter_config.json field for a PEFT setting verl-cpp does not implement (another peft_type, DoRA, rank_pattern /
// alpha_pattern, bias other than none, fan_in_fan_out, layers_to_transform).
VERL_API PeftAdapter load_peft_adapter(const std::filesystem::path& dir);

// Puts the adapter in `dir` into `model`: adds adapters with its settings when the model has none (those it has must
// sit on the same modules with the same rank), then copies the tensors in, strictly (every adapter of the model
// given, no other). Returns the adapter's settings.
VERL_API LoraConfig load_peft_adapter_into(CausalLM& model, const std::filesystem::path& dir);

}  // namespace verl::model
