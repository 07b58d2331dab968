// Generated Unicode data (unicode_tables.cpp, from tools/gen_tokenizer_unicode.py) for the tokenizer:
// NFC tables at HF's Unicode 9.0 and Oniguruma's regex classes. Used by unicode.cpp and regex.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace verl::tokenizer::tables {

struct CodepointRange {
  char32_t first;
  char32_t last;
};
struct CombiningClassRange {
  char32_t first;
  char32_t last;
  std::uint8_t ccc;
};
// One canonical decomposition step: cp -> first (+ second, 0 for singletons). Sorted by cp.
struct Decomposition {
  char32_t cp;
  char32_t first;
  char32_t second;
};
// A primary composite: (first, second) -> composite. Sorted by (first, second).
struct Composition {
  char32_t first;
  char32_t second;
  char32_t composite;
};
// The characters Oniguruma assigns to a general category that Unicode 14 (PCRE2's data) leaves
// unassigned: kCategoryExtraRanges[offset, offset + count).
struct CategoryExtra {
  const char* category;
  std::size_t offset;
  std::size_t count;
};

extern const CombiningClassRange kCombiningClass[];
extern const std::size_t kCombiningClass_size;
extern const Decomposition kDecomposition[];
extern const std::size_t kDecomposition_size;
extern const Composition kComposition[];
extern const std::size_t kComposition_size;
// Characters that NFC may change (nonzero class, decomposing, composing with a predecessor).
extern const CodepointRange kNfcUnstable[];
extern const std::size_t kNfcUnstable_size;
// Oniguruma's \w (Unicode word characters), which HF's added-token single_word check also uses.
extern const CodepointRange kOnigWord[];
extern const std::size_t kOnigWord_size;
extern const CategoryExtra kCategoryExtras[];
extern const std::size_t kCategoryExtras_size;
extern const CodepointRange kCategoryExtraRanges[];
extern const std::size_t kCategoryExtraRanges_size;

}  // namespace verl::tokenizer::tables
