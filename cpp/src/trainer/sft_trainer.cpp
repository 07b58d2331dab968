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
  c.optim = workers::OptimConfig::from_config(config, "optim");
  c.validate();
  return c;
}

void SFTConfig::validate() const {
  VERL_CHECK_AS(ConfigError, micro_batch_size_per_gpu > 0,
                "config key 'data.micro_batch_size_per_gpu' must be > 0, got ", micro_batch_size_per_gpu);
  VERL_CHECK_AS(ConfigError, max_token_len_per_gpu > 0, "config key 'data.max_token_len_per_gpu' must be > 0, got ",
                max_token_len_per_gpu);
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
// nullopt (no forward at all) when the rows hold no target.
std::optional<torch::Tensor> loss_sum_of(model::CausalLM& model, const MicroBatch& m, bool remove_padding) {
  std::optional<torch::Tensor> logp = detail::target_log_probs(model, m.rows, m.packed, remove_padding);
  if (!logp) return std::nullopt;
  return -logp->sum();
}

// `lens`: the rows' valid tokens (row_token_counts), read from the device once per step.
workers::RowGroups micro_batches(const SFTConfig& config, const TargetBatch& b, const std::vector<int64_t>& lens) {
  if (!config.use_dynamic_bsz) {
    return workers::fixed_micro_batches(b.input_ids.size(0), config.micro_batch_size_per_gpu);
  }
  const int64_t longest = *std::max_element(lens.begin(), lens.end());
  VERL_CHECK_AS(DataError, longest <= config.max_token_len_per_gpu, "SFT batch: a row of ", longest,
                " tokens does not fit the micro-batch token budget data.max_token_len_per_gpu=",
                config.max_token_len_per_gpu, " (raise it, or lower data.max_length)");
  return workers::dynamic_micro_batches(lens, config.max_token_len_per_gpu);
}

// The batch cut into micro-batches, each packed once; `num_targets` / `num_tokens` add up over them.
std::vector<MicroBatch> pack_micro_batches(const SFTConfig& config, const TargetBatch& b, const std::vector<int64_t>& lens,
                                           int64_t& num_targets, int64_t& num_tokens) {
  std::vector<MicroBatch> out;
  num_targets = num_tokens = 0;
  for (const auto& rows : micro_batches(config, b, lens)) {
    TargetBatch part = detail::take_rows(b, rows);
    PackedTargets packed = detail::pack_targets(part);
    num_targets += packed.labels.numel();
    num_tokens += packed.ids.numel();
    out.push_back({std::move(part), std::move(packed)});
  }
  return out;
}

}  // namespace

SFTTrainer::SFTTrainer(SFTConfig config, std::shared_ptr<model::CausalLM> model)
    : config_(std::move(config)), model_(std::move(model)) {
  VERL_CHECK(model_ != nullptr, "SFTTrainer: model is null");
  VERL_CHECK(model_->head_kind() == model::HeadKind::kLanguageModel,
             "SFTTrainer: the model must have the LM head (got a value-head model)");
  config_.validate();
  model_->set_gradient_checkpointing(config_.enable_gradient_checkpointing);
  optimizer_ = std::make_unique<workers::Optimizer>(model_->parameters(), config_.optim, "optim");
}

std::map<std::string, double> SFTTrainer::train_step(const DataProto& data) {
  const auto start = std::chrono::steady_clock::now();
  TargetBatch b = check_target_batch(data, *model_, "SFT batch");
  int64_t total_targets = 0, total_tokens = 0;
  const std::vector<int64_t> lens = workers::detail::row_token_counts(b.attention_mask);
  const std::vector<MicroBatch> micro = pack_micro_batches(config_, b, lens, total_targets, total_tokens);
  VERL_CHECK_AS(DataError, total_targets > 0,
                "SFT batch: no loss_mask token follows another real token of its row; nothing to train on");

  model_->train();
  optimizer_->zero_grad();
  // Each micro-batch's sum is divided by the targets of the whole batch, so the accumulated gradient is the
  // gradient of the batch's token-mean loss however the batch is cut (verl's sft_loss with batch_num_tokens).
  torch::Tensor loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(model_->device()));
  for (const MicroBatch& m : micro) {
    std::optional<torch::Tensor> sum = loss_sum_of(*model_, m, config_.use_remove_padding);
    if (!sum) continue;
    torch::Tensor micro_loss = *sum / static_cast<double>(total_targets);
    micro_loss.backward();
    loss += micro_loss.detach().to(torch::kDouble);
  }
  const double grad_norm = optimizer_->step();
  const double lr = optimizer_->scheduler_step();
  ++global_step_;
  // verl's train_batch MFU of the step: forward, backward and optimizer over the rows' tokens.
  const double mfu = workers::detail::worker_mfu(*model_, lens, start, /*forward_only=*/false);
  return {{"train/loss", loss.item<double>()},
          {"train/grad_norm", grad_norm},
          {"train/lr", lr},
          {"train/mfu", mfu},
          {"train/global_tokens", static_cast<double>(total_tokens)}};
}

SFTLossSum SFTTrainer::loss_sum(const DataProto& data) {
  TargetBatch b = check_target_batch(data, *model_, "SFT batch");
  torch::NoGradGuard no_grad;
  int64_t num_targets = 0, num_tokens = 0;
  torch::Tensor sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(model_->device()));
  const std::vector<int64_t> lens = workers::detail::row_token_counts(b.attention_mask);
  for (const MicroBatch& m : pack_micro_batches(config_, b, lens, num_targets, num_tokens)) {
    if (std::optional<torch::Tensor> s = loss_sum_of(*model_, m, config_.use_remove_padding)) {
      sum += s->to(torch::kDouble);
    }
  }
  return {sum.item<double>(), num_targets};
}

}  // namespace verl::trainer
