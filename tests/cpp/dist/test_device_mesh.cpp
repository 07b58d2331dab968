// verl::dist::plan_mesh / check_mesh: the job's layout planned once from verl's keys -- the groups every rank creates
// (known rank lists for data parallel, HSDP, the TP rollout with its 3D-HybridEngine slices, a rollout pool, the SFT
// engine) and every layout ConfigError naming its key; a mesh whose groups do not fit the plan is refused by name.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "dist/thread_group.h"
#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/dist/device_mesh.h"

using verl::Config;
using verl::ConfigError;
using verl::dist::DeviceMesh;
using verl::dist::Launch;
using verl::dist::MeshPlan;
using verl::dist::MeshRoles;
using verl::dist::plan_mesh;
using Groups = std::vector<std::vector<int64_t>>;

namespace {

std::map<std::string, Groups> groups_of(const MeshPlan& plan) {
  std::map<std::string, Groups> out;
  for (const auto& g : plan.groups) out[g.name] = g.groups;
  return out;
}

MeshPlan ppo(const std::vector<std::string>& overrides, std::optional<Launch> launch = std::nullopt) {
  return plan_mesh(Config::load("", overrides), MeshRoles::kPPO, launch);
}

}  // namespace

TEST_CASE("device mesh: one process plans no groups", "[dist][mesh]") {
  const MeshPlan plan = ppo({}, Launch{1, false});
  CHECK(plan.world_size() == 1);
  CHECK(plan.groups.empty());
  CHECK(plan.actor_fsdp == 1);
  CHECK(plan.rollout_tp == 1);
  // plain ZeRO-3 over 4 ranks: still no subgroup (the world is the one shard group)
  const MeshPlan four = ppo({"trainer.n_gpus_per_node=4"}, Launch{4, true});
  CHECK(four.groups.empty());
  CHECK(four.actor_fsdp == 4);
  CHECK(four.critic_fsdp == 4);
}

