// verl::tokenizer::Tokenizer: a Hugging Face tokenizer.json (byte-level BPE) in C++ with the same
// ids as HF `tokenizers`, plus the ChatML renderer. Used by rollout/trainer code and verl._C.
//
// Supported: model BPE (vocab, "a b" or [a, b] merges, ignore_merges, unk/fuse_unk,
// continuing_subword_prefix, end_of_word_suffix, byte_fallback); normalizer NFC / Sequence / none;
// pre-tokenizers Split (regex or string, every behavior, invert), ByteLevel (add_prefix_space,
// use_regex) and Sequence; post-processors ByteLevel, TemplateProcessing, BertProcessing,
// RobertaProcessing, Sequence; decoder ByteLevel or none; added tokens with lstrip, rstrip,
// single_word, normalized and special. Anything else is refused at load time (InvalidArgument)
// rather than tokenized differently. The tokenizer.json "truncation" and "padding" sections are
// ignored: callers truncate and pad themselves.
//
// Thread safety: a Tokenizer is immutable after loading (its word cache is internally locked);
// copies share the loaded data, and every method may be called from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "verl/core/export.h"

namespace verl::tokenizer {

// One entry of tokenizer.json's "added_tokens", with the id HF assigns it at load time (the
// vocab id of an equal model token, else the next free id; the file's "id" is not trusted).
struct VERL_API AddedToken {
  std::string content;
  std::int32_t id = 0;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

class VERL_API Tokenizer {
 public:
  // `path` is a tokenizer.json file or a directory holding one. tokenizer_config.json beside it
  // (if present) supplies the named special tokens (bos/eos/pad/...) and the chat template(s);
  // chat_template.jinja and additional_chat_templates/*.jinja beside it are read as transformers
  // does. Throws CheckpointError (unreadable or malformed file, naming it and the field) or
  // InvalidArgument (a component this implementation does not support). The files are untrusted
  // input: JSON nested deeper than 128 levels, Sequence components nested deeper than 16, vocab
  // ids outside [0, 2^28) and template files that are not UTF-8 are refused (CheckpointError);
  // sparse vocab ids load as in HF without sizing a table by the largest id.
  static Tokenizer from_file(const std::string& path);
  // The same from the texts of tokenizer.json and (optionally, "" for none) tokenizer_config.json.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json = "");

  // Text (UTF-8; InvalidArgument if invalid) -> ids. add_special_tokens applies the post-processor
  // (e.g. a BOS for Llama-style templates; nothing for Qwen).
  std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // encode() of every text, spread over threads for large batches.
  std::vector<std::vector<std::int32_t>> encode_batch(const std::vector<std::string>& texts,
                                                      bool add_special_tokens = true) const;
  // Ids -> text. Unknown ids are skipped; bytes that do not form valid UTF-8 become U+FFFD (one per
  // maximal invalid sequence), as HF does. skip_special_tokens drops added tokens marked special.
  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens = false) const;
  std::vector<std::string> decode_batch(const std::vector<std::vector<std::int32_t>>& ids,
                                        bool skip_special_tokens = false) const;

  std::optional<std::int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(std::int32_t id) const;
  // HF's get_vocab_size: distinct tokens of the model vocab and the added tokens (with_added_tokens),
  // or the model vocab alone.
  std::size_t vocab_size(bool with_added_tokens = true) const;
  const std::vector<AddedToken>& added_tokens() const;

  // Named special tokens from tokenizer_config.json (transformers' special_tokens_map: bos_token,
  // eos_token, unk_token, sep_token, pad_token, cls_token, mask_token, then model-specific
  // *_token entries), in that order; only those that are set.
  const std::vector<std::pair<std::string, std::string>>& special_tokens_map() const;
  std::optional<std::string> special_token(std::string_view name) const;  // e.g. "eos_token"
  std::optional<std::int32_t> bos_token_id() const;
  std::optional<std::int32_t> eos_token_id() const;
  std::optional<std::int32_t> pad_token_id() const;

  // Chat templates by name. A single template is named "default"; empty when there is none.
  const std::vector<std::pair<std::string, std::string>>& chat_templates() const;
  // The "default" template, if any.
  std::optional<std::string> chat_template() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// A chat message for render_chatml.
struct VERL_API ChatMessage {
  std::string role;
  std::string content;
};

// ChatML as Qwen's templates write plain conversations, for applications without Python/Jinja:
// "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then "<|im_start|>assistant\n" if
// add_generation_prompt. (Qwen's full templates also handle tools and reasoning; use the Python
// apply_chat_template for those.)
VERL_API std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

}  // namespace verl::tokenizer
