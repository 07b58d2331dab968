// verl's one-step off-policy trainer (actor_rollout_ref.hybrid_engine=false; PPOTrainer::submit_rollouts /
// wait_rollouts): batch N+1 is sampled from the weights after step N-1 while step N trains, bit for bit the same
// whether the generation overlaps the update or finishes before it; the misuse errors; the synchronous calls stay
// on-policy; the timing names.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <map>
#include <stdexcept>
#include <string>

#include "dist/thread_group.h"
#include "verl/core/error.h"
#include "verl/rollout/engine.h"
#include "verl/trainer/ppo_trainer.h"
#include "verl/workers/actor.h"
#include "ppo_toy.h"
#include "tensor_compare.h"

using namespace verl;
using namespace verl::trainer;
using namespace verl::testing::ppo_toy;
using verl::testing::max_diff;

namespace {

using State = std::map<std::string, torch::Tensor>;

Config one_step_config(std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), "actor_rollout_ref.hybrid_engine=false");
  return toy_config("grpo", std::move(extra));
}

State snapshot(const model::CausalLM& m) {
  State s;
  for (const auto& [name, t] : m.named_state()) s[name] = t.detach().clone();
  return s;
}

// The log-probs of `batch`'s responses under the weights `state` (a fresh actor on a copy of the model).
torch::Tensor log_probs_under(const State& state, const DataProto& batch, const Config& config) {
  auto m = tiny_model();
  {
    torch::NoGradGuard no_grad;
    m->load_state_dict(state, /*strict=*/true);
  }
  workers::ActorWorker worker(config, m);
  DataProto input = batch.select(std::vector<std::string>{"input_ids", "attention_mask", "position_ids", "responses"},
                                 std::vector<std::string>{}, std::vector<std::string>{});
  return worker.compute_log_prob(input, false).tensor("old_log_probs");
}

// Three steps of verl's loop on prompt batches 3, 4, 5. overlapped: wait, submit the next, optimize (the
// generation runs beside the update); otherwise every submitted batch is waited for before the update starts.
struct Run {
  std::vector<Metrics> metrics;
  std::vector<DataProto> batches;  // as waited for
  std::vector<State> weights;      // the actor's before step 1, after step 1, after step 2, after step 3
  State final_engine;
};

Run run_loop(bool overlapped) {
  Run run;
  auto actor = tiny_model();
  PPOTrainer t(one_step_config(), {actor}, target_fraction);
  REQUIRE(t.engine().model() != actor);
  run.weights.push_back(snapshot(*actor));
  t.submit_rollouts(prompt_batch(3));
  DataProto batch = t.wait_rollouts();
  for (int64_t next_seed : {4, 5, 0}) {
    run.batches.push_back(batch);
    std::optional<DataProto> held;
    if (next_seed != 0) {
      t.submit_rollouts(prompt_batch(next_seed));
      CHECK(t.rollouts_in_flight());
      if (!overlapped) held = t.wait_rollouts();
    }
    run.metrics.push_back(t.optimize(batch));
    run.weights.push_back(snapshot(*actor));
    if (next_seed != 0) batch = held ? *held : t.wait_rollouts();
  }
  CHECK_FALSE(t.rollouts_in_flight());
  run.final_engine = snapshot(*t.engine().model());
  return run;
}

}  // namespace

