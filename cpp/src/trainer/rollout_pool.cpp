// verl's one-step off-policy layout over several processes (verl/experimental/one_step_off_policy): the rollout
// generates on a resource pool of ranks of its own while the trainer's ranks train (PPOTrainerOptions::rollout_pool).
// The controller is the pool group's rank 0 and generates nothing there; the pool's ranks run "generate" on their
// share of the rows (a tensor-parallel replica per rollout.tensor_model_parallel_size ranks) and take the weights in
// "sync_rollout_weights": the trainer's ranks gather the actor's compute weights from their ZeRO-3 shards a unit at a
// time (verl's per-parameter full_tensor), and the controller broadcasts each unit to the pool as it arrives (verl's
// NCCL broadcast from the actor's rank 0), so no rank holds more than one unit beside its own weights.
#include <exception>
#include <string>
#include <vector>

#include "verl/core/error.h"
#include "verl/core/json.h"
#include "verl/model/tensor_parallel.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::trainer {
namespace {

constexpr const char* kSyncMethod = "sync_rollout_weights";
constexpr const char* kSendMethod = "send_rollout_weights";

std::vector<char> to_bytes(const std::string& text) { return std::vector<char>(text.begin(), text.end()); }

}  // namespace

void PPOTrainer::register_pool_methods() {
  if (!pool_rank_) {
    // Every trainer rank takes part in the gathers; the controller sends each unit on.
    workers_->register_method(kSendMethod, [this](const DataProto&) {
      actor_->precision().for_each_compute_state([this](const std::map<std::string, torch::Tensor>& part) {
        if (pool_) send_unit_to_pool(part);
      });
      return DataProto();
    });
  }
  if (!pool_) return;  // a trainer rank other than the controller
  pool_->register_method("generate", [this](const DataProto& chunk) { return generate_chunk(chunk); });
  if (pool_rank_) {
    pool_->register_method(kSyncMethod, [this](const DataProto&) {
      receive_pool_weights();
      return DataProto();
    });
    return;
  }
  pool_->register_method(kSyncMethod, [this](const DataProto&) {
    // The end of the units, also after a trainer rank failed between two of them: the pool's ranks then stop
    // receiving and answer, and the call reports the failure (the weights are sent again by the next sync).
    const auto end_of_units = [this] {
      pool_->communicator()->broadcast_bytes(to_bytes(Json{{"end", true}}.dump()), 0);
    };
    try {
      dispatch(kSendMethod, DataProto(), dist::Dispatch::kBroadcast);
    } catch (...) {
      end_of_units();
      throw;
    }
    end_of_units();
    return DataProto();
  });
}

void PPOTrainer::sync_pool_weights() {
  // Weights written since the last sync (an update, a checkpoint load) are the compute weights after refresh().
  actor_->precision().refresh();
  const int64_t version = actor_->precision().weights_version();
  if (version == pool_weights_version_) return;
  pool_->call(kSyncMethod, DataProto(), dist::Dispatch::kBroadcast);
  pool_weights_version_ = version;
}

void PPOTrainer::send_unit_to_pool(const std::map<std::string, torch::Tensor>& part) {
  // A header (names, shapes, dtypes), then each tensor: the pool's ranks allocate what they receive into.
  Json tensors = Json::array();
  for (const auto& [name, tensor] : part)
    tensors.push_back({{"name", name}, {"shape", tensor.sizes().vec()}, {"dtype", static_cast<int>(tensor.scalar_type())}});
  const Json header{{"tensors", std::move(tensors)}};
  dist::Communicator& comm = *pool_->communicator();
  comm.broadcast_bytes(to_bytes(header.dump()), 0);
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : part) {
    torch::Tensor t = tensor.detach().contiguous();  // one process's part is the compute model's own parameters
    comm.broadcast_(t, 0);
  }
}

void PPOTrainer::receive_pool_weights() {
  dist::Communicator& comm = *pool_->communicator();
  const model::CausalLM& model = *engine_->model();
  const int64_t tp = settings_.rollout_tensor_parallel_size;
  const int64_t tp_rank = tensor_parallel_ ? tensor_parallel_->rank() : 0;
  torch::NoGradGuard no_grad;
  // Each tensor goes into the engine as it arrives (one process's trainer sends the whole model as one unit: the
  // pool holds one extra tensor at a time, not a second model). A tensor the engine refuses ends nothing early: the
  // rest is received (the controller keeps sending) and the first error is raised after the end marker.
  std::exception_ptr failed;
  while (true) {
    const std::vector<char> bytes = comm.broadcast_bytes({}, 0);
    const Json header = Json::parse(std::string(bytes.begin(), bytes.end()));
    if (header.value("end", false)) break;
    for (const Json& entry : header.at("tensors")) {
      const auto dtype = static_cast<torch::ScalarType>(entry.at("dtype").get<int>());
      torch::Tensor whole = torch::empty(entry.at("shape").get<std::vector<int64_t>>(),
                                         torch::TensorOptions().dtype(dtype).device(model.device()));
      comm.broadcast_(whole, 0);
      if (failed) continue;
      try {
        const std::string name = entry.at("name").get<std::string>();
        if (tp > 1) {
          engine_->update_weight_shards({{name, model::tensor_parallel_shard(name, whole, tp_rank, tp)}});
        } else {
          engine_->update_weights({{name, whole}});
        }
      } catch (...) {
        failed = std::current_exception();
      }
    }
  }
  if (failed) std::rethrow_exception(failed);
}

}  // namespace verl::trainer
