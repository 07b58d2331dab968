// The hybrid engine's weight path (docs/architecture.md, section 5): the actor's compute weights into the rollout
// engine that generates from them -- in one process nothing moves (the engine runs on the actor's compute model);
// under ZeRO-3 each unit is gathered into the engine's own tensors; with a tensor-parallel rollout of size t (the
// 3D-HybridEngine) each rank receives only its TP shards, by one all-gather among the ranks sharing its TP rank.
// Private to libverl.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <torch/types.h>

#include "verl/dist/communicator.h"
#include "verl/rollout/engine.h"
#include "verl/workers/train_engine.h"

namespace verl::hybrid {

class WeightHandOver {
 public:
  // `engine` generates from the weights `actor` computes with (both outlive this object). `tensor_parallel` /
  // `tensor_parallel_slice`: this rank's rollout TP group and its slice group (null unless t > 1 over several ranks).
  WeightHandOver(std::shared_ptr<rollout::Engine> engine, workers::TrainEngine& actor,
                 std::shared_ptr<dist::Communicator> tensor_parallel = nullptr,
                 std::shared_ptr<dist::Communicator> tensor_parallel_slice = nullptr);

  // Whether the engine generates from a copy gathered from the actor's ZeRO-3 shards (several ranks): it then sleeps
  // without its weights (rollout::Engine::sleep(release_weights)) and they are gathered again at the next hand-over.
  bool copy_of_shards() const { return actor_.sharded(); }
  // The actor's compute weights into the engine, when they changed since the last hand-over (every write bumps a
  // tensor's version) or the engine released them. Sharded: a collective -- every rank hands over at once.
  void hand_over();
  // Weights written into the master since the last refresh (a checkpoint load, a user's edit) into the compute
  // weights first, then hand_over().
  void refresh_and_hand_over();
  // The bytes this rank received in the last hand-over's gathers (0 unsharded).
  int64_t last_bytes() const { return last_bytes_; }

 private:
  std::shared_ptr<rollout::Engine> engine_;
  workers::TrainEngine& actor_;
  std::shared_ptr<dist::Communicator> tensor_parallel_, tensor_parallel_slice_;
  int64_t handed_over_version_ = -1;
  int64_t last_bytes_ = 0;
};

// The rollout engine around a generation, as verl's hybrid engine wakes and sleeps its rollout replicas.
// Before: the engine awake (its KV cache allocated), and -- with a hand-over, unless `pinned` (a batch submitted
// ahead generates from the weights handed over at its submission while the actor trains) -- the actor's latest
// weights in it. After, when rollout.free_cache_engine: the KV cache freed for the updates, and under ZeRO-3 the
// engine's copy of the weights too (gathered again from the shards at the next hand-over).
void ready_for_generation(rollout::Engine& engine, WeightHandOver* hand_over, bool pinned);
void rest_after_generation(rollout::Engine& engine, const WeightHandOver* hand_over);

// The rollout pool's weight path (verl's one-step off-policy layout, trainer/rollout_pool.cpp): the controller
// broadcasts the actor's compute weights over the pool's group a unit at a time, as its trainer ranks gather them
// from their shards; each pool rank writes every tensor into its engine as it arrives (its TP shard when the pool
// generates with t > 1), so no rank holds a second whole model.
//
// The controller's side: one unit (a header of names, shapes and dtypes, then each tensor).
void send_unit(dist::Communicator& pool, const std::map<std::string, torch::Tensor>& unit);
// The end of the units (also after a trainer rank failed between two of them: the pool's ranks stop receiving).
void send_end_of_units(dist::Communicator& pool);
// A pool rank's side: every unit until the end marker into `engine` (shard `tp_rank` of `tp` when tp > 1). A tensor
// the engine refuses ends nothing early: the rest is received, and the first error is raised after the end marker.
void receive_units(dist::Communicator& pool, rollout::Engine& engine, int64_t tp, int64_t tp_rank);

}  // namespace verl::hybrid
