// verl::trainer: metrics against hand-computed values, generate_sequences on the shared model (rollout
// log-probs equal the actor's), short PPOTrainer runs (grpo, gae with critic, remax, kl in reward +
// kl loss) with finite metrics under verl's names, determinism, and the reward callback's errors.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/rollout/engine.h"
#include "verl/trainer/generation.h"
#include "verl/trainer/metrics.h"
#include "verl/trainer/ppo_trainer.h"
#include "verl/workers/actor.h"
#include "ppo_toy.h"

using namespace verl;
using namespace verl::trainer;
using namespace verl::testing::ppo_toy;

namespace {

void check_finite_and_present(const Metrics& m, const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    INFO(k);
    REQUIRE(m.count(k) == 1);
    CHECK(std::isfinite(m.at(k)));
  }
}

const std::vector<std::string> kCommonKeys = {
    "timing_s/gen", "timing_s/reward", "timing_s/old_log_prob", "timing_s/adv", "timing_s/update_actor",
    "timing_s/update_weights", "timing_s/step", "actor/entropy", "actor/pg_loss", "actor/pg_clipfrac",
    "actor/ppo_kl", "actor/grad_norm", "actor/lr", "critic/score/mean", "critic/score/max", "critic/score/min",
    "critic/rewards/mean", "critic/advantages/mean", "critic/advantages/max", "critic/advantages/min",
    "critic/returns/mean", "response_length/mean", "response_length/max", "response_length/min",
    "response_length/clip_ratio", "prompt_length/mean", "prompt_length/max", "prompt_length/min",
    "prompt_length/clip_ratio", "perf/total_num_tokens", "perf/time_per_step", "perf/throughput",
    "training/global_step", "training/epoch", "training/rollout_probs_diff_max", "global_seqlen/mean",
    "timing_per_token_ms/gen", "timing_per_token_ms/update_actor", "perf/mfu/actor", "perf/mfu/actor_infer"};

// verl's MFU of a real pass on this machine: a positive fraction of the measured matmul peak.
void check_mfu(const Metrics& m, const std::string& key) {
  INFO(key);
  REQUIRE(m.count(key) == 1);
  CHECK(m.at(key) > 0.0);
  CHECK(m.at(key) <= 1.0);
}

}  // namespace

TEST_CASE("compute_data_metrics matches hand-computed values", "[trainer]") {
  // 2 rows, prompt_length 2, response_length 3; row 1 is aborted (empty response).
  torch::Tensor attention = torch::tensor({{0, 1, 1, 1, 0}, {1, 1, 0, 0, 0}}, torch::kLong);
  torch::Tensor response_mask = attention.slice(1, 2);
  DataProto b({{"prompts", torch::zeros({2, 2}, torch::kLong)},
               {"responses", torch::zeros({2, 3}, torch::kLong)},
               {"attention_mask", attention},
               {"response_mask", response_mask},
               {"token_level_scores", torch::tensor({{0.0, 2.0, 0.0}, {5.0, 0.0, 0.0}})},
               {"token_level_rewards", torch::tensor({{0.0, 1.5, 0.0}, {5.0, 0.0, 0.0}})},
               {"advantages", torch::tensor({{1.0, -3.0, 9.0}, {7.0, 7.0, 7.0}})},
               {"returns", torch::tensor({{2.0, 4.0, 9.0}, {7.0, 7.0, 7.0}})},
               {"values", torch::tensor({{1.0, 3.0, 0.0}, {0.0, 0.0, 0.0}})}});
  Metrics m = compute_data_metrics(b, true);
  CHECK(m["critic/score/mean"] == Approx(2.0));  // only row 0 is not aborted
  CHECK(m["critic/rewards/max"] == Approx(1.5));
  CHECK(m["critic/advantages/mean"] == Approx(-1.0));  // mean(1, -3)
  CHECK(m["critic/advantages/max"] == Approx(1.0));
  CHECK(m["critic/returns/min"] == Approx(2.0));
  CHECK(m["critic/values/mean"] == Approx(2.0));
  // returns - values = (1, 1): var 0; var(returns) = 2 -> 1 - 0 / (2 + 1e-5)
  CHECK(m["critic/vf_explained_var"] == Approx(1.0));
  CHECK(m["response_length/mean"] == Approx(1.0));
  CHECK(m["response_length/max"] == Approx(2.0));
  CHECK(m["response_length/clip_ratio"] == Approx(0.0));
  CHECK(m["response/aborted_ratio"] == Approx(0.5));
  CHECK(m["prompt_length/mean"] == Approx(1.5));
  CHECK(m["prompt_length/clip_ratio"] == Approx(0.5));

  TimingRaw timing{{"gen", 0.5}, {"update_actor", 2.0}, {"step", 4.0}};
  Metrics t = compute_timing_metrics(b, timing);
  CHECK(t["timing_s/gen"] == 0.5);
  CHECK(t["timing_per_token_ms/gen"] == Approx(0.5 * 1000 / 2));           // 2 response tokens
  CHECK(t["timing_per_token_ms/update_actor"] == Approx(2.0 * 1000 / 5));  // 3 prompt + 2 response tokens
  CHECK(t.count("timing_per_token_ms/step") == 0);
  Metrics p = compute_throughout_metrics(b, timing, 1);
  CHECK(p["perf/total_num_tokens"] == 5);
  CHECK(p["perf/throughput"] == Approx(5 / 4.0));

  Metrics u = log_seqlen_unbalance({5, 1, 3, 3}, {{0, 1}, {2, 3}}, "global_seqlen");
  CHECK(u["global_seqlen/min"] == 6);
  CHECK(u["global_seqlen/minmax_diff"] == 0);
  CHECK(u["global_seqlen/mean"] == 6);
}

