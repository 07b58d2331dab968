// PEFT adapter directories (see verl/model/peft_adapter.h).
#include "verl/model/peft_adapter.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/untrusted.h"
#include "json_file.h"
#include "staged_directory.h"
#include "verl/core/error.h"
#include "verl/core/json.h"
#include "verl/model/safetensors.h"

namespace verl::model {
namespace fs = std::filesystem;

namespace {

bool is_lora_factor(const std::string& name) {
  return name.ends_with(".lora_A.weight") || name.ends_with(".lora_B.weight");
}

// A value model's head, trained in full beside the adapters: PEFT's modules_to_save of a TOKEN_CLS model, saved under
// its own name.
bool is_value_head(const std::string& name) { return name == "score.weight" || name == "score.bias"; }

// The modules PEFT's TOKEN_CLS task saves whole by default; a value model's head is the one it has.
const std::set<std::string> kHeadModules = {"classifier", "score", "pre_classifier"};

std::string last_component(const std::string& name) { return name.substr(name.rfind('.') + 1); }

// The adapted modules as adapter_config.json's target_modules: their last names when those select exactly them (the
// way PEFT writes all-linear), else their whole names.
Json target_modules_json(const ModelConfig& config, const std::vector<std::string>& adapted) {
  std::set<std::string> short_names;
  for (const std::string& name : adapted) short_names.insert(last_component(name));
  LoraConfig by_short;
  by_short.rank = 1;
  by_short.target_modules = {std::nullopt, {short_names.begin(), short_names.end()}, false};
  if (lora_target_modules(config, by_short) == adapted) return Json(std::vector<std::string>(short_names.begin(),
                                                                                             short_names.end()));
  return Json(adapted);
}

// A target_modules / exclude_modules field, CheckpointError naming the file when malformed.
ModuleSelector parse_selector(const Json& config, const char* field, bool targets, const std::string& shown) {
  try {
    return parse_module_selector(config.contains(field) ? config.at(field) : Json(nullptr), targets);
  } catch (const InvalidArgument& e) {
    VERL_FAIL(CheckpointError, shown, ": ", field, " ", e.what());
  }
}

// A field that must hold its "off" value for verl-cpp to compute what PEFT computes.
void require_off(const Json& config, const std::string& field, const std::string& shown, const std::string& what) {
  if (!config.contains(field)) return;
  const Json& v = config.at(field);
  const bool off = v.is_null() || (v.is_boolean() && !v.get<bool>()) || ((v.is_object() || v.is_array()) && v.empty()) ||
                   (v.is_string() && v.get<std::string>() == "none");
  VERL_CHECK_AS(ConfigError, off, shown, ": ", field, " = ", untrusted::quote(v), ": ", what,
                " is not implemented in verl-cpp");
}

}  // namespace

std::vector<fs::path> save_peft_adapter(const CausalLM& model, const fs::path& dir_in,
                                        const std::string& base_model_name_or_path) {
  VERL_CHECK(model.lora().has_value(), "save_peft_adapter: the model has no LoRA adapters");
  const LoraConfig& lora = *model.lora();
  std::error_code ec;
  fs::path dir = fs::absolute(dir_in, ec).lexically_normal();
  VERL_CHECK_AS(CheckpointError, !ec, "cannot save to '", untrusted::display_path(dir_in), "': ", ec.message());
  if (dir.filename().empty()) dir = dir.parent_path();
  fs::create_directories(dir.parent_path(), ec);
  VERL_CHECK_AS(CheckpointError, !ec, "cannot create '", untrusted::display_path(dir.parent_path()), "': ",
                ec.message());

  const std::vector<std::string> adapted = lora_target_modules(model.config(), lora);
  const bool value = model.head_kind() == HeadKind::kValue;
  Json config = {
      {"peft_type", "LORA"},
      {"task_type", model.head_kind() == HeadKind::kValue ? "TOKEN_CLS" : "CAUSAL_LM"},
      {"base_model_name_or_path", base_model_name_or_path},
      {"r", lora.rank},
      {"target_modules", target_modules_json(model.config(), adapted)},
      {"exclude_modules", nullptr},
      {"lora_dropout", lora.dropout},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"use_rslora", lora.use_rslora},
      {"use_dora", false},
      {"init_lora_weights", true},
      {"inference_mode", true},
      {"modules_to_save", value ? Json(std::vector<std::string>{"classifier", "score", "pre_classifier"}) : Json()},
      {"layers_to_transform", nullptr},
      {"layers_pattern", nullptr},
      {"rank_pattern", Json::object()},
      {"alpha_pattern", Json::object()},
      {"revision", nullptr},
  };
  // lora_alpha as the config gave it: an integer stays one (PEFT and verl type it int).
  if (lora.alpha == std::floor(lora.alpha) && std::abs(lora.alpha) < 1e15) {
    config["lora_alpha"] = static_cast<int64_t>(lora.alpha);
  } else {
    config["lora_alpha"] = lora.alpha;
  }
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, tensor] : model.adapter_state()) tensors.emplace(kPeftPrefix + name, tensor.detach());
  if (value) {  // the value head, trained in full (PEFT's modules_to_save)
    tensors.emplace(std::string(kPeftPrefix) + "score.weight", model.score->weight.detach());
    if (model.score->bias.defined()) tensors.emplace(std::string(kPeftPrefix) + "score.bias", model.score->bias.detach());
  }

  detail::StagingGuard staging{detail::sibling(dir, "tmp")};
  fs::create_directory(staging.path, ec);
  VERL_CHECK_AS(CheckpointError, !ec, "cannot create '", untrusted::display_path(staging.path), "': ", ec.message());
  detail::write_synced(staging.path / kAdapterConfigName, config.dump(2) + "\n");
  save_file(staging.path / kAdapterWeightsName, tensors, {{"format", "pt"}});
  detail::fsync_dir(staging.path);
  detail::commit_directory(staging.path, dir);
  staging.committed = true;
  return {dir / kAdapterConfigName, dir / kAdapterWeightsName};
}