TEST_CASE("device mesh: HSDP and the TP rollout's groups", "[dist][mesh]") {
  const MeshPlan plan = ppo({"trainer.n_gpus_per_node=4", "actor_rollout_ref.actor.fsdp_config.fsdp_size=2",
                             "critic.fsdp.fsdp_size=1", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"},
                            Launch{4, true});
  auto g = groups_of(plan);
  CHECK(g.at("tensor_parallel") == Groups{{0, 1}, {2, 3}});
  // within each actor shard group of 2, the ranks sharing a TP rank: one each
  CHECK(g.at("tensor_parallel_slice") == Groups{{0}, {1}, {2}, {3}});
  CHECK(g.at("actor_shard") == Groups{{0, 1}, {2, 3}});
  CHECK(g.at("actor_replicas") == Groups{{0, 2}, {1, 3}});
  CHECK(g.at("critic_shard") == Groups{{0}, {1}, {2}, {3}});
  CHECK(g.at("critic_replicas") == Groups{{0, 1, 2, 3}});

  // TP 2 over 8 ranks sharded whole: the slices are the 4 ranks of each TP rank
  g = groups_of(ppo({"trainer.n_gpus_per_node=8", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"}));
  CHECK(g.at("tensor_parallel_slice") == Groups{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(g.count("actor_shard") == 0);
}

TEST_CASE("device mesh: a rollout pool after the trainer's ranks", "[dist][mesh]") {
  const MeshPlan plan = ppo({"actor_rollout_ref.hybrid_engine=false", "+rollout.nnodes=1", "+rollout.n_gpus_per_node=2",
                             "trainer.n_gpus_per_node=2", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"},
                            Launch{4, true});
  CHECK(plan.pool_ranks == 2);
  const auto g = groups_of(plan);
  CHECK(g.at("trainer") == Groups{{0, 1}});
  CHECK(g.at("rollout_pool") == Groups{{0, 2, 3}});
  CHECK(g.at("tensor_parallel") == Groups{{2, 3}});
  CHECK(g.count("tensor_parallel_slice") == 0);  // a pool shards the weights it receives itself
}

TEST_CASE("device mesh: the SFT / DPO engine's HSDP groups", "[dist][mesh]") {
  const MeshPlan plan =
      plan_mesh(Config::load_sft("", {"trainer.n_gpus_per_node=4", "engine.fsdp_size=2"}), MeshRoles::kEngine,
                Launch{4, true});
  const auto g = groups_of(plan);
  CHECK(g.at("engine_shard") == Groups{{0, 1}, {2, 3}});
  CHECK(g.at("engine_replicas") == Groups{{0, 2}, {1, 3}});
  CHECK(plan.actor_fsdp == 2);
}

TEST_CASE("device mesh: every layout that does not fit is a ConfigError naming its key", "[dist][mesh]") {
  CHECK_THROWS_WITH(ppo({"trainer.n_gpus_per_node=2"}, Launch{1, false}),
                    Catch::Contains("trainer.nnodes (1) x trainer.n_gpus_per_node (2) = 2 ranks") &&
                        Catch::Contains("launched as one process (no torchrun)"));
  CHECK_THROWS_WITH(ppo({"trainer.n_gpus_per_node=2"}, Launch{4, true}), Catch::Contains("a world of 4 ranks"));
  CHECK_THROWS_AS(ppo({"trainer.n_gpus_per_node=0"}), ConfigError);
  CHECK_THROWS_WITH(ppo({"trainer.n_gpus_per_node=2", "actor_rollout_ref.rollout.tensor_model_parallel_size=3"}),
                    Catch::Contains("tensor_model_parallel_size = 3 does not divide the job's 2 ranks"));
  CHECK_THROWS_WITH(ppo({"critic.fsdp.fsdp_size=3", "trainer.n_gpus_per_node=4"}),
                    Catch::Contains("critic.fsdp.fsdp_size = 3 does not divide the job's 4 ranks"));
  CHECK_THROWS_WITH(ppo({"trainer.n_gpus_per_node=4", "actor_rollout_ref.actor.fsdp_config.fsdp_size=2",
                         "actor_rollout_ref.rollout.tensor_model_parallel_size=4"}),
                    Catch::Contains("tensor_model_parallel_size = 4 does not divide "
                                    "actor_rollout_ref.actor.fsdp_config.fsdp_size = 2"));
  CHECK_THROWS_WITH(ppo({"actor_rollout_ref.hybrid_engine=false", "trainer.n_gpus_per_node=2"}),
                    Catch::Contains("without a rollout pool") && Catch::Contains("trainer.n_gpus_per_node = 2 ranks"));
  CHECK_THROWS_WITH(ppo({"+rollout.nnodes=1", "+rollout.n_gpus_per_node=1"}),
                    Catch::Contains("rollout.nnodes") && Catch::Contains("hybrid_engine=false"));
  CHECK_THROWS_WITH(ppo({"actor_rollout_ref.hybrid_engine=false", "+rollout.nnodes=1", "+rollout.n_gpus_per_node=3",
                         "actor_rollout_ref.rollout.tensor_model_parallel_size=2"}),
                    Catch::Contains("does not divide the rollout pool's 3 ranks"));
  CHECK_THROWS_WITH(plan_mesh(Config::load_sft("", {"trainer.n_gpus_per_node=4", "engine.fsdp_size=3"}),
                              MeshRoles::kEngine),
                    Catch::Contains("engine.fsdp_size = 3 does not divide the job's 4 ranks"));
}

TEST_CASE("device mesh: the groups a trainer is given must be the plan's", "[dist][mesh]") {
  const MeshPlan two = ppo({"trainer.n_gpus_per_node=2"});
  // no communicator for a 2-rank layout
  CHECK_THROWS_WITH(verl::dist::check_mesh(two, DeviceMesh{}, false),
                    Catch::Contains("trainer.nnodes x trainer.n_gpus_per_node = 2 ranks") &&
                        Catch::Contains("has 1"));
  auto hub = std::make_shared<verl::testing::ThreadExchange>(2);
  DeviceMesh mesh;
  mesh.trainer = verl::testing::thread_communicator(0, 2, hub);
  verl::dist::check_mesh(two, mesh, true);  // plain ZeRO-3: the trainer's group is all it needs
  // HSDP asks for the shard and replica groups
  const MeshPlan hsdp = ppo({"trainer.n_gpus_per_node=2", "critic.fsdp.fsdp_size=1"});
  CHECK_NOTHROW(verl::dist::check_mesh(hsdp, mesh, false));  // no critic: its groups are not needed
  CHECK_THROWS_WITH(verl::dist::check_mesh(hsdp, mesh, true),
                    Catch::Contains("critic.fsdp.fsdp_size = 1 (HSDP) needs this rank's shard group of 1 ranks"));
  // the TP rollout asks for its groups
  const MeshPlan tp = ppo({"trainer.n_gpus_per_node=2", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"});
  CHECK_THROWS_WITH(verl::dist::check_mesh(tp, mesh, false), Catch::Contains("tensor_parallel rollout needs this "
                                                                              "rank's group of 2 ranks"));
}
