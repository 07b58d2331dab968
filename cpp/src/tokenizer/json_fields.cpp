// Depth-limited parsing and type-checked field access for tokenizer.json (see json_fields.h).
#include "tokenizer/json_fields.h"

#include <vector>

#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::tokenizer {

std::string FieldPath::str() const {
  std::vector<const FieldPath*> frames;
  for (const FieldPath* frame = this; frame != nullptr; frame = frame->parent_) frames.push_back(frame);
  std::string out;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    const FieldPath& frame = **it;
    if (frame.name_ != nullptr) {
      if (frame.parent_ != nullptr) out += '.';
      out += frame.name_;
    }
    if (frame.index_ != kNoIndex) out += '[' + std::to_string(frame.index_) + ']';
  }
  return out;
}

JsonTree parse_json_file(std::string_view text, const std::string& file) {
  // nlohmann's parser itself is iterative, but the value it builds is copied, compared and dumped
  // recursively, so the nesting is bounded before parsing. untrusted::parse_json does this with
  // a parser callback, but only for the insertion-ordered verl::Json (quadratic to build for a
  // 150k-entry vocab). This linear scan counts the brackets outside strings: exact for valid
  // JSON, and for invalid JSON never below the depth the parser builds before it stops.
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      VERL_CHECK_AS(CheckpointError, ++depth <= untrusted::kMaxJsonDepth, file, ": malformed JSON: nesting deeper than ",
                    untrusted::kMaxJsonDepth, " levels (at byte ", i, ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return JsonTree::parse(text.begin(), text.end());
  } catch (const JsonTree::exception& e) {
    // parse_error, and out_of_range for a number like 1e400. The message quotes the last token
    // read, which may hold bytes that are not UTF-8.
    VERL_FAIL(CheckpointError, file, ": malformed JSON: ", untrusted::escape(e.what(), 300));
  }
}

std::string describe(const JsonTree& value) {
  switch (value.type()) {
    case JsonTree::value_t::null:
      return "null";
    case JsonTree::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case JsonTree::value_t::number_integer:
    case JsonTree::value_t::number_unsigned:
    case JsonTree::value_t::number_float:
      return "the number " + value.dump();  // a scalar: short and ASCII
    case JsonTree::value_t::string:
      return "the string \"" + escape(value.get_ref<const std::string&>(), 60) + "\"";
    case JsonTree::value_t::array:
      return "an array of " + std::to_string(value.size()) + " items";
    case JsonTree::value_t::object:
      return "an object with " + std::to_string(value.size()) + " keys";
    default:
      return "a value that is not JSON";
  }
}


const JsonTree* find(const JsonTree& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const JsonTree* find_set(const JsonTree& object, const std::string& key) {
  const JsonTree* value = find(object, key);
  return value == nullptr || value->is_null() ? nullptr : value;
}

void require_object(const JsonTree& value, const std::string& file, const FieldPath& path) {
  VERL_CHECK_AS(CheckpointError, value.is_object(), file, ": ", path, " must be an object, got ", describe(value));
}

const std::string& require_string(const JsonTree& object, const char* key, const std::string& file,
                                  const FieldPath& path) {
  require_object(object, file, path);
  const JsonTree* value = find(object, key);
  VERL_CHECK_AS(CheckpointError, value != nullptr, file, ": ", path, ".", key, " is missing");
  VERL_CHECK_AS(CheckpointError, value->is_string(), file, ": ", path, ".", key, " must be a string, got ",
                describe(*value));
  return value->get_ref<const std::string&>();
}

const JsonTree& require_array(const JsonTree& object, const char* key, const std::string& file, const FieldPath& path) {
  require_object(object, file, path);
  const JsonTree* value = find(object, key);
  VERL_CHECK_AS(CheckpointError, value != nullptr, file, ": ", path, ".", key, " is missing (must be an array)");
  VERL_CHECK_AS(CheckpointError, value->is_array(), file, ": ", path, ".", key, " must be an array, got ",
                describe(*value));
  return *value;
}

std::optional<std::string> optional_string(const JsonTree& object, const char* key, const std::string& file,
                                           const FieldPath& path) {
  const JsonTree* value = find_set(object, key);
  if (value == nullptr) return std::nullopt;
  VERL_CHECK_AS(CheckpointError, value->is_string(), file, ": ", path, ".", key, " must be a string or null, got ",
                describe(*value));
  return value->get<std::string>();
}

bool optional_bool(const JsonTree& object, const char* key, bool fallback, const std::string& file, const FieldPath& path) {
  const JsonTree* value = find_set(object, key);
  if (value == nullptr) return fallback;
  VERL_CHECK_AS(CheckpointError, value->is_boolean(), file, ": ", path, ".", key, " must be a boolean, got ",
                describe(*value));
  return value->get<bool>();
}

std::optional<std::int32_t> as_id(const JsonTree& value, std::int64_t limit) {
  // nlohmann stores a non-negative integer literal as unsigned, a negative one as signed.
  if (value.is_number_unsigned()) {
    const auto id = value.get<std::uint64_t>();
    if (id < static_cast<std::uint64_t>(limit)) return static_cast<std::int32_t>(id);
  } else if (value.is_number_integer()) {
    const auto id = value.get<std::int64_t>();
    if (id >= 0 && id < limit) return static_cast<std::int32_t>(id);
  }
  return std::nullopt;
}

const std::string& component_type(const JsonTree& config, const std::string& file, const FieldPath& path) {
  VERL_CHECK_AS(CheckpointError, config.is_object(), file, ": ", path, " must be an object with a \"type\", got ",
                describe(config));
  return require_string(config, "type", file, path);
}

void check_sequence_depth(int depth, const std::string& file, const FieldPath& path) {
  VERL_CHECK_AS(CheckpointError, depth < kMaxSequenceDepth, file, ": ", path, " nests Sequences ", depth + 1,
                " levels deep (at most ", kMaxSequenceDepth, " are accepted)");
}

}  // namespace verl::tokenizer
