// verl's one-step off-policy layout over several processes (verl/experimental/one_step_off_policy): the rollout
// generates on a resource pool of ranks of its own while the trainer's ranks train (PPOTrainerOptions::mesh.rollout_pool).
// The controller is the pool group's rank 0 and generates nothing there; the pool's ranks run "generate" on their
// share of the rows (a tensor-parallel replica per rollout.tensor_model_parallel_size ranks) and take the weights in
// "sync_rollout_weights": the trainer's ranks gather the actor's compute weights from their ZeRO-3 shards a unit at a
// time (verl's per-parameter full_tensor), and the controller broadcasts each unit to the pool as it arrives (verl's
// NCCL broadcast from the actor's rank 0), so no rank holds more than one unit beside its own weights.
#include <exception>
#include <string>
#include <vector>

#include "verl/core/error.h"
#include "verl/trainer/ppo_trainer.h"
#include "hybrid/weight_hand_over.h"

namespace verl::trainer {
namespace {

constexpr const char* kSyncMethod = "sync_rollout_weights";
constexpr const char* kSendMethod = "send_rollout_weights";

}  // namespace

void PPOTrainer::register_pool_methods() {
  if (!pool_rank_) {
    // Every trainer rank takes part in the gathers; the controller sends each unit on.
    workers_->register_method(
        kSendMethod,
        [this](const DataProto&) {
          actor_->precision().for_each_compute_state([this](const std::map<std::string, torch::Tensor>& part) {
            if (pool_) hybrid::send_unit(*pool_->communicator(), part);
          });
          return DataProto();
        },
        dist::Dispatch::kBroadcast);
  }
  if (!pool_) return;  // a trainer rank other than the controller
  // The pool's ranks generate the rows split over them (the controller computes nothing there), each of its
  // tensor-parallel groups one share.
  pool_->register_method(
      "generate", [this](const DataProto& chunk) { return generate_chunk(chunk); }, dist::Dispatch::kPadSplit,
      settings_.rollout_tensor_parallel_size);
  if (pool_rank_) {
    pool_->register_method(
        kSyncMethod,
        [this](const DataProto&) {
          hybrid::receive_units(*pool_->communicator(), *engine_, settings_.rollout_tensor_parallel_size,
                                tensor_parallel_ ? tensor_parallel_->rank() : 0);
          return DataProto();
        },
        dist::Dispatch::kBroadcast);
    return;
  }
  pool_->register_method(
      kSyncMethod,
      [this](const DataProto&) {
        // The end of the units, also after a trainer rank failed between two of them: the pool's ranks then stop
        // receiving and answer, and the call reports the failure (the weights are sent again by the next sync).
        const auto end_of_units = [this] { hybrid::send_end_of_units(*pool_->communicator()); };
        try {
          dispatch(kSendMethod, DataProto());
        } catch (...) {
          end_of_units();
          throw;
        }
        end_of_units();
        return DataProto();
      },
      dist::Dispatch::kBroadcast);
}

void PPOTrainer::sync_pool_weights() {
  // Weights written since the last sync (an update, a checkpoint load) are the compute weights after refresh().
  actor_->precision().refresh();
  const int64_t version = actor_->precision().weights_version();
  if (version == pool_weights_version_) return;
  pool_->call(kSyncMethod, DataProto());
  pool_weights_version_ = version;
}

}  // namespace verl::trainer
