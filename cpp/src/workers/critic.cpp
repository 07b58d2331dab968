#include "verl/workers/critic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include <torch/torch.h>

#include "verl/algo/agg_loss.h"
#include "verl/algo/functional.h"
#include "verl/algo/value_loss.h"
#include "verl/core/device.h"
#include "verl/core/error.h"
#include "verl/dist/worker_group.h"
#include "verl/workers/micro_batch.h"
#include "verl/workers/response_forward.h"
#include "worker_common.h"
#include "verl/workers/train_engine.h"
#include "worker_config_util.h"

namespace verl::workers {

using namespace config_util;

CriticConfig CriticConfig::from_config(const Config& config, const std::string& prefix) {
  CriticConfig c;
  const std::string k = prefix + ".";
  c.ppo_mini_batch_size = get_or<int64_t>(config, k + "ppo_mini_batch_size", c.ppo_mini_batch_size);
  c.rollout_n = get_or<int64_t>(config, k + "rollout_n", get_or<int64_t>(config, "actor_rollout_ref.rollout.n", 1));
  auto global = get_optional<int64_t>(config, k + "ppo_micro_batch_size");
  auto per_gpu = get_optional<int64_t>(config, k + "ppo_micro_batch_size_per_gpu");
  // The default tree derives ppo_micro_batch_size_per_gpu from ppo_micro_batch_size, so both being
  // set is only a conflict when they differ.
  VERL_CHECK_AS(ConfigError, !(global && per_gpu && *global != *per_gpu), "config keys '", k,
                "ppo_micro_batch_size' and '", k, "ppo_micro_batch_size_per_gpu' are both set; keep only the per-gpu key");
  c.ppo_micro_batch_size_per_gpu = per_gpu ? per_gpu : global;
  c.use_dynamic_bsz = get_or(config, k + "use_dynamic_bsz", c.use_dynamic_bsz);
  c.ppo_max_token_len_per_gpu = get_or<int64_t>(config, k + "ppo_max_token_len_per_gpu", c.ppo_max_token_len_per_gpu);
  auto fwd_global = get_optional<int64_t>(config, k + "forward_micro_batch_size");
  auto fwd_per_gpu = get_optional<int64_t>(config, k + "forward_micro_batch_size_per_gpu");
  c.forward_micro_batch_size_per_gpu = fwd_per_gpu ? fwd_per_gpu : (fwd_global ? fwd_global : c.ppo_micro_batch_size_per_gpu);
  c.forward_max_token_len_per_gpu =
      get_or<int64_t>(config, k + "forward_max_token_len_per_gpu", c.ppo_max_token_len_per_gpu);
  c.ppo_epochs = get_or<int64_t>(config, k + "ppo_epochs", c.ppo_epochs);
  c.shuffle = get_or(config, k + "shuffle", c.shuffle);
  c.data_loader_seed = get_or<int64_t>(config, k + "data_loader_seed", c.data_loader_seed);
  c.cliprange_value = get_or(config, k + "cliprange_value", c.cliprange_value);
  c.loss_agg_mode = get_or(config, k + "loss_agg_mode", c.loss_agg_mode);
  c.loss_scale_factor = get_optional<double>(config, k + "loss_scale_factor");
  c.optim = OptimConfig::from_config(config, k + "optim");
  auto legacy = get_optional<double>(config, k + "grad_clip");
  if (legacy && *legacy != 1.0 && c.optim.clip_grad == 1.0) c.optim.clip_grad = *legacy;
  c.dtype = get_or(config, k + "fsdp.dtype", c.dtype);
  c.reshard_after_forward = get_or(config, k + "fsdp.reshard_after_forward", c.reshard_after_forward);
  c.forward_prefetch = get_or(config, k + "fsdp.forward_prefetch", c.forward_prefetch);
  c.use_remove_padding = get_or(config, k + "model.use_remove_padding", c.use_remove_padding);
  c.enable_gradient_checkpointing =
      get_or(config, k + "model.enable_gradient_checkpointing", c.enable_gradient_checkpointing);
  c.validate();
  return c;
}

void CriticConfig::validate() const {
  const std::string k = "critic.";
  VERL_CHECK_AS(ConfigError, ppo_mini_batch_size >= 1, "config key '", k, "ppo_mini_batch_size' must be >= 1, got ",
                ppo_mini_batch_size);
  VERL_CHECK_AS(ConfigError, rollout_n >= 1, "config key '", k, "rollout_n' must be >= 1, got ", rollout_n);
  VERL_CHECK_AS(ConfigError, ppo_epochs >= 1, "config key '", k, "ppo_epochs' must be >= 1, got ", ppo_epochs);
  if (use_dynamic_bsz) {
    VERL_CHECK_AS(ConfigError, ppo_max_token_len_per_gpu >= 1 && forward_max_token_len_per_gpu >= 1, "config keys '",
                  k, "ppo_max_token_len_per_gpu' and '", k, "forward_max_token_len_per_gpu' must be >= 1");
  } else {
    VERL_CHECK_AS(ConfigError, ppo_micro_batch_size_per_gpu && *ppo_micro_batch_size_per_gpu >= 1, "config key '", k,
                  "ppo_micro_batch_size_per_gpu' must be set (>= 1) when use_dynamic_bsz is false");
    VERL_CHECK_AS(ConfigError, forward_micro_batch_size_per_gpu && *forward_micro_batch_size_per_gpu >= 1,
                  "config key '", k, "forward_micro_batch_size_per_gpu' must be set (>= 1) when use_dynamic_bsz is false");
  }
  VERL_CHECK_AS(ConfigError, std::isfinite(cliprange_value) && cliprange_value >= 0, "config key '", k,
                "cliprange_value' must be >= 0, got ", cliprange_value);
  const auto& modes = algo::loss_agg_modes();
  VERL_CHECK_AS(ConfigError, std::find(modes.begin(), modes.end(), loss_agg_mode) != modes.end(), "config key '", k,
                "loss_agg_mode' = '", loss_agg_mode, "' is not a valid loss_agg_mode");
  if (loss_scale_factor) {
    VERL_CHECK_AS(ConfigError, *loss_scale_factor > 0, "config key '", k, "loss_scale_factor' must be > 0");
  }
  optim.validate(k + "optim");
  (void)parse_compute_dtype(dtype, k + "fsdp.dtype");  // the name alone: `auto` needs the model's device
}

CriticWorker::CriticWorker(const Config& config, std::shared_ptr<model::CausalLM> model)
    : CriticWorker(CriticConfig::from_config(config), std::move(model)) {}

CriticWorker::CriticWorker(CriticConfig config, std::shared_ptr<model::CausalLM> model)
    : config_(std::move(config)), model_(std::move(model)) {
  VERL_CHECK(model_ != nullptr, "CriticWorker: model is null");
  VERL_CHECK(model_->head_kind() == model::HeadKind::kValue,
             "CriticWorker needs a model with the value head (HeadKind::kValue)");
  config_.validate();
  TrainEngineOptions options;
  options.dtype = config_.dtype;
  options.dtype_key = "critic.fsdp.dtype";
  options.optim = config_.optim;
  options.optim_key = "critic.optim";
  // The critic is built from the actor's weights in the actor's dtype (critic.fsdp.model_dtype follows it).
  options.model_dtype_key = "actor_rollout_ref.actor.fsdp_config.model_dtype (the critic's)";
  options.gather = {config_.reshard_after_forward, config_.forward_prefetch};  // as the actor's
  options.enable_gradient_checkpointing = config_.enable_gradient_checkpointing;
  engine_ = std::make_unique<TrainEngine>(model_, std::move(options));
}

CriticWorker::~CriticWorker() = default;

std::shared_ptr<model::CausalLM> CriticWorker::compute_model() { return engine_->compute_model(); }
MixedPrecision& CriticWorker::precision() { return engine_->precision(); }
Optimizer& CriticWorker::optimizer() { return engine_->optimizer(); }
TrainEngine& CriticWorker::engine() { return *engine_; }

DataProto CriticWorker::compute_values(const DataProto& data) {
  const torch::Device device = engine_->model()->device();
  const torch::Tensor& responses = data.tensor("responses");
  VERL_CHECK_AS(DataError, responses.dim() == 2, "'responses' must be (bs, response_length), got ", responses.sizes());
  const int64_t response_length = responses.size(1);
  const int64_t bs = data.size();
  detail::TensorMap tensors = detail::gather_tensors(data, {"input_ids", "attention_mask", "position_ids"}, device);
  VERL_CHECK_AS(DataError, tensors.count("input_ids") && tensors.count("attention_mask"),
                "compute_values needs 'input_ids' and 'attention_mask'");
  const RowGroups groups = engine_->micro_batches(
      detail::row_token_counts(tensors["attention_mask"]),
      {config_.use_dynamic_bsz, config_.forward_micro_batch_size_per_gpu.value_or(1),
       config_.forward_max_token_len_per_gpu});
  std::vector<torch::Tensor> parts;
  engine_->infer_batch(groups.size(), [&](model::CausalLM& model, size_t i) {
    detail::TensorMap m = detail::take_rows(tensors, groups[i], device);
    parts.push_back(response_values(model, m["input_ids"], m["attention_mask"], detail::get(m, "position_ids"),
                                    response_length, config_.use_remove_padding));
  });
  torch::Tensor values = torch::cat(parts);
  values = values.index_select(0, restore_order(groups, bs).to(device));
  DataProto result;
  result.set_tensor("values", values.to(data.tensor("input_ids").device()));
  return result;
}

void CriticWorker::register_methods(dist::WorkerGroup& group, const std::string& role) {
  VERL_CHECK(role == "critic" || role == "cost_critic", "CriticWorker::register_methods: role must be critic or "
             "cost_critic, got '", role, "'");
  const bool cost = role == "cost_critic";
  group.register_method(
      cost ? "compute_cost_values" : "compute_values", [this](const DataProto& chunk) { return compute_values(chunk); },
      dist::Dispatch::kPadSplit);
  group.register_method(
      cost ? "update_cost_critic" : "update_critic",
      [this](const DataProto& chunk) { return dist::with_metrics(DataProto(), update_critic(chunk)); },
      dist::Dispatch::kSplit);
}

void CriticWorker::set_data_parallel(std::shared_ptr<dist::Communicator> communicator, const ShardGroups& groups) {
  engine_->shard_over(std::move(communicator), /*generation_tp=*/1, groups);
}

std::map<std::string, double> CriticWorker::update_critic(const DataProto& data) {
  const std::string k = "critic.";
  const int64_t bs = data.size();
  const torch::Tensor& responses = data.tensor("responses");
  VERL_CHECK_AS(DataError, responses.dim() == 2, "'responses' must be (bs, response_length), got ", responses.sizes());
  const int64_t response_length = responses.size(1);
  for (const char* key : {"response_mask", "values", "returns"}) {
    const torch::Tensor& t = data.tensor(key);
    VERL_CHECK_AS(DataError, t.dim() == 2 && t.size(0) == bs && t.size(1) == response_length, "'", key,
                  "' must be (bs, response_length) = (", bs, ", ", response_length, "), got ", t.sizes());
  }
  const detail::DataParallel& dp = engine_->data_parallel();
  const int64_t global_mini_rows = config_.ppo_mini_batch_size * config_.rollout_n;
  const int64_t mini_rows = dp.local_rows(global_mini_rows, k + "ppo_mini_batch_size");
  VERL_CHECK_AS(ConfigError, bs % mini_rows == 0, "config key '", k, "ppo_mini_batch_size' = ",
                config_.ppo_mini_batch_size, " x rollout_n = ", config_.rollout_n, " gives mini-batches of ", mini_rows,
                " rows, which do not divide the batch of ", bs, " rows");
  if (!config_.use_dynamic_bsz) {
    VERL_CHECK_AS(ConfigError, mini_rows % *config_.ppo_micro_batch_size_per_gpu == 0, "config key '", k,
                  "ppo_micro_batch_size_per_gpu' = ", *config_.ppo_micro_batch_size_per_gpu,
                  " does not divide the mini-batch of ", mini_rows, " rows");
  }
  const torch::Device device = engine_->model()->device();
  detail::TensorMap tensors = detail::gather_tensors(
      data, {"input_ids", "attention_mask", "position_ids", "response_mask", "values", "returns"}, device);
  VERL_CHECK_AS(DataError, tensors.count("input_ids") && tensors.count("attention_mask"),
                "update_critic needs 'input_ids' and 'attention_mask'");

  detail::MetricsCollector metrics;
  using Agg = detail::MetricsCollector::Agg;
  RowGroups mini_batches =
      mini_batch_rows(bs, mini_rows, config_.ppo_epochs, config_.data_loader_seed, config_.shuffle);
  const std::vector<int64_t> seqlens = detail::row_token_counts(tensors["attention_mask"]);  // one host read
  for (size_t step = 0; step < mini_batches.size(); ++step) {
    const auto mini_batch_start = std::chrono::steady_clock::now();
    detail::TensorMap mb = detail::take_rows(tensors, mini_batches[step], device);
    const std::vector<int64_t> mb_seqlens = detail::select_rows(seqlens, mini_batches[step]);
    const double batch_num_tokens = dp.sum(mb["response_mask"].to(torch::kBool).sum().item<double>());
    const RowGroups micro = engine_->micro_batches(
        mb_seqlens, {config_.use_dynamic_bsz, config_.ppo_micro_batch_size_per_gpu.value_or(1),
                     config_.ppo_max_token_len_per_gpu});
    double mini_batch_loss = 0.0;
    const double grad_norm = engine_->train_batch(micro.size(), [&](model::CausalLM& model, size_t i) {
      detail::TensorMap m = detail::take_rows(mb, micro[i], device);
      torch::Tensor vpreds = response_values(model, m["input_ids"], m["attention_mask"],
                                             detail::get(m, "position_ids"), response_length, config_.use_remove_padding);
      torch::Tensor mask = m["response_mask"].to(torch::kBool);
      algo::ValueLossOutput out = algo::compute_value_loss(vpreds, m["returns"], m["values"], mask,
                                                           config_.cliprange_value, config_.loss_agg_mode, dp.size(),
                                                           batch_num_tokens, static_cast<double>(global_mini_rows),
                                                           config_.loss_scale_factor);
      metrics.add_metric("critic/vf_loss", out.vf_loss.item<double>(), Agg::kSum);
      metrics.add_plain("critic/vf_clipfrac", out.vf_clipfrac.item<double>());
      metrics.add_plain("critic/vpred_mean", algo::masked_mean(vpreds.detach(), mask).item<double>());
      mini_batch_loss += out.vf_loss.item<double>();
      return out.vf_loss;
    });
    // verl's train_batch MFU: this mini-batch's FLOPs over its forward/backward/optimizer time.
    metrics.add_plain("critic/mfu", detail::worker_mfu(*engine_->compute_model(), mb_seqlens, mini_batch_start,
                                                       /*forward_only=*/false));
    metrics.add_plain("critic/loss", mini_batch_loss);
    metrics.add_plain("critic/grad_norm", grad_norm);
    if (step + 1 == mini_batches.size()) metrics.add_plain("critic/lr", engine_->scheduler_step());
    metrics.end_mini_batch();
  }
  return metrics.reduce();
}

}  // namespace verl::workers
