// verl::trainer::SFTTrainer: the SFT step (see sft_trainer.h).
#include "verl/trainer/sft_trainer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "verl/core/error.h"
#include "verl/workers/micro_batch.h"
#include "trainer/target_batch.h"
#include "verl/workers/train_engine.h"
#include "workers/worker_common.h"
#include "workers/worker_config_util.h"

namespace verl::trainer {

using workers::config_util::get_or;

SFTConfig SFTConfig::from_config(const Config& config_in, std::optional<int64_t> total_training_steps) {
  Config config = config_in;
  if (total_training_steps) {
    VERL_CHECK_AS(ConfigError, *total_training_steps > 0, "total_training_steps must be positive, got ",
                  *total_training_steps);
    config.set("optim.total_training_steps", *total_training_steps);
  }
  SFTConfig c;
  c.micro_batch_size_per_gpu = get_or<int64_t>(config, "data.micro_batch_size_per_gpu", c.micro_batch_size_per_gpu);
  c.use_dynamic_bsz = get_or(config, "data.use_dynamic_bsz", c.use_dynamic_bsz);
  c.max_token_len_per_gpu = get_or<int64_t>(config, "data.max_token_len_per_gpu", c.max_token_len_per_gpu);
  c.use_remove_padding = get_or(config, "model.use_remove_padding", c.use_remove_padding);
  c.enable_gradient_checkpointing =
      get_or(config, "model.enable_gradient_checkpointing", c.enable_gradient_checkpointing);
  c.dtype = get_or(config, "engine.dtype", c.dtype);
  c.reshard_after_forward = get_or(config, "engine.reshard_after_forward", c.reshard_after_forward);
  c.forward_prefetch = get_or(config, "engine.forward_prefetch", c.forward_prefetch);
  c.optim = workers::OptimConfig::from_config(config, "optim");
  c.lora = workers::lora_settings(config, "model");
  c.lora_seed = static_cast<uint64_t>(get_or<int64_t>(config, "data.seed", 0));
  c.validate();
  return c;
}

void SFTConfig::validate() const {
  VERL_CHECK_AS(ConfigError, micro_batch_size_per_gpu > 0,
                "config key 'data.micro_batch_size_per_gpu' must be > 0, got ", micro_batch_size_per_gpu);
  VERL_CHECK_AS(ConfigError, max_token_len_per_gpu > 0, "config key 'data.max_token_len_per_gpu' must be > 0, got ",
                max_token_len_per_gpu);
  (void)workers::parse_compute_dtype(dtype, "engine.dtype");  // the name alone: `auto` needs the model's device
}

namespace {

using detail::check_target_batch;
using detail::PackedTargets;
using detail::TargetBatch;

// One micro-batch's rows and their packing, built once per step.
struct MicroBatch {
  TargetBatch rows;
  PackedTargets packed;
};

// -sum log p(target) over the rows of `m` (differentiable unless under NoGradGuard), in at least float32;
// nullopt (no forward at all) when the rows hold no target, unless `forward_without_targets` (ZeRO-3: 0).
std::optional<torch::Tensor> loss_sum_of(model::CausalLM& model, const MicroBatch& m, bool remove_padding,
                                         bool forward_without_targets = false) {
  std::optional<torch::Tensor> logp =
      detail::target_log_probs(model, m.rows, m.packed, remove_padding, forward_without_targets);
  if (!logp) return std::nullopt;
  return -logp->sum();
}

// The batch cut into micro-batches (micro_batch_size_per_gpu rows, or the max_token_len_per_gpu budget), each
// packed once; `num_targets` / `num_tokens` add up over them. `longest`: the longest row of the global batch, so
// every rank refuses a batch alike.
std::vector<MicroBatch> pack_micro_batches(const SFTConfig& config, const workers::TrainEngine& engine,
                                           const TargetBatch& b, int64_t longest, int64_t& num_targets,
                                           int64_t& num_tokens) {
  if (config.use_dynamic_bsz) {
    VERL_CHECK_AS(DataError, longest <= config.max_token_len_per_gpu, "SFT batch: a row of ", longest,
                  " tokens does not fit the micro-batch token budget data.max_token_len_per_gpu=",
                  config.max_token_len_per_gpu, " (raise it, or lower data.max_length)");
  }
  std::vector<MicroBatch> out;
  num_targets = num_tokens = 0;
  const std::vector<int64_t> lens = workers::detail::row_token_counts(b.attention_mask);
  for (const auto& rows : engine.micro_batches(
           lens, {config.use_dynamic_bsz, config.micro_batch_size_per_gpu, config.max_token_len_per_gpu})) {
    TargetBatch part = detail::take_rows(b, rows);
    PackedTargets packed = detail::pack_targets(part);
    num_targets += packed.labels.numel();
    num_tokens += packed.ids.numel();
    out.push_back({std::move(part), std::move(packed)});
  }
  return out;
}

int64_t longest_row(const TargetBatch& b) { return b.attention_mask.sum(1).max().item<int64_t>(); }

}  // namespace

SFTTrainer::SFTTrainer(SFTConfig config, std::shared_ptr<model::CausalLM> model)
    : config_(std::move(config)), model_(std::move(model)) {
  VERL_CHECK(model_ != nullptr, "SFTTrainer: model is null");
  VERL_CHECK(model_->head_kind() == model::HeadKind::kLanguageModel,
             "SFTTrainer: the model must have the LM head (got a value-head model)");
  config_.validate();
  // Before the engine: its optimizer and mixed-precision copy are made for the trainable parameters it finds.
  if (config_.lora) workers::apply_lora(*model_, *config_.lora, config_.lora_seed);
  workers::TrainEngineOptions options;
  options.dtype = config_.dtype;
  options.dtype_key = "engine.dtype";
  options.model_dtype_key = "model.dtype";
  options.optim = config_.optim;
  options.optim_key = "optim";
  options.gather = {config_.reshard_after_forward, config_.forward_prefetch};
  options.enable_gradient_checkpointing = config_.enable_gradient_checkpointing;
  engine_ = std::make_unique<workers::TrainEngine>(model_, std::move(options));
}

SFTTrainer::~SFTTrainer() = default;

void SFTTrainer::set_data_parallel(std::shared_ptr<dist::Communicator> communicator,
                                   const workers::ShardGroups& groups) {
  VERL_CHECK_AS(ConfigError, !model_->lora() || !communicator || communicator->world_size() == 1,
                "model.lora_rank: LoRA over several ranks is not supported yet (the sharded engine does not take "
                "adapters); train with one process");
  // A model built on each rank starts from rank 0's weights, before it is sharded.
  workers::detail::DataParallel(communicator).broadcast_model_from_controller(*model_);
  engine_->shard_over(std::move(communicator), /*generation_tp=*/1, groups);
}

workers::Optimizer& SFTTrainer::optimizer() { return engine_->optimizer(); }

std::map<std::string, double> SFTTrainer::train_step(const DataProto& data) {
  const auto start = std::chrono::steady_clock::now();
  // Every rank checks the whole batch, so a bad one fails on all of them alike, before any collective.
  const TargetBatch global = check_target_batch(data, *model_, "SFT batch");
  const workers::detail::DataParallel& dp = engine_->data_parallel();
  const TargetBatch b = detail::rank_share(global, engine_->rank(), dp.size(), 1, "data.train_batch_size");
  int64_t local_targets = 0, local_tokens = 0;
  const std::vector<MicroBatch> micro =
      pack_micro_batches(config_, *engine_, b, longest_row(global), local_targets, local_tokens);
  const double total_targets = dp.sum(static_cast<double>(local_targets));
  VERL_CHECK_AS(DataError, total_targets > 0,
                "SFT batch: no loss_mask token follows another real token of its row; nothing to train on");

  model_->train();
  // Each micro-batch's sum is divided by the targets of the whole (global) batch, so the accumulated gradient is the
  // gradient of the batch's token-mean loss however the batch is cut (verl's sft_loss with batch_num_tokens); over
  // N ranks the sharded optimizer averages the gradients, which the factor N makes up for (verl's dp_size).
  const bool sharded = engine_->sharded();
  torch::Tensor loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(model_->device()));
  const double grad_norm = engine_->train_batch(micro.size(), [&](model::CausalLM& model, size_t i) {
    std::optional<torch::Tensor> sum = loss_sum_of(model, micro[i], config_.use_remove_padding, sharded);
    if (!sum) return torch::Tensor();
    torch::Tensor micro_loss = *sum / total_targets;
    loss += micro_loss.detach().to(torch::kDouble);
    return dp.size() == 1 ? micro_loss : micro_loss * static_cast<double>(dp.size());
  });
  const double lr = engine_->scheduler_step();
  ++global_step_;
  // verl's train_batch MFU of the step: forward, backward and optimizer over this rank's tokens.
  const double mfu = workers::detail::worker_mfu(*engine_->compute_model(),
                                                 workers::detail::row_token_counts(b.attention_mask), start,
                                                 /*forward_only=*/false);
  return {{"train/loss", dp.sum(loss.item<double>())},
          {"train/grad_norm", grad_norm},
          {"train/lr", lr},
          {"train/mfu", mfu},
          {"train/global_tokens", dp.sum(static_cast<double>(local_tokens))}};
}

SFTLossSum SFTTrainer::loss_sum(const DataProto& data) {
  TargetBatch b = check_target_batch(data, *model_, "SFT batch");
  int64_t num_targets = 0, num_tokens = 0;
  // The whole batch on every rank: the same passes everywhere (ZeRO-3 gathers weights in each), the global sums.
  const std::vector<MicroBatch> micro = pack_micro_batches(config_, *engine_, b, longest_row(b), num_targets, num_tokens);
  torch::Tensor sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(model_->device()));
  engine_->infer_batch(micro.size(), [&](model::CausalLM& model, size_t i) {
    if (std::optional<torch::Tensor> s = loss_sum_of(model, micro[i], config_.use_remove_padding)) {
      sum += s->to(torch::kDouble);
    }
  });
  return {sum.item<double>(), num_targets};
}

}  // namespace verl::trainer
