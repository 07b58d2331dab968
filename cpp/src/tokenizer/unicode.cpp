// UTF-8 helpers, NFC and lossy decoding; the character data lives in unicode_tables.cpp.
#include "tokenizer/unicode.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tokenizer/unicode_tables.h"

namespace verl::tokenizer::unicode {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

// Hangul syllables compose and decompose algorithmically (Unicode ch. 3.12), not through tables.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

bool in_ranges(const tables::CodepointRange* ranges, std::size_t n, char32_t cp) {
  const auto* end = ranges + n;
  const auto* it = std::upper_bound(ranges, end, cp, [](char32_t c, const tables::CodepointRange& r) { return c < r.first; });
  return it != ranges && cp <= (it - 1)->last;
}

std::uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* begin = tables::kCombiningClass;
  const auto* end = begin + tables::kCombiningClass_size;
  const auto* it = std::upper_bound(begin, end, cp, [](char32_t c, const tables::CombiningClassRange& r) { return c < r.first; });
  if (it == begin || cp > (it - 1)->last) return 0;
  return (it - 1)->ccc;
}

void decompose(char32_t cp, std::u32string& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* begin = tables::kDecomposition;
  const auto* end = begin + tables::kDecomposition_size;
  const auto* it = std::lower_bound(begin, end, cp, [](const tables::Decomposition& d, char32_t c) { return d.cp < c; });
  if (it == end || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  decompose(it->first, out);
  if (it->second != 0) decompose(it->second, out);
}

// The primary composite of (first, second), or 0.
char32_t compose(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const auto* begin = tables::kComposition;
  const auto* end = begin + tables::kComposition_size;
  const auto* it = std::lower_bound(begin, end, std::make_pair(first, second), [](const tables::Composition& c, const auto& key) {
    return c.first != key.first ? c.first < key.first : c.second < key.second;
  });
  if (it != end && it->first == first && it->second == second) return it->composite;
  return 0;
}

bool is_cont(unsigned char b) { return (b & 0xC0) == 0x80; }
bool is_cont_int(int b) { return b >= 0x80 && b <= 0xBF; }

// Length of the valid UTF-8 sequence at bytes[i], or 0 with `consumed` set to the length of the
// maximal invalid prefix (the rules of Rust's core::str::Utf8Chunks).
std::size_t valid_sequence(std::string_view bytes, std::size_t i, std::size_t& consumed) {
  const auto at = [&](std::size_t k) -> int { return i + k < bytes.size() ? static_cast<unsigned char>(bytes[i + k]) : -1; };
  const int b = at(0);
  consumed = 1;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return is_cont_int(at(1)) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    const int c = at(1);
    const bool ok = (b == 0xE0) ? (c >= 0xA0 && c <= 0xBF) : (b == 0xED) ? (c >= 0x80 && c <= 0x9F) : (c >= 0x80 && c <= 0xBF);
    if (!ok) return 0;
    consumed = 2;
    return is_cont_int(at(2)) ? 3 : 0;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    const int c = at(1);
    const bool ok = (b == 0xF0) ? (c >= 0x90 && c <= 0xBF) : (b == 0xF4) ? (c >= 0x80 && c <= 0x8F) : (c >= 0x80 && c <= 0xBF);
    if (!ok) return 0;
    consumed = 2;
    if (!is_cont_int(at(2))) return 0;
    consumed = 3;
    return is_cont_int(at(3)) ? 4 : 0;
  }
  return 0;
}

}  // namespace

char32_t next_codepoint(std::string_view text, std::size_t& pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  const std::size_t n = utf8_length(b0);
  char32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (std::size_t k = 1; k < n && pos + k < text.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[pos + k]) & 0x3F);
  pos += n;
  return cp;
}

char32_t last_codepoint(std::string_view text) {
  std::size_t start = text.size() - 1;
  while (start > 0 && is_cont(static_cast<unsigned char>(text[start]))) --start;
  return next_codepoint(text, start);
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::size_t find_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    std::size_t consumed = 0;
    const std::size_t n = valid_sequence(text, i, consumed);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    std::size_t consumed = 0;
    const std::size_t n = valid_sequence(bytes, i, consumed);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      append_utf8(out, kReplacement);
      i += consumed;
    }
  }
  return out;
}

bool nfc_quick_check(std::string_view text) {
  // Most text (ASCII, CJK, precomposed Latin) is already NFC: no character in it can change.
  for (std::size_t pos = 0; pos < text.size();) {
    if (static_cast<unsigned char>(text[pos]) < 0xCC) {  // below U+0300 (lead bytes < 0xCC)
      pos += utf8_length(static_cast<unsigned char>(text[pos]));
      continue;
    }
    const char32_t cp = next_codepoint(text, pos);
    if (in_ranges(tables::kNfcUnstable, tables::kNfcUnstable_size, cp)) return false;
  }
  return true;
}

std::string nfc(std::string_view text) {
  if (nfc_quick_check(text)) return std::string(text);

  std::u32string decomposed;
  decomposed.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) decompose(next_codepoint(text, pos), decomposed);

  // Canonical ordering: stable sort of every run of non-starters by combining class.
  std::vector<std::uint8_t> classes(decomposed.size());
  for (std::size_t i = 0; i < decomposed.size(); ++i) classes[i] = combining_class(decomposed[i]);
  for (std::size_t i = 0; i < decomposed.size();) {
    if (classes[i] == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < decomposed.size() && classes[j] != 0) ++j;
    if (j - i > 1) {
      std::vector<std::pair<std::uint8_t, char32_t>> run;
      for (std::size_t k = i; k < j; ++k) run.emplace_back(classes[k], decomposed[k]);
      std::stable_sort(run.begin(), run.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (std::size_t k = i; k < j; ++k) {
        classes[k] = run[k - i].first;
        decomposed[k] = run[k - i].second;
      }
    }
    i = j;
  }

  // Canonical composition: each character joins the last starter unless blocked by a character
  // in between whose class is 0 or not lower than its own.
  std::u32string composed;
  composed.reserve(decomposed.size());
  std::ptrdiff_t starter = -1;
  int last_class = -1;  // class of the last character kept after the starter; -1: none yet
  for (std::size_t i = 0; i < decomposed.size(); ++i) {
    const char32_t cp = decomposed[i];
    const int cls = classes[i];
    if (starter >= 0) {
      const bool blocked = last_class != -1 && (last_class == 0 || last_class >= cls);
      if (!blocked) {
        if (const char32_t c = compose(composed[static_cast<std::size_t>(starter)], cp); c != 0) {
          composed[static_cast<std::size_t>(starter)] = c;
          continue;
        }
      }
    }
    if (cls == 0) {
      starter = static_cast<std::ptrdiff_t>(composed.size());
      last_class = -1;
    } else {
      last_class = cls;
    }
    composed.push_back(cp);
  }
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : composed) append_utf8(out, cp);
  return out;
}

bool is_white_space(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x9 && cp <= 0xD);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_word_char(char32_t cp) { return in_ranges(tables::kOnigWord, tables::kOnigWord_size, cp); }

}  // namespace verl::tokenizer::unicode
