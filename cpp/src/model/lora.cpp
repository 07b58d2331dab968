// Which modules a LoRA config adapts (see verl/model/lora.h), as peft.tuners.tuners_utils.check_target_module_exists
// decides it.
#include "verl/model/lora.h"

#include <cmath>
#include <regex>
#include <sstream>

#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::model {
namespace {

// The model's other modules, as transformers names them: a target that selects one of them is refused rather than
// skipped (PEFT would adapt the head or the embedding, or refuse a norm or a container).
std::vector<std::string> other_module_names(const ModelConfig& c) {
  std::vector<std::string> out = {"model", "model.embed_tokens", "model.layers", "model.norm", "lm_head", "score"};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i);
    for (const char* child : {"", ".self_attn", ".mlp", ".input_layernorm", ".post_attention_layernorm"})
      out.push_back(layer + child);
    if (c.qk_norm) {
      out.push_back(layer + ".self_attn.q_norm");
      out.push_back(layer + ".self_attn.k_norm");
    }
  }
  return out;
}

}  // namespace

bool ModuleSelector::matches(const std::string& module_name) const {
  if (regex) {
    try {
      return std::regex_match(module_name, std::regex(*regex, std::regex::ECMAScript));
    } catch (const std::regex_error& e) {
      VERL_FAIL(ConfigError, "'", untrusted::escape(*regex), "' is not a regular expression: ", e.what());
    }
  }
  for (const std::string& n : names) {
    if (module_name == n) return true;
    // ".<n>" ends the name: whole trailing components only ("proj" does not select q_proj)
    const size_t cut = module_name.size() - n.size();
    if (module_name.size() > n.size() && module_name.compare(cut, n.size(), n) == 0 && module_name[cut - 1] == '.')
      return true;
  }
  return false;
}

std::string ModuleSelector::describe() const { return untrusted::quote(module_selector_json(*this), 200); }

ModuleSelector parse_module_selector(const Json& value, bool targets) {
  ModuleSelector out;
  if (value.is_null()) return out;
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (targets && text == "all-linear") {
      out.all_linear = true;
    } else {
      out.regex = text;
    }
    return out;
  }
  VERL_CHECK_AS(InvalidArgument, value.is_array(), "must be null, a string (a regular expression", 
                targets ? ", or all-linear" : "", ") or a list of module names, got ", untrusted::type_name(value));
  for (const Json& item : value) {
    VERL_CHECK_AS(InvalidArgument, item.is_string(), "must list module names (strings), got ",
                  untrusted::type_name(item), " ", untrusted::quote(item));
    out.names.push_back(item.get<std::string>());
  }
  return out;
}

Json module_selector_json(const ModuleSelector& s) {
  if (s.all_linear) return "all-linear";
  if (s.regex) return *s.regex;
  if (s.names.empty()) return nullptr;
  return Json(s.names);
}

double LoraConfig::scaling() const {
  return use_rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / static_cast<double>(rank);
}

std::vector<LinearModule> decoder_linear_modules(const ModelConfig& c) {
  std::vector<LinearModule> out;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    // Phi-3's fused projections are one module each, as in PEFT (target_modules qkv_proj / gate_up_proj), after o_proj
    // as Phi3Attention registers them.
    if (c.fused_projections) {
      out.push_back({layer + "self_attn.o_proj", c.q_size(), c.hidden_size});
      out.push_back({layer + "self_attn.qkv_proj", c.hidden_size, c.q_size() + 2 * c.kv_size()});
    } else {
      out.push_back({layer + "self_attn.q_proj", c.hidden_size, c.q_size()});
      out.push_back({layer + "self_attn.k_proj", c.hidden_size, c.kv_size()});
      out.push_back({layer + "self_attn.v_proj", c.hidden_size, c.kv_size()});
      out.push_back({layer + "self_attn.o_proj", c.q_size(), c.hidden_size});
    }
    if (c.fused_projections) {
      out.push_back({layer + "mlp.gate_up_proj", c.hidden_size, 2 * c.intermediate_size});
    } else {
      out.push_back({layer + "mlp.gate_proj", c.hidden_size, c.intermediate_size});
      out.push_back({layer + "mlp.up_proj", c.hidden_size, c.intermediate_size});
    }
    out.push_back({layer + "mlp.down_proj", c.intermediate_size, c.hidden_size});
  }
  return out;
}

std::vector<std::string> lora_target_modules(const ModelConfig& config, const LoraConfig& lora) {
  VERL_CHECK_AS(ConfigError, lora.rank > 0, lora.key, ".lora_rank must be positive for LoRA adapters, got ", lora.rank);
  VERL_CHECK_AS(ConfigError, std::isfinite(lora.alpha) && lora.alpha > 0, lora.key,
                ".lora_alpha must be a positive number, got ", lora.alpha);
  VERL_CHECK_AS(ConfigError, !lora.target_modules.empty(), lora.key,
                ".target_modules is empty: name the modules to adapt (all-linear, [q_proj, v_proj], a regex)");
  auto selected = [&](const std::string& name) {
    try {
      if (lora.exclude_modules.matches(name)) return false;  // PEFT checks exclude_modules first
      return lora.target_modules.all_linear || lora.target_modules.matches(name);
    } catch (const ConfigError& e) {
      VERL_FAIL(ConfigError, lora.key, ".target_modules / exclude_modules: ", e.what());
    }
  };
  if (!lora.target_modules.all_linear) {
    for (const std::string& other : other_module_names(config)) {
      VERL_CHECK_AS(ConfigError, !selected(other), lora.key, ".target_modules = ", lora.target_modules.describe(),
                    " selects '", other, "': verl-cpp puts adapters on the decoder layers' linear modules only (",
                    config.fused_projections ? "qkv_proj, o_proj, gate_up_proj, down_proj"
                                             : "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj",
                    ")");
    }
  }
  std::vector<std::string> out;
  for (const LinearModule& m : decoder_linear_modules(config)) {
    if (selected(m.name)) out.push_back(m.name);
  }
  VERL_CHECK_AS(ConfigError, !out.empty(), lora.key, ".target_modules = ", lora.target_modules.describe(),
                " (exclude_modules = ", lora.exclude_modules.describe(), ") selects no module of the model; the "
                "decoder's linear modules are named ",
                config.fused_projections
                    ? "model.layers.N.self_attn.{qkv,o}_proj and model.layers.N.mlp.{gate_up,down}_proj (Phi-3)"
                    : "model.layers.N.self_attn.{q,k,v,o}_proj and model.layers.N.mlp.{gate,up,down}_proj");
  return out;
}

}  // namespace verl::model
