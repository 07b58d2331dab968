// actor_rollout_ref.rollout.enforce_eager / cudagraph_capture_sizes (vLLM's keys) reach the rollout engine; bad
// sizes are a ConfigError naming the key. The graphs themselves run only on CUDA (tests/cpp/rollout/test_engine.cpp).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "rollout/decode_graphs.h"
#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/trainer/ppo_trainer.h"
#include "ppo_toy.h"

using namespace verl;
using verl::testing::ppo_toy::tiny_model;
using verl::testing::ppo_toy::toy_config;

namespace {

trainer::RewardOutput no_reward(const DataProto&) { return {}; }

}  // namespace

TEST_CASE("rollout.enforce_eager and cudagraph_capture_sizes reach the engine", "[trainer][rollout]") {
  auto model = tiny_model();
  {
    trainer::PPOTrainer t(toy_config("grpo"), {model, nullptr, nullptr, nullptr}, no_reward);
    CHECK_FALSE(t.engine().config().enforce_eager);  // verl's default: graphs on CUDA
    CHECK(t.engine().config().cudagraph_capture_sizes.empty());
    CHECK(t.engine().stats().num_graph_captures == 0);  // the CPU decodes eagerly
  }
  trainer::PPOTrainer t(toy_config("grpo", {"actor_rollout_ref.rollout.enforce_eager=true",
                                            "actor_rollout_ref.rollout.cudagraph_capture_sizes=[8,1,4]"}),
                        {model, nullptr, nullptr, nullptr}, no_reward);
  CHECK(t.engine().config().enforce_eager);
  CHECK(t.engine().config().cudagraph_capture_sizes == std::vector<int64_t>{8, 1, 4});
  for (const char* bad : {"[0]", "[2,-1]", "[1.5]", "abc"}) {
    INFO(bad);
    const Config config =
        toy_config("grpo", {std::string("actor_rollout_ref.rollout.cudagraph_capture_sizes=") + bad});
    CHECK_THROWS_AS(trainer::PPOTrainer(config, {model, nullptr, nullptr, nullptr}, no_reward), ConfigError);
    CHECK_THROWS_WITH(trainer::PPOTrainer(config, {model, nullptr, nullptr, nullptr}, no_reward),
                      Catch::Contains("cudagraph_capture_sizes"));
  }
}

TEST_CASE("decode graph buckets: vLLM-like defaults, given sizes sorted and capped", "[rollout]") {
  using verl::rollout::decode_graph_sizes;
  CHECK(decode_graph_sizes({}, 64) == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 48, 64});
  CHECK(decode_graph_sizes({}, 40) == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 40});
  CHECK(decode_graph_sizes({}, 3) == std::vector<int64_t>{1, 2, 3});
  CHECK(decode_graph_sizes({}, 1) == std::vector<int64_t>{1});
  CHECK(decode_graph_sizes({64, 8, 8, 1, 1000}, 256) == std::vector<int64_t>{1, 8, 64});
  CHECK(decode_graph_sizes({512}, 256).empty());  // every batch above the largest size: eager
  CHECK_THROWS_AS(decode_graph_sizes({4, 0}, 256), InvalidArgument);
  CHECK_THROWS_AS(decode_graph_sizes({}, 0), InvalidArgument);
}
