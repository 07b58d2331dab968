// verl::trainer::fill_batch_defaults: the batch sizes a user need not set, derived in C++ for both languages (the
// Python facade verl.trainer.batch_defaults and PPOTrainer's constructor call it). Known values from the formulas of
// verl/trainer/batch_defaults.h on verl's defaults.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "verl/core/config.h"
#include "verl/trainer/batch_defaults.h"

using verl::Config;
using verl::trainer::fill_batch_defaults;

namespace {

std::map<std::string, int64_t> settled(Config& config, std::optional<int64_t> dataset_size = std::nullopt) {
  std::map<std::string, int64_t> out;
  for (const auto& d : fill_batch_defaults(config, dataset_size)) {
    CHECK(config.get_as<int64_t>(d.key) == d.value);
    CHECK_FALSE(d.why.empty());
    out[d.key] = d.value;
  }
  return out;
}

}  // namespace

TEST_CASE("batch defaults: unset micro-batches fit the token budget, per rank", "[trainer][config]") {
  // 512 + 512 tokens per sequence; the actor's budget 16384 fits 16, the critic's 32768 fits 32.
  Config config = Config::load("", {"actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.rollout.n=3",
                                    "data.train_batch_size=8"});
  auto got = settled(config);
  // the update: the largest divisor of 8 x 3 = 24 rows at most 16 (actor) / 32 (critic): 12 and 24
  CHECK(got.at("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu") == 12);
  CHECK(got.at("critic.ppo_micro_batch_size_per_gpu") == 24);
  // the forward passes: as many of the batch's 24 trajectories as fit
  CHECK(got.at("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu") == 16);
  CHECK(got.at("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu") == 16);
  // the critic's forward micro-batch and mini-batch follow its update's and the actor's (verl's interpolations)
  CHECK(got.count("critic.forward_micro_batch_size_per_gpu") == 0);
  CHECK(config.get_as<int64_t>("critic.forward_micro_batch_size_per_gpu") == 24);
  CHECK(config.get_as<int64_t>("critic.ppo_mini_batch_size") == 8);
  CHECK(settled(config).empty());                    // settled once: a second call changes nothing

  // two ranks: one rank's share of the mini-batch is 12 rows; a set value stays
  Config two = Config::load("", {"actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.rollout.n=3",
                                 "data.train_batch_size=8", "trainer.n_gpus_per_node=2",
                                 "critic.ppo_micro_batch_size_per_gpu=5"});
  got = settled(two);
  CHECK(got.at("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu") == 12);
  CHECK(got.count("critic.ppo_micro_batch_size_per_gpu") == 0);
  CHECK(two.get_as<int64_t>("critic.ppo_micro_batch_size_per_gpu") == 5);
}

TEST_CASE("batch defaults: the batch clipped to the training set, dynamic batching left alone", "[trainer][config]") {
  Config config = Config::load("", {"actor_rollout_ref.actor.use_dynamic_bsz=true", "critic.use_dynamic_bsz=true",
                                    "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=true",
                                    "actor_rollout_ref.ref.log_prob_use_dynamic_bsz=true"});
  auto got = settled(config, 100);
  CHECK(got.at("data.train_batch_size") == 100);
  CHECK(got.at("actor_rollout_ref.actor.ppo_mini_batch_size") == 100);
  CHECK(config.get_as<int64_t>("critic.ppo_mini_batch_size") == 100);  // follows the actor's (an interpolation)
  CHECK(got.size() == 2);  // no micro-batch size: every pass cuts by its token budget
}