TEST_CASE("generate_sequences: verl's layout, rollout log-probs equal the actor's", "[trainer]") {
  auto m = tiny_model();
  rollout::Engine engine(m, rollout::EngineConfig{});
  rollout::SamplingParams p;
  p.max_tokens = kResponse;
  DataProto prompts = prompt_batch().repeat(2, true);
  DataProto out = generate_sequences(engine, prompts, p, 0, 11);
  REQUIRE(out.tensor("responses").sizes() == torch::IntArrayRef({8, kResponse}));
  REQUIRE(out.tensor("input_ids").sizes() == torch::IntArrayRef({8, kPrompt + kResponse}));
  CHECK(torch::equal(out.tensor("prompts"), prompts.tensor("input_ids")));
  CHECK(out.column("data_source").size() == 8);
  // position ids continue after the last prompt position
  torch::Tensor pos = out.tensor("position_ids");
  CHECK(torch::equal(pos.slice(1, kPrompt), pos.select(1, kPrompt - 1).unsqueeze(1) + torch::arange(1, kResponse + 1)));
  // same seed -> same samples
  DataProto again = generate_sequences(engine, prompts, p, 0, 11);
  CHECK(torch::equal(again.tensor("responses"), out.tensor("responses")));

  Config c = toy_config("grpo");
  workers::ActorWorker actor(c, m);
  DataProto lp = actor.compute_log_prob(out);
  torch::Tensor mask = out.tensor("response_mask").to(torch::kBool);
  double diff = (lp.tensor("old_log_probs") - out.tensor("rollout_log_probs")).abs().masked_select(mask).max().item<double>();
  CHECK(diff < 1e-5);
}

TEST_CASE("PPOTrainer grpo: two steps, verl's metrics, shared model", "[trainer]") {
  auto m = tiny_model();
  PPOTrainer t(toy_config("grpo"), {m, nullptr, nullptr, nullptr}, target_fraction);
  CHECK(t.ref() == nullptr);
  CHECK(t.critic() == nullptr);
  CHECK(t.engine().model() == m);
  torch::Tensor before = m->named_state().at("lm_head.weight").clone();
  Metrics m1 = t.step(prompt_batch());
  check_finite_and_present(m1, kCommonKeys);
  CHECK(m1["training/global_step"] == 1);
  CHECK(m1.count("critic/values/mean") == 0);
  CHECK(m1["training/rollout_probs_diff_max"] < 1e-5);
  CHECK(m1["perf/total_num_tokens"] > kPrompts * kN * 3);
  check_mfu(m1, "perf/mfu/actor");
  check_mfu(m1, "perf/mfu/actor_infer");
  CHECK(m1.count("perf/mfu/critic") == 0);
  CHECK(m1.count("actor/mfu") == 0);  // renamed as verl's _update_actor does
  CHECK(!torch::equal(before, m->named_state().at("lm_head.weight")));  // the shared model was trained
  Metrics m2 = t.step(prompt_batch(4));
  CHECK(m2["training/global_step"] == 2);
  CHECK(t.global_step() == 2);
  const DataProto& last = t.last_batch();
  CHECK(last.size() == kPrompts * kN);
  CHECK(last.has_column("acc"));
  CHECK(last.has_column("uid"));
  // GRPO advantages: zero mean within each uid group over its tokens' constant value
  CHECK(last.tensor("advantages").sizes() == torch::IntArrayRef({kPrompts * kN, kResponse}));
}