TEST_CASE("one-step off-policy: batch N+1 comes from the weights after step N-1, overlapped or not", "[trainer]") {
  Run overlapped = run_loop(true);
  Run serial = run_loop(false);
  REQUIRE(overlapped.batches.size() == 3);

  // The thread changes nothing: the same samples, metrics and weights bit for bit.
  for (size_t k = 0; k < 3; ++k) {
    INFO("step " << k + 1);
    for (const char* key : {"responses", "rollout_log_probs", "token_level_scores"})
      CHECK(torch::equal(overlapped.batches[k].tensor(key), serial.batches[k].tensor(key)));
    for (const auto& [name, value] : overlapped.metrics[k]) {
      if (name.rfind("timing_s/", 0) == 0 || name.rfind("timing_per_token_ms/", 0) == 0 || name.rfind("perf/", 0) == 0)
        continue;
      INFO(name);
      CHECK(value == serial.metrics[k].at(name));
    }
  }
  for (const auto& [name, t] : overlapped.weights.back()) CHECK(torch::equal(t, serial.weights.back().at(name)));

  // Staleness one: batches 1 and 2 were sampled from the initial weights, batch 3 from those after step 1 -- and
  // not from the weights the actor had when it trained on them. (The engine's cached decode and the training
  // forward agree to ~1e-7 in float64: the float32 RMSNorm and RoPE tables of transformers' numerics; one update
  // moves the log-probs by more than 1e-4.)
  const Config config = one_step_config();
  const std::vector<size_t> sampled_from = {0, 0, 1};
  for (size_t k = 0; k < 3; ++k) {
    INFO("batch " << k + 1);
    const DataProto& b = overlapped.batches[k];
    torch::Tensor mask = b.tensor("response_mask").to(torch::kBool);
    torch::Tensor rollout = b.tensor("rollout_log_probs").masked_select(mask);
    CHECK(max_diff(rollout, log_probs_under(overlapped.weights[sampled_from[k]], b, config).masked_select(mask)) < 1e-6);
    if (k > 0) CHECK(max_diff(rollout, log_probs_under(overlapped.weights[k], b, config).masked_select(mask)) > 1e-4);
  }
  // verl's rollout-vs-training probability gap shows it: zero on the first step, not after.
  CHECK(overlapped.metrics[0].at("training/rollout_probs_diff_max") < 1e-6);
  CHECK(overlapped.metrics[1].at("training/rollout_probs_diff_max") > 1e-4);
  // With nothing in flight after the last step, its update reached the engine's copy at once.
  for (const auto& [name, t] : overlapped.final_engine) CHECK(torch::equal(t, overlapped.weights[3].at(name)));
}

TEST_CASE("one-step off-policy: timing names, the step excludes the overlapped stages", "[trainer]") {
  PPOTrainer t(one_step_config(), {tiny_model()}, target_fraction);
  t.submit_rollouts(prompt_batch(3));
  DataProto batch = t.wait_rollouts();
  const Json& timing = batch.meta_info().at("timing_s");
  for (const char* key : {"gen", "generate_async", "reward_async"}) CHECK(timing.contains(key));
  CHECK_FALSE(timing.contains("reward"));
  t.submit_rollouts(prompt_batch(4));
  Metrics m = t.optimize(batch);
  for (const char* key : {"timing_s/gen", "timing_s/generate_async", "timing_s/reward_async",
                          "timing_s/sync_rollout_weights", "timing_s/update_actor"})
    CHECK(m.count(key) == 1);
  double sum = 0;
  for (const auto& [name, value] : m) {
    if (name.rfind("timing_s/", 0) != 0 || name == "timing_s/step") continue;
    if (name.size() < 6 || name.compare(name.size() - 6, 6, "_async") != 0) sum += value;
  }
  CHECK(m.at("timing_s/step") == Approx(sum).epsilon(1e-12));
  CHECK(m.at("timing_s/step") < sum + m.at("timing_s/generate_async"));
  t.wait_rollouts();
}

TEST_CASE("one-step off-policy: the synchronous calls stay on-policy", "[trainer]") {
  auto actor = tiny_model();
  PPOTrainer t(one_step_config(), {actor}, target_fraction);
  t.step(prompt_batch(3));
  // collect_rollouts hands the updated weights over first: the rollout is the actor's policy.
  Metrics m = t.step(prompt_batch(4));
  CHECK(m.at("training/rollout_probs_diff_max") < 1e-6);
  // With no batch in flight the update hands its weights over at once, as the hybrid engine's would be.
  for (const auto& [name, w] : snapshot(*t.engine().model())) CHECK(torch::equal(w, actor->named_state().at(name)));
  CHECK(t.generate_validation(prompt_batch(5)).size() == kPrompts);
}

