// A role's LoRA settings and their application to its model (see verl/workers/lora.h).
#include "verl/workers/lora.h"

#include <iostream>

#include "verl/core/error.h"
#include "verl/model/peft_adapter.h"
#include "workers/worker_config_util.h"

namespace verl::workers {

std::optional<LoraSettings> lora_settings(const Config& config, const std::string& model_block) {
  using config_util::get_optional;
  const std::string p = model_block + ".";
  LoraSettings s;
  s.config.key = model_block;
  s.config.rank = get_optional<int64_t>(config, p + "lora_rank").value_or(0);
  s.adapter_path = get_optional<std::string>(config, p + "lora_adapter_path");
  if (s.adapter_path && s.adapter_path->empty()) s.adapter_path.reset();
  if (s.config.rank == 0 && !s.adapter_path) return std::nullopt;
  VERL_CHECK_AS(ConfigError, s.config.rank >= 0, p, "lora_rank must be >= 0 (0: no LoRA), got ", s.config.rank);
  s.config.alpha = get_optional<double>(config, p + "lora_alpha").value_or(16.0);
  for (auto [field, targets] : {std::pair<const char*, bool>{"target_modules", true}, {"exclude_modules", false}}) {
    const std::string key = p + field;
    const Json value = config.has(key) ? config.get(key) : Json(nullptr);
    try {
      (targets ? s.config.target_modules : s.config.exclude_modules) = model::parse_module_selector(value, targets);
    } catch (const InvalidArgument& e) {
      VERL_FAIL(ConfigError, "config key '", key, "' ", e.what());
    }
  }
  return s;
}

void apply_lora(model::CausalLM& model, const LoraSettings& settings, uint64_t seed) {
  if (model.lora()) return;
  if (settings.adapter_path) {
    const model::LoraConfig loaded = model::load_peft_adapter_into(model, *settings.adapter_path);
    if (settings.config.rank > 0 && settings.config.rank != loaded.rank) {
      std::cerr << "verl: " << settings.config.key << ".lora_adapter_path's adapter has r = " << loaded.rank
                << "; it replaces " << settings.config.key << ".lora_rank = " << settings.config.rank << std::endl;
    }
    return;
  }
  model.add_adapters(settings.config, seed);
}

}  // namespace verl::workers
