// A compiled pre-tokenizer regex: HF's Oniguruma syntax translated to PCRE2 (JIT), matched the way
// HF iterates matches. Used by pre_tokenizer.cpp; private to libverl.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace verl::tokenizer {

// Rewrites the Oniguruma constructs whose meaning differs in PCRE2 (\p{..} classes gain the
// characters Oniguruma's newer Unicode tables assign; \s, \d, \w, \h and \uHHHH as Oniguruma reads them).
// nullopt once the translation passes `max_bytes`: each class escape expands to kilobytes of
// ranges, so an untrusted pattern of many "\w" would otherwise ask for gigabytes.
std::optional<std::string> onig_to_pcre2(std::string_view pattern, std::size_t max_bytes);

class Regex {
 public:
  // `where` names the tokenizer.json field for error messages. literal: match the text as is.
  Regex(const std::string& pattern, bool literal, const std::string& where);

  // Appends the [start, end) byte offsets of successive matches in `text` (valid UTF-8), with the
  // rules of the onig crate's find_iter that HF uses (an empty match right after the previous
  // match is skipped by one character).
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) const;

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
};

}  // namespace verl::tokenizer