PeftAdapter load_peft_adapter(const fs::path& dir) {
  std::error_code ec;
  VERL_CHECK_AS(CheckpointError, fs::is_directory(dir, ec), "LoRA adapter directory '", untrusted::display_path(dir),
                "' does not exist");
  const fs::path config_path = dir / kAdapterConfigName;
  const std::string shown = "'" + untrusted::display_path(config_path) + "'";
  const Json config = read_json_file<CheckpointError>(config_path, "adapter config");
  VERL_CHECK_AS(CheckpointError, config.is_object(), shown, ": an adapter config must be a JSON object");

  const std::string peft_type = config.contains("peft_type") && config.at("peft_type").is_string()
                                    ? config.at("peft_type").get<std::string>()
                                    : "";
  VERL_CHECK_AS(ConfigError, peft_type == "LORA", shown, ": peft_type = ",
                config.contains("peft_type") ? untrusted::quote(config.at("peft_type")) : std::string("(missing)"),
                ": verl-cpp loads LoRA adapters (LORA) only");
  require_off(config, "use_dora", shown, "DoRA");
  require_off(config, "rank_pattern", shown, "a rank per module");
  require_off(config, "alpha_pattern", shown, "an alpha per module");
  require_off(config, "bias", shown, "training biases beside the adapters");
  require_off(config, "lora_bias", shown, "a bias on lora_B");
  require_off(config, "fan_in_fan_out", shown, "transposed (Conv1D) weights");
  require_off(config, "layers_to_transform", shown, "adapting some layers only");
  require_off(config, "layer_replication", shown, "layer replication");
  require_off(config, "target_parameters", shown, "adapters on parameters");
  require_off(config, "trainable_token_indices", shown, "trainable tokens");
  if (config.contains("modules_to_save") && config.at("modules_to_save").is_array()) {
    for (const Json& m : config.at("modules_to_save")) {
      VERL_CHECK_AS(ConfigError, m.is_string() && kHeadModules.count(m.get<std::string>()), shown,
                    ": modules_to_save = ", untrusted::quote(config.at("modules_to_save")), ": only a value model's "
                    "head (score) is trained in full beside the adapters in verl-cpp");
    }
  } else {
    require_off(config, "modules_to_save", shown, "fully trained copies of modules (modules_to_save)");
  }

  PeftAdapter out;
  LoraConfig& lora = out.config;
  lora.key = "adapter " + shown;
  auto number = [&](const char* field) {
    VERL_CHECK_AS(CheckpointError, config.contains(field) && config.at(field).is_number(), shown, ": ", field,
                  " must be a number");
    return config.at(field).get<double>();
  };
  const double r = number("r");
  VERL_CHECK_AS(CheckpointError, r >= 1 && r == std::floor(r) && r < 1e9, shown, ": r = ", r,
                " is not a positive integer");
  lora.rank = static_cast<int64_t>(r);
  lora.alpha = number("lora_alpha");
  if (config.contains("lora_dropout") && !config.at("lora_dropout").is_null()) lora.dropout = number("lora_dropout");
  if (config.contains("use_rslora") && config.at("use_rslora").is_boolean())
    lora.use_rslora = config.at("use_rslora").get<bool>();
  // target_modules null: PEFT's default for Llama / Qwen2 / Qwen3 (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
  lora.target_modules = parse_selector(config, "target_modules", true, shown);
  if (lora.target_modules.empty()) lora.target_modules.names = {"q_proj", "v_proj"};
  lora.exclude_modules = parse_selector(config, "exclude_modules", false, shown);

  const fs::path weights_path = dir / kAdapterWeightsName;
  VERL_CHECK_AS(CheckpointError, fs::exists(weights_path, ec), "LoRA adapter directory '",
                untrusted::display_path(dir), "' has no ", kAdapterWeightsName,
                " (adapter_model.bin, the pickle format, is not read: save with safe_serialization)");
  const std::string prefix = kPeftPrefix;
  for (auto& [key, tensor] : load_file(weights_path)) {
    const bool ours = key.starts_with(prefix) && (is_lora_factor(key) || is_value_head(key.substr(prefix.size())));
    VERL_CHECK_AS(CheckpointError, ours, "'", untrusted::display_path(weights_path), "': tensor '",
                  untrusted::escape(key), "' is not a LoRA factor of a linear module (", prefix,
                  "<module>.lora_A.weight / .lora_B.weight) or a value head (", prefix, "score.weight)");
    out.state.emplace(key.substr(prefix.size()), std::move(tensor));
  }
  return out;
}

