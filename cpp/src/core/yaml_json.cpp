// YAML <-> JSON conversion for the config (see yaml_json.h).
#include "yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::yaml {
namespace {

// Limits on what one YAML document may expand to. yaml-cpp resolves an alias to the anchored
// node itself, so `&a [1, *a]` is a cycle and nested aliases (a "billion laughs" file) share
// subtrees that a naive walk expands exponentially. Real configs are < 10 deep and < 10^4 values; the
// value limit keeps the walk that finds a bomb short (10^6 took 7 s under ASan, a fuzzer timeout).
constexpr int kMaxYamlDepth = 64;
constexpr size_t kMaxYamlValues = 100'000;

// yaml-cpp decodes the escapes "\N" and "\_" to the single bytes 0x85 / 0xA0 instead of the
// UTF-8 encoding of U+0085 / U+00A0. The document is checked to be UTF-8 before parsing, so a
// lone 0x85 / 0xA0 in a scalar can only come from those escapes: re-encode it.
std::string fix_yaml_cpp_escapes(const std::string& scalar) {
  if (untrusted::is_utf8(scalar)) return scalar;
  std::string out;
  for (size_t i = 0; i < scalar.size();) {
    const size_t n = untrusted::utf8_char_length(scalar, i);
    const unsigned char c = static_cast<unsigned char>(scalar[i]);
    if (n == 0 && (c == 0x85 || c == 0xA0)) out += static_cast<char>(0xC2);
    out.append(scalar, i, n == 0 ? 1 : n);
    i += n == 0 ? 1 : n;
  }
  return out;
}

// Number of ASCII digits at s[i...].
size_t count_digits(std::string_view s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && s[i + n] >= '0' && s[i + n] <= '9') ++n;
  return n;
}

// [-+]?[0-9]+
bool is_integer_text(std::string_view s) {
  const size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  const size_t digits = count_digits(s, sign);
  return digits > 0 && sign + digits == s.size();
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?  (YAML 1.1 / OmegaConf floats: 1e-6, .5, 3.)
bool is_float_text(std::string_view s) {
  size_t i = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  const size_t int_digits = count_digits(s, i);
  i += int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    frac_digits = count_digits(s, i + 1);
    i += 1 + frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t exp_digits = count_digits(s, i);
    if (exp_digits == 0) return false;
    i += exp_digits;
  }
  return i == s.size();
}

class YamlToJson {
 public:
  explicit YamlToJson(const std::string& origin) : origin_(origin) {}

  Json convert(const YAML::Node& node) {
    const int line = node.Mark().line + 1;
    if (++values_ > kMaxYamlValues) {
      VERL_FAIL(ConfigError, origin_, ":", line, ": the document expands to more than ", kMaxYamlValues,
                " values (nested aliases?)");
    }
    if (node.Type() == YAML::NodeType::Sequence || node.Type() == YAML::NodeType::Map) {
      for (const YAML::Node& open : path_) {
        if (open.is(node)) VERL_FAIL(ConfigError, origin_, ":", line, ": an alias refers to a node that contains it");
      }
      VERL_CHECK_AS(ConfigError, path_.size() < kMaxYamlDepth, origin_, ":", line, ": nested deeper than ",
                    kMaxYamlDepth, " levels");
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar: {
        const std::string text = fix_yaml_cpp_escapes(node.Scalar());
        VERL_CHECK_AS(ConfigError, untrusted::is_utf8(text), origin_, ":", line, ": value '", untrusted::escape(text),
                      "' is not valid UTF-8");
        // "!" marks quoted scalars; plain ones ("?") are typed.
        return node.Tag() == "!" ? Json(text) : type_plain_scalar(text);
      }
      case YAML::NodeType::Sequence: {
        path_.push_back(node);
        Json out = Json::array();
        for (const auto& item : node) out.push_back(convert(item));
        path_.pop_back();
        return out;
      }
      case YAML::NodeType::Map: {
        path_.push_back(node);
        Json out = Json::object();
        for (const auto& kv : node) {
          const int key_line = kv.first.Mark().line + 1;
          VERL_CHECK_AS(ConfigError, kv.first.IsScalar(), origin_, ":", key_line, ": map keys must be plain scalars");
          const std::string key = fix_yaml_cpp_escapes(kv.first.Scalar());
          VERL_CHECK_AS(ConfigError, untrusted::is_utf8(key), origin_, ":", key_line, ": key '", untrusted::escape(key),
                        "' is not valid UTF-8");
          if (out.contains(key)) {
            VERL_FAIL(ConfigError, origin_, ":", key_line, ": duplicate key '", untrusted::escape(key), "'");
          }
          out[key] = convert(kv.second);
        }
        path_.pop_back();
        return out;
      }
    }
    return nullptr;
  }

 private:
  const std::string& origin_;
  std::vector<YAML::Node> path_;  // the sequences and maps being converted, outermost first
  size_t values_ = 0;
};

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
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const size_t sign = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (is_integer_text(s)) {
    int64_t v = 0;
    const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), v);
    if (ec == std::errc() && ptr == s.data() + s.size()) return v;
    return std::strtod(s.c_str(), nullptr);  // too large for int64: keep it as a number
  }
  if (is_float_text(s)) return std::strtod(s.c_str(), nullptr);
  const std::string_view body = std::string_view(s).substr(sign + (s.size() > sign && s[sign] == '.' ? 1 : 0));
  if (body == "inf" || body == "Inf" || body == "INF") return s[0] == '-' ? -INFINITY : INFINITY;
  if (sign == 0 && (body == "nan" || body == "NaN" || body == "NAN")) return NAN;
  return s;
}

Json parse(const std::string& text, const std::string& origin) {
  if (!untrusted::is_utf8(text)) {
    const size_t bad = untrusted::first_invalid_utf8(text);
    const size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    VERL_FAIL(ConfigError, origin, ":", line, ": not valid UTF-8 (byte ", bad, ")");
  }
  try {
    return YamlToJson(origin).convert(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    VERL_FAIL(ConfigError, origin, ":", e.mark.line + 1, ":", e.mark.column + 1, ": malformed YAML: ", untrusted::escape(e.msg));
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
