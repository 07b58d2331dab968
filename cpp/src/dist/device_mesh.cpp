// The device mesh: one plan of the job's layout, every layout check in one place (verl/dist/device_mesh.h).
#include "verl/dist/device_mesh.h"

#include <numeric>

#include "verl/core/error.h"
#include "core/untrusted.h"

namespace verl::dist {
namespace {

constexpr const char* kTensorParallelKey = "actor_rollout_ref.rollout.tensor_model_parallel_size";

int64_t positive_key(const Config& config, const std::string& key) {
  const Json value = config.get(key);
  VERL_CHECK_AS(ConfigError, value.is_number_integer() && value.get<int64_t>() >= 1, key,
                " must be a positive integer, got ", untrusted::quote(value));
  return value.get<int64_t>();
}

// verl's one_step_off_ppo_trainer.yaml: rollout.nnodes x rollout.n_gpus_per_node ranks of the rollout's own, or none
// (n_gpus_per_node = 0, this build's default: the rollout is a thread of the one trainer process).
int64_t pool_ranks(const Config& config) {
  for (const char* key : {"rollout.nnodes", "rollout.n_gpus_per_node"}) {
    if (!config.has(key)) continue;
    VERL_CHECK_AS(ConfigError, !config.get_as<bool>("actor_rollout_ref.hybrid_engine"), key,
                  " is the one-step off-policy trainer's rollout pool; it needs actor_rollout_ref.hybrid_engine=false");
    const Json value = config.get(key);
    const int64_t least = std::string(key) == "rollout.nnodes" ? 1 : 0;
    VERL_CHECK_AS(ConfigError, value.is_number_integer() && value.get<int64_t>() >= least, key,
                  " must be an integer >= ", least, ", got ", untrusted::quote(value));
  }
  if (!config.has("rollout.nnodes") || !config.has("rollout.n_gpus_per_node")) return 0;
  const int64_t nnodes = config.get_as<int64_t>("rollout.nnodes");
  const int64_t per_node = config.get_as<int64_t>("rollout.n_gpus_per_node");
  VERL_CHECK_AS(ConfigError, per_node > 0 || nnodes == 1, "rollout.nnodes=", nnodes,
                " with rollout.n_gpus_per_node=0 (no rollout pool: the rollout is a thread of the one trainer "
                "process); set rollout.nnodes=1, or give the pool rollout.n_gpus_per_node ranks per node");
  return nnodes * per_node;
}

std::string layout_text(const Config& config, const MeshPlan& plan) {
  std::string text = "trainer.nnodes (" + config.get("trainer.nnodes").dump() + ") x trainer.n_gpus_per_node (" +
                     config.get("trainer.n_gpus_per_node").dump() + ")";
  if (plan.pool_ranks) {
    text += " + rollout.nnodes (" + config.get("rollout.nnodes").dump() + ") x rollout.n_gpus_per_node (" +
            config.get("rollout.n_gpus_per_node").dump() + ")";
  }
  return text;
}

// fsdp_size of one model: -1 or null shards over all `ranks`; ConfigError unless it divides them.
int64_t shard_size(const Config& config, const std::string& key, int64_t ranks) {
  const Json value = config.has(key) ? config.get(key) : Json();
  if (value.is_null() || (value.is_number_integer() && value.get<int64_t>() == -1)) return ranks;
  VERL_CHECK_AS(ConfigError,
                value.is_number_integer() && value.get<int64_t>() >= 1 && ranks % value.get<int64_t>() == 0, key,
                " = ", untrusted::quote(value), " does not divide the job's ", ranks,
                " ranks (-1: shard over all of them)");
  return value.get<int64_t>();
}

// Consecutive blocks of `size` ranks covering [first, first + count).
std::vector<std::vector<int64_t>> blocks(int64_t first, int64_t count, int64_t size) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t start = first; start < first + count; start += size) {
    out.emplace_back(static_cast<size_t>(size));
    std::iota(out.back().begin(), out.back().end(), start);
  }
  return out;
}

// Within each block of `block` ranks over [0, count): the ranks at each position k, k + stride, ... of the block.
std::vector<std::vector<int64_t>> strided(int64_t count, int64_t block, int64_t stride) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t first = 0; first < count; first += block) {
    for (int64_t k = 0; k < stride; ++k) {
      out.emplace_back();
      for (int64_t r = first + k; r < first + block; r += stride) out.back().push_back(r);
    }
  }
  return out;
}

// HSDP's groups of one model sharded over `size` of `ranks` ranks (none when it shards over all of them).
void add_shard_groups(MeshPlan& plan, const std::string& model, int64_t size, int64_t ranks) {
  if (size == ranks) return;
  plan.groups.push_back({model + "_shard", blocks(0, ranks, size)});
  plan.groups.push_back({model + "_replicas", strided(ranks, ranks, size)});
}

