// The run configuration: verl's ppo_trainer tree (python/verl/trainer/config/ppo_trainer.yaml,
// embedded in libverl) with YAML files and `key=value` overrides merged on top, validated before
// anything runs. Used by the trainer, the CLI (verl.trainer.main_ppo) and C++ applications.
//
// Override grammar (Hydra's, as verl users type it):
//   a.b.c=value     set an existing key          +a.b=value   add a key that does not exist
//   ++a.b=value     set or add                   ~a.b         delete a key
// Values are YAML scalars or flow collections: 1, 0.5, 1e-6, true, null, abc, '[a,b]', "{k: v}".
// Strings may hold OmegaConf interpolations, resolved on access: ${a.b}, ${.sibling},
// ${..parent_sibling}, ${oc.select:a.b,default}, and text around them ("ckpt/${trainer.project_name}").
// `???` marks a mandatory value that is still missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verl/core/error.h"
#include "verl/core/export.h"
#include "verl/core/json.h"

namespace verl {

class VERL_API Config {
 public:
  // verl's defaults.
  Config();

  // Defaults + optional YAML file + overrides, then validate(). Throws ConfigError.
  static Config load(const std::string& yaml_path = "", const std::vector<std::string>& overrides = {});
  // The SFT trainer's tree instead (python/verl/trainer/config/sft_trainer.yaml, embedded): same
  // grammar, interpolation and validation, its own keys and defaults.
  static Config load_sft(const std::string& yaml_path = "", const std::vector<std::string>& overrides = {});

  // Merges a YAML file onto the tree. Unknown keys are errors (with the closest known key); keys
  // under free-form maps (defaults `{}`) and `_target_` entries are accepted. Hydra's `defaults:`
  // list is ignored (this tree is always the base). Malformed YAML: ConfigError naming file:line.
  void merge_yaml_file(const std::string& path);
  void merge_yaml_string(const std::string& text, const std::string& origin = "<string>");
  // Applies one override in the grammar above; ConfigError names the override on failure.
  void apply_override(const std::string& override_expr);
  void apply_overrides(const std::vector<std::string>& overrides);

  // Sets an existing key (or any key when allow_new) to a value; the type is checked.
  void set(const std::string& key, const Json& value, bool allow_new = false);
  void erase(const std::string& key);

  bool has(const std::string& key) const;
  // The value with interpolations resolved (maps and lists resolved recursively).
  // Throws ConfigError for unknown keys, missing mandatory values, bad interpolations.
  Json get(const std::string& key) const;
  template <typename T>
  T get_as(const std::string& key) const;
  // Same as get() but the raw stored value (interpolations left as written).
  Json raw(const std::string& key) const;

  // Checks every value's type against the defaults and the ranges/choices of known keys.
  void validate() const;

  // The whole tree, resolved (or raw) as JSON / YAML.
  Json to_json(bool resolve = true) const;
  std::string to_yaml(bool resolve = true) const;

  // Dotted paths of every key (maps and leaves), in tree order.
  std::vector<std::string> keys() const;
  // The embedded default YAML text (ppo_trainer.yaml / sft_trainer.yaml).
  static const std::string& default_yaml();
  static const std::string& sft_default_yaml();
  // Whether this is the SFT trainer's tree (made by load_sft).
  bool is_sft() const { return sft_tree_; }

 private:
  explicit Config(int bare);  // the raw defaults, before defaults_ exists (used once, to build it)
  Config(const Json& tree, const Json& resolved_defaults, bool sft_tree);
  void merge_node(const Json& node, const std::string& prefix, const std::string& origin);
  Json resolve(const Json& value, const std::string& path, std::vector<std::string>& stack) const;
  Json resolve_expression(const std::string& expr, const std::string& path, std::vector<std::string>& stack) const;
  const Json* find(const std::string& key) const;
  bool is_free_form(const std::string& key) const;
  std::string unknown_key_message(const std::string& key) const;

  Json tree_;
  Json defaults_;  // resolved defaults: the declared type of each key
  bool sft_tree_ = false;  // the SFT trainer's tree (load_sft): validated with its own range/choice rules
};

template <typename T>
T Config::get_as(const std::string& key) const {
  Json v = get(key);
  try {
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
      VERL_CHECK_AS(ConfigTypeError, v.is_number(), "config key '", key, "' is not a number: ", v.dump());
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      VERL_CHECK_AS(ConfigTypeError, v.is_number_integer(), "config key '", key, "' is not an integer: ", v.dump());
    } else if constexpr (std::is_same_v<T, bool>) {
      VERL_CHECK_AS(ConfigTypeError, v.is_boolean(), "config key '", key, "' is not a bool: ", v.dump());
    } else if constexpr (std::is_same_v<T, std::string>) {
      VERL_CHECK_AS(ConfigTypeError, v.is_string(), "config key '", key, "' is not a string: ", v.dump());
    }
    return v.get<T>();
  } catch (const Json::exception& e) {
    VERL_FAIL(ConfigTypeError, "config key '", key, "' = ", v.dump(), " cannot be read as the requested type: ",
              e.what());
  }
}

}  // namespace verl
