// rollout::DecodeInputs, what the CUDA decode graphs capture and replay: a decode batch staged into the fixed
// buffer and padded to a bucket gives, for its real rows, the logits of the eager forward and of the full forward.
// Runs on the CPU (the graphs themselves: tests/cpp/rollout/test_engine.cpp, CUDA only).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <vector>

#include "rollout/decode_graphs.h"
#include "verl/core/error.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/rollout/kv_cache.h"
#include "tensor_compare.h"

using verl::model::CausalLM;
using verl::model::ModelConfig;
using verl::rollout::BlockManager;
using verl::rollout::DecodeInputs;
using verl::rollout::PagedKVCache;
using verl::testing::max_diff;

TEST_CASE("DecodeInputs: a staged decode batch padded to its bucket equals the eager and the full forward",
          "[rollout]") {
  verl::Json j = {{"model_type", "qwen2"},          {"vocab_size", 64},        {"hidden_size", 32},
                  {"intermediate_size", 48},        {"num_hidden_layers", 2},  {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},       {"rms_norm_eps", 1e-6},    {"rope_theta", 10000.0},
                  {"max_position_embeddings", 64}, {"tie_word_embeddings", false}};
  torch::manual_seed(0);
  CausalLM m(ModelConfig::from_json(j));
  m.to(torch::kDouble);
  torch::NoGradGuard no_grad;
  const int64_t block_size = 4, num_blocks = 24;
  PagedKVCache cache(m.config(), num_blocks, block_size, m.dtype(), m.device());
  REQUIRE(cache.uses_kernel(1));  // the paged-attention kernel, as the graphs require
  BlockManager blocks(num_blocks, block_size);
  // Three rows: prompts of 5, 9 and 3 tokens prefilled one row at a time, then one decode token each.
  std::vector<std::vector<int64_t>> tokens;
  std::vector<std::vector<int64_t>> tables(3);
  for (int64_t len : {6, 10, 4}) {
    torch::Tensor t = torch::randint(64, {len}, torch::kLong);
    tokens.emplace_back(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + len);
  }
  std::vector<std::pair<int64_t, int64_t>> copies;
  for (size_t i = 0; i < 3; ++i) {
    const int64_t p = static_cast<int64_t>(tokens[i].size()) - 1;
    std::vector<int64_t> slots = blocks.append_slots(tables[i], 0, p, copies);
    torch::Tensor ids = torch::tensor(std::vector<int64_t>(tokens[i].begin(), tokens[i].begin() + p)).view({1, p});
    torch::Tensor pos = torch::arange(p, torch::kLong).view({1, p});
    cache.set_batch({torch::tensor(slots), torch::tensor(tables[i]).view({1, -1}), pos});
    m.forward_cached(ids, pos, cache, torch::Tensor(), torch::tensor({p - 1}));
  }
  // The decode step's host arrays, as Engine::run builds them.
  const int64_t bs = 3;
  int64_t max_blocks = 0;
  std::vector<int64_t> ids, pos, slots;
  for (size_t i = 0; i < 3; ++i) {
    const int64_t p = static_cast<int64_t>(tokens[i].size()) - 1;
    slots.push_back(blocks.append_slots(tables[i], p, 1, copies).at(0));
    ids.push_back(tokens[i].back());
    pos.push_back(p);
    max_blocks = std::max<int64_t>(max_blocks, static_cast<int64_t>(tables[i].size()));
  }
  REQUIRE(copies.empty());
  std::vector<int64_t> table(bs * max_blocks, 0);
  for (int64_t i = 0; i < bs; ++i) std::copy(tables[i].begin(), tables[i].end(), table.begin() + i * max_blocks);

  cache.set_batch({torch::tensor(slots), torch::tensor(table).view({bs, max_blocks}), torch::tensor(pos).view({bs, 1})});
  torch::Tensor eager = m.forward_cached(torch::tensor(ids).view({bs, 1}), torch::tensor(pos).view({bs, 1}), cache,
                                         torch::Tensor(), torch::zeros({bs}, torch::kLong));
  DecodeInputs inputs(/*max_rows=*/8, /*max_blocks=*/8, m.device());
  // The batch itself, and padded to buckets of more rows (4, 8) and more table columns (up to 8).
  for (auto [rows, blocks] : std::vector<std::pair<int64_t, int64_t>>{{3, max_blocks}, {4, max_blocks}, {8, 4}, {4, 8}}) {
    INFO("bucket " << rows << " x " << blocks);
    inputs.stage(ids.data(), pos.data(), slots.data(), table.data(), bs, max_blocks, rows, blocks);
    torch::Tensor padded = inputs.forward(m, cache, rows, blocks);
    REQUIRE(padded.sizes() == torch::IntArrayRef{rows, 64});
    CHECK(max_diff(padded.narrow(0, 0, bs), eager) < 1e-12);
    CHECK(torch::isfinite(padded).all().item<bool>());  // the padding rows read the scratch slot they wrote
  }
  // The ids as a tensor on the buffer's device (an async-scheduled step's: the previous step's tokens, not yet on the
  // host): the host array is not read (its -1s would fail the embedding).
  const std::vector<int64_t> unknown(bs, -1);
  inputs.stage(unknown.data(), pos.data(), slots.data(), table.data(), bs, max_blocks, 4, max_blocks,
               torch::tensor(ids));
  CHECK(max_diff(inputs.forward(m, cache, 4, max_blocks).narrow(0, 0, bs), eager) < 1e-12);
  CHECK_THROWS_AS(inputs.stage(unknown.data(), pos.data(), slots.data(), table.data(), bs, max_blocks, 4, max_blocks,
                               torch::tensor(ids).narrow(0, 0, 2)),
                  verl::InvalidArgument);  // not one id per row
  CHECK_THROWS_AS(inputs.stage(unknown.data(), pos.data(), slots.data(), table.data(), bs, max_blocks, 4, max_blocks,
                               torch::tensor(ids).to(torch::kInt)),
                  verl::InvalidArgument);  // not int64
  for (int64_t i = 0; i < bs; ++i) {
    torch::Tensor full = m.forward(torch::tensor(tokens[i]).unsqueeze(0))[0].select(0, -1);
    CHECK(max_diff(eager[i], full) < 1e-10);
  }
  // The padding wrote only the scratch slot: the rows' keys and values, hence their logits, are unchanged.
  cache.set_batch({torch::tensor(slots), torch::tensor(table).view({bs, max_blocks}), torch::tensor(pos).view({bs, 1})});
  CHECK(max_diff(m.forward_cached(torch::tensor(ids).view({bs, 1}), torch::tensor(pos).view({bs, 1}), cache,
                                  torch::Tensor(), torch::zeros({bs}, torch::kLong)),
                 eager) == 0.0);
  // A batch that does not fit is refused before anything is written.
  CHECK_THROWS_AS(inputs.stage(ids.data(), pos.data(), slots.data(), table.data(), bs, max_blocks, 2, 8),
                  verl::InvalidArgument);  // more rows than the bucket
  CHECK_THROWS_AS(inputs.stage(ids.data(), pos.data(), slots.data(), table.data(), bs, max_blocks, 9, 8),
                  verl::InvalidArgument);  // a bucket above max_rows
  CHECK_THROWS_AS(inputs.stage(ids.data(), pos.data(), slots.data(), table.data(), bs, max_blocks, 4, 2),
                  verl::InvalidArgument);  // fewer table columns than the batch's
  CHECK_THROWS_AS(inputs.forward(m, cache, 4, 9), verl::InvalidArgument);
}
