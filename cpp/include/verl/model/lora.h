// LoRA adapters with PEFT's semantics (peft.LoraConfig, peft.tuners.lora): a selected linear computes
//   y = W x + b + (B (A x)) * scaling,   A (r, in), B (out, r), scaling = alpha / r (rsLoRA: alpha / sqrt(r)),
// A drawn as PEFT draws it (Kaiming-uniform, a = sqrt(5): U(-1/sqrt(in), 1/sqrt(in))) and B zero, so a fresh adapter
// leaves the model's output unchanged bit for bit. The adapters' parameters are named as PEFT names them without its
// wrapper prefix and adapter name: model.layers.3.self_attn.q_proj.lora_A.weight (docs/architecture.md, "LoRA").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verl/core/export.h"
#include "verl/core/json.h"
#include "verl/model/model_config.h"

namespace verl::model {

// Which modules a LoRA config names, as PEFT reads target_modules / exclude_modules: a single string is a regular
// expression matched against a module's whole name (re.fullmatch); a list names modules by their whole name or by
// trailing dotted components ("q_proj", "self_attn.q_proj"). target_modules = "all-linear" is every linear of the
// decoder layers (PEFT's: every linear but the output layer).
struct VERL_API ModuleSelector {
  std::optional<std::string> regex;
  std::vector<std::string> names;
  bool all_linear = false;

  bool empty() const { return !regex && names.empty() && !all_linear; }
  bool matches(const std::string& module_name) const;
  // As written in a config / adapter_config.json: the regex, the list, or "all-linear"; null when empty.
  std::string describe() const;
};

// A target_modules (`targets`) or exclude_modules value from JSON: null (nothing), a string (a regex; "all-linear" for
// targets), or a list of strings. InvalidArgument saying what the value should be otherwise.
VERL_API ModuleSelector parse_module_selector(const Json& value, bool targets);
// The inverse: null, the string or the list.
VERL_API Json module_selector_json(const ModuleSelector& selector);

struct VERL_API LoraConfig {
  int64_t rank = 0;      // r (lora_rank)
  double alpha = 16;     // lora_alpha
  bool use_rslora = false;
  // PEFT's lora_dropout: read from adapter_config.json files, refused unless 0 when adapters are added (verl's adapters
  // have none, and dropout would break the rollout's and the trainer's agreement on log-probs).
  double dropout = 0;
  ModuleSelector target_modules{std::nullopt, {}, true};
  ModuleSelector exclude_modules;
  // The config key prefix the settings came from (actor_rollout_ref.model, critic.model, model), for errors.
  std::string key = "lora";

  double scaling() const;
};

// The decoder modules (HF names, model.layers.N.self_attn.q_proj, ...) `lora` puts adapters on, in the model's
// order. ConfigError naming the key when a target names no linear of the decoder layers (the embedding, a norm, the
// head: verl-cpp adapts the decoder layers' linears only) or nothing is selected at all (PEFT's "Target modules ...
// not found in the base model"), or when the rank or alpha is not positive.
VERL_API std::vector<std::string> lora_target_modules(const ModelConfig& config, const LoraConfig& lora);

// The decoder's linear modules (HF names) with their (in, out) features, in the model's order.
struct LinearModule {
  std::string name;
  int64_t in_features = 0, out_features = 0;
};
VERL_API std::vector<LinearModule> decoder_linear_modules(const ModelConfig& config);

}  // namespace verl::model
