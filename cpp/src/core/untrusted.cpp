// Depth-limited JSON parsing and bounded, escaped quoting of untrusted values (see untrusted.h).
#include "core/untrusted.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace verl::untrusted {
namespace {

// Thrown from the parser callback to stop at the depth limit (caught below, never escapes).
struct TooDeep {};

// Length of the valid UTF-8 sequence starting at s[i], or 0 if the bytes there are not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong = (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  return overlong || surrogate || cp > 0x10FFFF ? 0 : n;
}

void append_hex(std::string& out, unsigned char c) {
  char buf[5];
  std::snprintf(buf, sizeof(buf), "\\x%02x", c);
  out += buf;
}

// Appends a summary of `value` to `out`, stopping once `out` reaches `budget` bytes.
void render(const Json& value, std::string& out, size_t budget, int depth) {
  if (out.size() >= budget) return;
  if (depth > kMaxJsonDepth) {
    out += "...";
    return;
  }
  if (value.is_string()) {
    out += '"';
    out += escape(value.get_ref<const std::string&>(), budget > out.size() ? budget - out.size() : 0);
    out += '"';
    return;
  }
  if (value.is_array() || value.is_object()) {
    const bool object = value.is_object();
    out += object ? '{' : '[';
    size_t shown = 0;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (out.size() >= budget) {
        out += "... (" + std::to_string(value.size()) + (object ? " keys)" : " items)");
        break;
      }
      if (shown++ > 0) out += ", ";
      if (object) out += '"' + escape(it.key(), budget > out.size() ? budget - out.size() : 0) + "\": ";
      render(*it, out, budget, depth + 1);
    }
    out += object ? '}' : ']';
    return;
  }
  out += value.dump();  // null, bool, number: short and ASCII
}

}  // namespace

std::optional<Json> try_parse_json(std::string_view text, std::string& error) {
  const Json::parser_callback_t limit_depth = [](int depth, Json::parse_event_t event, Json&) {
    if (depth >= kMaxJsonDepth &&
        (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start)) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), limit_depth);
  } catch (const TooDeep&) {
    error = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  } catch (const Json::parse_error& e) {
    error = escape(e.what(), 300);
  } catch (const Json::out_of_range& e) {  // a number like 1e400
    error = escape(e.what(), 300);
  } catch (const Json::exception& e) {
    error = escape(e.what(), 300);
  }
  return std::nullopt;
}

std::optional<std::string> try_read_file(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) {
    error = "cannot open '" + escape(path) + "'";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    error = "cannot read '" + escape(path) + "'";
    return std::nullopt;
  }
  return text.str();
}

size_t utf8_char_length(std::string_view s, size_t i) { return i < s.size() ? utf8_sequence_length(s, i) : 0; }

size_t first_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string escape(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      append_hex(out, c);
      ++i;
    } else if (const size_t n = utf8_sequence_length(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      append_hex(out, c);
      ++i;
    }
  }
  if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string display_path(const std::filesystem::path& path) { return escape(path.native(), 4096); }

std::string quote(const Json& value, size_t max_bytes) {
  std::string out;
  render(value, out, max_bytes, 0);
  return out;
}

const char* type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "float";
    case Json::value_t::string: return "string";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    default: return "value";
  }
}

}  // namespace verl::untrusted