void check_size(const std::shared_ptr<Communicator>& group, int64_t size, const std::string& what) {
  VERL_CHECK_AS(ConfigError, group && group->world_size() == size, what, " needs this rank's group of ", size,
                " ranks (DeviceMesh::", what.substr(0, what.find(' ')), "), got ",
                group ? std::to_string(group->world_size()) + " ranks" : std::string("none"));
}

void check_shard_groups(const ShardGroups& groups, int64_t size, int64_t ranks, const std::string& model,
                        const std::string& key) {
  if (size == ranks) {
    VERL_CHECK_AS(ConfigError, !groups.shard && !groups.replicas, "DeviceMesh::", model, ": ", key, " = ", size,
                  " shards over all ", ranks, " ranks, but HSDP groups were given");
    return;
  }
  VERL_CHECK_AS(ConfigError,
                groups.shard && groups.shard->world_size() == size && groups.replicas &&
                    groups.replicas->world_size() == ranks / size,
                key, " = ", size, " (HSDP) needs this rank's shard group of ", size, " ranks and replica group of ",
                ranks / size, " (DeviceMesh::", model, ")");
}

}  // namespace

const RankGroups* MeshPlan::find(const std::string& name) const {
  for (const RankGroups& g : groups)
    if (g.name == name) return &g;
  return nullptr;
}

MeshPlan plan_mesh(const Config& config, MeshRoles roles, std::optional<Launch> launch) {
  MeshPlan plan;
  plan.roles = roles;
  plan.trainer_ranks = positive_key(config, "trainer.nnodes") * positive_key(config, "trainer.n_gpus_per_node");
  const bool ppo = roles == MeshRoles::kPPO;
  if (ppo) plan.pool_ranks = pool_ranks(config);
  if (launch && launch->world_size != plan.world_size()) {
    const std::string launched = launch->world_size == 1 && !launch->by_launcher
                                     ? std::string("one process (no torchrun)")
                                     : "a world of " + std::to_string(launch->world_size) + " ranks";
    VERL_FAIL(ConfigError, layout_text(config, plan), " = ", plan.world_size(), " ranks, but this job was launched as ",
              launched, ": start it with torchrun with that many ranks (--nnodes x --nproc_per_node), or set the "
              "keys to the launch");
  }
  const int64_t trainers = plan.trainer_ranks;
  if (!ppo) {
    plan.actor_fsdp = shard_size(config, "engine.fsdp_size", trainers);
    add_shard_groups(plan, "engine", plan.actor_fsdp, trainers);
    return plan;
  }

  // Every tensor-parallel rollout replica needs its own ranks: the pool's, or the trainer's (which generate).
  plan.rollout_tp = positive_key(config, kTensorParallelKey);
  const int64_t generating = plan.pool_ranks ? plan.pool_ranks : trainers;
  VERL_CHECK_AS(ConfigError, generating % plan.rollout_tp == 0, kTensorParallelKey, " = ", plan.rollout_tp,
                plan.pool_ranks ? " does not divide the rollout pool's " : " does not divide the job's ", generating,
                plan.pool_ranks ? " ranks (rollout.nnodes x rollout.n_gpus_per_node)"
                                : " ranks (trainer.nnodes x trainer.n_gpus_per_node)",
                ": every tensor-parallel rollout replica needs its own ranks");
  const std::string actor_key = "actor_rollout_ref.actor.fsdp_config.fsdp_size";
  plan.actor_fsdp = shard_size(config, actor_key, trainers);
  plan.critic_fsdp = shard_size(config, "critic.fsdp.fsdp_size", trainers);
  if (!plan.pool_ranks) {
    // The 3D-HybridEngine lays the actor's shards out for the rollout within each shard group (a pool shards the
    // weights it receives itself).
    VERL_CHECK_AS(ConfigError, plan.actor_fsdp % plan.rollout_tp == 0, kTensorParallelKey, " = ", plan.rollout_tp,
                  " does not divide ", actor_key, " = ", plan.actor_fsdp,
                  ": each shard group must hold whole tensor-parallel groups");
  }
  if (!config.get_as<bool>("actor_rollout_ref.hybrid_engine") && !plan.pool_ranks) {
    // Without a pool the rollout is a thread of this process, and the training side's collectives would interleave
    // with the rollout's.
    VERL_CHECK_AS(ConfigError, trainers == 1 && plan.rollout_tp == 1,
                  "actor_rollout_ref.hybrid_engine=false (one-step off-policy) without a rollout pool "
                  "(rollout.n_gpus_per_node = 0) runs in one process: got trainer.nnodes x trainer.n_gpus_per_node = ",
                  trainers, " ranks and ",
                  kTensorParallelKey, " = ", plan.rollout_tp,
                  "; give the rollout ranks of its own with rollout.n_gpus_per_node");
  }

  if (plan.pool_ranks) {
    add_shard_groups(plan, "actor", plan.actor_fsdp, trainers);
    add_shard_groups(plan, "critic", plan.critic_fsdp, trainers);
    if (trainers > 1) plan.groups.push_back({"trainer", blocks(0, trainers, trainers)});
    std::vector<int64_t> pool{0};
    for (int64_t r = trainers; r < plan.world_size(); ++r) pool.push_back(r);
    plan.groups.push_back({"rollout_pool", {pool}});
    if (plan.rollout_tp > 1) plan.groups.push_back({"tensor_parallel", blocks(trainers, plan.pool_ranks, plan.rollout_tp)});
    return plan;
  }
  if (plan.rollout_tp > 1) {
    plan.groups.push_back({"tensor_parallel", blocks(0, trainers, plan.rollout_tp)});
    plan.groups.push_back({"tensor_parallel_slice", strided(trainers, plan.actor_fsdp, plan.rollout_tp)});
  }
  add_shard_groups(plan, "actor", plan.actor_fsdp, trainers);
  add_shard_groups(plan, "critic", plan.critic_fsdp, trainers);
  return plan;
}