TEST_CASE("PPOTrainer gae with critic, kl in reward and kl loss", "[trainer]") {
  auto m = tiny_model();
  PPOTrainer t(toy_config("gae", {"algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive",
                                  "actor_rollout_ref.actor.use_kl_loss=true", "trainer.critic_warmup=2"}),
               {m, nullptr, nullptr, nullptr}, target_fraction);
  REQUIRE(t.critic() != nullptr);
  REQUIRE(t.ref() != nullptr);
  Metrics m1 = t.step(prompt_batch());
  // critic warmup (verl: actor updates once critic_warmup <= global step): step 1 updates only the critic
  CHECK(m1.count("actor/pg_loss") == 0);
  check_finite_and_present(m1, {"critic/vf_loss", "critic/values/mean", "critic/vf_explained_var", "timing_s/values",
                                "timing_s/ref", "timing_s/update_critic", "actor/reward_kl_penalty",
                                "actor/reward_kl_penalty_coeff"});
  CHECK(m1["actor/reward_kl_penalty"] == Approx(0.0).margin(1e-9));  // actor == ref before any update
  check_mfu(m1, "perf/mfu/critic");
  CHECK(m1.count("perf/mfu/actor") == 0);  // the actor did not train during the critic warmup
  Metrics m2 = t.step(prompt_batch(4));
  check_finite_and_present(m2, kCommonKeys);
  check_finite_and_present(m2, {"actor/kl_loss", "critic/vf_loss"});
  check_mfu(m2, "perf/mfu/critic");
  check_mfu(m2, "perf/mfu/actor");
}

TEST_CASE("PPOTrainer remax: greedy baseline", "[trainer]") {
  auto m = tiny_model();
  PPOTrainer t(toy_config("remax"), {m, nullptr, nullptr, nullptr}, target_fraction);
  Metrics m1 = t.step(prompt_batch());
  check_finite_and_present(m1, kCommonKeys);
  REQUIRE(t.last_batch().has_tensor("reward_baselines"));
  CHECK(t.last_batch().tensor("reward_baselines").sizes() == torch::IntArrayRef({kPrompts * kN}));
}

TEST_CASE("PPOTrainer is deterministic for a seed", "[trainer]") {
  auto run = [] {
    auto m = tiny_model();
    PPOTrainer t(toy_config("rloo"), {m, nullptr, nullptr, nullptr}, target_fraction);
    std::vector<Metrics> out;
    for (int i = 0; i < 2; ++i) out.push_back(t.step(prompt_batch(3 + i)));
    return out;
  };
  auto a = run(), b = run();
  for (size_t s = 0; s < a.size(); ++s) {
    for (const auto& [k, v] : a[s]) {
      // wall-clock dependent: timings, throughput and MFU
      if (k.rfind("timing", 0) == 0 || k.rfind("perf/t", 0) == 0 || k.rfind("perf/mfu/", 0) == 0) continue;
      INFO(k);
      CHECK(b[s].at(k) == v);
    }
  }
}

TEST_CASE("PPOTrainer reward errors", "[trainer]") {
  struct MyError : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  {
    PPOTrainer t(toy_config("grpo"), {tiny_model(), nullptr, nullptr, nullptr},
                 [](const DataProto&) -> RewardOutput { throw MyError("boom"); });
    CHECK_THROWS_AS(t.step(prompt_batch()), MyError);
    CHECK(t.global_step() == 0);
  }
  {
    // The second sample of prompt 2, however the rows are handed to the callback (streamed: a prompt's at a time).
    PPOTrainerOptions per_sample;
    per_sample.reward_per_sample = true;
    PPOTrainer t(toy_config("grpo"), {tiny_model(), nullptr, nullptr, nullptr}, [](const DataProto& b) {
      RewardOutput r = target_fraction(b);
      int64_t seen = 0;
      for (int64_t i = 0; i < b.size(); ++i) {
        if (b.column("uid")[static_cast<size_t>(i)] == "step1.0-2" && ++seen == 2) r.token_level_scores[i][0] = std::nan("");
      }
      return r;
    }, per_sample);
    CHECK_THROWS_WITH(t.step(prompt_batch()), Catch::Contains("uid=\"step1.0-2\"") && Catch::Contains("non-finite") &&
                                                  Catch::Contains("toy"));
    CHECK(t.global_step() == 0);
    // the engine kept nothing of the failed step: the retry (generation batch 1 of step 1) trains
    CHECK(t.step(prompt_batch()).at("training/global_step") == 1);
  }
  {
    PPOTrainer t(toy_config("grpo"), {tiny_model(), nullptr, nullptr, nullptr}, [](const DataProto& b) {
      RewardOutput r;
      r.token_level_scores = torch::zeros({b.size(), 2});
      return r;
    });
    CHECK_THROWS_AS(t.step(prompt_batch()), DataError);
  }
  CHECK_THROWS_AS(PPOTrainer(toy_config("no_such_estimator"), {tiny_model(), nullptr, nullptr, nullptr}, target_fraction),
                  ConfigError);
}

