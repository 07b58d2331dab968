// verl::workers::TrainEngine: one model's training under every role (see train_engine.h).
#include "verl/workers/train_engine.h"

#include <cmath>
#include <iostream>
#include <utility>

#include "verl/core/device.h"
#include "verl/core/error.h"
#include "verl/dist/worker_group.h"
#include "verl/model/checkpoint.h"
#include "verl/model/safetensors.h"
#include "workers/fully_sharded.h"
#include "workers/sharded_checkpoint.h"

namespace verl::workers {

TrainEngine::TrainEngine(std::shared_ptr<model::CausalLM> model, TrainEngineOptions options)
    : model_(std::move(model)), options_(std::move(options)) {
  VERL_CHECK(model_ != nullptr, "TrainEngine: model is null");
  if (options_.optim) {
    model_->set_gradient_checkpointing(options_.enable_gradient_checkpointing);
    // The optimizer holds the master weights (and its moments in their dtype); the compute copy only lends its
    // gradients.
    optimizer_ = std::make_unique<Optimizer>(model_->parameters(), *options_.optim, options_.optim_key);
    const std::string warning = low_precision_master_warning(model_->dtype(), options_.model_dtype_key);
    if (!warning.empty()) std::cerr << warning << std::endl;
  }
  precision_ = std::make_unique<MixedPrecision>(
      model_, resolve_compute_dtype(options_.dtype, options_.dtype_key, model_->device()));
  // The MFU's peak is measured once per process; do it here, outside the trainer's timed stages.
  device_peak_flops(model_->device(), precision_->compute_dtype());
}

void TrainEngine::shard_over(std::shared_ptr<dist::Communicator> communicator, int64_t generation_tp,
                             const ShardGroups& groups) {
  VERL_CHECK(trainable(), "shard_over: an engine that only infers keeps its whole weights");
  precision_->shard_over(communicator, options_.gather, generation_tp, groups);
  if (precision_->sharding()) optimizer_->shard_over(precision_->sharding());
  communicator_ = communicator;
  dp_ = detail::DataParallel(std::move(communicator));
}

Optimizer& TrainEngine::optimizer() {
  VERL_CHECK(optimizer_ != nullptr, "this engine only infers (a reference policy): it has no optimizer");
  return *optimizer_;
}

RowGroups TrainEngine::micro_batches(const std::vector<int64_t>& seq_lens, const MicroBatching& how) const {
  if (how.dynamic) return dp_.dynamic_micro_batches(seq_lens, how.max_tokens);
  return fixed_micro_batches(static_cast<int64_t>(seq_lens.size()), how.rows);
}

double TrainEngine::train_batch(size_t num_micro, const LossFn& loss_fn) {
  Optimizer& opt = optimizer();
  model::CausalLM& model = *precision_->compute();
  opt.zero_grad();
  for (size_t i = 0; i < num_micro; ++i) {
    torch::Tensor loss = loss_fn(model, i);
    if (!loss.defined()) continue;
    const double loss_scale = precision_->loss_scale();
    (loss_scale == 1.0 ? loss : loss * loss_scale).backward();
    precision_->accumulate_grads();  // into the master gradients, in the master dtype
  }
  const double grad_norm = opt.step();  // sharded: averages the gradients over the ranks first
  precision_->update_loss_scale(std::isfinite(grad_norm));
  precision_->refresh();  // the next step (and the rollout) computes with the updated weights
  return grad_norm;
}

void TrainEngine::infer_batch(size_t num_micro, const std::function<void(model::CausalLM&, size_t)>& fn) {
  torch::NoGradGuard no_grad;
  model::CausalLM& model = *precision_->compute();
  for (size_t i = 0; i < num_micro; ++i) fn(model, i);
  precision_->release();  // ZeRO-3: the root unit stays gathered until the pass ends
}

double TrainEngine::scheduler_step() { return optimizer().scheduler_step(); }

int64_t TrainEngine::weight_bytes() const {
  if (precision_->sharding()) return precision_->sharding()->master_bytes();
  int64_t bytes = 0;
  for (const auto& t : model_->parameters()) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

int64_t TrainEngine::optimizer_state_bytes() const { return optimizer_ ? optimizer_->state_bytes() : 0; }

void TrainEngine::save_checkpoint(const std::filesystem::path& dir, const std::optional<std::string>& tokenizer_dir) {
  if (!sharded()) {
    std::filesystem::create_directories(dir);
    optimizer().save((dir / "optim.pt").string());
    return;
  }
  // save_pretrained replaces `dir` as a whole: config.json first, then every rank's shard files beside it.
  if (communicator_->rank() == 0) {
    model::SaveOptions options;
    options.write_weights = false;
    options.config_dtype = precision_->sharding()->master_dtype();
    if (tokenizer_dir) options.tokenizer_dir = *tokenizer_dir;
    model::save_pretrained(*model_, dir, options);
  }
  communicator_->barrier();
  detail::save_shard(dir, *precision_->sharding(), optimizer());
}

void TrainEngine::load_checkpoint(const std::filesystem::path& dir) {
  if (is_sharded_checkpoint(dir)) {
    if (sharded()) {
      detail::load_shard(dir, *precision_->sharding(), optimizer());
    } else {
      detail::load_shard(dir, *model_, optimizer());
    }
    return;
  }
  load_full_state(model::load_checkpoint_dir(dir));
  optimizer().load((dir / "optim.pt").string());
}

std::shared_ptr<model::CausalLM> TrainEngine::gather_model() {
  if (!sharded()) return model_;
  std::map<std::string, torch::Tensor> state = precision_->sharding()->full_state();  // every rank takes part
  auto whole = std::make_shared<model::CausalLM>(model_->config(), model_->head_kind());
  whole->to(model_->device(), precision_->sharding()->master_dtype());
  if (model_->lora()) whole->add_adapters(*model_->lora(), /*seed=*/0);
  torch::NoGradGuard no_grad;
  whole->load_state_dict(state, /*strict=*/true);
  return whole;
}

void TrainEngine::register_methods(dist::WorkerGroup& group, const std::string& role) {
  group.register_method(
      role + ".save_optimizer",
      [this](const DataProto& request) {
        optimizer().save(request.meta_info().at("path").get<std::string>());
        return DataProto();
      },
      dist::Dispatch::kBroadcast);
  group.register_method(
      role + ".save_checkpoint",
      [this](const DataProto& request) {
        const Json& meta = request.meta_info();
        std::optional<std::string> tokenizer_dir;
        if (meta.contains("tokenizer_dir")) tokenizer_dir = meta.at("tokenizer_dir").get<std::string>();
        save_checkpoint(meta.at("dir").get<std::string>(), tokenizer_dir);
        return DataProto();
      },
      dist::Dispatch::kBroadcast);
  group.register_method(
      role + ".gather_model",
      [this, &group](const DataProto&) {
        auto whole = gather_model();  // every rank takes part; the controller keeps the whole model
        if (group.is_controller()) gathered_ = std::move(whole);
        return DataProto();
      },
      dist::Dispatch::kBroadcast);
}

std::shared_ptr<model::CausalLM> TrainEngine::take_gathered_model() { return std::exchange(gathered_, nullptr); }

void TrainEngine::load_full_state(const std::map<std::string, torch::Tensor>& state) {
  torch::NoGradGuard no_grad;
  if (precision_->sharding()) {
    precision_->sharding()->load_full_state(state);
  } else {
    model_->load_state_dict(state, /*strict=*/true);
  }
}

}  // namespace verl::workers
