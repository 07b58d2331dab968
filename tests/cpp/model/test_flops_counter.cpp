// verl::model::FlopsCounter against hand-computed verl formulas (verl 0.9.1 _estimate_qwen2_flops) and the MFU
// arithmetic of TrainingWorker._postprocess_output.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "verl/core/error.h"
#include "verl/model/flops_counter.h"
#include "verl/model/model_config.h"

using namespace verl;
using namespace verl::model;

namespace {

ModelConfig small_config(const std::string& type, int64_t hidden, int64_t intermediate, int64_t layers,
                         int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t vocab) {
  ModelConfig c;
  c.model_type = type;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = head_dim;
  c.vocab_size = vocab;
  return c;
}

}  // namespace

TEST_CASE("flops counter: qwen2 GQA config matches verl's formula by hand") {
  // hidden 32, intermediate 48, 2 layers, 4 heads of 8, 2 kv heads, vocab 32:
  //   mlp 32*48*3 = 4608; attention linears 32*(32+16+16+32) = 3072; embedding + lm head 2*32*32 = 2048
  //   dense = (4608 + 3072) * 2 + 2048 = 17408
  // seqlens {3, 5}: 6*17408*8 + 6*(9+25)*8*4*2 = 835584 + 13056 = 848640
  FlopsCounter counter(small_config("qwen2", 32, 48, 2, 4, 2, 8, 32));
  CHECK(counter.dense_params() == 17408.0);
  CHECK(counter.estimate_flops({3, 5}) == 848640.0);
  CHECK(counter.estimate_flops({}) == 0.0);
  // Linear in tokens, quadratic in each sequence's length: one sequence of 8 costs more than 3 + 5.
  CHECK(counter.estimate_flops({8}) == 6 * 17408.0 * 8 + 6 * 64.0 * 64);
}

TEST_CASE("flops counter: qwen3 explicit head_dim wider than hidden / heads") {
  // hidden 32, 4 heads of 16 (q 64), 2 kv heads (k = v = 32), intermediate 48, 1 layer, vocab 10:
  //   mlp 4608; attention linears 32*(64+32+32+64) = 6144; embedding + lm head 640; dense 11392
  // seqlens {4}: 6*11392*4 + 6*16*16*4*1 = 273408 + 6144 = 279552
  FlopsCounter counter(small_config("qwen3", 32, 48, 1, 4, 2, 16, 10));
  CHECK(counter.dense_params() == 11392.0);
  CHECK(counter.estimate_flops({4}) == 279552.0);
}

TEST_CASE("flops counter: a 0.5B-class config gives the textbook ~6 N per token") {
  // Qwen2.5-0.5B: hidden 896, intermediate 4864, 24 layers, 14 heads of 64, 2 kv heads, vocab 151936.
  FlopsCounter counter(small_config("qwen2", 896, 4864, 24, 14, 2, 64, 151936));
  // (896*4864*3 + 896*(896+128+128+896)) * 24 + 2*151936*896 = 357826560 + 272269312
  CHECK(counter.dense_params() == 630095872.0);
  CHECK(counter.estimate_flops({1}) == Approx(6 * 630095872.0 + 6 * 64.0 * 14 * 24));
}

TEST_CASE("flops counter: bad input is a typed error") {
  FlopsCounter counter(small_config("qwen2", 32, 48, 2, 4, 2, 8, 32));
  CHECK_THROWS_AS(counter.estimate_flops({3, -1}), InvalidArgument);
  CHECK_THROWS_AS(FlopsCounter(small_config("qwen2", 0, 48, 2, 4, 2, 8, 32)), InvalidArgument);
  CHECK_THROWS_AS(model_flops_utilization(1e9, 0.0, 1e12), InvalidArgument);
  CHECK_THROWS_AS(model_flops_utilization(1e9, 1.0, 0.0), InvalidArgument);
  CHECK_THROWS_AS(model_flops_utilization(1e9, 1.0, 1e12, 0), InvalidArgument);
}

TEST_CASE("mfu: flops / time / peak / world size, a third for forward-only passes") {
  CHECK(model_flops_utilization(1e12, 2.0, 1e12) == Approx(0.5));
  CHECK(model_flops_utilization(1e12, 2.0, 1e12, 2) == Approx(0.25));
  CHECK(model_flops_utilization(3e12, 1.0, 4e12, 1, /*forward_only=*/true) == Approx(0.25));
}
