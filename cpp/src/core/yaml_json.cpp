// YAML <-> JSON conversion for the config (see yaml_json.h).
#include "yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <regex>

#include "verl/core/error.h"

namespace verl::yaml {
namespace {

Json to_json(const YAML::Node& node, const std::string& origin) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // "!" marks quoted scalars; plain ones ("?") are typed.
      return node.Tag() == "!" ? Json(node.Scalar()) : type_plain_scalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : node) out.push_back(to_json(item, origin));
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        if (out.contains(key)) {
          VERL_FAIL(ConfigError, origin, ":", kv.first.Mark().line + 1, ": duplicate key '", key, "'");
        }
        out[key] = to_json(kv.second, origin);
      }
      return out;
    }
  }
  return nullptr;
}

std::string format_double(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {  // shortest text that reads back exactly
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s(buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep it a float when read back
  return s;
}

void emit_value(YAML::Emitter& out, const Json& v) {
  if (v.is_object()) {
    if (v.empty()) {
      out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
      return;
    }
    out << YAML::BeginMap;
    for (const auto& [k, child] : v.items()) {
      out << YAML::Key;
      if (type_plain_scalar(k).is_string()) out << k; else out << YAML::SingleQuoted << k;
      out << YAML::Value;
      emit_value(out, child);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    if (v.empty()) {
      out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
      return;
    }
    out << YAML::BeginSeq;
    for (const auto& child : v) emit_value(out, child);
    out << YAML::EndSeq;
  } else if (v.is_null()) {
    out << YAML::Null;
  } else if (v.is_boolean()) {
    out << (v.get<bool>() ? "true" : "false");
  } else if (v.is_number_float()) {
    out << format_double(v.get<double>());
  } else if (v.is_number()) {
    out << v.dump();
  } else {
    const std::string& s = v.get_ref<const std::string&>();
    // Quote strings that would read back as another type, or that YAML would misparse.
    const bool plain_ok = !s.empty() && type_plain_scalar(s).is_string() && s.find(": ") == std::string::npos &&
                          s.find(" #") == std::string::npos && s.front() != ' ' && s.back() != ' ' &&
                          std::string("!&*-?|>'\"%@`#,[]{}").find(s.front()) == std::string::npos &&
                          s.find('\n') == std::string::npos;
    if (plain_ok) out << s; else out << YAML::SingleQuoted << s;
  }
}

}  // namespace

Json type_plain_scalar(const std::string& s) {
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  static const std::regex kInf(R"([-+]?\.?(inf|Inf|INF))");
  static const std::regex kNan(R"(\.?(nan|NaN|NAN))");
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (std::regex_match(s, kInt)) {
    int64_t v = 0;
    const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), v);
    if (ec == std::errc() && ptr == s.data() + s.size()) return v;
    return std::strtod(s.c_str(), nullptr);  // too large for int64: keep it as a number
  }
  if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);
  if (std::regex_match(s, kInf)) return s[0] == '-' ? -INFINITY : INFINITY;
  if (std::regex_match(s, kNan)) return NAN;
  return s;
}

Json parse(const std::string& text, const std::string& origin) {
  try {
    return to_json(YAML::Load(text), origin);
  } catch (const YAML::Exception& e) {
    VERL_FAIL(ConfigError, origin, ":", e.mark.line + 1, ":", e.mark.column + 1, ": malformed YAML: ", e.msg);
  }
}

std::string emit(const Json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit_value(out, value);
  std::string s = out.c_str();
  return s + "\n";
}

}  // namespace verl::yaml
