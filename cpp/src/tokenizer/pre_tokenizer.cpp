// Split / ByteLevel / Sequence pre-tokenizers with HF's splitting rules.
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <array>
#include <utility>

#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"
#include "verl/core/error.h"

namespace verl::tokenizer {
namespace {

// GPT-2's pattern, which HF's ByteLevel uses when use_regex is true.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct ByteMap {
  std::array<std::string, 256> to_char;
  std::array<int, 324> to_byte{};  // the mapped characters are all below U+0144
  ByteMap() {
    to_byte.fill(-1);
    // Printable bytes stand for themselves; the others are shifted to U+0100 and up in order.
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + shifted++);
      unicode::append_utf8(to_char[static_cast<std::size_t>(b)], cp);
      to_byte[cp] = b;
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(const JsonTree& config, const std::string& file, const FieldPath& path)
      : regex_(compile(config, file, path)) {
    const std::string& behavior = require_string(config, "behavior", file, path);
    if (behavior == "Removed") {
      behavior_ = Behavior::kRemoved;
    } else if (behavior == "Isolated") {
      behavior_ = Behavior::kIsolated;
    } else if (behavior == "MergedWithPrevious") {
      behavior_ = Behavior::kMergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
      behavior_ = Behavior::kMergedWithNext;
    } else if (behavior == "Contiguous") {
      behavior_ = Behavior::kContiguous;
    } else {
      VERL_FAIL(InvalidArgument, file, ": ", path, ".behavior '", escape(behavior), "' is not supported");
    }
    invert_ = optional_bool(config, "invert", false, file, path);
  }

  void apply(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    std::vector<std::pair<std::size_t, std::size_t>> matches;
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>> parts;  // (offsets, is_match)
    for (const std::string& piece : pieces) {
      if (piece.empty()) continue;
      matches.clear();
      parts.clear();
      regex_.find_all(piece, matches);
      std::size_t prev = 0;
      for (const auto& [start, end] : matches) {
        if (prev != start) parts.push_back({{prev, start}, invert_});
        parts.push_back({{start, end}, !invert_});
        prev = end;
      }
      if (prev != piece.size()) parts.push_back({{prev, piece.size()}, invert_});
      split(piece, parts, out);
    }
    pieces = std::move(out);
  }

 private:
  // The pattern: {"Regex": ...} (Oniguruma syntax) or {"String": ...} (matched literally).
  static Regex compile(const JsonTree& config, const std::string& file, const FieldPath& path) {
    const JsonTree* pattern = find(config, "pattern");
    const JsonTree* regex = pattern ? find(*pattern, "Regex") : nullptr;
    const JsonTree* string = pattern ? find(*pattern, "String") : nullptr;
    const JsonTree* chosen = regex ? regex : string;
    VERL_CHECK_AS(CheckpointError, chosen != nullptr && chosen->is_string(), file, ": ", path,
                  ".pattern must be {\"Regex\": ...} or {\"String\": ...}, got ",
                  pattern ? describe(*pattern) : std::string("nothing"));
    return Regex(chosen->get_ref<const std::string&>(), /*literal=*/regex == nullptr, file + ": " + path.str() + ".pattern");
  }