TEST_CASE("PPOTrainer hands the updated weights to an engine on another module", "[trainer]") {
  auto actor = tiny_model();
  auto replica = tiny_model();  // same initial weights, a separate module (a resharded / remote rollout)
  auto engine = std::make_shared<rollout::Engine>(replica, rollout::EngineConfig{});
  PPOTrainer t(toy_config("grpo"), {actor, nullptr, nullptr, engine}, target_fraction);
  CHECK(&t.engine() == engine.get());
  Metrics m = t.step(prompt_batch());
  CHECK(m.count("timing_s/update_weights") == 1);
  // the replica generated with the pre-update weights, which the actor recomputed exactly
  CHECK(m["training/rollout_probs_diff_max"] < 1e-5);
  auto want = actor->named_state();
  for (const auto& [name, tensor] : replica->named_state()) {
    INFO(name);
    CHECK(torch::equal(tensor, want.at(name)));
  }
  CHECK(!torch::equal(want.at("lm_head.weight"), tiny_model()->named_state().at("lm_head.weight")));
}

TEST_CASE("PPOTrainer scores each prompt's samples as they finish, as scoring the batch after would", "[trainer]") {
  // step() streams the scoring beside the generation (verl's reward loop); collect_rollouts + compute_rewards +
  // optimize score the whole batch after it. The same batches, metrics and weights, bit for bit.
  std::vector<int64_t> call_sizes;
  auto counting = [&call_sizes](const DataProto& b) {
    call_sizes.push_back(b.size());
    return target_fraction(b);
  };
  auto streamed_model = tiny_model(), batch_model = tiny_model();
  PPOTrainerOptions per_sample;
  per_sample.reward_per_sample = true;
  PPOTrainer streamed(toy_config("grpo", {"actor_rollout_ref.rollout.ignore_eos=false"}), {streamed_model}, counting,
                      per_sample);
  PPOTrainer whole(toy_config("grpo", {"actor_rollout_ref.rollout.ignore_eos=false"}), {batch_model}, target_fraction);
  for (int64_t seed : {3, 4}) {
    call_sizes.clear();
    Metrics a = streamed.step(prompt_batch(seed));
    // every row scored once, a prompt's n samples together
    int64_t rows = 0;
    for (int64_t size : call_sizes) {
      CHECK(size % kN == 0);
      rows += size;
    }
    CHECK(rows == kPrompts * kN);
    Metrics b = whole.optimize(whole.compute_rewards(whole.collect_rollouts(prompt_batch(seed))));
    for (const char* key : {"responses", "token_level_scores", "advantages", "old_log_probs"})
      CHECK(torch::equal(streamed.last_batch().tensor(key), whole.last_batch().tensor(key)));
    CHECK(streamed.last_batch().column("acc") == whole.last_batch().column("acc"));
    for (const auto& [k, v] : a) {
      if (k.rfind("timing", 0) == 0 || k.rfind("perf/", 0) == 0) continue;
      INFO(k);
      CHECK(b.at(k) == v);
    }
  }
  for (const auto& [name, t] : streamed_model->named_state()) CHECK(torch::equal(t, batch_model->named_state().at(name)));
  // A callback that fails stops the generation (the engine keeps none of it); its own exception reaches the caller.
  struct ScorerDown : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  int failing_calls = 0;
  PPOTrainer failing(toy_config("grpo"), {tiny_model()}, [&failing_calls](const DataProto& b) -> RewardOutput {
    if (++failing_calls == 1) throw ScorerDown("scorer down");
    return target_fraction(b);
  }, per_sample);
  CHECK_THROWS_AS(failing.step(prompt_batch(3)), ScorerDown);
  CHECK_FALSE(failing.engine().has_unfinished_requests());
  CHECK(failing.step(prompt_batch(3)).at("training/global_step") == 1);
  // Without reward_per_sample (a batched function, a reward model) the callback gets the whole batch.
  PPOTrainer batched(toy_config("grpo"), {tiny_model()}, counting);
  call_sizes.clear();
  batched.step(prompt_batch(3));
  CHECK(call_sizes == std::vector<int64_t>{kPrompts * kN});
}
