// libFuzzer target: tokenizer.json loading, and encode/decode on a real tokenizer.
// An input starting with '{' is a tokenizer.json (loaded, then used on a few texts and ids); any
// other input is text for the Qwen3 tokenizer of the fixtures (encode, then decode of both the
// resulting ids and ids read from the raw bytes, out-of-range ones included).
#include <cstring>
#include <optional>

#include "fuzz_common.h"
#include "verl/tokenizer/tokenizer.h"

namespace {

using verl::tokenizer::Tokenizer;

const Tokenizer& qwen3() {
  static const Tokenizer tokenizer = Tokenizer::from_file(VERL_FUZZ_QWEN3_TOKENIZER);
  return tokenizer;
}

void exercise(const Tokenizer& tokenizer, std::string_view text, const std::vector<int32_t>& raw_ids) {
  const std::vector<int32_t> ids = tokenizer.encode(text, true);
  (void)tokenizer.decode(ids, false);
  (void)tokenizer.decode(raw_ids, true);
  (void)tokenizer.decode(raw_ids, false);
  for (int32_t id : raw_ids) (void)tokenizer.id_to_token(id);
  (void)tokenizer.token_to_id(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = verl::fuzz::as_text(data, size);
  std::vector<int32_t> raw_ids(size / 4);
  if (!raw_ids.empty()) std::memcpy(raw_ids.data(), data, raw_ids.size() * 4);
  if (!input.empty() && input.front() == '{') {
    verl::fuzz::expect_typed_errors([&] {
      const Tokenizer tokenizer = Tokenizer::from_json(input);
      verl::fuzz::expect_typed_errors([&] { exercise(tokenizer, "Hello, world! 123 <|im_end|>", raw_ids); });
      verl::fuzz::expect_typed_errors([&] { exercise(tokenizer, input.substr(0, 256), raw_ids); });
    });
    return 0;
  }
  verl::fuzz::expect_typed_errors([&] { exercise(qwen3(), input, raw_ids); });
  return 0;
}
