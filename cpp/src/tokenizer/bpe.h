// The BPE model of a tokenizer.json (vocab + ranked merges) with a per-word result cache; the
// merge loop follows HF's (same priority queue order, so the same ids). Used by tokenizer.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace verl::tokenizer {

// Hashing that lets unordered_map<std::string, ...> be searched with a string_view, no copy.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;
// tokenizer.json is parsed into nlohmann's unordered json: its 150k-entry vocab object would be
// quadratic to build in the insertion-ordered verl::Json.
using JsonTree = nlohmann::json;

class BpeModel {
 public:
  // Largest model.vocab id accepted (as before: ids stay far from int32's end, where the added
  // tokens' "next free id" arithmetic would overflow).
  static constexpr std::int32_t kMaxId = (1 << 28) - 1;
  // Ids up to 2 * (number of tokens) + this slack are kept in a table, larger ones in a map.
  static constexpr std::size_t kSparseIdSlack = 1024;

  // `model` is tokenizer.json's "model" object; `file` names the file in error messages.
  BpeModel(const JsonTree& model, const std::string& file);
  ~BpeModel();
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one pre-tokenized word (thread-safe).
  void tokenize(std::string_view word, std::vector<std::int32_t>& out) const;

  std::optional<std::int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(std::int32_t id) const;
  std::size_t vocab_size() const { return vocab_.size(); }
  const Vocab& vocab() const { return vocab_; }

 private:
  struct Merge {
    std::uint32_t rank;
    std::int32_t new_id;
  };
  struct Cache;

  void merge_word(std::string_view word, std::vector<std::int32_t>& out) const;
  const Merge* find_merge(std::int32_t left, std::int32_t right) const;
  const std::string* id_to_token_sparse(std::int32_t id) const;

  Vocab vocab_;
  std::vector<const std::string*> vocab_r_;  // id -> token (nullptr where no token has the id)
  std::unordered_map<std::int32_t, const std::string*> vocab_r_sparse_;  // ids beyond vocab_r_
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::optional<std::string> unk_token_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::unique_ptr<Cache> cache_;
};

}  // namespace verl::tokenizer
