// verl::trainer's generation layout (verl/trainer/generation.h), the one builder behind the trainer's
// generate_sequences, LLM.generate_sequences and the agent loops: known tensors for hand-made rows -- left-padded
// prompts, right-padded responses, masks (a tool token inside a response), positions, truncation -- and DataError for
// a prompt longer than its width.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <vector>

#include "verl/core/error.h"
#include "verl/trainer/generation.h"

using verl::trainer::generation_layout;
using verl::trainer::left_pad_prompts;
using verl::trainer::pad_responses;

namespace {

torch::Tensor longs(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<torch::Tensor> out;
  for (const auto& r : rows) out.push_back(torch::tensor(r, torch::kLong));
  return torch::stack(out);
}

}  // namespace

TEST_CASE("generation layout: prompts left-padded, responses right-padded, positions continued", "[trainer][layout]") {
  const int64_t pad = 9;
  auto [ids, mask] = left_pad_prompts({{5, 6}, {7}}, 3, pad);
  CHECK(torch::equal(ids, longs({{9, 5, 6}, {9, 9, 7}})));
  CHECK(torch::equal(mask, longs({{0, 1, 1}, {0, 0, 1}})));

  // row 0: three tokens, the middle one a tool's; row 1: five tokens cut to the width 4; log-probs for row 0 only
  const auto r = pad_responses({{1, 2, 3}, {4, 4, 4, 4, 4}}, {{1, 0, 1}, {1, 1, 1, 1, 1}}, {{-0.5, 0.0, -1.5}, {}}, 4,
                               pad);
  CHECK(torch::equal(r.ids, longs({{1, 2, 3, 9}, {4, 4, 4, 4}})));
  CHECK(torch::equal(r.mask, longs({{1, 0, 1, 0}, {1, 1, 1, 1}})));
  CHECK(torch::equal(r.attention, longs({{1, 1, 1, 0}, {1, 1, 1, 1}})));
  CHECK(torch::equal(r.log_probs, torch::tensor({-0.5f, 0.0f, -1.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}).view({2, 4})));

  const auto layout = generation_layout(ids, mask, torch::Tensor(), r);
  CHECK(torch::equal(layout.at("prompts"), ids));
  CHECK(torch::equal(layout.at("responses"), r.ids));
  CHECK(torch::equal(layout.at("input_ids"), longs({{9, 5, 6, 1, 2, 3, 9}, {9, 9, 7, 4, 4, 4, 4}})));
  // every real token attended (the tool's too); the loss mask is the policy's tokens only
  CHECK(torch::equal(layout.at("attention_mask"), longs({{0, 1, 1, 1, 1, 1, 0}, {0, 0, 1, 1, 1, 1, 1}})));
  CHECK(torch::equal(layout.at("response_mask"), r.mask));
  // real tokens count from 0; a response continues its prompt's positions (through its padding too)
  CHECK(torch::equal(layout.at("position_ids"), longs({{0, 0, 1, 2, 3, 4, 5}, {0, 0, 0, 1, 2, 3, 4}})));
  CHECK(layout.at("rollout_log_probs").scalar_type() == torch::kFloat32);

  // given positions are kept (e.g. a dataset's own), the responses continue them
  const torch::Tensor given = longs({{0, 10, 11}, {0, 0, 20}});
  CHECK(torch::equal(generation_layout(ids, mask, given, r).at("position_ids"),
                     longs({{0, 10, 11, 12, 13, 14, 15}, {0, 0, 20, 21, 22, 23, 24}})));
}

TEST_CASE("generation layout: bad rows are named", "[trainer][layout]") {
  CHECK_THROWS_AS(left_pad_prompts({{1, 2, 3, 4}}, 3, 0), verl::DataError);
  CHECK_THROWS_WITH(left_pad_prompts({{1}, {1, 2, 3, 4}}, 3, 0), Catch::Contains("sample 1: prompt of 4 tokens"));
  CHECK_THROWS_WITH(pad_responses({{1, 2}}, {{1}}, {}, 4, 0), Catch::Contains("row 0 has 2 response tokens"));
  CHECK_THROWS_WITH(pad_responses({{1, 2}}, {}, {{0.0}}, 4, 0), Catch::Contains("1 log-probs"));
}