void check_mesh(const MeshPlan& plan, const DeviceMesh& mesh, bool has_critic) {
  const int64_t trainers = plan.trainer_ranks;
  const bool pool_rank = mesh.pool_rank();
  if (mesh.rollout_pool) {
    VERL_CHECK_AS(ConfigError, plan.pool_ranks > 0, "a rollout pool (DeviceMesh::rollout_pool) was given, but the "
                  "config asks for none: it needs actor_rollout_ref.hybrid_engine=false and rollout.n_gpus_per_node > 0");
    VERL_CHECK_AS(ConfigError, mesh.rollout_pool->world_size() == plan.pool_ranks + 1,
                  "rollout.nnodes x rollout.n_gpus_per_node = ", plan.pool_ranks,
                  " rollout ranks, but the rollout pool's group (the controller and the pool) has ",
                  mesh.rollout_pool->world_size(), " ranks");
    VERL_CHECK_AS(ConfigError, pool_rank ? mesh.trainer == nullptr : !mesh.trainer || mesh.trainer->rank() == 0,
                  pool_rank ? "a rollout pool rank trains nothing: give it no trainer communicator"
                            : "the rollout pool's controller must be the trainer's rank 0");
  } else {
    VERL_CHECK_AS(ConfigError, !plan.pool_ranks || (mesh.trainer && mesh.trainer->rank() != 0),
                  "rollout.nnodes x rollout.n_gpus_per_node = ", plan.pool_ranks,
                  " asks for a rollout pool of ranks of its own, but this trainer got none "
                  "(DeviceMesh::rollout_pool: launch trainer.nnodes x trainer.n_gpus_per_node + that many ranks "
                  "under torchrun); rollout.n_gpus_per_node=0 runs the rollout in a thread of the one trainer process");
  }
  if (pool_rank) {
    // A pool rank shards nothing (the keys are the trainer ranks'); its replica's TP group shards what it receives.
    if (plan.rollout_tp > 1) check_size(mesh.tensor_parallel, plan.rollout_tp, "tensor_parallel rollout");
    return;
  }
  const int64_t world = mesh.trainer ? mesh.trainer->world_size() : 1;
  VERL_CHECK_AS(ConfigError, world == trainers, "trainer.nnodes x trainer.n_gpus_per_node = ", trainers,
                " ranks, but this trainer's group (DeviceMesh::trainer) has ", world);
  const std::string engine = plan.roles == MeshRoles::kEngine ? "engine.fsdp_size"
                                                              : "actor_rollout_ref.actor.fsdp_config.fsdp_size";
  check_shard_groups(mesh.actor, plan.actor_fsdp, trainers, "actor", engine);
  if (has_critic) check_shard_groups(mesh.critic, plan.critic_fsdp, trainers, "critic", "critic.fsdp.fsdp_size");
  // The trainer's ranks of a pooled job generate nothing.
  if (plan.roles == MeshRoles::kEngine || plan.pool_ranks || plan.rollout_tp == 1) return;
  check_size(mesh.tensor_parallel, plan.rollout_tp, "tensor_parallel rollout");
  if (trainers > 1) check_size(mesh.tensor_parallel_slice, plan.actor_fsdp / plan.rollout_tp, "tensor_parallel_slice");
}

}  // namespace verl::dist