  // HF's NormalizedString::split: turn (offsets, is_match) into the kept pieces.
  void split(const std::string& piece, const std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>>& parts,
             std::vector<std::string>& out) const {
    std::vector<std::pair<std::size_t, std::size_t>> kept;  // offsets of pieces to keep
    switch (behavior_) {
      case Behavior::kIsolated:
        for (const auto& part : parts) kept.push_back(part.first);
        break;
      case Behavior::kRemoved:
        for (const auto& part : parts) {
          if (!part.second) kept.push_back(part.first);
        }
        break;
      case Behavior::kContiguous: {
        bool previous_match = false;
        for (const auto& [offsets, is_match] : parts) {
          if (is_match == previous_match && !kept.empty()) {
            kept.back().second = offsets.second;
          } else {
            kept.push_back(offsets);
          }
          previous_match = is_match;
        }
        break;
      }
      case Behavior::kMergedWithPrevious: {
        bool previous_match = false;
        for (const auto& [offsets, is_match] : parts) {
          if (is_match && !previous_match && !kept.empty()) {
            kept.back().second = offsets.second;
          } else {
            kept.push_back(offsets);
          }
          previous_match = is_match;
        }
        break;
      }
      case Behavior::kMergedWithNext: {
        bool previous_match = false;
        for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
          const auto& [offsets, is_match] = *it;
          if (is_match && !previous_match && !kept.empty()) {
            kept.back().first = offsets.first;
          } else {
            kept.push_back(offsets);
          }
          previous_match = is_match;
        }
        std::reverse(kept.begin(), kept.end());
        break;
      }
    }
    for (const auto& [start, end] : kept) {
      if (end > start) out.emplace_back(piece, start, end - start);
    }
  }

  Regex regex_;
  Behavior behavior_ = Behavior::kIsolated;
  bool invert_ = false;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(const JsonTree& config, const std::string& file, const FieldPath& path)
      : add_prefix_space_(optional_bool(config, "add_prefix_space", true, file, path)),
        use_regex_(optional_bool(config, "use_regex", true, file, path)) {}

  void apply(std::vector<std::string>& pieces) const override {
    static const Regex gpt2(kGpt2Pattern, false, "ByteLevel pre-tokenizer");
    const ByteMap& map = byte_map();
    std::vector<std::string> out;
    out.reserve(pieces.size());
    std::vector<std::pair<std::size_t, std::size_t>> matches;
    std::string text;
    for (const std::string& piece : pieces) {
      if (piece.empty()) continue;
      const std::string* source = &piece;
      if (add_prefix_space_ && piece[0] != ' ') {
        text = " " + piece;
        source = &text;
      }
      const auto emit = [&](std::size_t start, std::size_t end) {
        if (end <= start) return;
        // Every mapped character is 1 or 2 bytes of UTF-8: write them into a presized string.
        std::string mapped((end - start) * 2, '\0');
        std::size_t n = 0;
        for (std::size_t i = start; i < end; ++i) {
          const std::string& c = map.to_char[static_cast<unsigned char>((*source)[i])];
          mapped[n++] = c[0];
          if (c.size() == 2) mapped[n++] = c[1];
        }
        mapped.resize(n);
        out.push_back(std::move(mapped));
      };
      if (!use_regex_) {
        emit(0, source->size());
        continue;
      }
      matches.clear();
      gpt2.find_all(*source, matches);
      std::size_t prev = 0;
      for (const auto& [start, end] : matches) {
        emit(prev, start);
        emit(start, end);
        prev = end;
      }
      emit(prev, source->size());
    }
    pieces = std::move(out);
  }

 private:
  bool add_prefix_space_;
  bool use_regex_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  SequencePreTokenizer(const JsonTree& config, const std::string& file, const FieldPath& path, int depth) {
    check_sequence_depth(depth, file, path);
    const JsonTree& list = require_array(config, "pretokenizers", file, path);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const FieldPath item(path, "pretokenizers", i);
      steps_.push_back(make_pre_tokenizer(list[i], file, item, depth + 1));
    }
  }
  void apply(std::vector<std::string>& pieces) const override {
    for (const auto& step : steps_) step->apply(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonTree& config, const std::string& file, const FieldPath& path,
                                                 int depth) {
  const std::string& type = component_type(config, file, path);
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(config, file, path);
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(config, file, path);
  if (type == "Sequence") return std::make_unique<SequencePreTokenizer>(config, file, path, depth);
  VERL_FAIL(InvalidArgument, file, ": ", path, ".type '", escape(type),
            "' is not supported (supported pre-tokenizers: Split, ByteLevel, Sequence)");
}

const std::string& byte_to_char_utf8(unsigned char byte) { return byte_map().to_char[byte]; }

int char_to_byte(char32_t cp) { return cp < 324 ? byte_map().to_byte[cp] : -1; }

}  // namespace verl::tokenizer
