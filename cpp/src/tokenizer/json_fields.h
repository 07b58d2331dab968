// Reading tokenizer.json, a file users download and must not be able to crash us with: a
// depth-limited parse, type-checked field access that throws CheckpointError naming the file and
// the field path, and short, escaped renderings of untrusted values for messages. Every field of
// tokenizer.json is read through these (never a bare get<T>(), at() or const operator[] on a key
// that was not checked: those throw nlohmann's own errors or, for a missing key, are undefined).
// Private to the tokenizer (tokenizer.cpp, bpe.cpp, pre_tokenizer.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "core/untrusted.h"
#include "tokenizer/bpe.h"  // JsonTree

namespace verl::tokenizer {

// Strings from the file go into messages through untrusted::escape (bounded, bytes that are not UTF-8 escaped).
using untrusted::escape;

// Deepest nesting of Sequence components (normalizer, pre_tokenizer, post_processor) accepted.
// Real files nest at most 2; the JSON depth limit alone would allow ~60, each a recursive call.
inline constexpr int kMaxSequenceDepth = 16;

// A field path ("post_processor.processors[1].single[0]") kept as a chain of stack frames and
// turned into text only when a message needs it: building the string at every level of a nested
// component costs O(depth^2). Each frame is one segment, ".name", ".name[i]" or "[i]". A frame
// points to its parent: keep the parent alive (construct frames as named locals, never chained
// on a temporary).
class FieldPath {
 public:
  static constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);
  explicit FieldPath(const char* root) : name_(root) {}
  FieldPath(const FieldPath& parent, const char* name, std::size_t index = kNoIndex)
      : parent_(&parent), name_(name), index_(index) {}

  std::string str() const;

 private:
  const FieldPath* parent_ = nullptr;
  const char* name_ = nullptr;  // nullptr: an index into the parent
  std::size_t index_ = kNoIndex;
};

inline std::ostream& operator<<(std::ostream& out, const FieldPath& path) { return out << path.str(); }

// Parses tokenizer.json text into the unordered JsonTree (fast for a 150k-entry vocab). Nesting
// is limited to untrusted::kMaxJsonDepth (what serde_json, and so HF tokenizers, also refuses), so
// that no later recursive walk over the value (copy, dump, destruction) can exhaust the stack.
// Throws CheckpointError "<file>: malformed JSON: <reason>" for a syntax error, a number out of
// range (1e400), or nesting too deep (naming the limit and the byte offset).
JsonTree parse_json_file(std::string_view text, const std::string& file);

// A short, valid-UTF-8, non-recursive description of an untrusted value for a message: `the
// string "abc"`, `the number 1.5`, `an array of 3 items`, `an object with 2 keys`, `null`.
std::string describe(const JsonTree& value);

// `object[key]` when `object` is an object holding `key`; nullptr otherwise (never throws).
const JsonTree* find(const JsonTree& object, const std::string& key);
// The same, a null value counting as absent (HF's Option fields).
const JsonTree* find_set(const JsonTree& object, const std::string& key);

// Checks that `value` (at `path`) is an object, else CheckpointError naming file and path.
void require_object(const JsonTree& value, const std::string& file, const FieldPath& path);
// object[key] as a string / an array; CheckpointError naming file and path.key when the key is
// missing or holds another type (object must already be known to be an object).
const std::string& require_string(const JsonTree& object, const char* key, const std::string& file,
                                  const FieldPath& path);
const JsonTree& require_array(const JsonTree& object, const char* key, const std::string& file, const FieldPath& path);
// object[key] as a string if set (missing or null: nullopt), else CheckpointError.
std::optional<std::string> optional_string(const JsonTree& object, const char* key, const std::string& file,
                                           const FieldPath& path);
// object[key] as a bool; `fallback` when missing or null; CheckpointError for another type.
bool optional_bool(const JsonTree& object, const char* key, bool fallback, const std::string& file, const FieldPath& path);

// A token id (HF: u32) that fits our int32 ids: a non-negative integer below `limit`; nullopt for
// anything else (a float, a string, a negative or larger number).
std::optional<std::int32_t> as_id(const JsonTree& value, std::int64_t limit = std::int64_t{1} << 31);

// The "type" of a component object (normalizer, pre-tokenizer, post-processor, decoder):
// CheckpointError naming file and path unless `config` is an object with a string "type".
const std::string& component_type(const JsonTree& config, const std::string& file, const FieldPath& path);

// CheckpointError naming file, path and the limit when a Sequence at `depth` (0 for a top-level
// component) would nest deeper than kMaxSequenceDepth.
void check_sequence_depth(int depth, const std::string& file, const FieldPath& path);

}  // namespace verl::tokenizer
