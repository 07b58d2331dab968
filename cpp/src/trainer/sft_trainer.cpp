// verl::trainer::SFTTrainer: the SFT step (see sft_trainer.h).
#include "verl/trainer/sft_trainer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"
#include "verl/workers/micro_batch.h"
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

struct SFTBatch {
  torch::Tensor input_ids;       // (bs, seq) int64 on the model's device
  torch::Tensor attention_mask;  // (bs, seq) bool
  torch::Tensor loss_mask;       // (bs, seq) bool
};

// Checks keys, shapes, dtypes and token ids (DataError naming what is wrong) before anything runs, so a bad
// batch leaves the model, its gradients and the optimizer as they were.
SFTBatch check_batch(const DataProto& data, const model::CausalLM& model) {
  for (const char* key : {"input_ids", "attention_mask", "loss_mask"}) {
    VERL_CHECK_AS(DataError, data.has_tensor(key), "SFT batch: missing tensor '", key,
                  "' (needs input_ids, attention_mask, loss_mask)");
  }
  const torch::Tensor& ids = data.tensor("input_ids");
  VERL_CHECK_AS(DataError, ids.dim() == 2 && ids.size(0) > 0 && ids.size(1) > 0,
                "SFT batch: 'input_ids' must be (bs, seq) with bs, seq > 0, got ", ids.sizes());
  VERL_CHECK_AS(DataError, !torch::isFloatingType(ids.scalar_type()) && ids.scalar_type() != torch::kBool,
                "SFT batch: 'input_ids' must hold integer token ids, got ", ids.scalar_type());
  for (const char* key : {"attention_mask", "loss_mask"}) {
    VERL_CHECK_AS(DataError, data.tensor(key).sizes() == ids.sizes(), "SFT batch: '", key, "' has shape ",
                  data.tensor(key).sizes(), " but 'input_ids' has ", ids.sizes());
  }
  const torch::Device device = model.device();
  SFTBatch b{ids.to(device, torch::kLong), data.tensor("attention_mask").to(device) != 0,
             data.tensor("loss_mask").to(device) != 0};
  VERL_CHECK_AS(DataError, b.attention_mask.any(1).all().item<bool>(),
                "SFT batch: a row has no real token (attention_mask all 0)");
  torch::Tensor real_ids = b.input_ids.masked_select(b.attention_mask);
  const int64_t vocab = model.config().vocab_size;
  const auto [lo, hi] = torch::aminmax(real_ids);
  VERL_CHECK_AS(DataError, lo.item<int64_t>() >= 0 && hi.item<int64_t>() < vocab,
                "SFT batch: token ids must lie in [0, vocab_size = ", vocab, "), got [", lo.item<int64_t>(), ", ",
                hi.item<int64_t>(), "]");
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
  torch::Tensor lens = b.attention_mask.sum(1);  // int64, every row > 0 (check_batch)
  p.cu_seqlens = torch::cat({torch::zeros({1}, lens.options()), lens.cumsum(0)});
  torch::Tensor is_target = b.loss_mask.masked_select(b.attention_mask);
  // a row's first real token has nothing before it to predict it from
  is_target.index_fill_(0, p.cu_seqlens.slice(0, 0, -1), false);
  torch::Tensor targets = is_target.nonzero().squeeze(1);
  p.predicts = targets - 1;
  p.labels = p.ids.index_select(0, targets);
  return p;
}

// One micro-batch's rows and their packing, built once per step.
struct MicroBatch {
  SFTBatch rows;
  Packed packed;
};

// -sum log p(target) over the rows of `m` (differentiable unless under NoGradGuard), in at least float32;
// nullopt (no forward at all) when the rows hold no target.
std::optional<torch::Tensor> loss_sum_of(model::CausalLM& model, const MicroBatch& m, bool remove_padding) {
  const SFTBatch& b = m.rows;
  const Packed& p = m.packed;
  if (p.labels.numel() == 0) return std::nullopt;
  torch::Tensor hidden =
      remove_padding ? model.hidden_states_packed(p.ids, p.cu_seqlens)
                     : model.hidden_states(b.input_ids, b.attention_mask.to(torch::kLong)).index({b.attention_mask});
  // Only the positions that predict a target go through the (vocab-sized) head.
  torch::Tensor logits = model.apply_head(hidden.index_select(0, p.predicts));
  if (logits.scalar_type() != torch::kDouble) logits = logits.to(torch::kFloat);
  return -algo::logprobs_from_logits(logits, p.labels).sum();
}

SFTBatch take(const SFTBatch& b, const std::vector<int64_t>& rows) {
  torch::Tensor index = torch::tensor(rows, torch::kLong).to(b.input_ids.device());
  return {b.input_ids.index_select(0, index), b.attention_mask.index_select(0, index),
          b.loss_mask.index_select(0, index)};
}

// `lens`: the rows' valid tokens (row_token_counts), read from the device once per step.
workers::RowGroups micro_batches(const SFTConfig& config, const SFTBatch& b, const std::vector<int64_t>& lens) {
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
std::vector<MicroBatch> pack_micro_batches(const SFTConfig& config, const SFTBatch& b, const std::vector<int64_t>& lens,
                                           int64_t& num_targets, int64_t& num_tokens) {
  std::vector<MicroBatch> out;
  num_targets = num_tokens = 0;
  for (const auto& rows : micro_batches(config, b, lens)) {
    SFTBatch part = take(b, rows);
    Packed packed = pack(part);
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
  SFTBatch b = check_batch(data, *model_);
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
  SFTBatch b = check_batch(data, *model_);
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
