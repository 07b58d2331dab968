// UTF-8 helpers, NFC normalization (HF's Unicode 9.0 flavour) and lossy UTF-8 decoding for the
// tokenizer (tokenizer.cpp, pre_tokenizer.cpp, regex.cpp). Private to libverl.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace verl::tokenizer::unicode {

// Byte length of the UTF-8 sequence starting with `lead` (1 for continuation/invalid bytes).
inline std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// Decodes the code point at text[pos] (valid UTF-8 assumed) and advances pos past it.
char32_t next_codepoint(std::string_view text, std::size_t& pos);
// Decodes the last code point of text (valid UTF-8 assumed, text not empty).
char32_t last_codepoint(std::string_view text);
void append_utf8(std::string& out, char32_t cp);

// Offset of the first invalid byte, or npos when text is valid UTF-8 (no surrogates, no overlongs).
std::size_t find_invalid_utf8(std::string_view text);

// Bytes -> text as Rust's String::from_utf8_lossy (which HF's byte-level decoder uses): each
// maximal prefix of a valid sequence that cannot be completed becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// True when NFC leaves text unchanged for certain (a quick scan; false means "maybe").
bool nfc_quick_check(std::string_view text);
// Unicode NFC with the character data HF's NFC normalizer has (Unicode 9.0); input valid UTF-8.
std::string nfc(std::string_view text);

// Unicode White_Space (what Rust's regex `\s` matches; HF strips added tokens' lstrip/rstrip with it).
bool is_white_space(char32_t cp);
// Oniguruma's `\w` (letters, marks, decimal digits, connector punctuation, join controls).
bool is_word_char(char32_t cp);

}  // namespace verl::tokenizer::unicode
