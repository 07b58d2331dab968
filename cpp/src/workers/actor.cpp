#include "verl/workers/actor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include <torch/torch.h>

#include "verl/algo/agg_loss.h"
#include "verl/algo/kl.h"
#include "verl/core/device.h"
#include "verl/core/error.h"
#include "verl/dist/worker_group.h"
#include "verl/workers/micro_batch.h"
#include "verl/workers/response_forward.h"
#include "algo/rollout_correction_config.h"
#include "worker_common.h"
#include "verl/workers/train_engine.h"
#include "worker_config_util.h"

namespace verl::workers {

using namespace config_util;

namespace {

// verl's deprecated global micro-batch key and its per-GPU successor (one process = one GPU here).
std::optional<int64_t> micro_batch_size(const Config& config, const std::string& global_key,
                                        const std::string& per_gpu_key) {
  auto global = get_optional<int64_t>(config, global_key);
  auto per_gpu = get_optional<int64_t>(config, per_gpu_key);
  VERL_CHECK_AS(ConfigError, !(global && per_gpu), "config keys '", global_key, "' and '", per_gpu_key,
                "' are both set; remove '", global_key, "' (only the *_per_gpu key is supported, as in verl)");
  return per_gpu ? per_gpu : global;
}

std::string role_block(PolicyRole role) { return role == PolicyRole::kActor ? "rollout" : "ref"; }

double temperature_of(const DataProto& data, double fallback) {
  const Json& meta = data.meta_info();
  if (meta.contains("temperature") && meta["temperature"].is_number()) return meta["temperature"].get<double>();
  return fallback;
}

void check_response_tensor(const DataProto& data, const std::string& key, int64_t bs, int64_t response_length) {
  const torch::Tensor& t = data.tensor(key);
  VERL_CHECK_AS(DataError, t.dim() == 2 && t.size(0) == bs && t.size(1) == response_length, "'", key,
                "' must be (bs, response_length) = (", bs, ", ", response_length, "), got ", t.sizes());
}

}  // namespace

ActorConfig ActorConfig::from_config(const Config& config, PolicyRole role, const std::string& prefix) {
  ActorConfig c;
  const std::string a = prefix + ".actor.";
  c.ppo_mini_batch_size = get_or<int64_t>(config, a + "ppo_mini_batch_size", c.ppo_mini_batch_size);
  c.rollout_n = get_or<int64_t>(config, prefix + ".rollout.n", c.rollout_n);
  c.ppo_micro_batch_size_per_gpu =
      micro_batch_size(config, a + "ppo_micro_batch_size", a + "ppo_micro_batch_size_per_gpu");
  c.use_dynamic_bsz = get_or(config, a + "use_dynamic_bsz", c.use_dynamic_bsz);
  c.ppo_max_token_len_per_gpu = get_or<int64_t>(config, a + "ppo_max_token_len_per_gpu", c.ppo_max_token_len_per_gpu);
  c.ppo_epochs = get_or<int64_t>(config, a + "ppo_epochs", c.ppo_epochs);
  c.shuffle = get_or(config, a + "shuffle", c.shuffle);
  c.data_loader_seed = get_or<int64_t>(config, a + "data_loader_seed", c.data_loader_seed);

  algo::PolicyLossConfig& p = c.policy;
  p.clip_ratio = get_or(config, a + "clip_ratio", p.clip_ratio);
  p.clip_ratio_low = get_optional<double>(config, a + "clip_ratio_low");
  p.clip_ratio_high = get_optional<double>(config, a + "clip_ratio_high");
  p.clip_ratio_c = get_or(config, a + "clip_ratio_c", p.clip_ratio_c);
  p.loss_agg_mode = get_or(config, a + "loss_agg_mode", p.loss_agg_mode);
  p.tau_pos = get_or(config, a + "tau_pos", p.tau_pos);
  p.tau_neg = get_or(config, a + "tau_neg", p.tau_neg);
  const std::string pl = a + "policy_loss.";
  p.policy_loss.loss_mode = get_or(config, pl + "loss_mode", p.policy_loss.loss_mode);
  p.policy_loss.clip_cov_ratio = get_or(config, pl + "clip_cov_ratio", p.policy_loss.clip_cov_ratio);
  p.policy_loss.clip_cov_lb = get_or(config, pl + "clip_cov_lb", p.policy_loss.clip_cov_lb);
  p.policy_loss.clip_cov_ub = get_or(config, pl + "clip_cov_ub", p.policy_loss.clip_cov_ub);
  p.policy_loss.kl_cov_ratio = get_or(config, pl + "kl_cov_ratio", p.policy_loss.kl_cov_ratio);
  p.policy_loss.ppo_kl_coef = get_or(config, pl + "ppo_kl_coef", p.policy_loss.ppo_kl_coef);
  p.policy_loss.dro_beta = get_optional<double>(config, pl + "dro_beta");
  // verl's apply_bypass_mode: in bypass mode the actor's loss is "bypass_mode" (whatever loss_mode says), carrying
  // algorithm.rollout_correction, since old_log_probs are then the rollout's own log-probs.
  if (role == PolicyRole::kActor) {
    algo::RolloutCorrectionConfig correction = algo::detail::rollout_correction_from_config(config);
    if (correction.bypass_mode) {
      p.policy_loss.loss_mode = "bypass_mode";
      p.policy_loss.rollout_correction = std::move(correction);
    }
  }
  c.loss_scale_factor = get_optional<double>(config, a + "loss_scale_factor");
  c.entropy_coeff = get_or(config, a + "entropy_coeff", c.entropy_coeff);
  c.calculate_entropy = get_or(config, a + "calculate_entropy", c.calculate_entropy);
  c.use_kl_loss = get_or(config, a + "use_kl_loss", c.use_kl_loss);
  c.kl_loss_coef = get_or(config, a + "kl_loss_coef", c.kl_loss_coef);
  c.kl_loss_type = get_or(config, a + "kl_loss_type", c.kl_loss_type);

  if (role == PolicyRole::kActor) {
    c.optim = OptimConfig::from_config(config, a + "optim");
    // The legacy actor.grad_clip (ignored by verl 0.9.1's engine) is honoured when it is the only
    // clip threshold that was changed.
    auto legacy = get_optional<double>(config, a + "grad_clip");
    if (legacy && *legacy != 1.0 && c.optim.clip_grad == 1.0) c.optim.clip_grad = *legacy;
  }

  const std::string lp = prefix + "." + role_block(role) + ".";
  c.log_prob_micro_batch_size_per_gpu =
      micro_batch_size(config, lp + "log_prob_micro_batch_size", lp + "log_prob_micro_batch_size_per_gpu");
  c.log_prob_use_dynamic_bsz = get_or(config, lp + "log_prob_use_dynamic_bsz", c.use_dynamic_bsz);
  c.log_prob_max_token_len_per_gpu =
      get_or<int64_t>(config, lp + "log_prob_max_token_len_per_gpu", c.ppo_max_token_len_per_gpu);
  c.temperature = get_or(config, prefix + ".rollout.temperature", c.temperature);
  c.dtype = get_or(config, prefix + (role == PolicyRole::kActor ? ".actor" : ".ref") + ".fsdp_config.dtype", c.dtype);
  if (role == PolicyRole::kActor) {
    c.reshard_after_forward =
        get_or(config, prefix + ".actor.fsdp_config.reshard_after_forward", c.reshard_after_forward);
    c.forward_prefetch = get_or(config, prefix + ".actor.fsdp_config.forward_prefetch", c.forward_prefetch);
  }
  c.use_remove_padding = get_or(config, prefix + ".model.use_remove_padding", c.use_remove_padding);
  c.enable_gradient_checkpointing =
      get_or(config, prefix + ".model.enable_gradient_checkpointing", c.enable_gradient_checkpointing);
  c.validate(role);
  return c;
}

void ActorConfig::validate(PolicyRole role) const {
  const std::string a = "actor_rollout_ref.actor.";
  const std::string lp = "actor_rollout_ref." + role_block(role) + ".";
  if (role == PolicyRole::kActor) {
    VERL_CHECK_AS(ConfigError, ppo_mini_batch_size >= 1, "config key '", a, "ppo_mini_batch_size' must be >= 1, got ",
                  ppo_mini_batch_size);
    VERL_CHECK_AS(ConfigError, rollout_n >= 1, "config key 'actor_rollout_ref.rollout.n' must be >= 1, got ",
                  rollout_n);
    VERL_CHECK_AS(ConfigError, ppo_epochs >= 1, "config key '", a, "ppo_epochs' must be >= 1, got ", ppo_epochs);
    if (use_dynamic_bsz) {
      VERL_CHECK_AS(ConfigError, ppo_max_token_len_per_gpu >= 1, "config key '", a,
                    "ppo_max_token_len_per_gpu' must be >= 1, got ", ppo_max_token_len_per_gpu);
    } else {
      VERL_CHECK_AS(ConfigError, ppo_micro_batch_size_per_gpu.has_value(), "config key '", a,
                    "ppo_micro_batch_size_per_gpu' must be set when use_dynamic_bsz is false");
      VERL_CHECK_AS(ConfigError, *ppo_micro_batch_size_per_gpu >= 1, "config key '", a,
                    "ppo_micro_batch_size_per_gpu' must be >= 1, got ", *ppo_micro_batch_size_per_gpu);
    }
    const auto& modes = algo::loss_agg_modes();
    VERL_CHECK_AS(ConfigError, std::find(modes.begin(), modes.end(), policy.loss_agg_mode) != modes.end(),
                  "config key '", a, "loss_agg_mode' = '", policy.loss_agg_mode,
                  "' is not one of token-mean, token-sum, seq-mean-token-sum, seq-mean-token-mean, "
                  "seq-mean-token-sum-norm");
    try {
      algo::get_policy_loss_fn(policy.policy_loss.loss_mode);
    } catch (const InvalidArgument& e) {
      VERL_FAIL(ConfigError, "config key '", a, "policy_loss.loss_mode' = '", policy.policy_loss.loss_mode,
                "': ", e.what());
    }
    if (policy.policy_loss.loss_mode == "dro") {
      VERL_CHECK_AS(ConfigError, policy.policy_loss.dro_beta && *policy.policy_loss.dro_beta > 0, "config key '", a,
                    "policy_loss.dro_beta' must be > 0 for loss_mode dro");
    }
    if (use_kl_loss) {
      try {
        algo::kl_penalty(torch::zeros({1}), torch::zeros({1}), kl_loss_type);
      } catch (const InvalidArgument& e) {
        VERL_FAIL(ConfigError, "config key '", a, "kl_loss_type' = '", kl_loss_type, "': ", e.what());
      }
    }
    VERL_CHECK_AS(ConfigError, std::isfinite(entropy_coeff), "config key '", a, "entropy_coeff' must be finite");
    VERL_CHECK_AS(ConfigError, std::isfinite(kl_loss_coef), "config key '", a, "kl_loss_coef' must be finite");
    if (loss_scale_factor) {
      VERL_CHECK_AS(ConfigError, *loss_scale_factor > 0, "config key '", a, "loss_scale_factor' must be > 0, got ",
                    *loss_scale_factor);
    }
    optim.validate(a + "optim");
  }
  if (log_prob_use_dynamic_bsz) {
    VERL_CHECK_AS(ConfigError, log_prob_max_token_len_per_gpu >= 1, "config key '", lp,
                  "log_prob_max_token_len_per_gpu' must be >= 1, got ", log_prob_max_token_len_per_gpu);
  } else {
    VERL_CHECK_AS(ConfigError, log_prob_micro_batch_size_per_gpu.has_value(), "config key '", lp,
                  "log_prob_micro_batch_size_per_gpu' must be set when log_prob_use_dynamic_bsz is false");
    VERL_CHECK_AS(ConfigError, *log_prob_micro_batch_size_per_gpu >= 1, "config key '", lp,
                  "log_prob_micro_batch_size_per_gpu' must be >= 1, got ", *log_prob_micro_batch_size_per_gpu);
  }
  VERL_CHECK_AS(ConfigError, temperature >= 0, "config key 'actor_rollout_ref.rollout.temperature' must be >= 0");
  // The name alone: `auto` is resolved when the worker knows its model's device.
  (void)parse_compute_dtype(dtype, std::string("actor_rollout_ref.") + (role == PolicyRole::kActor ? "actor" : "ref") +
                                       ".fsdp_config.dtype");
}

ActorWorker::ActorWorker(const Config& config, std::shared_ptr<model::CausalLM> model, PolicyRole role)
    : ActorWorker(ActorConfig::from_config(config, role), std::move(model), role) {}

ActorWorker::ActorWorker(ActorConfig config, std::shared_ptr<model::CausalLM> model, PolicyRole role)
    : config_(std::move(config)), model_(std::move(model)), role_(role) {
  VERL_CHECK(model_ != nullptr, "ActorWorker: model is null");
  VERL_CHECK(model_->head_kind() == model::HeadKind::kLanguageModel,
             "ActorWorker needs a model with the LM head (got a value-head model)");
  config_.validate(role_);
  const std::string block = role_ == PolicyRole::kActor ? "actor" : "ref";
  TrainEngineOptions options;
  options.dtype = config_.dtype;
  options.dtype_key = "actor_rollout_ref." + block + ".fsdp_config.dtype";
  if (role_ == PolicyRole::kActor) {
    policy_loss_fn_ = algo::get_policy_loss_fn(config_.policy.policy_loss.loss_mode);
    options.optim = config_.optim;
    options.optim_key = "actor_rollout_ref.actor.optim";
    options.model_dtype_key = "actor_rollout_ref.actor.fsdp_config.model_dtype";
    options.gather = {config_.reshard_after_forward, config_.forward_prefetch};
    options.enable_gradient_checkpointing = config_.enable_gradient_checkpointing;
  }
  engine_ = std::make_unique<TrainEngine>(model_, std::move(options));
}

ActorWorker::~ActorWorker() = default;

void ActorWorker::set_data_parallel(std::shared_ptr<dist::Communicator> communicator, int64_t generation_tp,
                                    const ShardGroups& groups) {
  VERL_CHECK(role_ == PolicyRole::kActor, "set_data_parallel: the reference policy does not train");
  engine_->shard_over(std::move(communicator), generation_tp, groups);
}

Optimizer& ActorWorker::optimizer() {
  VERL_CHECK(role_ == PolicyRole::kActor, "the reference policy has no optimizer");
  return engine_->optimizer();
}

std::shared_ptr<model::CausalLM> ActorWorker::compute_model() { return engine_->compute_model(); }
MixedPrecision& ActorWorker::precision() { return engine_->precision(); }
TrainEngine& ActorWorker::engine() { return *engine_; }

DataProto ActorWorker::compute_log_prob(const DataProto& data, std::optional<bool> calculate_entropy) {
  bool entropy = calculate_entropy.value_or(false);
  if (!calculate_entropy && data.meta_info().contains("calculate_entropy") &&
      data.meta_info()["calculate_entropy"].is_boolean()) {
    entropy = data.meta_info()["calculate_entropy"].get<bool>();
  }
  auto sum_pi_squared = data.meta_info().find("calculate_sum_pi_squared");
  const bool with_sum_pi_squared = sum_pi_squared != data.meta_info().end() && sum_pi_squared->is_boolean() &&
                                   sum_pi_squared->get<bool>();
  return log_prob_pass(data, entropy, "old_log_probs", with_sum_pi_squared);
}

DataProto ActorWorker::compute_ref_log_prob(const DataProto& data) {
  if (role_ == PolicyRole::kReference) return log_prob_pass(data, false, "ref_log_prob");
  const std::shared_ptr<model::CausalLM> model = engine_->compute_model();
  VERL_CHECK(model->lora().has_value(), "compute_ref_log_prob: the actor is its own reference only with LoRA adapters "
             "(its base model); give the reference policy a worker of its own");
  model::AdaptersDisabled base(*model);
  return log_prob_pass(data, false, "ref_log_prob");
}

void ActorWorker::register_methods(dist::WorkerGroup& group, bool reference_in_actor) {
  // A log-prob pass costs only time for a duplicated row: its rows are padded to the ranks; an update's split.
  if (role_ == PolicyRole::kReference || reference_in_actor) {
    group.register_method(
        "compute_ref_log_prob", [this](const DataProto& chunk) { return compute_ref_log_prob(chunk); },
        dist::Dispatch::kPadSplit);
    if (role_ == PolicyRole::kReference) return;
  }
  group.register_method(
      "compute_log_prob", [this](const DataProto& chunk) { return compute_log_prob(chunk, /*calculate_entropy=*/true); },
      dist::Dispatch::kPadSplit);
  group.register_method(
      "update_actor", [this](const DataProto& chunk) { return dist::with_metrics(DataProto(), update_policy(chunk)); },
      dist::Dispatch::kSplit);
  group.register_method(
      "update_actor_on_policy",
      [this](const DataProto& chunk) {
        auto [log_probs, metrics] = update_policy_on_policy(chunk);
        return dist::with_metrics(std::move(log_probs), metrics);
      },
      dist::Dispatch::kSplit);
}

DataProto ActorWorker::log_prob_pass(const DataProto& data, bool calculate_entropy, const std::string& output_key,
                                     bool calculate_sum_pi_squared) {
  const torch::Device device = engine_->model()->device();
  const torch::Tensor& responses = data.tensor("responses");
  VERL_CHECK_AS(DataError, responses.dim() == 2, "'responses' must be (bs, response_length), got ", responses.sizes());
  const int64_t response_length = responses.size(1);
  const int64_t bs = data.size();
  const double temperature = temperature_of(data, config_.temperature);
  detail::TensorMap tensors = detail::gather_tensors(data, {"input_ids", "attention_mask", "position_ids"}, device);
  VERL_CHECK_AS(DataError, tensors.count("input_ids") && tensors.count("attention_mask"),
                "compute_log_prob needs 'input_ids' and 'attention_mask'");

  const std::vector<int64_t> seqlens = detail::row_token_counts(tensors["attention_mask"]);  // one host read
  const RowGroups groups = engine_->micro_batches(
      seqlens, {config_.log_prob_use_dynamic_bsz, config_.log_prob_micro_batch_size_per_gpu.value_or(1),
                config_.log_prob_max_token_len_per_gpu});
  const auto start = std::chrono::steady_clock::now();
  std::vector<torch::Tensor> log_probs, entropys, sums_pi_squared;
  engine_->infer_batch(groups.size(), [&](model::CausalLM& model, size_t i) {
    const auto& rows = groups[i];
    detail::TensorMap mb = config_.log_prob_use_dynamic_bsz ? detail::take_rows(tensors, rows, device) : tensors;
    if (!config_.log_prob_use_dynamic_bsz) {
      for (auto& [k, t] : mb) t = t.narrow(0, rows.front(), static_cast<int64_t>(rows.size()));
    }
    ResponseLogProbs out = response_log_probs(model, mb["input_ids"], mb["attention_mask"],
                                              detail::get(mb, "position_ids"), response_length, temperature,
                                              calculate_entropy, config_.use_remove_padding, calculate_sum_pi_squared);
    log_probs.push_back(out.log_probs);
    if (calculate_entropy) entropys.push_back(out.entropy);
    if (calculate_sum_pi_squared) sums_pi_squared.push_back(out.sum_pi_squared);
  });
  torch::Tensor lp = torch::cat(log_probs);
  torch::Tensor ent = calculate_entropy ? torch::cat(entropys) : torch::Tensor();
  torch::Tensor spp = calculate_sum_pi_squared ? torch::cat(sums_pi_squared) : torch::Tensor();
  if (config_.log_prob_use_dynamic_bsz) {
    torch::Tensor order = restore_order(groups, bs).to(device);
    lp = lp.index_select(0, order);
    if (ent.defined()) ent = ent.index_select(0, order);
    if (spp.defined()) spp = spp.index_select(0, order);
  }
  const torch::Device out_device = data.tensor("input_ids").device();
  DataProto result;
  result.set_tensor(output_key, lp.to(out_device));
  if (ent.defined()) result.set_tensor("entropys", ent.to(out_device));
  if (spp.defined()) result.set_tensor("sum_pi_squared", spp.to(out_device));
  result.meta_info()["temperature"] = temperature;
  // verl's infer_batch reports the pass's MFU (forward only: a third of the training FLOPs).
  result.meta_info()["metrics"] =
      Json{{"mfu", detail::worker_mfu(*engine_->compute_model(), seqlens, start, /*forward_only=*/true)}};
  return result;
}

bool ActorWorker::old_log_prob_from_update_is_exact(int64_t global_rows) const {
  if (role_ != PolicyRole::kActor || config_.ppo_epochs != 1 || config_.shuffle) return false;
  if (config_.ppo_mini_batch_size * config_.rollout_n != global_rows) return false;
  if (config_.use_dynamic_bsz != config_.log_prob_use_dynamic_bsz) return false;
  return config_.use_dynamic_bsz ? config_.ppo_max_token_len_per_gpu == config_.log_prob_max_token_len_per_gpu
                                 : config_.ppo_micro_batch_size_per_gpu == config_.log_prob_micro_batch_size_per_gpu;
}

Metrics ActorWorker::update_policy(const DataProto& data) { return update(data, nullptr); }

std::pair<DataProto, Metrics> ActorWorker::update_policy_on_policy(const DataProto& data) {
  VERL_CHECK_AS(DataError, !data.has_tensor("old_log_probs"), "update_policy_on_policy: the batch has "
                "old_log_probs; an on-policy update computes them itself (use update_policy)");
  OnPolicyLogProbs log_probs;
  Metrics metrics = update(data, &log_probs);
  const torch::Device out_device = data.tensor("input_ids").device();
  DataProto result;
  result.set_tensor("old_log_probs", log_probs.old_log_probs.to(out_device));
  result.set_tensor("entropys", log_probs.entropys.to(out_device));
  return {std::move(result), std::move(metrics)};
}

Metrics ActorWorker::update(const DataProto& data, OnPolicyLogProbs* on_policy) {
  VERL_CHECK(role_ == PolicyRole::kActor, "update_policy: the reference policy is frozen");
  const std::string a = "actor_rollout_ref.actor.";
  const int64_t bs = data.size();
  const torch::Tensor& responses = data.tensor("responses");
  VERL_CHECK_AS(DataError, responses.dim() == 2, "'responses' must be (bs, response_length), got ", responses.sizes());
  const int64_t response_length = responses.size(1);
  std::vector<std::string> keys = {"response_mask", "old_log_probs", "advantages"};
  if (on_policy) keys.erase(keys.begin() + 1);  // the update's forward gives them
  if (config_.use_kl_loss) keys.push_back("ref_log_prob");
  if (data.has_tensor("rollout_is_weights")) keys.push_back("rollout_is_weights");
  for (const auto& k : keys) check_response_tensor(data, k, bs, response_length);

  const detail::DataParallel& dp = engine_->data_parallel();
  const int64_t global_mini_rows = config_.ppo_mini_batch_size * config_.rollout_n;
  const int64_t mini_rows = dp.local_rows(global_mini_rows, a + "ppo_mini_batch_size");
  VERL_CHECK_AS(ConfigError, bs % mini_rows == 0, "config key '", a, "ppo_mini_batch_size' = ",
                config_.ppo_mini_batch_size, " x rollout.n = ", config_.rollout_n, " gives mini-batches of ", mini_rows,
                " rows, which do not divide the batch of ", bs, " rows");
  if (!config_.use_dynamic_bsz) {
    VERL_CHECK_AS(ConfigError, mini_rows % *config_.ppo_micro_batch_size_per_gpu == 0, "config key '", a,
                  "ppo_micro_batch_size_per_gpu' = ", *config_.ppo_micro_batch_size_per_gpu,
                  " does not divide the mini-batch of ", mini_rows, " rows");
  }
  if (on_policy) {
    VERL_CHECK_AS(DataError, config_.ppo_epochs == 1 && mini_rows == bs, "update_policy_on_policy: the update is "
                  "not on-policy (", config_.ppo_epochs, " epoch(s) of ", bs / mini_rows, " mini-batch(es)): after the "
                  "first optimizer step the forward no longer gives the old log-probs; compute them first "
                  "(compute_log_prob) and call update_policy");
  }

  const torch::Device device = engine_->model()->device();
  const double temperature = temperature_of(data, config_.temperature);
  const bool entropy_in_loss = config_.calculate_entropy || config_.entropy_coeff != 0.0;
  // On-policy, the entropies are the old-log-prob pass's output (the trainer's actor/entropy metric).
  const bool calculate_entropy = entropy_in_loss || on_policy;
  std::vector<torch::Tensor> old_log_probs, entropys;
  RowGroups old_log_prob_rows;  // each micro-batch's rows of `data`
  keys.insert(keys.end(), {"input_ids", "attention_mask", "position_ids"});
  detail::TensorMap tensors = detail::gather_tensors(data, keys, device);
  VERL_CHECK_AS(DataError, tensors.count("input_ids") && tensors.count("attention_mask"),
                "update_policy needs 'input_ids' and 'attention_mask'");

  detail::MetricsCollector metrics;
  using Agg = detail::MetricsCollector::Agg;
  RowGroups mini_batches =
      mini_batch_rows(bs, mini_rows, config_.ppo_epochs, config_.data_loader_seed, config_.shuffle);
  const std::vector<int64_t> seqlens = detail::row_token_counts(tensors["attention_mask"]);  // one host read
  for (size_t step = 0; step < mini_batches.size(); ++step) {
    const auto mini_batch_start = std::chrono::steady_clock::now();
    detail::TensorMap mb = detail::take_rows(tensors, mini_batches[step], device);
    const std::vector<int64_t> mb_seqlens = detail::select_rows(seqlens, mini_batches[step]);
    // verl normalises every micro-batch's loss by the whole mini-batch (forward_backward_batch's
    // batch_num_tokens, the trainer's global_batch_size), so the accumulated gradient is that of
    // the mini-batch however it is cut.
    algo::PolicyLossConfig loss_config = config_.policy;
    // With data parallelism both counts are the global mini-batch's, and the gradients are averaged over the
    // ranks (dp_size makes up for the average, as with verl's FSDP).
    loss_config.global_batch_info.dp_size = dp.size();
    loss_config.global_batch_info.batch_num_tokens = dp.sum(mb["response_mask"].to(torch::kBool).sum().item<double>());
    loss_config.global_batch_info.global_batch_size = static_cast<double>(global_mini_rows);
    loss_config.global_batch_info.loss_scale_factor = config_.loss_scale_factor;
    const algo::GlobalBatchInfo& info = loss_config.global_batch_info;

    const RowGroups micro = engine_->micro_batches(
        mb_seqlens, {config_.use_dynamic_bsz, config_.ppo_micro_batch_size_per_gpu.value_or(1),
                     config_.ppo_max_token_len_per_gpu});
    double mini_batch_loss = 0.0;
    const double grad_norm = engine_->train_batch(micro.size(), [&](model::CausalLM& model, size_t i) {
      const auto& rows = micro[i];
      detail::TensorMap m = detail::take_rows(mb, rows, device);
      ResponseLogProbs out = response_log_probs(model, m["input_ids"], m["attention_mask"],
                                                detail::get(m, "position_ids"), response_length, temperature,
                                                calculate_entropy, config_.use_remove_padding);
      torch::Tensor mask = m["response_mask"].to(torch::kBool);
      if (on_policy) {
        m["old_log_probs"] = out.log_probs.detach();
        old_log_probs.push_back(m["old_log_probs"]);
        entropys.push_back(out.entropy.detach());
        old_log_prob_rows.push_back(detail::select_rows(mini_batches[step], rows));
      }
      algo::PolicyLossOutput pg =
          policy_loss_fn_(m["old_log_probs"], out.log_probs, m["advantages"], mask, config_.policy.loss_agg_mode,
                          loss_config, detail::get(m, "rollout_is_weights"));
      for (const auto& [k, v] : pg.metrics) metrics.add_metric(k, v, Agg::kMean);
      metrics.add_metric("actor/pg_loss", pg.pg_loss.item<double>(), Agg::kSum);
      torch::Tensor policy_loss = pg.pg_loss;
      if (entropy_in_loss) {
        torch::Tensor entropy_loss = algo::agg_loss(out.entropy, mask, config_.policy.loss_agg_mode, info);
        policy_loss = policy_loss - config_.entropy_coeff * entropy_loss;
        metrics.add_metric("actor/entropy_loss", entropy_loss.item<double>(), Agg::kSum);
      }
      if (config_.use_kl_loss) {
        torch::Tensor kld = algo::kl_penalty(out.log_probs, m["ref_log_prob"], config_.kl_loss_type);
        torch::Tensor kl_loss = algo::agg_loss(kld, mask, config_.policy.loss_agg_mode, info);
        policy_loss = policy_loss + kl_loss * config_.kl_loss_coef;
        metrics.add_metric("actor/kl_loss", kl_loss.item<double>(), Agg::kSum);
        metrics.add_plain("actor/kl_coef", config_.kl_loss_coef);
      }
      mini_batch_loss += policy_loss.item<double>();
      return policy_loss;
    });
    // verl's train_batch MFU: this mini-batch's FLOPs over its forward/backward/optimizer time.
    metrics.add_plain("actor/mfu", detail::worker_mfu(*engine_->compute_model(), mb_seqlens, mini_batch_start,
                                                      /*forward_only=*/false));
    metrics.add_plain("actor/loss", mini_batch_loss);
    metrics.add_plain("actor/grad_norm", grad_norm);
    if (step + 1 == mini_batches.size()) metrics.add_plain("actor/lr", engine_->scheduler_step());
    metrics.end_mini_batch();
  }
  if (on_policy) {
    const torch::Tensor order = restore_order(old_log_prob_rows, bs).to(device);
    on_policy->old_log_probs = torch::cat(old_log_probs).index_select(0, order);
    on_policy->entropys = torch::cat(entropys).index_select(0, order);
  }
  return metrics.reduce();
}

}  // namespace verl::workers