LoraConfig load_peft_adapter_into(CausalLM& model, const fs::path& dir) {
  PeftAdapter adapter = load_peft_adapter(dir);
  if (!model.lora()) model.add_adapters(adapter.config, /*seed=*/0);  // A is overwritten below
  const LoraConfig& lora = *model.lora();
  const std::string shown = "LoRA adapter '" + untrusted::display_path(dir) + "'";
  VERL_CHECK_AS(ConfigError, lora_target_modules(model.config(), lora) ==
                                 lora_target_modules(model.config(), adapter.config) &&
                                 lora.rank == adapter.config.rank,
                shown, " (r = ", adapter.config.rank, ", target_modules = ", adapter.config.target_modules.describe(),
                ") does not fit the model's adapters (r = ", lora.rank, ", target_modules = ",
                lora.target_modules.describe(), ")");
  std::map<std::string, torch::Tensor> own = model.adapter_state();
  if (model.head_kind() == HeadKind::kValue) {
    // The head travels with the adapters when it was trained with them (our files and PEFT's TOKEN_CLS ones); an
    // adapter trained on a language model brings none, and the head keeps its values.
    for (const char* name : {"score.weight", "score.bias"}) {
      const torch::Tensor& t = std::string(name) == "score.weight" ? model.score->weight : model.score->bias;
      if (t.defined() && adapter.state.count(name)) own.emplace(name, t);
    }
  }
  std::vector<std::string> bad;
  for (const auto& [name, tensor] : own) {
    auto it = adapter.state.find(name);
    if (it == adapter.state.end()) {
      bad.push_back("missing " + name);
    } else if (it->second.sizes() != tensor.sizes()) {
      bad.push_back(name + " has the wrong shape");
    }
  }
  for (const auto& [name, tensor] : adapter.state) {
    if (!own.count(name)) bad.push_back("unexpected " + untrusted::escape(name));
  }
  if (!bad.empty()) {
    std::string list;
    for (size_t i = 0; i < bad.size() && i < 20; ++i) list += (i ? "; " : "") + bad[i];
    if (bad.size() > 20) list += "; ... (" + std::to_string(bad.size() - 20) + " more)";
    VERL_FAIL(CheckpointError, shown, ": ", list);
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : own) tensor.copy_(adapter.state.at(name));
  return adapter.config;
}

}  // namespace verl::model
