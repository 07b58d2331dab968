// Oniguruma -> PCRE2 translation and the match loop for pre-tokenizer regexes.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include <cstdio>
#include <string>

#include "core/untrusted.h"
#include "tokenizer/unicode.h"
#include "tokenizer/unicode_tables.h"
#include "verl/core/error.h"

namespace verl::tokenizer {
namespace {

void append_range(std::string& out, char32_t first, char32_t last) {
  char buf[48];
  if (first == last) {
    std::snprintf(buf, sizeof(buf), "\\x{%X}", static_cast<unsigned>(first));
  } else {
    std::snprintf(buf, sizeof(buf), "\\x{%X}-\\x{%X}", static_cast<unsigned>(first), static_cast<unsigned>(last));
  }
  out += buf;
}

// The extra ranges for a general category name ("L" collects every L? subcategory); false when
// the name is not a general category (scripts etc. are left to PCRE2).
bool category_extras(const std::string& name, std::string& ranges) {
  bool known = false;
  for (std::size_t i = 0; i < tables::kCategoryExtras_size; ++i) {
    const auto& extra = tables::kCategoryExtras[i];
    const std::string cat = extra.category;
    if (name == cat || (name.size() == 1 && cat[0] == name[0])) {
      known = true;
      for (std::size_t k = extra.offset; k < extra.offset + extra.count; ++k) {
        append_range(ranges, tables::kCategoryExtraRanges[k].first, tables::kCategoryExtraRanges[k].last);
      }
    }
  }
  return known || name == "C" || name == "Cn" || name == "Cs";
}

std::string word_ranges() {
  std::string out;
  for (std::size_t i = 0; i < tables::kOnigWord_size; ++i) append_range(out, tables::kOnigWord[i].first, tables::kOnigWord[i].last);
  return out;
}

// Longest PCRE2 translation of a pre-tokenizer regex accepted.
constexpr std::size_t kMaxTranslatedBytes = std::size_t{1} << 20;

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

struct ThreadMatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  // Room for patterns that backtrack deeply on long pieces (PCRE2's default JIT stack is 32 KiB).
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  ThreadMatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

std::optional<std::string> onig_to_pcre2(std::string_view p, std::size_t max_bytes) {
  std::string out;
  out.reserve(p.size() * 2);
  int class_depth = 0;
  std::size_t class_start = 0;  // index just after '[' or '[^' of the innermost class
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (out.size() > max_bytes) return std::nullopt;  // one step adds at most ~20 KB
    const char c = p[i];
    const bool in_class = class_depth > 0;
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 'p' || e == 'P') {
        std::size_t j = i + 2;
        std::string name;
        if (j < p.size() && p[j] == '{') {
          const std::size_t close = p.find('}', j);
          if (close == std::string_view::npos) {
            out += p.substr(i);
            break;
          }
          name = std::string(p.substr(j + 1, close - j - 1));
          j = close + 1;
        } else if (j < p.size()) {
          name = std::string(1, p[j]);
          j += 1;
        }
        bool negated = e == 'P';
        if (!name.empty() && name[0] == '^') {
          negated = !negated;
          name.erase(0, 1);
        }
        std::string extras;
        if (!category_extras(name, extras) || extras.empty() || (in_class && negated)) {
          // Nothing to add, not a category, or a negation inside a class (which cannot subtract):
          // PCRE2's own tables decide.
          out += negated ? "\\P{" : "\\p{";
          out += name + "}";
        } else if (in_class) {
          out += "\\p{" + name + "}" + extras;
        } else {
          out += (negated ? "[^\\p{" : "[\\p{") + name + "}" + extras + "]";
        }
        i = j - 1;
        continue;
      }
      if (e == 'd' || e == 'D') {  // Oniguruma's \d is \p{Nd}
        std::string extras;
        category_extras("Nd", extras);
        if (in_class) {
          out += e == 'd' ? "\\p{Nd}" + extras : std::string("\\P{Nd}");
        } else {
          out += (e == 'd' ? "[\\p{Nd}" : "[^\\p{Nd}") + extras + "]";
        }
        ++i;
        continue;
      }
      if (e == 'w' || e == 'W') {  // Oniguruma's \w: Alphabetic, marks, Nd, Pc, join controls
        if (in_class) {
          out += e == 'w' ? word_ranges() : std::string("\\W");
        } else {
          out += (e == 'w' ? "[" : "[^") + word_ranges() + "]";
        }
        ++i;
        continue;
      }
      if (e == 's' || e == 'S') {
        // Oniguruma's \s is Unicode White_Space; PCRE2's also matches U+180E (which left
        // White_Space in Unicode 6.3), so both are spelled out.
        static const std::string space = "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
        static const std::string non_space =
            "\\x{0}-\\x{8}\\x{E}-\\x{1F}\\x{21}-\\x{84}\\x{86}-\\x{9F}\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}"
            "\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{10FFFF}";
        const std::string& members = e == 's' ? space : non_space;
        out += in_class ? members : "[" + members + "]";
        ++i;
        continue;
      }
      if (e == 'h' || e == 'H') {  // Oniguruma's \h is a hexadecimal digit, PCRE2's horizontal space
        if (in_class) {
          out += e == 'h' ? "0-9a-fA-F" : "\\H";
        } else {
          out += e == 'h' ? "[0-9a-fA-F]" : "[^0-9a-fA-F]";
        }
        ++i;
        continue;
      }
      if (e == 'u' && i + 5 < p.size() && is_hex(p[i + 2]) && is_hex(p[i + 3]) &&
          is_hex(p[i + 4]) && is_hex(p[i + 5])) {
        out += "\\x{" + std::string(p.substr(i + 2, 4)) + "}";
        i += 5;
        continue;
      }
      // Any other escape is copied whole (including a multi-byte escaped character).
      const std::size_t n = unicode::utf8_length(static_cast<unsigned char>(e));
      out += p.substr(i, 1 + n);
      i += n;
      continue;
    }
    if (c == '[') {
      if (in_class && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class [:alpha:]
        const std::size_t close = p.find(":]", i + 2);
        if (close != std::string_view::npos) {
          out += p.substr(i, close + 2 - i);
          i = close + 1;
          continue;
        }
      }
      if (in_class && i == class_start) {  // '[' as the first member is literal
        out += c;
        continue;
      }
      ++class_depth;
      out += c;
      std::size_t k = i + 1;
      if (k < p.size() && p[k] == '^') {
        out += '^';
        ++k;
      }
      // A ']' right after '[' or '[^' is a literal member.
      if (k < p.size() && p[k] == ']') {
        out += ']';
        ++k;
      }
      class_start = k;
      i = k - 1;
      continue;
    }
    if (c == ']' && in_class) {
      --class_depth;
      out += c;
      continue;
    }
    out += c;
  }
  return out;
}

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, bool literal, const std::string& where) {
  auto code = std::make_shared<Code>();
  std::string translated = pattern;
  if (!literal) {
    std::optional<std::string> pcre2 = onig_to_pcre2(pattern, kMaxTranslatedBytes);
    // PCRE2 (default link size) cannot compile much more than 64 KiB of code anyway; real
    // pre-tokenizer patterns translate to well under kMaxTranslatedBytes.
    VERL_CHECK(pcre2.has_value(), where, ": regex '", untrusted::escape(pattern), "' is too large (its PCRE2 translation "
               "passes ", kMaxTranslatedBytes, " bytes)");
    translated = std::move(*pcre2);
  }
  // Oniguruma's defaults (Ruby syntax): ^ and $ are line anchors, '.' stops at '\n' only.
  // (PCRE2_LITERAL admits only a few other options; UCP and MULTILINE do not matter to it.)
  const std::uint32_t options = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE);
  pcre2_compile_context* ctx = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(ctx, PCRE2_NEWLINE_LF);
  int error = 0;
  PCRE2_SIZE offset = 0;
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), options, &error, &offset, ctx);
  pcre2_compile_context_free(ctx);
  if (code->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    // The pattern comes from the file: escaped and cut short (PCRE2 also refuses one that is not UTF-8).
    VERL_FAIL(InvalidArgument, where, ": cannot compile regex '", untrusted::escape(pattern), "': ",
              reinterpret_cast<const char*>(message), " (at offset ", offset, " of the PCRE2 translation '",
              untrusted::escape(translated), "')");
  }
  // JIT is an optimisation only: without it (unsupported CPU) matching still works, slower.
  pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);
  code_ = std::move(code);
}

void Regex::find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) const {
  ThreadMatchState& state = thread_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t last_end = 0;
  bool have_last = false;
  std::size_t last_match_end = 0;
  while (last_end <= text.size()) {
    // The text was validated once up front; checking it again per call would be quadratic.
    const int rc = pcre2_match(code_->code, subject, text.size(), last_end, PCRE2_NO_UTF_CHECK, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      VERL_FAIL(Error, "tokenizer regex match failed: ", reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const std::size_t start = ovector[0], end = ovector[1];
    if (start == end && have_last && last_match_end == end) {
      last_end += last_end < text.size() ? unicode::utf8_length(static_cast<unsigned char>(text[last_end])) : 1;
      continue;
    }
    last_end = end;
    last_match_end = end;
    have_last = true;
    out.emplace_back(start, end);
  }
}

}  // namespace verl::tokenizer
