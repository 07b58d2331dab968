// verl::dist device mesh: the parallel layout of a job, planned once from the config (docs/architecture.md, section
// 6). plan_mesh reads verl's layout keys -- trainer.nnodes x trainer.n_gpus_per_node, the one-step off-policy rollout
// pool (rollout.nnodes x rollout.n_gpus_per_node), actor_rollout_ref.rollout.tensor_model_parallel_size, the fsdp_size
// of each trained model -- makes every check with its ConfigError, and names every process group the layout needs as
// lists of ranks. The launcher (python/verl/trainer/distributed.py, or a C++ application) creates those groups in the
// plan's order on every rank and hands this rank's to the trainer as a DeviceMesh; the trainer checks the mesh against
// the plan (check_mesh) and builds nothing else.
//
// The rank layout, as verl's (trainer ranks first, a rollout pool after them):
//   ranks [0, T) train; [T, T + P) generate (a rollout pool, one-step off-policy only).
//   tensor_parallel:       groups of t consecutive generating ranks (one TP rollout replica each).
//   tensor_parallel_slice: within each actor shard group, the ranks sharing a TP rank (k, k + t, ...): the
//                          3D-HybridEngine's re-shard all-gathers among them (no pool, t > 1, T > 1).
//   <model>_shard / _replicas: HSDP (fsdp_size F < T): F consecutive ranks shard one copy; the T / F ranks at one
//                          position of every shard group hold the same shard (FSDP's device mesh (T / F, F)).
//   trainer:               ranks [0, T) (with a pool, T > 1: the trainer's own collectives).
//   rollout_pool:          rank 0 (the controller) and the pool's ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/dist/communicator.h"

namespace verl::dist {

// Which trainer lays out the ranks: the PPO trainer's roles (actor, critic, the rollout, a rollout pool), or one
// training engine (the SFT and DPO trainers, SPMD: engine.fsdp_size).
enum class MeshRoles { kPPO, kEngine };

// One kind of process group: disjoint lists of global ranks. Every rank creates every group (as
// torch.distributed.new_group requires), kinds in the plan's order, groups in list order.
struct VERL_API RankGroups {
  std::string name;  // tensor_parallel, tensor_parallel_slice, actor_shard, actor_replicas, critic_shard,
                     // critic_replicas, engine_shard, engine_replicas, trainer, rollout_pool
  std::vector<std::vector<int64_t>> groups;
};

struct VERL_API MeshPlan {
  MeshRoles roles = MeshRoles::kPPO;
  int64_t trainer_ranks = 1;  // trainer.nnodes x trainer.n_gpus_per_node
  int64_t pool_ranks = 0;     // rollout.nnodes x rollout.n_gpus_per_node (one-step off-policy); 0: no pool
  int64_t rollout_tp = 1;     // actor_rollout_ref.rollout.tensor_model_parallel_size (kPPO)
  // The ranks one copy of each trained model is sharded over (fsdp_size; -1 resolved to trainer_ranks). kEngine: the
  // engine's in actor_fsdp.
  int64_t actor_fsdp = 1;
  int64_t critic_fsdp = 1;
  std::vector<RankGroups> groups;  // in creation order; none for one process

  int64_t world_size() const { return trainer_ranks + pool_ranks; }
  // The group kind `name` (null when the layout needs none).
  const RankGroups* find(const std::string& name) const;
};

// How the job was launched: `world_size` ranks, by a launcher (torchrun's WORLD_SIZE) or as one plain process.
struct VERL_API Launch {
  int64_t world_size = 1;
  bool by_launcher = false;
};

// The layout of `config`; with `launch`, ConfigError first unless it launched plan.world_size() ranks. Every layout
// key's ConfigError names the key: a positive trainer.nnodes / n_gpus_per_node; the pool's keys only with
// actor_rollout_ref.hybrid_engine=false; the rollout's TP size dividing the ranks that generate (and, without a pool,
// each actor shard group); each fsdp_size dividing the trainer's ranks (-1 or null: all of them).
VERL_API MeshPlan plan_mesh(const Config& config, MeshRoles roles, std::optional<Launch> launch = std::nullopt);

// FSDP's HSDP groups of one model on this rank (shard: the fsdp_size ranks sharing one copy; replicas: the ranks
// holding the same shard). Null `shard`: the model is sharded over every trainer rank.
struct VERL_API ShardGroups {
  std::shared_ptr<Communicator> shard;
  std::shared_ptr<Communicator> replicas;
};

// This rank's groups of a MeshPlan (null where the plan has none for it).
struct VERL_API DeviceMesh {
  // The trainer's ranks [0, T). Null in one process and on a rollout pool's rank. Its rank 0 is the controller.
  std::shared_ptr<Communicator> trainer;
  // The controller and the rollout pool's ranks: on those ranks of a job with a pool.
  std::shared_ptr<Communicator> rollout_pool;
  // The t ranks of this rank's tensor-parallel rollout replica (t > 1, on a rank that generates).
  std::shared_ptr<Communicator> tensor_parallel;
  // The ranks of this rank's actor shard group sharing its TP rank (t > 1 without a pool, T > 1).
  std::shared_ptr<Communicator> tensor_parallel_slice;
  ShardGroups actor;   // HSDP of the actor (the SFT / DPO engine's model with MeshRoles::kEngine)
  ShardGroups critic;  // HSDP of the critics (the critic and Safe-RLHF's cost critic)

  // This rank is one of the rollout pool's (given the pool's group, not its rank 0).
  bool pool_rank() const { return rollout_pool && rollout_pool->rank() != 0; }
};

// ConfigError unless `mesh` holds this rank's groups of `plan`, each of the plan's size: the keys and the groups a
// C++ application passes must agree. `has_critic`: the critics' groups are checked too.
VERL_API void check_mesh(const MeshPlan& plan, const DeviceMesh& mesh, bool has_critic);

}  // namespace verl::dist
