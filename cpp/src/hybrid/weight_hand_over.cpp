// The hybrid engine's weight path and the rollout pool's (see weight_hand_over.h).
#include "hybrid/weight_hand_over.h"

#include <exception>
#include <vector>

#include <torch/torch.h>

#include "verl/core/json.h"
#include "verl/model/tensor_parallel.h"
#include "workers/fully_sharded.h"

namespace verl::hybrid {

WeightHandOver::WeightHandOver(std::shared_ptr<rollout::Engine> engine, workers::TrainEngine& actor,
                               std::shared_ptr<dist::Communicator> tensor_parallel,
                               std::shared_ptr<dist::Communicator> tensor_parallel_slice)
    : engine_(std::move(engine)),
      actor_(actor),
      tensor_parallel_(std::move(tensor_parallel)),
      tensor_parallel_slice_(std::move(tensor_parallel_slice)) {}

void WeightHandOver::hand_over() {
  // The engine generates with the actor's compute model (refreshed by the update): nothing to copy. A separately
  // built engine gets the compute-dtype tensors by name, the weights the actor computes with (gathered from every
  // rank's shards under ZeRO-3: every rank hands over at once).
  if (engine_->model() == actor_.compute_model()) return;
  // Released weights (the ZeRO-3 rollout copy sleeps without them) are handed over whatever the version: every rank
  // released them in the same dispatched generation, so every rank takes part in the gathers.
  workers::MixedPrecision& precision = actor_.precision();
  const int64_t version = precision.weights_version();
  if (version == handed_over_version_ && !engine_->weights_released()) return;
  torch::NoGradGuard no_grad;
  const auto& sharding = precision.sharding();
  if (const auto compute = actor_.compute_model(); !sharding && compute->lora() && !engine_->model()->lora()) {
    // actor_rollout_ref.model.lora.merge: the engine's plain copy takes the adapters folded into the weights.
    engine_->update_weights(compute->merged_state());
    last_bytes_ = 0;
    handed_over_version_ = version;
    return;
  }
  if (sharding && sharding->generation_tp() > 1) {
    // The 3D-HybridEngine: this rank's tensor-parallel shards from the ranks that keep its slice, never a whole weight.
    last_bytes_ = sharding->for_each_unit_tp_shard(
        sharding->compute_dtype(), *tensor_parallel_slice_, *tensor_parallel_,
        [&](const std::map<std::string, torch::Tensor>& part) { engine_->update_weight_shards(part); });
  } else {
    // Unpacked straight into the engine's weights (update_weights then finds them written).
    last_bytes_ = precision.for_each_compute_state(
        [&](const std::map<std::string, torch::Tensor>& part) { engine_->update_weights(part); },
        [&](const std::string& name, c10::IntArrayRef shape, torch::Dtype dtype) {
          return engine_->weight_for_update(name, shape, dtype);
        });
  }
  handed_over_version_ = version;
}

void WeightHandOver::refresh_and_hand_over() {
  actor_.precision().refresh();
  hand_over();
}

namespace {

std::vector<char> to_bytes(const std::string& text) { return std::vector<char>(text.begin(), text.end()); }

}  // namespace

void send_unit(dist::Communicator& pool, const std::map<std::string, torch::Tensor>& unit) {
  // A header (names, shapes, dtypes), then each tensor: the pool's ranks allocate what they receive into.
  Json tensors = Json::array();
  for (const auto& [name, tensor] : unit)
    tensors.push_back({{"name", name}, {"shape", tensor.sizes().vec()}, {"dtype", static_cast<int>(tensor.scalar_type())}});
  const Json header{{"tensors", std::move(tensors)}};
  pool.broadcast_bytes(to_bytes(header.dump()), 0);
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : unit) {
    torch::Tensor t = tensor.detach().contiguous();  // one process's unit is the compute model's own parameters
    pool.broadcast_(t, 0);
  }
}

void send_end_of_units(dist::Communicator& pool) { pool.broadcast_bytes(to_bytes(Json{{"end", true}}.dump()), 0); }

void receive_units(dist::Communicator& pool, rollout::Engine& engine, int64_t tp, int64_t tp_rank) {
  const model::CausalLM& model = *engine.model();
  torch::NoGradGuard no_grad;
  // Each tensor goes into the engine as it arrives (one process's trainer sends the whole model as one unit: the
  // pool holds one extra tensor at a time, not a second model).
  std::exception_ptr failed;
  while (true) {
    const std::vector<char> bytes = pool.broadcast_bytes({}, 0);
    const Json header = Json::parse(std::string(bytes.begin(), bytes.end()));
    if (header.value("end", false)) break;
    for (const Json& entry : header.at("tensors")) {
      const auto dtype = static_cast<torch::ScalarType>(entry.at("dtype").get<int>());
      torch::Tensor whole = torch::empty(entry.at("shape").get<std::vector<int64_t>>(),
                                         torch::TensorOptions().dtype(dtype).device(model.device()));
      pool.broadcast_(whole, 0);
      if (failed) continue;
      try {
        const std::string name = entry.at("name").get<std::string>();
        if (tp > 1) {
          engine.update_weight_shards({{name, model::tensor_parallel_shard(model.config(), name, whole, tp_rank, tp)}});
        } else {
          engine.update_weights({{name, whole}});
        }
      } catch (...) {
        failed = std::current_exception();
      }
    }
  }
  if (failed) std::rethrow_exception(failed);
}

void ready_for_generation(rollout::Engine& engine, WeightHandOver* hand_over, bool pinned) {
  if (engine.sleeping()) engine.wake_up();
  // Weights written since the last hand-over (an update, a checkpoint load, a user's edit) reach the engine first.
  if (hand_over != nullptr && !pinned) hand_over->refresh_and_hand_over();
}

void rest_after_generation(rollout::Engine& engine, const WeightHandOver* hand_over) {
  engine.sleep(/*release_weights=*/hand_over != nullptr && hand_over->copy_of_shards());
}

}  // namespace verl::hybrid