TEST_CASE("one-step off-policy: misuse and errors", "[trainer]") {
  SECTION("the hybrid engine cannot generate while it trains") {
    PPOTrainer t(toy_config("grpo"), {tiny_model()}, target_fraction);
    CHECK_THROWS_AS(t.submit_rollouts(prompt_batch()), ConfigError);
    CHECK_THROWS_AS(t.wait_rollouts(), InvalidArgument);
  }
  SECTION("one batch in flight; the engine's users wait for it") {
    PPOTrainer t(one_step_config(), {tiny_model()}, target_fraction);
    CHECK_THROWS_AS(t.wait_rollouts(), InvalidArgument);
    t.submit_rollouts(prompt_batch(3));
    CHECK_THROWS_AS(t.submit_rollouts(prompt_batch(4)), InvalidArgument);
    CHECK_THROWS_AS(t.collect_rollouts(prompt_batch(4)), InvalidArgument);
    CHECK_THROWS_AS(t.step(prompt_batch(4)), InvalidArgument);
    CHECK_THROWS_AS(t.generate_validation(prompt_batch(4)), InvalidArgument);
    CHECK_THROWS_AS(t.set_global_step(3), InvalidArgument);
    DataProto b = t.wait_rollouts();
    CHECK(b.has_tensor("token_level_scores"));
    CHECK_THROWS_AS(t.submit_rollouts(DataProto()), DataError);
    CHECK_FALSE(t.rollouts_in_flight());
  }
  SECTION("the thread's exception reaches wait_rollouts; the trainer goes on") {
    int calls = 0;
    PPOTrainer t(one_step_config(), {tiny_model()}, [&calls](const DataProto& b) {
      if (++calls == 1) throw std::runtime_error("reward server down");
      return target_fraction(b);
    });
    t.submit_rollouts(prompt_batch(3));
    CHECK_THROWS_WITH(t.wait_rollouts(), "reward server down");
    CHECK_FALSE(t.rollouts_in_flight());
    t.submit_rollouts(prompt_batch(3));
    CHECK(t.optimize(t.wait_rollouts()).at("training/global_step") == 1);
  }
  SECTION("discard_rollouts starts the loop afresh") {
    PPOTrainer t(one_step_config(), {tiny_model()}, target_fraction);
    t.submit_rollouts(prompt_batch(3));
    t.wait_rollouts();                  // waited for, never optimized (a loop that failed)
    t.submit_rollouts(prompt_batch(4));  // labelled step 2
    t.discard_rollouts();
    CHECK_FALSE(t.rollouts_in_flight());
    t.discard_rollouts();  // nothing in flight: no-op
    t.submit_rollouts(prompt_batch(3));
    DataProto b = t.wait_rollouts();
    CHECK(b.column("uid")[0] == "step1.0-0");  // step 1's uids and seeds again
  }
  SECTION("a destroyed trainer finishes its batch first") {
    auto t = std::make_unique<PPOTrainer>(one_step_config(), PPOTrainerModels{tiny_model()}, target_fraction);
    t->submit_rollouts(prompt_batch(3));
    t.reset();
  }
  SECTION("configurations it cannot run") {
    auto actor = tiny_model();
    auto shared = std::make_shared<rollout::Engine>(actor, rollout::EngineConfig{});
    CHECK_THROWS_AS(PPOTrainer(one_step_config(), {actor, nullptr, nullptr, shared}, target_fraction), ConfigError);
    CHECK_THROWS_AS(PPOTrainer(one_step_config({"algorithm.filter_groups.enable=true"}), {tiny_model()},
                               target_fraction),
                    ConfigError);
    // verl's rollout pool (rollout.nnodes x rollout.n_gpus_per_node ranks of its own): laid out or refused by name.
    CHECK_THROWS_WITH(PPOTrainer(one_step_config({"+rollout.nnodes=1", "+rollout.n_gpus_per_node=1"}), {tiny_model()},
                                 target_fraction),
                      Catch::Contains("asks for a rollout pool") && Catch::Contains("rollout.n_gpus_per_node=0"));
    CHECK_THROWS_WITH(PPOTrainer(toy_config("grpo", {"+rollout.nnodes=1", "+rollout.n_gpus_per_node=0"}),
                                 {tiny_model()}, target_fraction),
                      Catch::Contains("rollout.nnodes") && Catch::Contains("hybrid_engine=false"));
    CHECK_THROWS_WITH(PPOTrainer(one_step_config({"+rollout.nnodes=0", "+rollout.n_gpus_per_node=1"}), {tiny_model()},
                                 target_fraction),
                      Catch::Contains("rollout.nnodes must be an integer >= 1"));
    CHECK_THROWS_WITH(PPOTrainer(one_step_config({"+rollout.nnodes=2", "+rollout.n_gpus_per_node=0"}), {tiny_model()},
                                 target_fraction),
                      Catch::Contains("rollout.nnodes=2 with rollout.n_gpus_per_node=0"));
    auto hub = std::make_shared<verl::testing::ThreadExchange>(2);
    PPOTrainerOptions pooled;
    pooled.mesh.rollout_pool = verl::testing::thread_communicator(0, 2, hub);  // the controller and one pool rank
    CHECK_THROWS_WITH(PPOTrainer(one_step_config(), {tiny_model()}, target_fraction, pooled),
                      Catch::Contains("the config asks for none"));
    CHECK_THROWS_WITH(PPOTrainer(one_step_config({"+rollout.nnodes=1", "+rollout.n_gpus_per_node=2"}), {tiny_model()},
                                 target_fraction, pooled),
                      Catch::Contains("= 2 rollout ranks") && Catch::Contains("has 2 ranks"));
    CHECK_THROWS_WITH(PPOTrainer(one_step_config({"+rollout.nnodes=1", "+rollout.n_gpus_per_node=1",
                                                  "actor_rollout_ref.rollout.tensor_model_parallel_size=2"}),
                                 {tiny_model()}, target_fraction, pooled),
                      Catch::Contains("does not divide the rollout pool's 1 ranks"));
    // Agent loops run on the pool's ranks: the controller takes no rollout_fn, a pool rank needs one.
    PPOTrainerOptions looping = pooled;
    looping.rollout_fn = [](const DataProto& rows, const rollout::SamplingParams&, int64_t) { return rows; };
    const std::vector<std::string> pool_turns{"+rollout.nnodes=1", "+rollout.n_gpus_per_node=1",
                                              "actor_rollout_ref.rollout.multi_turn.enable=true"};
    CHECK_THROWS_WITH(PPOTrainer(one_step_config(pool_turns), {tiny_model()}, target_fraction, looping),
                      Catch::Contains("the agent loops run on the pool's ranks"));
    {
      PPOTrainerOptions pool_rank;
      pool_rank.mesh.rollout_pool = verl::testing::thread_communicator(1, 2, hub);
      CHECK_THROWS_WITH(PPOTrainer(one_step_config(pool_turns), {tiny_model()}, target_fraction, pool_rank),
                        Catch::Contains("none was given"));
    }
    {
      // The controller of a pooled job holds no engine: the pool's ranks generate.
      PPOTrainer controller(one_step_config({"+rollout.nnodes=1", "+rollout.n_gpus_per_node=1"}), {tiny_model()},
                            target_fraction, pooled);
      CHECK(controller.is_controller());
      CHECK_FALSE(controller.is_rollout_pool_rank());
      CHECK_THROWS_WITH(controller.engine(), Catch::Contains("the pool's ranks hold the rollout engine"));
      PPOTrainerOptions pool_rank;
      pool_rank.mesh.rollout_pool = verl::testing::thread_communicator(1, 2, hub);
      // A pool rank trains nothing: no actor, reference or critic workers; its actor module is the rollout's copy.
      PPOTrainer generator(one_step_config({"+rollout.nnodes=1", "+rollout.n_gpus_per_node=1",
                                            "actor_rollout_ref.actor.use_kl_loss=true", "critic.enable=true"}),
                           {tiny_model()}, target_fraction, pool_rank);
      CHECK_FALSE(generator.is_controller());
      CHECK(generator.is_rollout_pool_rank());
      CHECK(generator.engine().model() == generator.models().actor);
      CHECK(generator.ref() == nullptr);
      CHECK(generator.critic() == nullptr);
      CHECK_THROWS_AS(generator.actor(), InvalidArgument);
      CHECK_THROWS_WITH(generator.optimizer("actor"), Catch::Contains("the rollout pool, which trains nothing"));
      // It generates in the dtype the trainer computes in, which never widens a 16-bit master.
      auto bf16_master = tiny_model();
      bf16_master->to(torch::kCPU, torch::kBFloat16);
      PPOTrainer bf16_pool(one_step_config({"+rollout.nnodes=1", "+rollout.n_gpus_per_node=1",
                                            "actor_rollout_ref.actor.fsdp_config.dtype=float32"}),
                           {bf16_master}, target_fraction, pool_rank);
      CHECK(bf16_pool.engine().model()->dtype() == torch::kBFloat16);
    }
    // An engine on a module of its own is the rollout's copy.
    auto replica = std::make_shared<rollout::Engine>(tiny_model(), rollout::EngineConfig{});
    PPOTrainer t(one_step_config(), {tiny_model(), nullptr, nullptr, replica}, target_fraction);
    t.submit_rollouts(prompt_batch(3));
    CHECK(t.wait_rollouts().size() == kPrompts * kN);
  }
}
