// Pre-tokenizers of a tokenizer.json (Split, ByteLevel, Sequence): text -> the words BPE sees.
// Built by tokenizer.cpp from the "pre_tokenizer" field; private to libverl.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/json_fields.h"

namespace verl::tokenizer {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces every piece by the pieces it splits into (empty pieces are dropped, as in HF).
  virtual void apply(std::vector<std::string>& pieces) const = 0;
};

// `path` names the field in error messages ("pre_tokenizer", "pre_tokenizer.pretokenizers[1]");
// `depth` counts the Sequences around it (bounded by kMaxSequenceDepth).
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonTree& config, const std::string& file, const FieldPath& path,
                                                 int depth = 0);

// GPT-2's byte -> printable character map that byte-level BPE vocabularies are written in.
const std::string& byte_to_char_utf8(unsigned char byte);
// The inverse: the byte a character stands for, or -1 if it is not one of the 256.
int char_to_byte(char32_t cp);

}  // namespace verl::tokenizer
