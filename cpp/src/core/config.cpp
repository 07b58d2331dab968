// Config: verl's ppo_trainer (or sft_trainer) tree, merging, overrides, interpolation and validation (see config.h).
#include "verl/core/config.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config_keys_check.h"
#include "config_schema.h"
#include "core/untrusted.h"
#include "yaml_json.h"

namespace verl {
namespace detail {
extern const char* const kDefaultConfigYaml;
extern const char* const kSftConfigYaml;
}

namespace {

constexpr const char* kMissing = "???";

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(key);
  while (std::getline(in, part, '.')) parts.push_back(part);
  if (key.empty() || key.back() == '.') parts.push_back("");
  return parts;
}

std::string join_key(const std::string& prefix, const std::string& leaf) {
  return prefix.empty() ? leaf : prefix + "." + leaf;
}

std::string parent_key(const std::string& key) {
  auto pos = key.rfind('.');
  return pos == std::string::npos ? "" : key.substr(0, pos);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Index of the "}" closing the "${" at `open`, honouring nesting; npos if unbalanced.
size_t closing_brace(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s.compare(i, 2, "${") == 0) {
      ++depth;
      ++i;
    } else if (s[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

// Splits resolver arguments on top-level commas (not inside ${...}, [...] or {...}).
std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

std::string stringify(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  return v.dump();
}

const char* type_label(const Json& v) {
  if (v.is_boolean()) return "bool";
  if (v.is_number_integer()) return "int";
  if (v.is_number()) return "float";
  if (v.is_string()) return "string";
  if (v.is_array()) return "list";
  if (v.is_object()) return "map";
  return "null";
}

// Whether `value` may replace a key whose default is `declared`. Scalars given for a string key are
// turned into strings (experiment_name=2024), as OmegaConf does for str fields.
bool compatible(const Json& declared, Json& value) {
  if (declared.is_null() || value.is_null()) return true;
  if (value.is_string() && value.get_ref<const std::string&>().find("${") != std::string::npos) return true;
  if (value.is_string() && value.get_ref<const std::string&>() == kMissing) return true;
  if (declared.is_boolean()) return value.is_boolean();
  if (declared.is_number_integer()) return value.is_number_integer();
  if (declared.is_number()) return value.is_number();
  if (declared.is_string()) {
    if (value.is_number() || value.is_boolean()) value = stringify(value);
    return value.is_string();
  }
  if (declared.is_array()) return value.is_array();
  if (declared.is_object()) return value.is_object();
  return true;
}

// verl's YAML writes some float fields as integers (actor.entropy_coeff: 0); where the schema
// declares a number, a float value is accepted over an integer default.
bool compatible_with_key(const std::string& key, const Json& declared, Json& value, config_schema::Tree tree) {
  if (compatible(declared, value)) return true;
  const config_schema::Rule* rule = config_schema::find_rule(key, tree);
  if (rule == nullptr) return false;
  // A string where the default is a list: verl's own command lines write `trainer.logger=console`.
  if (rule->kind == config_schema::Rule::Kind::kStringOrList) return value.is_string() || value.is_array();
  return rule->kind == config_schema::Rule::Kind::kNumber && declared.is_number() && value.is_number();
}

config_schema::Tree schema_tree(bool sft) { return sft ? config_schema::Tree::kSFT : config_schema::Tree::kPPO; }

const Json& parsed_defaults() {
  static const Json tree = yaml::parse(detail::kDefaultConfigYaml, "ppo_trainer.yaml (embedded defaults)");
  return tree;
}

const Json& parsed_sft_defaults() {
  static const Json tree = yaml::parse(detail::kSftConfigYaml, "sft_trainer.yaml (embedded defaults)");
  return tree;
}

// Walks `key` in `root`; nullptr when any part is missing.
const Json* lookup(const Json& root, const std::string& key) {
  const Json* node = &root;
  for (const auto& part : split_key(key)) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(part);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

void collect_keys(const Json& node, const std::string& prefix, std::vector<std::string>& out) {
  if (!node.is_object()) return;
  for (const auto& [k, v] : node.items()) {
    out.push_back(join_key(prefix, k));
    collect_keys(v, join_key(prefix, k), out);
  }
}

// Every key of the tree with its value, depth first (the value is found while walking, not by
// looking the dotted key up again).
void collect_values(const Json& node, const std::string& prefix, std::vector<std::pair<std::string, const Json*>>& out) {
  if (!node.is_object()) return;
  for (const auto& [k, v] : node.items()) {
    out.emplace_back(join_key(prefix, k), &v);
    collect_values(v, join_key(prefix, k), out);
  }
}

// Keys are dotted paths, so a map given as a value may not hold a key that is empty or contains
// "." (it could never be addressed again); nor nest deeper than any real config does.
void check_value_keys(const Json& value, const std::string& key, int depth = 0) {
  VERL_CHECK_AS(ConfigError, depth < untrusted::kMaxJsonDepth, "config key '", untrusted::escape(key),
                "': value nested deeper than ", untrusted::kMaxJsonDepth, " levels");
  if (value.is_array()) {
    for (const auto& item : value) check_value_keys(item, key, depth + 1);
    return;
  }
  if (!value.is_object()) return;
  for (const auto& [k, v] : value.items()) {
    VERL_CHECK_AS(ConfigError, !k.empty() && k.find('.') == std::string::npos, "config key '", untrusted::escape(key),
                  "': map key '", untrusted::escape(k), "' is ", k.empty() ? "empty" : "dotted",
                  " (config keys are dotted paths; write nested maps instead)");
    check_value_keys(v, key + "." + k, depth + 1);
  }
}

}  // namespace

const std::string& Config::default_yaml() {
  static const std::string text = detail::kDefaultConfigYaml;
  return text;
}

Config::Config() : tree_(parsed_defaults()) {
  static const Json resolved = [] {
    Config bare(0);
    return bare.to_json(true);
  }();
  defaults_ = resolved;
}

Config::Config(int) : tree_(parsed_defaults()) {}

Config::Config(const Json& tree, const Json& resolved_defaults, bool sft_tree)
    : tree_(tree), defaults_(resolved_defaults), sft_tree_(sft_tree) {}

const std::string& Config::sft_default_yaml() {
  static const std::string text = detail::kSftConfigYaml;
  return text;
}

Config Config::load_sft(const std::string& yaml_path, const std::vector<std::string>& overrides) {
  static const Json resolved = [] {
    Config bare(0);
    bare.tree_ = parsed_sft_defaults();
    return bare.to_json(true);
  }();
  Config config(parsed_sft_defaults(), resolved, true);
  if (!yaml_path.empty()) config.merge_yaml_file(yaml_path);
  config.apply_overrides(overrides);
  config.validate();
  return config;
}

Config Config::load(const std::string& yaml_path, const std::vector<std::string>& overrides) {
  Config config;
  if (!yaml_path.empty()) config.merge_yaml_file(yaml_path);
  config.apply_overrides(overrides);
  config.validate();
  return config;
}

void Config::merge_yaml_file(const std::string& path) {
  std::ifstream in(path);
  VERL_CHECK_AS(ConfigError, in.good(), "cannot open config file '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  merge_yaml_string(text.str(), path);
}

void Config::merge_yaml_string(const std::string& text, const std::string& origin) {
  Json node = yaml::parse(text, origin);
  if (node.is_null()) return;  // empty document
  VERL_CHECK_AS(ConfigError, node.is_object(), origin, ": a config file must hold a mapping at the top level, got a ",
                type_label(node));
  node.erase("defaults");  // Hydra's composition list: this tree is always the base.
  merge_node(node, "", origin);
}

void Config::merge_node(const Json& node, const std::string& prefix, const std::string& origin) {
  for (const auto& [k, v] : node.items()) {
    if (k == "_target_") continue;  // Hydra class paths mean nothing here
    const std::string key = join_key(prefix, k);
    const Json* existing = find(key);
    if (v.is_object() && existing != nullptr && existing->is_object() && !is_free_form(key)) {
      merge_node(v, key, origin);
      continue;
    }
    try {
      set(key, v, is_free_form(parent_key(key)));
    } catch (const ConfigTypeError& e) {
      throw ConfigTypeError(origin + ": " + e.what());
    } catch (const ConfigError& e) {
      throw ConfigError(origin + ": " + e.what());
    }
  }
}

void Config::apply_overrides(const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) apply_override(o);
}

void Config::apply_override(const std::string& override_expr) {
  // Checked first: every message below quotes the expression.
  VERL_CHECK_AS(ConfigError, untrusted::is_utf8(override_expr), "override '", untrusted::escape(override_expr),
                "' is not valid UTF-8");
  std::string expr = trim(override_expr);
  try {
    if (!expr.empty() && expr[0] == '~') {
      erase(trim(expr.substr(1).substr(0, expr.find('=') == std::string::npos ? std::string::npos
                                                                               : expr.find('=') - 1)));
      return;
    }
    int plus = 0;
    while (plus < 2 && plus < static_cast<int>(expr.size()) && expr[plus] == '+') ++plus;
    const auto eq = expr.find('=');
    VERL_CHECK_AS(ConfigError, eq != std::string::npos, "expected key=value");
    const std::string key = trim(expr.substr(plus, eq - plus));
    const std::string text = trim(expr.substr(eq + 1));
    VERL_CHECK_AS(ConfigError, !key.empty(), "empty key");
    Json value = text.empty() ? Json("") : yaml::parse(text, "value");
    if (plus == 1) {
      VERL_CHECK_AS(ConfigError, !has(key), "key '", key, "' already exists; use ", key, "=... to change it or ++",
                    key, "=... to set it either way");
    }
    set(key, value, plus > 0 || is_free_form(parent_key(key)));
  } catch (const ConfigTypeError& e) {
    throw ConfigTypeError("override '" + override_expr + "': " + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError("override '" + override_expr + "': " + e.what());
  }
}

bool Config::is_free_form(const std::string& key) const {
  // Maps whose default is {} (engine_kwargs, override_config, ...) take any keys; so does
  // anything below a key whose default is null or that is not a default at all (added with +).
  for (std::string k = key; !k.empty(); k = parent_key(k)) {
    const Json* d = lookup(defaults_.is_null() ? parsed_defaults() : defaults_, k);
    if (d == nullptr) continue;
    return d->is_null() || (d->is_object() && d->empty());
  }
  return false;
}

void Config::set(const std::string& key, const Json& value, bool allow_new) {
  const std::vector<std::string> parts = split_key(key);
  for (const auto& p : parts) VERL_CHECK_AS(ConfigError, !p.empty(), "malformed key '", untrusted::escape(key), "'");
  VERL_CHECK_AS(ConfigError, untrusted::is_utf8(key), "config key '", untrusted::escape(key), "' is not valid UTF-8");
  if (!allow_new && find(key) == nullptr) throw ConfigError(unknown_key_message(key));
  check_value_keys(value, key);
  Json checked = value;
  if (const Json* declared = lookup(defaults_, key);
      declared != nullptr && !compatible_with_key(key, *declared, checked, schema_tree(sft_tree_))) {
    VERL_FAIL(ConfigTypeError, "config key '", key, "' expects a ", type_label(*declared), " (default ",
              declared->dump(), "), got ", type_label(value), " ", untrusted::quote(value));
  }
  Json* node = &tree_;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    Json& child = (*node)[parts[i]];
    if (!child.is_object()) {
      VERL_CHECK_AS(ConfigError, child.is_null(), "cannot set '", key, "': '", parts[i], "' holds a ",
                    type_label(child), ", not a map");
      child = Json::object();
    }
    node = &child;
  }
  (*node)[parts.back()] = std::move(checked);
}

void Config::erase(const std::string& key) {
  VERL_CHECK_AS(ConfigError, find(key) != nullptr, unknown_key_message(key));
  Json* parent = &tree_;
  const std::vector<std::string> parts = split_key(key);
  for (size_t i = 0; i + 1 < parts.size(); ++i) parent = &(*parent)[parts[i]];
  parent->erase(parts.back());
}

const Json* Config::find(const std::string& key) const { return lookup(tree_, key); }

bool Config::has(const std::string& key) const { return find(key) != nullptr; }

std::string Config::unknown_key_message(const std::string& key) const {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const auto& candidate : keys()) {
    const size_t d = edit_distance(key, candidate);
    if (d < best_distance) best = candidate, best_distance = d;
  }
  const std::string shown = untrusted::escape(key);
  std::string msg = "unknown config key '" + shown + "'";
  if (!best.empty()) msg += "; did you mean '" + best + "'?";
  return msg + " (to add a new key, write +" + shown + "=...)";
}

Json Config::raw(const std::string& key) const {
  const Json* node = find(key);
  if (node == nullptr) throw ConfigError(unknown_key_message(key));
  return *node;
}

Json Config::get(const std::string& key) const {
  std::vector<std::string> stack;
  Json v = resolve(raw(key), key, stack);
  VERL_CHECK_AS(ConfigError, !(v.is_string() && v.get_ref<const std::string&>() == kMissing),
                "config key '", key, "' is mandatory (???) and has no value; set it with ", key, "=...");
  return v;
}

Json Config::resolve(const Json& value, const std::string& path, std::vector<std::string>& stack) const {
  if (value.is_object()) {
    Json out = Json::object();
    for (const auto& [k, v] : value.items()) out[k] = resolve(v, join_key(path, k), stack);
    return out;
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (const auto& v : value) out.push_back(resolve(v, path, stack));
    return out;
  }
  if (!value.is_string()) return value;
  const std::string& s = value.get_ref<const std::string&>();
  size_t open = s.find("${");
  if (open == std::string::npos) return value;
  std::string text;
  size_t pos = 0;
  while (open != std::string::npos) {
    const size_t close = closing_brace(s, open);
    VERL_CHECK_AS(ConfigError, close != std::string::npos, "config key '", path, "': unbalanced interpolation in '",
                  s, "'");
    Json piece = resolve_expression(s.substr(open + 2, close - open - 2), path, stack);
    if (open == 0 && close == s.size() - 1) return piece;  // the whole value: keep its type
    text += s.substr(pos, open - pos) + stringify(piece);
    pos = close + 1;
    open = s.find("${", pos);
  }
  return text + s.substr(pos);
}

Json Config::resolve_expression(const std::string& expr_in, const std::string& path,
                                std::vector<std::string>& stack) const {
  const std::string expr = trim(expr_in);
  std::string target = expr;
  std::optional<Json> fallback;
  if (expr.rfind("oc.select:", 0) == 0 || expr.rfind("oc.env:", 0) == 0) {
    const bool env = expr[3] == 'e';
    const std::vector<std::string> args = split_args(expr.substr(env ? 7 : 10));
    VERL_CHECK_AS(ConfigError, args.size() <= 2 && !args[0].empty(), "config key '", path,
                  "': bad interpolation ${", expr, "}");
    target = args[0];
    Json dflt = nullptr;
    if (args.size() == 2) {
      dflt = args[1].find("${") != std::string::npos ? resolve(Json(args[1]), path, stack)
                                                     : yaml::type_plain_scalar(args[1]);
      if (args[1] == "[]") dflt = Json::array();
      if (args[1] == "{}") dflt = Json::object();
    }
    if (env) {
      const char* v = std::getenv(target.c_str());
      return v != nullptr ? Json(std::string(v)) : dflt;
    }
    fallback = dflt;
  } else {
    VERL_CHECK_AS(ConfigError, expr.find(':') == std::string::npos, "config key '", path,
                  "': unsupported resolver in ${", expr, "} (supported: oc.select, oc.env)");
  }
  // Relative keys: ".x" is a sibling of `path`, "..x" a sibling of its parent, ...
  std::string key = target;
  if (!target.empty() && target[0] == '.') {
    size_t dots = target.find_first_not_of('.');
    VERL_CHECK_AS(ConfigError, dots != std::string::npos, "config key '", path, "': bad interpolation ${", expr, "}");
    std::string base = parent_key(path);
    for (size_t i = 1; i < dots; ++i) base = parent_key(base);
    key = join_key(base, target.substr(dots));
  }
  const Json* node = find(key);
  const bool missing = node == nullptr || (node->is_string() && node->get_ref<const std::string&>() == kMissing);
  if (missing) {
    if (fallback) return *fallback;
    VERL_FAIL(ConfigError, "config key '", path, "': interpolation ${", expr, "} refers to ",
              node == nullptr ? "unknown" : "missing (???)", " key '", key, "'");
  }
  VERL_CHECK_AS(ConfigError, std::find(stack.begin(), stack.end(), key) == stack.end(), "config key '", path,
                "': interpolation cycle through '", key, "'");
  stack.push_back(key);
  Json out = resolve(*node, key, stack);
  stack.pop_back();
  return out;
}

void Config::validate() const {
  const Json resolved = to_json(true);
  std::vector<std::pair<std::string, const Json*>> all;
  collect_values(resolved, "", all);
  for (const auto& [key, value] : all) {
    const Json& v = *value;
    if (v.is_string() && v.get_ref<const std::string&>() == kMissing) continue;
    Json probe = v;
    if (const Json* declared = lookup(defaults_, key);
        declared != nullptr && !compatible_with_key(key, *declared, probe, schema_tree(sft_tree_))) {
      VERL_FAIL(ConfigTypeError, "config key '", key, "' expects a ", type_label(*declared), ", got ",
                type_label(v), " ", untrusted::quote(v));
    }
    if (const auto* rule = config_schema::find_rule(key, schema_tree(sft_tree_))) {
      const std::string type_error = config_schema::type_violation(*rule, v);
      const std::string why = type_error.empty() ? config_schema::value_violation(*rule, v) : type_error;
      if (why.empty()) continue;
      std::string origin;
      if (const Json* raw_value = find(key); raw_value != nullptr && raw_value->is_string() &&
                                             raw_value->get_ref<const std::string&>().find("${") != std::string::npos) {
        origin = " (value from " + raw_value->get<std::string>() + ")";
      }
      if (!type_error.empty()) {
        VERL_FAIL(ConfigTypeError, "config key '", key, "' = ", untrusted::quote(v), ": ", why, origin);
      }
      VERL_FAIL(ConfigError, "config key '", key, "' = ", untrusted::quote(v), ": ", why, origin);
    }
  }
  // Keys verl-cpp does not support yet (verl/core/config_keys.h): a changed value is an error, not ignored.
  config_keys::check_refused(*this, sft_tree_ ? parsed_sft_defaults() : parsed_defaults(), defaults_, resolved);
}

Json Config::to_json(bool resolve_values) const {
  if (!resolve_values) return tree_;
  std::vector<std::string> stack;
  return resolve(tree_, "", stack);
}

std::string Config::to_yaml(bool resolve_values) const { return yaml::emit(to_json(resolve_values)); }

std::vector<std::string> Config::keys() const {
  std::vector<std::string> out;
  collect_keys(tree_, "", out);
  return out;
}

}  // namespace verl
