// libFuzzer target: the RL dataset's row reader. The input is a .jsonl file (the first byte odd) or a
// .json file (even) of verl-schema rows, read with the Qwen3 tokenizer of the fixtures: rows parsed
// (depth-limited), prompts rendered with the chat template, tokenized and truncated, and the first
// rows collated into a batch as the trainer would.
#include <algorithm>

#include "fuzz_common.h"
#include "verl/data/rl_dataset.h"
#include "verl/tokenizer/tokenizer.h"

namespace {

const verl::tokenizer::Tokenizer& qwen3() {
  static const auto tokenizer = verl::tokenizer::Tokenizer::from_file(VERL_FUZZ_QWEN3_TOKENIZER);
  return tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string name = data[0] % 2 == 1 ? "rows.jsonl" : "rows.json";
  const std::string path = verl::fuzz::write_scratch(name, verl::fuzz::as_text(data + 1, size - 1));
  verl::fuzz::expect_typed_errors([&] {
    verl::data::RLHFDatasetOptions options;
    options.max_prompt_length = 64;
    options.truncation = verl::data::Truncation::kLeft;
    const auto dataset = verl::data::RLHFDataset::from_file(path, qwen3(), options);
    std::vector<int64_t> indices(static_cast<size_t>(std::min<int64_t>(dataset.size(), 4)));
    for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
    if (!indices.empty()) (void)dataset.batch(indices);
  });
  return 0;
}
