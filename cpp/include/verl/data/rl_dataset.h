// verl::data::RLHFDataset: RL prompts in verl's dataset schema, rendered as chat, tokenised, truncated and
// handed out as the trainer's left-padded prompt batches. The C++ twin of python/verl/utils/dataset/
// rl_dataset.py for applications without Python (examples/cpp_app); PPOTrainer::step takes its batches.
//
// A row is a JSON object in verl's schema (JSONL files of verl's recipes hold one per line):
//   {"data_source": "arith", "prompt": [{"role": "user", "content": "Compute 37+48."}],
//    "reward_model": {"style": "rule", "ground_truth": "85"}, "extra_info": {"index": 0}, ...}
// batch(indices) returns what verl's RLHFDataset + collate_fn give for those rows:
//   input_ids, attention_mask, position_ids  (bs, max_prompt_length) int64, left-padded with pad_token_id;
//                                            position_ids = clamp(cumsum(attention_mask) - 1, 0)
//   non-tensor columns: every key of the rows except the prompt key (data_source, reward_model,
//   extra_info (an empty object when absent), ability, ...), plus index (extra_info.index, else 0),
//   tools_kwargs and interaction_kwargs (from extra_info, else {}), raw_prompt_ids (the kept ids),
//   raw_prompt (the messages, with return_raw_chat) and full_prompts (the rendered text, with
//   return_full_prompt). These computed entries replace row keys of the same name, as in verl.
//
// Prompts are rendered by RLHFDatasetOptions::render_prompt (default: ChatML with the generation prompt,
// what Qwen's templates produce for plain conversations; libverl has no Jinja) and encoded without special
// tokens, as verl does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/core/json.h"
#include "verl/data/data_proto.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::data {

// data.truncation: what happens to a prompt longer than data.max_prompt_length.
enum class Truncation {
  kError,   // DataError naming the row
  kLeft,    // keep the last max_prompt_length tokens
  kRight,   // keep the first max_prompt_length tokens
  kMiddle,  // keep max_prompt_length / 2 tokens from the start and the rest from the end
};

// "error" | "left" | "right" | "middle"; ConfigError naming data.truncation otherwise.
VERL_API Truncation parse_truncation(std::string_view name);

// `ids` cut to max_length by `mode` (unchanged when it fits). For kError and an over-long prompt: DataError
// "<what>: prompt length N is longer than data.max_prompt_length=M ...".
VERL_API std::vector<std::int32_t> truncate_prompt(const std::vector<std::int32_t>& ids, int64_t max_length,
                                                   Truncation mode, std::string_view what = "prompt");

// Turns a row's chat messages into the prompt text.
using PromptRenderer = std::function<std::string(const std::vector<tokenizer::ChatMessage>& messages)>;

// The data.* settings the dataset reads; the defaults are verl's.
struct VERL_API RLHFDatasetOptions {
  std::string prompt_key = "prompt";             // data.prompt_key
  int64_t max_prompt_length = 512;               // data.max_prompt_length
  Truncation truncation = Truncation::kError;    // data.truncation
  bool filter_overlong_prompts = false;          // data.filter_overlong_prompts: drop them at load time
  bool return_raw_chat = true;                   // data.return_raw_chat
  bool return_full_prompt = false;               // data.return_full_prompt
  std::optional<int64_t> pad_token_id;           // default: the tokenizer's pad id, else its eos id, else 0
  PromptRenderer render_prompt;                  // default: render_chatml(messages, add_generation_prompt=true)

  // The keys above from a config (ConfigError for a bad truncation mode or max_prompt_length <= 0).
  static RLHFDatasetOptions from_config(const Config& config);
};

// Rows are checked, rendered, tokenised and truncated once, at construction; batches are cheap. Copies
// share the loaded data (immutable), like tokenizer::Tokenizer.
class VERL_API RLHFDataset {
 public:
  // `origins` names each row in error messages ("file:line"); default "row <i>". DataError naming the row
  // for a row that is not an object, has no non-empty list of {"role", "content"} string messages under the
  // prompt key, no reward_model.ground_truth, an extra_info that is not an object, or (truncation error) a
  // prompt longer than max_prompt_length. ConfigError for max_prompt_length <= 0.
  RLHFDataset(std::vector<Json> rows, const tokenizer::Tokenizer& tokenizer, RLHFDatasetOptions options = {},
              std::vector<std::string> origins = {});

  // Rows of a .jsonl file (one object per line, blank lines skipped) or a .json file (an array of objects, or
  // JSON lines). DataError naming the file (and line) when it is missing, unreadable, malformed or of another
  // format (Parquet: convert to JSONL, or use the Python package).
  static RLHFDataset from_file(const std::string& path, const tokenizer::Tokenizer& tokenizer,
                               RLHFDatasetOptions options = {});

  int64_t size() const;
  const Json& row(int64_t index) const;                         // the row as given (DataError when out of range)
  const std::vector<std::int32_t>& prompt_ids(int64_t index) const;  // after truncation, unpadded
  const std::string& origin(int64_t index) const;
  const RLHFDatasetOptions& options() const;
  int64_t pad_token_id() const;

  // The prompt batch of rows `indices` (negative count from the end), in that order; see the file comment.
  // DataError for an index out of range, an empty selection, or a column present in only some of the rows.
  DataProto batch(const std::vector<int64_t>& indices) const;

 private:
  struct Data;
  std::shared_ptr<const Data> data_;
};

}  // namespace verl::data
