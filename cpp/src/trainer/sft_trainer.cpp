#include "verl/trainer/sft_trainer.h"

#include <vector>

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"
#include "verl/workers/micro_batch.h"
#include "workers/worker_common.h"
#include "workers/worker_config_util.h"

namespace verl::trainer {

using workers::config_util::get_or;

SFTConfig SFTConfig::from_config(const Config& config) {
  SFTConfig c;
  c.train_batch_size = get_or<int64_t>(config, "data.train_batch_size", c.train_batch_size);
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
  VERL_CHECK_AS(ConfigError, train_batch_size > 0, "config key 'data.train_batch_size' must be > 0, got ",
                train_batch_size);
  VERL_CHECK_AS(ConfigError, micro_batch_size_per_gpu > 0, "config key 'data.micro_batch_size_per_gpu' must be > 0, got ",
                micro_batch_size_per_gpu);
  VERL_CHECK_AS(ConfigError, max_token_len_per_gpu > 0, "config key 'data.max_token_len_per_gpu' must be > 0, got ",
                max_token_len_per_gpu);
}

namespace {

struct SFTBatch {
  torch::Tensor input_ids, attention_mask, loss_mask;  // (bs, seq) on the model's device
};

SFTBatch check_batch(const DataProto& data, const torch::Device& device) {
  for (const char* key : {"input_ids", "attention_mask", "loss_mask"}) {
    VERL_CHECK_AS(DataError, data.has_tensor(key), "SFT batch: missing tensor '", key,
                  "' (needs input_ids, attention_mask, loss_mask)");
  }
  SFTBatch b{data.tensor("input_ids"), data.tensor("attention_mask"), data.tensor("loss_mask")};
  VERL_CHECK_AS(DataError, b.input_ids.dim() == 2 && b.input_ids.size(0) > 0,
                "SFT batch: 'input_ids' must be (bs, seq) with bs > 0, got ", b.input_ids.sizes());
  VERL_CHECK_AS(DataError, b.input_ids.scalar_type() == torch::kLong, "SFT batch: 'input_ids' must be int64, got ",
                b.input_ids.scalar_type());
  for (const char* key : {"attention_mask", "loss_mask"}) {
    VERL_CHECK_AS(DataError, data.tensor(key).sizes() == b.input_ids.sizes(), "SFT batch: '", key, "' has shape ",
                  data.tensor(key).sizes(), " but 'input_ids' has ", b.input_ids.sizes());
  }
  VERL_CHECK_AS(DataError, (data.tensor("attention_mask") != 0).any(1).all().item<bool>(),
                "SFT batch: a row has no real token (attention_mask all 0)");
  b.input_ids = b.input_ids.to(device);
  b.attention_mask = b.attention_mask.to(device).to(torch::kBool);
  b.loss_mask = b.loss_mask.to(device).to(torch::kBool);
  return b;
}

// The rows' real tokens packed back to back (padding removed), and which packed positions predict a
// target: position q predicts q + 1 when that token is in the same row and marked by loss_mask.
struct Packed {
  torch::Tensor ids;         // (total,) int64
  torch::Tensor cu_seqlens;  // (rows + 1,) int64
  torch::Tensor predicts;    // (num_targets,) int64 packed positions whose next token is a target
  torch::Tensor labels;      // (num_targets,) int64 those targets
};

Packed pack(const SFTBatch& b) {
  Packed p;
  p.ids = b.input_ids.masked_select(b.attention_mask);
  torch::Tensor lens = b.attention_mask.sum(1);
  p.cu_seqlens = torch::cat({torch::zeros({1}, lens.options()), lens.cumsum(0)});
  torch::Tensor is_target = b.loss_mask.masked_select(b.attention_mask).clone();
  // a row's first real token has nothing before it to predict it from
  torch::Tensor row_starts = p.cu_seqlens.slice(0, 0, -1).masked_select(lens > 0);
  is_target.index_fill_(0, row_starts, false);
  torch::Tensor targets = is_target.nonzero().squeeze(1);
  p.predicts = targets - 1;
  p.labels = p.ids.index_select(0, targets);
  return p;
}

// -sum log p(target) over the rows of `b` (differentiable unless under NoGradGuard).
torch::Tensor loss_sum_of(model::CausalLM& model, const SFTBatch& b, bool remove_padding, int64_t& num_targets) {
  Packed p = pack(b);
  num_targets = p.labels.numel();
  torch::Tensor hidden = remove_padding ? model.hidden_states_packed(p.ids, p.cu_seqlens)
                                        : model.hidden_states(b.input_ids, b.attention_mask.to(torch::kLong))
                                              .index({b.attention_mask});
  torch::Tensor logits = model.apply_head(hidden.index_select(0, p.predicts));
  if (logits.scalar_type() != torch::kDouble) logits = logits.to(torch::kFloat);
  return -algo::logprobs_from_logits(logits, p.labels).sum();
}

SFTBatch take(const SFTBatch& b, const std::vector<int64_t>& rows) {
  torch::Tensor index = torch::tensor(rows, torch::kLong).to(b.input_ids.device());
  return {b.input_ids.index_select(0, index), b.attention_mask.index_select(0, index),
          b.loss_mask.index_select(0, index)};
}

workers::RowGroups micro_batches(const SFTConfig& config, const SFTBatch& b) {
  return config.use_dynamic_bsz ? workers::dynamic_micro_batches(workers::detail::row_token_counts(b.attention_mask),
                                                                 config.max_token_len_per_gpu)
                                : workers::fixed_micro_batches(b.input_ids.size(0), config.micro_batch_size_per_gpu);
}

}  // namespace

SFTTrainer::SFTTrainer(SFTConfig config, std::shared_ptr<model::CausalLM> model)
    : config_(std::move(config)), model_(std::move(model)) {
  VERL_CHECK(model_ != nullptr, "SFTTrainer: model is null");
  VERL_CHECK(model_->head_kind() == model::HeadKind::kLanguageModel, "SFTTrainer: the model must have the LM head");
  config_.validate();
  model_->set_gradient_checkpointing(config_.enable_gradient_checkpointing);
  optimizer_ = std::make_unique<workers::Optimizer>(model_->parameters(), config_.optim, "optim");
}

std::map<std::string, double> SFTTrainer::train_step(const DataProto& data) {
  SFTBatch b = check_batch(data, model_->device());
  const int64_t total_targets = [&] {
    torch::NoGradGuard no_grad;
    return pack(b).labels.numel();
  }();
  VERL_CHECK_AS(DataError, total_targets > 0, "SFT batch: no loss_mask token follows another real token of its row; "
                "nothing to train on");
  const workers::RowGroups micro = micro_batches(config_, b);

  model_->train();
  optimizer_->zero_grad();
  double loss = 0;
  for (const auto& rows : micro) {
    int64_t n = 0;
    torch::Tensor micro_loss = loss_sum_of(*model_, take(b, rows), config_.use_remove_padding, n) /
                               static_cast<double>(total_targets);
    if (n == 0) continue;
    micro_loss.backward();
    loss += micro_loss.item<double>();
  }
  const double lr = optimizer_->lr();
  const double grad_norm = optimizer_->step();
  optimizer_->scheduler_step();
  ++global_step_;
  return {{"train/loss", loss},
          {"train/grad_norm", grad_norm},
          {"train/lr", lr},
          {"train/global_tokens", b.attention_mask.sum().item<double>()}};
}

SFTLossSum SFTTrainer::loss_sum(const DataProto& data) {
  SFTBatch b = check_batch(data, model_->device());
  torch::NoGradGuard no_grad;
  const workers::RowGroups micro = micro_batches(config_, b);
  SFTLossSum out;
  for (const auto& rows : micro) {
    int64_t n = 0;
    torch::Tensor s = loss_sum_of(*model_, take(b, rows), config_.use_remove_padding, n);
    out.loss_sum += s.item<double>();
    out.num_tokens += n;
  }
  return out;
}

}  // namespace verl::trainer
