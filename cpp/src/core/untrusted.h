// Reading untrusted input without crashing: a depth-limited JSON parser and bounded, escaped quoting
// of untrusted values for error messages. Every reader of a file a user (or a downloaded
// checkpoint) supplies goes through these: parsing never recurses without a limit, and a message
// never dumps a whole value, nor bytes that are not UTF-8, into an exception.
// Private to libverl.
// VERL_API on the functions tests/cpp calls: the tests link the shared libverl (hidden visibility),
// so these are exported for them; the header is not installed and they are not API.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "verl/core/error.h"
#include "verl/core/export.h"
#include "verl/core/json.h"

namespace verl::untrusted {

// Deepest nesting of arrays/objects accepted from a file. Real files nest < 20 deep (a
// tokenizer.json ~6, a chat row with tool schemas ~12); the limit keeps every later recursive
// walk over the value (copy, dump, destruction) far from the stack's end.
inline constexpr int kMaxJsonDepth = 128;

// Parses JSON text; on failure returns nullopt and sets `error` (a readable, UTF-8-clean reason:
// "syntax error at byte 17: ...", "nesting deeper than 128 levels", "number out of range").
VERL_API std::optional<Json> try_parse_json(std::string_view text, std::string& error);

// try_parse_json that throws ErrorT("<origin>: <what> is not valid JSON: <reason>").
template <typename ErrorT>
Json parse_json(std::string_view text, const std::string& origin, const char* what = "file") {
  std::string error;
  std::optional<Json> value = try_parse_json(text, error);
  if (!value) throw ErrorT(origin + ": " + what + " is not valid JSON: " + error);
  return std::move(*value);
}

// Reads a whole file into memory; nullopt if it cannot be opened or read (error set).
std::optional<std::string> try_read_file(const std::string& path, std::string& error);

// Length of the well-formed UTF-8 character starting at s[i] (1-4), or 0 where the bytes are not
// one (overlong forms, surrogates, code points past U+10FFFF, truncated sequences).
size_t utf8_char_length(std::string_view s, size_t i);

// Offset of the first byte that does not start a well-formed UTF-8 character; npos if none.
VERL_API size_t first_invalid_utf8(std::string_view s);
inline bool is_utf8(std::string_view s) { return first_invalid_utf8(s) == std::string_view::npos; }

// `s` with bytes that are not valid UTF-8, control characters and backslashes escaped (\xff, \n,
// \\), cut to `max_bytes` of input with a "..." marker: safe to put in any message.
VERL_API std::string escape(std::string_view s, size_t max_bytes = 200);

// A file path as a message shows it: escape() of its bytes (Linux file names are arbitrary bytes, and a message
// reaches Python as str), cut past 4096 bytes (PATH_MAX).
VERL_API std::string display_path(const std::filesystem::path& path);

// A short, valid-UTF-8 rendering of an untrusted JSON value: strings quoted and escaped,
// containers summarised past `max_bytes` ("[1, 2, ... (1000 items)]"). Never recursive beyond
// kMaxJsonDepth, never throws.
VERL_API std::string quote(const Json& value, size_t max_bytes = 80);

// The JSON type's name as users know it (string, integer, float, bool, array, object, null).
const char* type_name(const Json& value);

}  // namespace verl::untrusted
