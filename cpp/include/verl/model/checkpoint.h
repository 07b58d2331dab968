// Hugging Face checkpoint directories <-> CausalLM: load_pretrained reads what transformers'
// save_pretrained writes (config.json + model.safetensors or shards with an index), and
// save_pretrained writes a directory transformers' from_pretrained loads unchanged, atomically.
// Used by verl.models.load_model / save_pretrained, the trainer's HF export and the rollout engine.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/model/transformer.h"

namespace verl::model {

// Files copied from SaveOptions::tokenizer_dir when present (transformers' tokenizer and
// generation files). Missing ones are skipped.
inline const std::vector<std::string> kTokenizerFiles = {
    "tokenizer.json",   "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
    "merges.txt",       "added_tokens.json",     "chat_template.jinja",     "generation_config.json",
};

// transformers' default max_shard_size ("5GB", decimal units).
inline constexpr int64_t kDefaultMaxShardBytes = 5'000'000'000;

// Loads `dir` (config.json + model.safetensors or model.safetensors.index.json shards).
// dtype: the parameters' dtype (nullopt = config.json's torch_dtype / dtype, as transformers'
// dtype="auto"). head kValue expects a value-head checkpoint as AutoModelForTokenClassification
// (num_labels=1) writes it: model.* plus score.weight (and score.bias unless
// token_classification_bias is false). Names are strict: a missing or unexpected tensor is an
// error, except lm_head.weight of a tied-embedding model. Every failure is a CheckpointError
// (ConfigError for a bad config.json) naming the file.
VERL_API std::shared_ptr<CausalLM> load_pretrained(const std::filesystem::path& dir,
                                                   std::optional<torch::Dtype> dtype = {},
                                                   torch::Device device = torch::kCPU,
                                                   HeadKind head = HeadKind::kLanguageModel);

struct VERL_API SaveOptions {
  // Shards above this many bytes (transformers' max_shard_size) -> model-0000i-of-0000N +
  // model.safetensors.index.json; a single shard is model.safetensors.
  int64_t max_shard_bytes = kDefaultMaxShardBytes;
  // Directory to copy kTokenizerFiles from (usually the directory the model was loaded from).
  std::optional<std::filesystem::path> tokenizer_dir;
  // Called with each file's path after it is complete in the staging directory, before the
  // staging directory replaces the target. Throwing aborts the save and leaves the target as it
  // was (tests use it to simulate a crash mid-write).
  std::function<void(const std::filesystem::path&)> on_file_written;
  // false: config.json and the tokenizer files only -- the directory of a sharded checkpoint, whose ranks write the
  // weights beside them (verl/workers/sharded_checkpoint.h).
  bool write_weights = true;
  // config.json's torch_dtype when not the parameters' (a sharded model's master weights).
  std::optional<torch::Dtype> config_dtype;
};

// The config.json save_pretrained writes: the model's config (keeping the unknown keys of the
// config.json it was loaded from), architectures for its head (e.g. Qwen2ForCausalLM or
// Qwen2ForTokenClassification with id2label {"0": "LABEL_0"}), torch_dtype/dtype of its parameters.
VERL_API Json pretrained_config_json(const CausalLM& model);

// A model with LoRA adapters is written merged (CausalLM::merged_state): a plain checkpoint of the adapted model.
// Writes config.json, the safetensors weights (unless !options.write_weights) (HF names, the parameters' dtype; no lm_head.weight
// when embeddings are tied, as transformers) and the tokenizer files into a temporary sibling of
// `dir`, fsyncs them, then swaps it in for `dir` (renameat2 RENAME_EXCHANGE where the filesystem
// has it, else two renames): a crash or an error leaves the previous `dir` (if any) intact, and
// an existing `dir` is replaced as a whole, so files of an older save never linger.
// Returns the files of the saved directory (under `dir`). Failures: CheckpointError naming the file.
VERL_API std::vector<std::filesystem::path> save_pretrained(const CausalLM& model, const std::filesystem::path& dir,
                                                            const SaveOptions& options = {});

}  // namespace verl::model
