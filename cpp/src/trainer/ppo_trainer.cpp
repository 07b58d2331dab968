// verl's PPO step in C++ (see verl/trainer/ppo_trainer.h).
#include "verl/trainer/ppo_trainer.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "verl/algo/advantage.h"
#include "verl/algo/agg_loss.h"
#include "verl/algo/functional.h"
#include "verl/algo/gdpo.h"
#include "verl/algo/optimal_token_baseline.h"
#include "verl/algo/pf_ppo.h"
#include "verl/algo/rollout_correction.h"
#include "verl/algo/safe_rlhf.h"
#include "verl/algo/sppo.h"
#include "verl/core/config_default.h"
#include "verl/core/error.h"
#include "verl/trainer/batch_defaults.h"
#include "verl/core/reduce_metric.h"
#include "core/config_keys_check.h"
#include "core/untrusted.h"
#include "verl/trainer/generation.h"
#include "verl/workers/micro_batch.h"
#include "algo/rollout_correction_config.h"
#include "verl/workers/data_parallel.h"
#include "workers/fully_sharded.h"
#include "verl/model/checkpoint.h"
#include "workers/sharded_checkpoint.h"
#include "verl/workers/train_engine.h"
#include "hybrid/weight_hand_over.h"
#include "trainer/advantage_stage.h"
#include "trainer/balance_batch.h"
#include "trainer/one_step_off_policy.h"
#include "trainer/reference_policy.h"
#include "verl/workers/lora.h"
#include "trainer/streaming_reward.h"

namespace verl::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// Row i of step s samples with seed rollout.seed + s * kStepSeedStride + i: every step and row draws
// from its own stream, so a resumed run continues exactly as an uninterrupted one.
constexpr int64_t kStepSeedStride = int64_t{1} << 24;
// A step may gather several generation batches (DAPO's dynamic sampling); each has its own seeds and uids.
constexpr int64_t kMaxGenBatchesPerStep = 64;
// Greedy baselines and validation draw from streams no training step reaches.
constexpr int64_t kValidationSeedOffset = int64_t{1} << 50;
// PF-PPO's resampling of step s draws from seed rollout.seed + kPfPpoSeedOffset + s.
constexpr int64_t kPfPpoSeedOffset = int64_t{1} << 51;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// verl's marked_timer: adds the block's wall time to timing[name].
class StageTimer {
 public:
  StageTimer(TimingRaw& timing, std::string name) : timing_(timing), name_(std::move(name)), start_(Clock::now()) {}
  ~StageTimer() { timing_[name_] += seconds_since(start_); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  TimingRaw& timing_;
  std::string name_;
  Clock::time_point start_;
};

TimingRaw read_timing(const DataProto& batch) {
  TimingRaw timing;
  auto it = batch.meta_info().find("timing_s");
  if (it != batch.meta_info().end() && it->is_object()) {
    for (auto kv = it->begin(); kv != it->end(); ++kv) timing[kv.key()] = kv.value().get<double>();
  }
  return timing;
}

void write_timing(DataProto& batch, const TimingRaw& timing) {
  Json t = Json::object();
  for (const auto& [k, v] : timing) t[k] = v;
  batch.meta_info()["timing_s"] = std::move(t);
}

Metrics read_step_metrics(const DataProto& batch) {
  Metrics m;
  auto it = batch.meta_info().find("step_metrics");
  if (it != batch.meta_info().end() && it->is_object()) {
    for (auto kv = it->begin(); kv != it->end(); ++kv) m[kv.key()] = kv.value().get<double>();
  }
  return m;
}

void add_step_metrics(DataProto& batch, const Metrics& metrics) {
  Json& m = batch.meta_info()["step_metrics"];
  if (!m.is_object()) m = Json::object();
  for (const auto& [k, v] : metrics) m[k] = v;
}

void merge(Metrics& into, const Metrics& from) {
  for (const auto& [k, v] : from) into[k] = v;
}

void rename_metric(Metrics& metrics, const std::string& from, const std::string& to) {
  auto it = metrics.find(from);
  if (it == metrics.end()) return;
  metrics[to] = it->second;
  metrics.erase(it);
}

// Each metric a worker method returned (meta_info "metrics": one list entry per rank) reduced over the ranks as
// verl's reduce_metrics reduces its workers' outputs.
Metrics reduce_over_ranks(const DataProto& result) {
  Metrics out;
  auto it = result.meta_info().find("metrics");
  if (it == result.meta_info().end() || !it->is_object()) return out;
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    std::vector<double> values;
    for (const Json& v : kv.value()) values.push_back(v.get<double>());
    if (!values.empty()) out[kv.key()] = reduce_metric(kv.key(), values);
  }
  return out;
}

// What a worker method needs of the batch: the named tensors that are present and meta_info's temperature (the
// non-tensor columns stay with the controller).
DataProto worker_input(const DataProto& batch, std::initializer_list<const char*> keys) {
  DataProto out;
  for (const char* key : keys) {
    if (batch.has_tensor(key)) out.set_tensor(key, batch.tensor(key));
  }
  auto t = batch.meta_info().find("temperature");
  if (t != batch.meta_info().end()) out.meta_info()["temperature"] = *t;
  return out;
}

// Generation requests carry their kind and base seed to the ranks.
constexpr const char* kGenModeKey = "gen_mode";  // "train", "greedy" (ReMax's baseline) or "validation"
constexpr const char* kGenSeedKey = "gen_seed";
// The inputs of the log-prob and value passes.
constexpr std::initializer_list<const char*> kLogProbInputs{"input_ids", "attention_mask", "position_ids", "responses"};

std::optional<double> optional_number(const Config& config, const std::string& key) {
  if (!config.has(key)) return std::nullopt;
  Json v = config.get(key);
  if (v.is_null()) return std::nullopt;
  VERL_CHECK_AS(ConfigTypeError, v.is_number(), "config key '", key, "' is not a number: ", v.dump());
  return v.get<double>();
}

bool valid_kl_mode(const std::string& mode) {
  static const std::set<std::string> modes{"kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"};
  std::string base = mode;
  if (!base.empty() && base.back() == '+') base.pop_back();
  return modes.count(base) != 0;
}

std::string describe_sample(const DataProto& batch, int64_t row) {
  std::ostringstream out;
  out << "sample " << row;
  // The uid names the prompt whatever rows the callback was given (scoring streams each prompt's samples).
  const char* sep = " (";
  for (const char* key : {"uid", "data_source"}) {
    if (!batch.has_column(key)) continue;
    out << sep << key << "=" << batch.column(key)[static_cast<size_t>(row)].dump();
    sep = ", ";
  }
  if (std::string(sep) == ", ") out << ")";
  return out.str();
}

// A reward (or Safe-RLHF cost) callback's output checked against the batch: (bs, response_length) finite floats,
// moved to the responses' device as float32; extra-info columns of bs entries. `what` names the callback.
RewardOutput checked_scores(RewardOutput out, const DataProto& batch, const std::string& what) {
  const torch::Tensor& responses = batch.tensor("responses");
  VERL_CHECK_AS(DataError, out.token_level_scores.defined(), what, " function returned no token_level_scores");
  VERL_CHECK_AS(DataError, out.token_level_scores.sizes() == responses.sizes(),
                what, " function returned token_level_scores of shape ", out.token_level_scores.sizes(),
                ", expected (bs, response_length) = ", responses.sizes());
  VERL_CHECK_AS(DataError, out.token_level_scores.is_floating_point(),
                what, " function returned token_level_scores of dtype ", out.token_level_scores.scalar_type(),
                "; expected a floating-point tensor");
  torch::Tensor scores = out.token_level_scores.detach().to(responses.device(), torch::kFloat32);
  torch::Tensor bad_rows = scores.isfinite().logical_not().any(-1).nonzero();
  if (bad_rows.numel() > 0) {
    const int64_t row = bad_rows[0][0].item<int64_t>();
    const double value = scores[row].masked_select(scores[row].isfinite().logical_not())[0].item<double>();
    VERL_FAIL(DataError, what, " function returned a non-finite score (", value, ") for ", describe_sample(batch, row),
              "; ", what, "s must be finite numbers");
  }
  out.token_level_scores = scores;
  const auto bs = static_cast<size_t>(batch.size());
  for (const auto& [key, column] : out.extra_info) {
    VERL_CHECK_AS(DataError, column.size() == bs, what, " extra info '", key, "' has ", column.size(),
                  " entries for ", bs, " samples");
  }
  return out;
}

// The frozen reference policy: the actor's initial weights in a separate module.
using detail::copy_as_reference;
using detail::is_overlapped_stage;

// verl's default critic: the actor checkpoint loaded as AutoModelForTokenClassification(num_labels=1),
// i.e. the same backbone and a new `score` head initialised N(0, 0.02) (HF's initializer_range) without bias.
std::shared_ptr<model::CausalLM> critic_from_actor(const model::CausalLM& actor, uint64_t seed) {
  auto critic = std::make_shared<model::CausalLM>(actor.config(), model::HeadKind::kValue);
  critic->to(actor.device(), actor.dtype());
  std::map<std::string, torch::Tensor> state = actor.named_state();
  state.erase("lm_head.weight");
  torch::NoGradGuard no_grad;
  critic->load_state_dict(state, /*strict=*/false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::Tensor w = at::normal(0.0, 0.02, critic->score->weight.sizes(), gen, torch::TensorOptions().dtype(torch::kFloat32));
  critic->score->weight.copy_(w);
  if (critic->score->bias.defined()) critic->score->bias.zero_();
  return critic;
}

}  // namespace

// fsdp_config.param_offload / optimizer_offload (actor, ref) and critic.fsdp.*: moving parameters and optimizer
// state to host memory between phases. On a CPU device they already live there, so the keys are honoured as a
// no-op with one note; on an accelerator the move is not implemented yet (issue 18): a ConfigError, not a
// setting silently ignored.
void check_offload_keys(const Config& config, const torch::Device& device) {
  std::vector<std::string> set;
  for (const char* role : {"actor_rollout_ref.actor.fsdp_config.", "actor_rollout_ref.ref.fsdp_config.", "critic.fsdp."}) {
    for (const char* leaf : {"param_offload", "optimizer_offload"}) {
      const std::string key = std::string(role) + leaf;
      if (config.get_as<bool>(key)) set.push_back(key);
    }
  }
  if (set.empty()) return;
  VERL_CHECK_AS(ConfigError, device.is_cpu(), "config key '", set.front(), "' = true: offloading parameters and "
                "optimizer state to host memory is not implemented on ", device.str(), " yet; set it to false");
  std::string keys;
  for (const std::string& key : set) keys += (keys.empty() ? "" : ", ") + key + "=true";
  std::cerr << "verl: " << keys << ": the model is on the CPU, where parameters and optimizer state already live in "
            << "host memory; there is nothing to offload" << std::endl;
}

PPOTrainerConfig PPOTrainerConfig::from_config(const Config& config) {
  PPOTrainerConfig s;
  s.adv_estimator = config.get_as<std::string>("algorithm.adv_estimator");
  s.advantage = algo::advantage_config(config);
  algo::check_sppo_loss_config(config);
  s.safe_rlhf = algo::safe_rlhf_config(config);
  s.use_kl_in_reward = config.get_as<bool>("algorithm.use_kl_in_reward");
  s.kl_penalty = config.get_as<std::string>("algorithm.kl_penalty");
  VERL_CHECK_AS(ConfigError, !s.use_kl_in_reward || valid_kl_mode(s.kl_penalty), "algorithm.kl_penalty: unknown mode '",
                s.kl_penalty, "' (kl, k1, abs, mse, k2, low_var_kl, k3, optionally with a trailing '+')");
  s.kl_ctrl_type = config.get_as<std::string>("algorithm.kl_ctrl.type");
  VERL_CHECK_AS(ConfigError, s.kl_ctrl_type == "fixed" || s.kl_ctrl_type == "adaptive",
                "algorithm.kl_ctrl.type must be 'fixed' or 'adaptive', got '", s.kl_ctrl_type, "'");
  s.kl_coef = config.get_as<double>("algorithm.kl_ctrl.kl_coef");
  s.target_kl = config.get_as<double>("algorithm.kl_ctrl.target_kl");
  s.kl_horizon = config.get_as<int64_t>("algorithm.kl_ctrl.horizon");
  VERL_CHECK_AS(ConfigError, s.kl_ctrl_type != "adaptive" || s.kl_horizon > 0,
                "algorithm.kl_ctrl.horizon must be positive for the adaptive controller, got ", s.kl_horizon);
  // Keys verl-cpp does not implement yet (LoRA, ...) were refused by config.validate()
  // (verl/core/config_keys.h); the ones read here are honoured.
  s.rollout_correction = algo::detail::rollout_correction_from_config(config);
  s.pf_ppo = algo::pf_ppo_config(config);
  s.use_kl_loss = config.get_as<bool>("actor_rollout_ref.actor.use_kl_loss");
  Json critic_enable = config.get("critic.enable");
  VERL_CHECK_AS(ConfigTypeError, critic_enable.is_null() || critic_enable.is_boolean(),
                "critic.enable must be null, true or false, got ", critic_enable.dump());
  const bool needs_values = algo::estimator_needs(s.adv_estimator).values;
  s.use_critic = critic_enable.is_null() ? needs_values : critic_enable.get<bool>();
  VERL_CHECK_AS(ConfigError, !needs_values || s.use_critic, "algorithm.adv_estimator=", s.adv_estimator,
                " needs a critic, but critic.enable=false");
  s.use_reference = s.use_kl_in_reward || s.use_kl_loss;
  s.balance_batch = config.get_as<bool>("trainer.balance_batch");
  s.critic_warmup = config.get_as<int64_t>("trainer.critic_warmup");
  s.loss_agg_mode = config.get_as<std::string>("actor_rollout_ref.actor.loss_agg_mode");
  s.loss_scale_factor = optional_number(config, "actor_rollout_ref.actor.loss_scale_factor");
  s.calculate_sum_pi_squared = config.get_as<bool>("actor_rollout_ref.actor.calculate_sum_pi_squared");
  s.old_log_prob_from_update = config.get_as<bool>("actor_rollout_ref.actor.old_log_prob_from_update");

  const std::string r = "actor_rollout_ref.rollout.";
  s.rollout_n = config.get_as<int64_t>(r + "n");
  VERL_CHECK_AS(ConfigError, s.rollout_n >= 1, r, "n must be >= 1, got ", s.rollout_n);
  s.temperature = config.get_as<double>(r + "temperature");
  VERL_CHECK_AS(ConfigError, s.temperature >= 0, r, "temperature must be >= 0, got ", s.temperature);
  s.top_p = config.get_as<double>(r + "top_p");
  s.top_k = config.get_as<int64_t>(r + "top_k");
  s.do_sample = config.get_as<bool>(r + "do_sample");
  s.response_length = config.get_as<int64_t>(r + "response_length");
  VERL_CHECK_AS(ConfigError, s.response_length > 0, r, "response_length (data.max_response_length) must be positive, got ",
                s.response_length);
  s.prompt_length = config.get_as<int64_t>(r + "prompt_length");
  s.ignore_eos = config.get_as<bool>(r + "ignore_eos");
  s.rollout_seed = config.get_as<int64_t>(r + "seed");
  s.free_cache_engine = config.get_as<bool>(r + "free_cache_engine");
  s.hybrid_engine = config.get_as<bool>("actor_rollout_ref.hybrid_engine");
  // The layout (the rollout's TP size, a rollout pool of its own ranks), planned and checked in one place.
  const dist::MeshPlan mesh = dist::plan_mesh(config, dist::MeshRoles::kPPO);
  s.rollout_tensor_parallel_size = mesh.rollout_tp;
  s.rollout_pool_ranks = mesh.pool_ranks;
  s.val_n = config.get_as<int64_t>(r + "val_kwargs.n");
  VERL_CHECK_AS(ConfigError, s.val_n >= 1, r, "val_kwargs.n must be >= 1, got ", s.val_n);
  s.val_temperature = config.get_as<double>(r + "val_kwargs.temperature");
  s.val_top_p = config.get_as<double>(r + "val_kwargs.top_p");
  s.val_top_k = config.get_as<int64_t>(r + "val_kwargs.top_k");
  s.val_do_sample = config.get_as<bool>(r + "val_kwargs.do_sample");
  return s;
}

PPOTrainer::PPOTrainer(Config config, PPOTrainerModels models, RewardFn reward_fn, PPOTrainerOptions options)
    : config_(std::move(config)), models_(std::move(models)), reward_fn_(std::move(reward_fn)) {
  VERL_CHECK(models_.actor != nullptr, "PPOTrainer: the actor model is required");
  VERL_CHECK(models_.actor->head_kind() == model::HeadKind::kLanguageModel,
             "PPOTrainer: the actor model must have the LM head, not a value head");
  VERL_CHECK(static_cast<bool>(reward_fn_), "PPOTrainer: a reward function is required");
  if (options.total_training_steps) {
    VERL_CHECK_AS(ConfigError, *options.total_training_steps > 0, "total_training_steps must be positive, got ",
                  *options.total_training_steps);
    config_.set("actor_rollout_ref.actor.optim.total_training_steps", *options.total_training_steps);
    config_.set("critic.optim.total_training_steps", *options.total_training_steps);
  }
  // The batch sizes left unset, derived as verl.trainer.batch_defaults derives them (already settled from Python).
  for (const BatchDefault& d : fill_batch_defaults(config_)) {
    std::cerr << "verl: " << d.key << "=" << d.value << " (" << d.why << ")" << std::endl;
  }

  config_.validate();
  config_keys::check_added_keys(config_);  // +key=... that nothing here reads
  settings_ = PPOTrainerConfig::from_config(config_);
  check_offload_keys(config_, models_.actor->device());

  // A rollout pool's rank trains nothing: no actor, reference or critic workers (their weights, compute copies and
  // optimizers); its actor module becomes the rollout's copy of the weights.
  pool_rank_ = options.mesh.pool_rank();
  // verl's one-step off-policy layout with a rollout pool of its own ranks (from_config allows the pool's keys only
  // with hybrid_engine=false). This rank is the controller (given the pool and the trainer's rank 0), a pool rank
  // (given the pool, no trainer ranks), or another trainer rank; the trainer's ranks generate nothing.
  const bool pooled = settings_.rollout_pool_ranks > 0;
  const bool trains_for_pool = pooled && !pool_rank_;
  // LoRA (actor_rollout_ref.model.lora_*): adapters on the actor before its engine is built, on every rank (a pool
  // rank's model is the rollout's copy, which generates with them unmerged).
  if (const auto lora = workers::lora_settings(config_, "actor_rollout_ref.model"))
    workers::apply_lora(*models_.actor, *lora, options.init_seed);
  if (!pool_rank_) actor_ = std::make_unique<workers::ActorWorker>(config_, models_.actor, workers::PolicyRole::kActor);
  // With LoRA the reference policy is the actor's base model, its adapters disabled for the pass (verl's
  // ref_in_actor): no second copy of the weights. A reference model the caller gives keeps a worker of its own.
  reference_in_actor_ = settings_.use_reference && !pool_rank_ && !models_.ref && models_.actor->lora();
  if (settings_.use_reference && !pool_rank_ && !reference_in_actor_) {
    if (!models_.ref) models_.ref = copy_as_reference(*models_.actor);
    VERL_CHECK(models_.ref->head_kind() == model::HeadKind::kLanguageModel,
               "PPOTrainer: the reference model must have the LM head");
    ref_ = std::make_unique<workers::ActorWorker>(config_, models_.ref, workers::PolicyRole::kReference);
  }
  if (settings_.use_critic && !pool_rank_) {
    if (!models_.critic) models_.critic = critic_from_actor(*models_.actor, options.init_seed);
    VERL_CHECK(models_.critic->head_kind() == model::HeadKind::kValue,
               "PPOTrainer: the critic model must have the value head");
    // critic.model.lora_*: adapters on the critic's decoder, its value head trained in full.
    if (const auto lora = workers::lora_settings(config_, "critic.model"))
      workers::apply_lora(*models_.critic, *lora, options.init_seed + 1);
    critic_ = std::make_unique<workers::CriticWorker>(config_, models_.critic);
  }
  cost_fn_ = std::move(options.cost_fn);
  VERL_CHECK_AS(ConfigError, settings_.safe_rlhf.enable == static_cast<bool>(cost_fn_),
                settings_.safe_rlhf.enable ? "algorithm.safe_rlhf.enable=true needs a cost function (cost_fn)"
                                    : "a cost function was given but algorithm.safe_rlhf.enable is false; set it to "
                                      "true for Safe-RLHF or leave the cost function out");
  safe_rlhf_lambda_ = settings_.safe_rlhf.lambda_init;
  rollout_fn_ = std::move(options.rollout_fn);
  reward_per_sample_ = options.reward_per_sample;
  multi_turn_ = config_.get_as<bool>("actor_rollout_ref.rollout.multi_turn.enable");
  // The agent loops run where the engine is: this process's, or (one-step off-policy over a rollout pool) each pool
  // rank's on its share of the rows; the trainer's ranks of a pooled job take none.
  const bool loops_elsewhere = trains_for_pool;
  VERL_CHECK_AS(ConfigError, multi_turn_ && !loops_elsewhere ? static_cast<bool>(rollout_fn_) : !rollout_fn_,
                !multi_turn_ ? "an agent-loop rollout (rollout_fn) was given but actor_rollout_ref.rollout.multi_turn."
                               "enable is false; set it to true or leave the rollout out"
                : loops_elsewhere
                    ? "an agent-loop rollout (rollout_fn) was given to a trainer rank of a job with a rollout pool: "
                      "the agent loops run on the pool's ranks, give it to them"
                    : "actor_rollout_ref.rollout.multi_turn.enable=true generates through verl's agent loops, which "
                      "the C++ trainer takes as PPOTrainerOptions::rollout_fn (verl.PPOTrainer passes "
                      "verl.experimental.agent_loop); none was given");
  // One rank's engine generates the agent loops' turns, so it must hold the whole model.
  VERL_CHECK_AS(ConfigError, !multi_turn_ || settings_.rollout_tensor_parallel_size == 1,
                "actor_rollout_ref.rollout.multi_turn.enable=true with rollout.tensor_model_parallel_size = ",
                settings_.rollout_tensor_parallel_size,
                ": agent loops generate on one rank's engine, which would hold a tensor-parallel shard; use 1");
  if (settings_.safe_rlhf.enable && settings_.use_critic && !pool_rank_) {
    // Its own value head (another seed): the cost critic learns the cost's values as the critic the reward's.
    if (!models_.cost_critic) models_.cost_critic = critic_from_actor(*models_.actor, options.init_seed + 1);
    VERL_CHECK(models_.cost_critic->head_kind() == model::HeadKind::kValue,
               "PPOTrainer: the cost critic model must have the value head");
    if (const auto lora = workers::lora_settings(config_, "critic.model"))
      workers::apply_lora(*models_.cost_critic, *lora, options.init_seed + 2);
    cost_critic_ = std::make_unique<workers::CriticWorker>(config_, models_.cost_critic);
  }
  // A model given for a role the config does not use would be saved and restored as if it were trained.
  VERL_CHECK_AS(ConfigError, !models_.critic || critic_ || pool_rank_,
                "a critic model was given but this config uses no critic (algorithm.adv_estimator=",
                settings_.adv_estimator, ", critic.enable); leave it out or enable the critic");
  VERL_CHECK_AS(ConfigError, !models_.cost_critic || cost_critic_ || pool_rank_,
                "a cost critic model was given but this config has none (it needs algorithm.safe_rlhf.enable=true "
                "and a critic); leave it out");
  if (settings_.use_kl_in_reward) {
    kl_ctrl_ = algo::get_kl_controller(settings_.kl_ctrl_type, settings_.kl_coef, settings_.target_kl,
                                       settings_.kl_horizon);
  }

  const model::ModelConfig& mc = models_.actor->config();
  pad_token_id_ = options.pad_token_id.value_or(mc.pad_token_id.value_or(0));
  // The groups this rank was given are the layout's (dist/device_mesh.h: every layout check in one place).
  const dist::DeviceMesh& mesh = options.mesh;
  dist::check_mesh(dist::plan_mesh(config_, dist::MeshRoles::kPPO), mesh, critic_ || cost_critic_);
  if (!settings_.hybrid_engine) {
    VERL_CHECK_AS(ConfigError, !config_.get_as<bool>("algorithm.filter_groups.enable"),
                  "actor_rollout_ref.hybrid_engine=false (one-step off-policy) with algorithm.filter_groups.enable="
                  "true is not implemented: DAPO's dynamic sampling gathers several generation batches per step");
  }
  if (trains_for_pool) {
    VERL_CHECK_AS(ConfigError, !models_.engine, "a rollout engine was given to a trainer rank of a job with a rollout "
                  "pool: the pool's ranks generate");
  } else if (models_.engine) {
    engine_ = models_.engine;
    VERL_CHECK_AS(ConfigError,
                  settings_.hybrid_engine || pool_rank_ ||
                      (engine_->model() != models_.actor && engine_->model() != actor_->compute_model()),
                  "actor_rollout_ref.hybrid_engine=false needs a rollout engine with weights of its own, but the "
                  "given engine generates from the actor's model");
  } else {
    rollout::EngineConfig ec = rollout::engine_config_from(config_);
    ec.eos_token_ids = options.eos_token_ids;
    // Agent loops send each turn as a new request holding the whole conversation: with the prefix cache its next
    // turn prefills only the new tokens (cleared before every generation: the weights change in place).
    ec.enable_prefix_caching = ec.enable_prefix_caching && rollout_fn_;
    // The engine generates from the actor's compute-dtype weights (the actor module itself unless mixed
    // precision keeps a copy): the rollout log-probs and the actor's recomputation share weights and kernels.
    // Tensor-parallel generation runs on this rank's shard of them instead, re-made after every update.
    std::shared_ptr<model::CausalLM> rollout_model = pool_rank_ ? models_.actor : actor_->compute_model();
    const int64_t tp = settings_.rollout_tensor_parallel_size;
    // A pool rank generates in the dtype the trainer's ranks compute (and send the weights) in: the actor's
    // MixedPrecision's, which never widens a 16-bit master.
    const auto pool_dtype = [&] {
      const std::string key = "actor_rollout_ref.actor.fsdp_config.dtype";
      return workers::effective_compute_dtype(
          models_.actor->dtype(),
          workers::resolve_compute_dtype(config_.get_as<std::string>(key), key, models_.actor->device()));
    };
    if (pool_rank_ && tp == 1) {
      torch::NoGradGuard no_grad;
      rollout_model->to(rollout_model->device(), pool_dtype());
      rollout_model->eval();
      for (auto& p : rollout_model->parameters()) p.set_requires_grad(false);
    }
    const int64_t world = mesh.trainer ? mesh.trainer->world_size() : 1;
    if (tp > 1) {
      const auto& compute = *rollout_model;
      const torch::Dtype dtype = pool_rank_ ? pool_dtype() : compute.dtype();
      torch::NoGradGuard no_grad;
      rollout_model = std::make_shared<model::CausalLM>(compute.config(), model::HeadKind::kLanguageModel,
                                                        mesh.tensor_parallel);
      rollout_model->to(compute.device(), dtype);
      if (compute.lora()) rollout_model->add_adapters(*compute.lora(), /*seed=*/0);  // the hand-over fills them
      rollout_model->eval();
      for (auto& p : rollout_model->parameters()) p.set_requires_grad(false);
      // A pool rank keeps its shard only: the whole actor goes (models().actor is null there).
      if (pool_rank_) models_.actor.reset();
    }
    if (tp == 1 && !pool_rank_ && models_.actor->lora() &&
        config_.get_as<bool>("actor_rollout_ref.model.lora.merge")) {
      // verl's lora.merge: the engine generates from a plain copy with the adapters folded in, refreshed at every
      // hand-over -- no adapter GEMMs per token, one more copy of the weights.
      rollout_model = copy_as_reference(*actor_->compute_model(), /*merge_adapters=*/true);
    } else if (tp == 1 && !pool_rank_ && (!settings_.hybrid_engine || world > 1)) {
      // The rollout's own weights: generation reads them while the actor's are being updated (one-step
      // off-policy); or the actor is about to be sharded over the ranks (ZeRO-3), and each rank decodes its rows on a
      // whole copy, refreshed from the gathered shards after every update.
      rollout_model = copy_as_reference(*actor_->compute_model());
    }
    engine_ = std::make_shared<rollout::Engine>(rollout_model, ec);
    models_.engine = engine_;
  }

  workers_ = dist::make_worker_group(mesh.trainer);
  if (workers_->world_size() > 1) {
    for (const auto& [model, key] : {std::pair{models_.actor, "actor_rollout_ref.model.lora_rank"},
                                     std::pair{models_.critic, "critic.model.lora_rank"}}) {
      VERL_CHECK_AS(ConfigError, !model || !model->lora(), key, ": LoRA over ", workers_->world_size(),
                    " trainer ranks (ZeRO-3 / HSDP) is not implemented yet; run it in one process "
                    "(trainer.n_gpus_per_node=1)");
    }
    settings_.n_gpus = workers_->world_size();
    const workers::detail::DataParallel dp(mesh.trainer);
    // As verl's workers assert at start-up: every mini-batch splits equally over the ranks (a ConfigError now, not
    // in the first update).
    dp.local_rows(actor_->config().ppo_mini_batch_size * settings_.rollout_n,
                  "actor_rollout_ref.actor.ppo_mini_batch_size");
    if (critic_) dp.local_rows(critic_->config().ppo_mini_batch_size * settings_.rollout_n, "critic.ppo_mini_batch_size");
    // Replicas built on each rank start from rank 0's weights (a random init or a new value head may differ), before
    // the workers shard them.
    for (const auto& model : {models_.actor, models_.ref, models_.critic, models_.cost_critic}) {
      if (model) dp.broadcast_model_from_controller(*model);
    }
    // A pooled job's trainer ranks hand the weights to the pool, which shards them for its own tensor parallelism.
    const int64_t tp = trains_for_pool ? 1 : settings_.rollout_tensor_parallel_size;
    if (tp > 1) {
      // The actor's shards are laid out for the rollout within each shard group (the 3D-HybridEngine).
      tensor_parallel_ = mesh.tensor_parallel;
      tensor_parallel_slice_ = mesh.tensor_parallel_slice;
    }
    actor_->set_data_parallel(mesh.trainer, /*generation_tp=*/tp, mesh.actor);
    if (critic_) critic_->set_data_parallel(mesh.trainer, mesh.critic);
    if (cost_critic_) cost_critic_->set_data_parallel(mesh.trainer, mesh.critic);
  }
  if (engine_ && actor_) hand_over_ = std::make_unique<hybrid::WeightHandOver>(engine_, actor_->engine(), tensor_parallel_,
                                                                              tensor_parallel_slice_);
  // Over several ranks the rollout copy was made before rank 0's weights arrived; every rank hands them over now,
  // together (later hand-overs happen in dispatched work only: update_weights, generate).
  if (workers_->world_size() > 1 && engine_) hand_over_weights();
  register_worker_methods();
  if (mesh.rollout_pool) {
    pool_ = std::make_unique<dist::CollectiveWorkerGroup>(mesh.rollout_pool, /*controller_computes=*/false);
    if (pool_rank_) tensor_parallel_ = mesh.tensor_parallel;  // the pool's replica: shards the weights it receives
  }
  if (pooled) register_pool_methods();
}

void PPOTrainer::check_trains(const std::string& what) const {
  VERL_CHECK_AS(InvalidArgument, !pool_rank_, "PPOTrainer: '", what, "' on a rank of the rollout pool, which trains "
                "nothing (its weights come from the controller once per step)");
}

workers::ActorWorker& PPOTrainer::actor() {
  check_trains("actor");
  return *actor_;
}

rollout::Engine& PPOTrainer::engine() {
  VERL_CHECK_AS(InvalidArgument, engine_ != nullptr, "PPOTrainer.engine: this is a trainer rank of a job with a "
                "rollout pool (rollout.n_gpus_per_node > 0); the pool's ranks hold the rollout engine");
  return *engine_;
}

void PPOTrainer::register_worker_methods() {
  // Each worker registers its own methods with their dispatch modes (verl's @register); the rollout's are the
  // hybrid engine's: generation (rows padded to the ranks, each tensor-parallel group generating one share) and the
  // weight hand-over (on every rank). Every rank registers the same names.
  workers_->register_method(
      "generate", [this](const DataProto& chunk) { return generate_chunk(chunk); }, dist::Dispatch::kPadSplit,
      settings_.rollout_tensor_parallel_size);
  workers_->register_method(
      "update_weights",
      [this](const DataProto&) {
        hand_over_weights();
        return DataProto();
      },
      dist::Dispatch::kBroadcast);
  if (actor_) {
    actor_->register_methods(*workers_, reference_in_actor_);
    actor_->engine().register_methods(*workers_, "actor");
  }
  if (ref_) ref_->register_methods(*workers_);
  if (critic_) {
    critic_->register_methods(*workers_, "critic");
    critic_->engine().register_methods(*workers_, "critic");
  }
  if (cost_critic_) {
    cost_critic_->register_methods(*workers_, "cost_critic");
    cost_critic_->engine().register_methods(*workers_, "cost_critic");
  }
}

DataProto PPOTrainer::generate_chunk(const DataProto& chunk) {
  const std::string mode = chunk.meta_info().at(kGenModeKey).get<std::string>();
  // Row i of the whole batch samples with seed + i on whichever rank generates it.
  const int64_t seed =
      chunk.meta_info().at(kGenSeedKey).get<int64_t>() + chunk.meta_info().at(dist::kRowOffsetKey).get<int64_t>();
  if (rollout_fn_) return generate_with_rollout_fn(chunk, mode, seed);  // a rollout pool's rank runs the agent loops
  return generate_on_engine(chunk, mode_sampling_params(mode), seed);
}

void PPOTrainer::check_controller() const {
  VERL_CHECK(is_controller(), "PPOTrainer: this is ", pool_rank_ ? "a rollout pool rank" : "a worker rank",
             "; only rank 0 (the controller) runs the step -- the others call serve()");
}

DataProto PPOTrainer::dispatch(const std::string& method, const DataProto& data) {
  check_controller();
  return workers_->call(method, data);
}

workers::TrainEngine& PPOTrainer::engine_of(const std::string& role) {
  check_trains(role);
  if (role == "actor") return actor_->engine();
  if (role == "cost_critic") {
    VERL_CHECK(cost_critic_ != nullptr, "this trainer has no cost critic");
    return cost_critic_->engine();
  }
  VERL_CHECK(role == "critic", "the role must be 'actor', 'critic' or 'cost_critic', got '", role, "'");
  VERL_CHECK(critic_ != nullptr, "this trainer has no critic");
  return critic_->engine();
}

workers::Optimizer& PPOTrainer::optimizer(const std::string& role) { return engine_of(role).optimizer(); }
workers::MixedPrecision& PPOTrainer::precision(const std::string& role) { return engine_of(role).precision(); }

std::shared_ptr<model::CausalLM> PPOTrainer::model_for_checkpoint(const std::string& role) {
  if (!engine_of(role).sharded()) return engine_of(role).model();
  dispatch(role + ".gather_model", DataProto());
  return engine_of(role).take_gathered_model();
}

void PPOTrainer::load_model_state(const std::string& role, const std::map<std::string, torch::Tensor>& state) {
  engine_of(role).load_full_state(state);
}

int64_t PPOTrainer::model_weight_bytes(const std::string& role) { return engine_of(role).weight_bytes(); }

void PPOTrainer::save_model_shards(const std::string& role, const std::string& dir,
                                   const std::optional<std::string>& tokenizer_dir) {
  VERL_CHECK(engine_of(role).sharded(), "save_model_shards: the ", role, " model is not sharded (one rank)");
  DataProto request;
  request.meta_info()["dir"] = dir;
  if (tokenizer_dir) request.meta_info()["tokenizer_dir"] = *tokenizer_dir;
  dispatch(role + ".save_checkpoint", request);
}

void PPOTrainer::load_model_shards(const std::string& role, const std::string& dir) {
  engine_of(role).load_checkpoint(dir);
}

void PPOTrainer::save_optimizer(const std::string& role, const std::string& path) {
  optimizer(role);  // a bad role fails here, before any rank is asked
  DataProto request;
  request.meta_info()["path"] = path;
  dispatch(role + ".save_optimizer", request);
}

void PPOTrainer::serve() { pool_rank_ ? pool_->serve() : workers_->serve(); }
void PPOTrainer::release_workers() {
  // A batch submitted to the rollout pool is generated through the pool's group on the submitting thread: it
  // finishes first (wait_rollouts still returns it), since the release goes through the same group.
  if (pool_ && rollout_in_flight_ && rollout_future_.valid()) rollout_future_.wait();
  workers_->release();
  if (pool_) pool_->release();
}

PPOTrainer::~PPOTrainer() {
  // A batch still in flight reads this trainer: it finishes first (its result or error is dropped).
  if (rollout_future_.valid()) rollout_future_.wait();
}

void PPOTrainer::set_global_step(int64_t step) {
  check_no_rollout_in_flight("set_global_step");
  VERL_CHECK(step >= 0, "set_global_step: step must be >= 0, got ", step);
  global_step_ = step;
  gen_batches_in_step_ = 0;
  waited_not_optimized_ = 0;  // a resume: the next submitted batch is the next step's
  sync_rollout_weights_seconds_.reset();
}

double PPOTrainer::kl_coef() const { return kl_ctrl_ ? kl_ctrl_->value : settings_.kl_coef; }

void PPOTrainer::set_safe_rlhf_lambda(double value) {
  VERL_CHECK(std::isfinite(value) && value >= 0, "set_safe_rlhf_lambda: lambda must be a finite number >= 0, got ",
             value);
  safe_rlhf_lambda_ = value;
}

void PPOTrainer::set_kl_coef(double value) {
  VERL_CHECK(std::isfinite(value), "set_kl_coef: value must be finite");
  if (kl_ctrl_) kl_ctrl_->value = value;
}

rollout::SamplingParams PPOTrainer::sampling_params(bool validation) const {
  rollout::SamplingParams p;
  p.max_tokens = settings_.response_length;
  p.ignore_eos = settings_.ignore_eos;
  p.logprobs = true;
  if (validation) {
    p.temperature = settings_.val_do_sample ? settings_.val_temperature : 0.0;
    p.top_p = settings_.val_top_p;
    p.top_k = settings_.val_top_k;
  } else {
    p.temperature = settings_.do_sample ? settings_.temperature : 0.0;
    p.top_p = settings_.top_p;
    p.top_k = settings_.top_k;
  }
  p.validate();
  return p;
}

rollout::SamplingParams PPOTrainer::mode_sampling_params(const std::string& mode) const {
  rollout::SamplingParams params = sampling_params(mode == "validation");
  if (mode == "greedy") params.temperature = 0.0;
  return params;
}

DataProto PPOTrainer::pop_generation_input(DataProto& batch) const {
  std::vector<std::string> keys{"input_ids", "attention_mask"};
  if (batch.has_tensor("position_ids")) keys.emplace_back("position_ids");
  DataProto input = batch.pop(keys);
  if (multi_turn_) {
    // Agent loops read the rows' messages and per-sample settings (raw_prompt, agent_name, tools_kwargs, ...).
    for (const auto& [key, column] : batch.non_tensor_batch()) input.set_column(key, column);
  } else if (batch.has_column("agent_name")) {
    // verl runs each row in the agent loop it names; the engine's one-shot generation is single_turn_agent.
    for (const Json& name : batch.column("agent_name")) {
      VERL_CHECK_AS(DataError, name.is_null() || name == "single_turn_agent",
                    "a prompt row's agent_name is ", untrusted::quote(name),
                    " but the trainer generates without agent loops: set actor_rollout_ref.rollout.multi_turn."
                    "enable=true to run rows in the agent loop they name");
    }
  }
  return input;
}

DataProto PPOTrainer::generate_with_rollout_fn(const DataProto& rows, const std::string& mode, int64_t seed) {
  rollout::SamplingParams params = mode_sampling_params(mode);
  params.n = 1;
  // The agent loops generate on the controller's engine alone; a hand-over gathers from every rank's shards.
  if (workers_->world_size() > 1) dispatch("update_weights", DataProto());
  ready_engine();
  engine_->clear_prefix_cache();  // keys/values of earlier weights
  DataProto out = rollout_fn_(rows, params, seed);
  if (settings_.free_cache_engine) engine_->sleep();  // weights kept: the controller alone generates here

  const int64_t bs = rows.size();
  const int64_t prompt_width = rows.tensor("input_ids").size(1);
  const int64_t response_length = settings_.response_length;
  VERL_CHECK_AS(DataError, out.size() == bs, "rollout_fn returned ", out.size(), " rows for ", bs);
  const std::vector<std::pair<const char*, int64_t>> widths{
      {"prompts", prompt_width},       {"responses", response_length},
      {"response_mask", response_length}, {"input_ids", prompt_width + response_length},
      {"attention_mask", prompt_width + response_length}, {"position_ids", prompt_width + response_length}};
  for (const auto& [key, width] : widths) {
    VERL_CHECK_AS(DataError, out.has_tensor(key), "rollout_fn's batch has no '", key, "'");
    const torch::Tensor& t = out.tensor(key);
    VERL_CHECK_AS(DataError, t.dim() == 2 && t.size(0) == bs && t.size(1) == width, "rollout_fn's '", key,
                  "' must be (", bs, ", ", width, "), got ", t.sizes());
  }
  // Only what the rollout added: the rows' own columns stay with the batch they came from.
  DataProto::ColumnMap added;
  for (const auto& [key, column] : out.non_tensor_batch()) {
    if (!rows.has_column(key)) added.emplace(key, column);
  }
  return DataProto(out.batch(), std::move(added)).to(rows.tensor("input_ids").device());
}

DataProto PPOTrainer::generate_on_engine(const DataProto& rows, const rollout::SamplingParams& params, int64_t seed,
                                         const RowsFinishedFn& on_rows) {
  std::vector<std::string> keys{"input_ids", "attention_mask"};
  if (rows.has_tensor("position_ids")) keys.emplace_back("position_ids");
  ready_engine();
  DataProto out;
  try {
    out = generate_sequences(*engine_, rows.select(keys, std::vector<std::string>{}, std::vector<std::string>{}),
                             params, pad_token_id_, seed, on_rows);
  } catch (...) {
    if (settings_.free_cache_engine && !engine_->sleeping()) {
      try {
        hybrid::rest_after_generation(*engine_, hand_over_.get());  // the failed call left no request in flight
      } catch (...) {
      }
    }
    throw;
  }
  // verl puts the rollout replicas to sleep after generation: the KV cache is freed for the updates -- and under
  // ZeRO-3 the rollout's copy of the weights too (the 3D-HybridEngine: the next hand-over gathers it from the shards).
  if (settings_.free_cache_engine) hybrid::rest_after_generation(*engine_, hand_over_.get());
  return out;
}

bool PPOTrainer::streams_rewards() const {
  // The engine of this process generates every row and the reward callback is this process's: one rank, no
  // tensor-parallel group, no agent loops (which generate turn by turn), no Safe-RLHF cost (scored with the batch).
  return reward_per_sample_ && workers_->world_size() == 1 && !pool_ && settings_.rollout_tensor_parallel_size == 1 &&
         !rollout_fn_ && !cost_fn_;
}

DataProto PPOTrainer::scored_rollouts(const DataProto& prompts, int64_t step_no, int64_t gen_index) {
  if (streams_rewards()) return collect_rollouts_at(prompts, step_no, gen_index, /*score=*/true);
  return compute_rewards(collect_rollouts_at(prompts, step_no, gen_index, /*score=*/false));
}

void PPOTrainer::set_scores(DataProto& batch, RewardOutput scores) const {
  batch.set_tensor("token_level_scores", scores.token_level_scores.to(batch.tensor("responses").device()));
  for (auto& [key, column] : scores.extra_info) batch.set_column(key, std::move(column));
}

DataProto PPOTrainer::generate(const DataProto& prompts, const std::string& mode, int64_t seed) {
  if (rollout_fn_) return generate_with_rollout_fn(prompts, mode, seed);
  DataProto request = prompts;
  request.meta_info()[kGenModeKey] = mode;
  request.meta_info()[kGenSeedKey] = seed;
  check_controller();
  // A rollout pool gets the weights of the last update first, unless submit_rollouts' batch is being generated
  // (this is its thread: the weights were sent at its submission).
  if (pool_ && !rollout_in_flight_) sync_pool_weights();
  // A duplicated row costs only time here: pad the batch to a multiple of the ranks.
  // Each tensor-parallel group of ranks generates one share of the rows together.
  DataProto out = generation_group().call("generate", request);
  return out.to(prompts.tensor("input_ids").device());
}

RewardOutput PPOTrainer::call_reward(const DataProto& batch) {
  return checked_scores(reward_fn_(batch), batch, "reward");  // exceptions pass through unchanged
}

DataProto PPOTrainer::collect_rollouts(const DataProto& prompts) {
  check_no_rollout_in_flight("collect_rollouts");
  return collect_rollouts_at(prompts, global_step_ + 1, gen_batches_in_step_++, /*score=*/false);
}

DataProto PPOTrainer::collect_rollouts_at(const DataProto& prompts, int64_t step_no, int64_t gen_index, bool score) {
  VERL_CHECK(gen_index < kMaxGenBatchesPerStep, "collect_rollouts: more than ", kMaxGenBatchesPerStep,
             " generation batches in one step");
  TimingRaw timing = read_timing(prompts);
  const int64_t bs = prompts.size();
  VERL_CHECK_AS(DataError, bs > 0, "collect_rollouts: the prompt batch is empty");
  VERL_CHECK_AS(DataError, bs * std::max(settings_.rollout_n, settings_.val_n) < kStepSeedStride,
                "collect_rollouts: batch too large (", bs, " prompts x n)");

  DataProto batch = prompts;
  batch.meta_info()["temperature"] = settings_.temperature;
  DataProto::Column uid;
  uid.reserve(static_cast<size_t>(bs));
  for (int64_t i = 0; i < bs; ++i) {
    uid.emplace_back("step" + std::to_string(step_no) + "." + std::to_string(gen_index) + "-" + std::to_string(i));
  }
  batch.set_column("uid", std::move(uid));

  DataProto gen_batch = pop_generation_input(batch);
  const int64_t seed = settings_.rollout_seed + (step_no * kMaxGenBatchesPerStep + gen_index) * kStepSeedStride;
  DataProto gen_output;
  // verl's reward loop: each prompt's samples are scored as they finish, while the others still decode.
  std::optional<detail::StreamingScorer> scorer;
  {
    StageTimer timer(timing, "gen");
    DataProto gen_input = gen_batch.repeat(settings_.rollout_n, /*interleave=*/true);
    if (score) {
      scorer.emplace([this](const DataProto& rows) { return call_reward(rows); },
                     batch.repeat(settings_.rollout_n, /*interleave=*/true), settings_.response_length);
      try {
        gen_output = generate_on_engine(gen_input, mode_sampling_params("train"), seed,
                                        [&scorer](int64_t first, const DataProto& rows) { scorer->add(first, rows); });
      } catch (const detail::ScoringFailed&) {
        scorer->finish();  // rethrows the reward callback's own exception
        throw;
      }
    } else {
      gen_output = generate(gen_input, "train", seed);
    }
  }
  std::optional<RewardOutput> scores;
  if (scorer) {
    StageTimer timer(timing, "reward");  // what scoring had left when generation ended
    scores = scorer->finish();
  }
  if (algo::estimator_needs(settings_.adv_estimator).reward_baselines) {
    // ReMax's baseline: one greedy response per prompt, scored like the samples (verl does this inside gen).
    StageTimer timer(timing, "gen");
    DataProto baseline = generate(gen_batch, "greedy", seed + kValidationSeedOffset);
    DataProto baseline_batch = batch;
    baseline_batch.union_with(baseline);
    RewardOutput r = call_reward(baseline_batch);
    batch.set_tensor("reward_baselines", r.token_level_scores.sum(-1));
  }
  batch = batch.repeat(settings_.rollout_n, /*interleave=*/true);
  batch.union_with(gen_output);
  if (scores) set_scores(batch, std::move(*scores));

  if (settings_.balance_batch) {
    const detail::BalancedOrder balanced = detail::balance_batch(batch.tensor("attention_mask"), workers_->world_size());
    batch.reorder(torch::tensor(balanced.order, torch::kLong));
    add_step_metrics(batch, balanced.metrics);
  }
  write_timing(batch, timing);
  return batch;
}

DataProto PPOTrainer::compute_rewards(DataProto batch) {
  TimingRaw timing = read_timing(batch);
  {
    StageTimer timer(timing, "reward");
    set_scores(batch, call_reward(batch));
    if (cost_fn_) {
      // Safe-RLHF: the cost of every response, placed as the reward is; its extra columns prefixed "cost_".
      RewardOutput c = checked_scores(cost_fn_(batch), batch, "cost");
      batch.set_tensor("token_level_costs", c.token_level_scores);
      for (auto& [key, column] : c.extra_info) batch.set_column("cost_" + key, std::move(column));
    }
  }
  write_timing(batch, timing);
  return batch;
}

Metrics PPOTrainer::optimize(DataProto batch) { return optimize_impl(std::move(batch), std::nullopt); }

void PPOTrainer::ready_engine() {
  // A pool rank has no hand-over: its weights come from the controller (hybrid::receive_units). While
  // submit_rollouts' batch generates, the engine keeps the weights handed over at its submission.
  hybrid::ready_for_generation(*engine_, hand_over_.get(), /*pinned=*/rollout_in_flight_);
}

bool PPOTrainer::rollout_copy_of_shards() const { return hand_over_ && hand_over_->copy_of_shards(); }

void PPOTrainer::hand_over_weights() {
  // The trainer ranks of a pooled job have no engine (sync_pool_weights sends the pool the weights; a pool rank's
  // ready_engine never hands over). While submit_rollouts' batch is generated, the engine keeps the weights handed
  // over at its submission.
  if (hand_over_ && !rollout_in_flight_) hand_over_->hand_over();
}

bool PPOTrainer::old_log_probs_from_update(const DataProto& batch, int64_t step_no) const {
  const PPOTrainerConfig& s = settings_;
  const algo::RolloutCorrectionConfig& rc = s.rollout_correction;
  if (!s.old_log_prob_from_update || rc.bypass_mode || !actor_) return false;
  if (s.critic_warmup > step_no) return false;  // no actor update this step
  // Stages that read old_log_probs (or the pass's sum_pi_squared) before the update, or change its rows.
  const bool read_before_update = s.use_kl_in_reward || rc.acts() ||
                                  algo::estimator_needs(s.adv_estimator).sum_pi_squared || s.calculate_sum_pi_squared ||
                                  s.pf_ppo.enable;
  // A batch without a response token: the pass runs, and the rollout correction refuses the batch before any update.
  return !read_before_update && actor_->old_log_prob_from_update_is_exact(batch.size()) &&
         batch.tensor("response_mask").any().item<bool>();
}

Metrics PPOTrainer::old_log_prob_metrics(const DataProto& batch, const torch::Tensor& entropys) const {
  const torch::Tensor& response_mask = batch.tensor("response_mask");
  Metrics metrics;
  metrics["actor/entropy"] = algo::agg_loss(entropys.to(response_mask.device()), response_mask,
                                            settings_.loss_agg_mode, 1, std::nullopt, std::nullopt,
                                            settings_.loss_scale_factor)
                                 .item<double>();
  if (batch.has_tensor("rollout_log_probs")) merge(metrics, compute_rollout_debug_metrics(batch));
  return metrics;
}

Metrics PPOTrainer::optimize_impl(DataProto batch, std::optional<double> step_seconds_before) {
  const auto start = Clock::now();
  TimingRaw timing = read_timing(batch);
  Metrics metrics = read_step_metrics(batch);
  const int64_t step_no = global_step_ + 1;
  for (const char* key : {"responses", "response_mask", "token_level_scores", "attention_mask", "input_ids"}) {
    VERL_CHECK_AS(DataError, batch.has_tensor(key), "optimize: the batch has no '", key,
                  "' (run collect_rollouts and compute_rewards first)");
  }
  const torch::Tensor response_mask = batch.tensor("response_mask");

  // Where the actor update's first forward gives old_log_probs bit for bit, it does, and the pass is skipped.
  const bool old_log_probs_in_update = old_log_probs_from_update(batch, step_no);
  if (settings_.rollout_correction.bypass_mode) {
    // verl's apply_bypass_mode: the rollout's log-probs are the old policy (2 policies instead of 3); the actor's
    // "bypass_mode" loss applies the correction against the current policy.
    VERL_CHECK_AS(DataError, batch.has_tensor("rollout_log_probs"),
                  "bypass_mode=True requires rollout_log_probs in batch (the rollout's log-probs of its tokens)");
    batch.set_tensor("old_log_probs", batch.tensor("rollout_log_probs"));
  } else if (!old_log_probs_in_update) {
    StageTimer timer(timing, "old_log_prob");
    DataProto input = worker_input(batch, kLogProbInputs);
    // verl hands the flag to the actor with the batch (its non-tensor "calculate_sum_pi_squared").
    if (settings_.calculate_sum_pi_squared) input.meta_info()["calculate_sum_pi_squared"] = true;
    DataProto out = dispatch("compute_log_prob", input).to(response_mask.device());
    metrics["perf/mfu/actor_infer"] = reduce_over_ranks(out).at("mfu");
    batch.set_tensor("old_log_probs", out.tensor("old_log_probs"));
    if (settings_.calculate_sum_pi_squared) batch.set_tensor("sum_pi_squared", out.tensor("sum_pi_squared").to(torch::kFloat));
    merge(metrics, old_log_prob_metrics(batch, out.tensor("entropys")));
  }
  if (ref_ || reference_in_actor_) {
    StageTimer timer(timing, "ref");
    DataProto out = dispatch("compute_ref_log_prob", worker_input(batch, kLogProbInputs));
    batch.set_tensor("ref_log_prob", out.tensor("ref_log_prob").to(response_mask.device()));
  }
  if (critic_) {
    StageTimer timer(timing, "values");
    DataProto out = dispatch("compute_values", worker_input(batch, kLogProbInputs));
    batch.set_tensor("values", out.tensor("values").to(response_mask.device()));
  }
  if (cost_critic_) {
    StageTimer timer(timing, "cost_values");
    DataProto out = dispatch("compute_cost_values", worker_input(batch, kLogProbInputs));
    batch.set_tensor("cost_values", out.tensor("values").to(response_mask.device()));
  }
  if (settings_.safe_rlhf.enable) {  // before any stage changes state (the KL controller, the multiplier)
    VERL_CHECK_AS(DataError, batch.has_tensor("token_level_costs"), "optimize: algorithm.safe_rlhf.enable needs the "
                  "batch's 'token_level_costs' (run compute_rewards first)");
  }
  {
    StageTimer timer(timing, "adv");
    torch::NoGradGuard no_grad;
    const torch::Tensor& scores = batch.tensor("token_level_scores");
    if (settings_.use_kl_in_reward) {
      const detail::KlPenalty kl =
          detail::apply_kl_penalty(scores, batch.tensor("old_log_probs"), batch.tensor("ref_log_prob"), response_mask,
                                   settings_.kl_penalty, *kl_ctrl_, batch.size());
      batch.set_tensor("token_level_rewards", kl.token_level_rewards);
      metrics["actor/reward_kl_penalty"] = kl.current_kl;
      metrics["actor/reward_kl_penalty_coeff"] = kl.beta;
    } else {
      batch.set_tensor("token_level_rewards", scores);
    }
    if (batch.has_tensor("rollout_log_probs") && !settings_.rollout_correction.bypass_mode &&
        !old_log_probs_in_update) {
      // verl's decoupled rollout correction: rejected tokens leave response_mask, IS weights reach the actor.
      algo::RolloutCorrection correction = algo::compute_rollout_correction_and_rejection_mask(
          batch.tensor("old_log_probs"), batch.tensor("rollout_log_probs"), response_mask,
          settings_.rollout_correction);
      batch.set_tensor("response_mask", correction.response_mask);
      if (correction.rollout_is_weights.defined()) batch.set_tensor("rollout_is_weights", correction.rollout_is_weights);
      merge(metrics, correction.metrics);
    }
    detail::AdvantageOutput adv = detail::compute_advantage(settings_, batch, safe_rlhf_lambda_);
    merge(metrics, adv.metrics);
    if (adv.cost_advantages.defined()) {
      batch.set_tensor("cost_advantages", adv.cost_advantages);
      batch.set_tensor("cost_returns", adv.cost_returns);
    }
    batch.set_tensor("advantages", adv.advantages);
    batch.set_tensor("returns", adv.returns);
    if (settings_.pf_ppo.enable) {
      // PF-PPO: the batch resampled with replacement, rows drawn by a weight of their score. Drawn on a CPU
      // generator seeded from the rollout seed and the step, so a run repeats itself.
      auto gen = at::make_generator<at::CPUGeneratorImpl>(
          static_cast<uint64_t>(settings_.rollout_seed + kPfPpoSeedOffset + step_no));
      torch::Tensor rows = algo::pf_ppo_sample_indices(batch.tensor("token_level_scores").to(torch::kCPU),
                                                       settings_.pf_ppo.reweight_method, settings_.pf_ppo.weight_pow,
                                                       gen);
      batch = batch.select_idxs(rows);
    }
  }
  if (critic_) {
    StageTimer timer(timing, "update_critic");
    Metrics critic_metrics = reduce_over_ranks(dispatch(
        "update_critic",
        worker_input(batch, {"input_ids", "attention_mask", "position_ids", "responses", "response_mask", "values",
                             "returns"})));
    rename_metric(critic_metrics, "critic/mfu", "perf/mfu/critic");  // verl's _update_critic
    merge(metrics, critic_metrics);
  }
  if (cost_critic_) {
    StageTimer timer(timing, "update_cost_critic");
    DataProto input = worker_input(batch, {"input_ids", "attention_mask", "position_ids", "responses", "response_mask"});
    input.set_tensor("values", batch.tensor("cost_values"));
    input.set_tensor("returns", batch.tensor("cost_returns"));
    Metrics cost_metrics = reduce_over_ranks(dispatch("update_cost_critic", input));
    for (const auto& [key, value] : cost_metrics) {
      // critic/vf_loss -> cost_critic/vf_loss, critic/mfu -> perf/mfu/cost_critic
      if (key == "critic/mfu") metrics["perf/mfu/cost_critic"] = value;
      else metrics[key.rfind("critic/", 0) == 0 ? "cost_" + key : "cost_critic/" + key] = value;
    }
  }
  if (settings_.critic_warmup > step_no) {
    StageTimer timer(timing, "update_weights");
    dispatch("update_weights", DataProto());
    if (rollout_copy_of_shards()) metrics["perf/reshard_bytes_per_rank"] = static_cast<double>(hand_over_->last_bytes());
  } else {
    {
      StageTimer timer(timing, "update_actor");
      DataProto out = dispatch(
          old_log_probs_in_update ? "update_actor_on_policy" : "update_actor",
          worker_input(batch, {"input_ids", "attention_mask", "position_ids", "responses", "response_mask",
                               "old_log_probs", "advantages", "ref_log_prob", "rollout_is_weights"}));
      Metrics actor_metrics = reduce_over_ranks(out);
      rename_metric(actor_metrics, "actor/mfu", "perf/mfu/actor");  // verl's _update_actor
      merge(metrics, actor_metrics);
      if (old_log_probs_in_update) {
        batch.set_tensor("old_log_probs", out.tensor("old_log_probs").to(response_mask.device()));
        merge(metrics, old_log_prob_metrics(batch, out.tensor("entropys")));
        if (batch.has_tensor("rollout_log_probs")) {
          // verl's rollout correction, which (with neither IS weights nor rejection) only measures.
          merge(metrics, algo::compute_rollout_correction_and_rejection_mask(
                             batch.tensor("old_log_probs"), batch.tensor("rollout_log_probs"), response_mask,
                             settings_.rollout_correction)
                             .metrics);
        }
      }
    }
    StageTimer timer(timing, "update_weights");
    dispatch("update_weights", DataProto());
    if (rollout_copy_of_shards()) metrics["perf/reshard_bytes_per_rank"] = static_cast<double>(hand_over_->last_bytes());
  }

  if (sync_rollout_weights_seconds_) {
    timing["sync_rollout_weights"] = *sync_rollout_weights_seconds_;
    sync_rollout_weights_seconds_.reset();
  }
  if (step_seconds_before) {
    timing["step"] = *step_seconds_before + seconds_since(start);
  } else {
    double total = 0;
    for (const auto& [k, v] : timing) {
      // A submitted batch's generation and scoring ran beside the previous step (its wait is timing_s/gen).
      if (!is_overlapped_stage(k)) total += v;
    }
    timing["step"] = total;
  }
  metrics["training/global_step"] = static_cast<double>(step_no);
  auto epoch = batch.meta_info().find("epoch");
  metrics["training/epoch"] = epoch != batch.meta_info().end() && epoch->is_number() ? epoch->get<double>() : 0.0;
  merge(metrics, compute_data_metrics(batch, critic_ != nullptr));
  merge(metrics, compute_timing_metrics(batch, timing));
  merge(metrics, compute_throughout_metrics(batch, timing, settings_.n_gpus));
  write_timing(batch, timing);
  global_step_ = step_no;
  gen_batches_in_step_ = 0;
  waited_not_optimized_ = std::max<int64_t>(0, waited_not_optimized_ - 1);
  last_batch_ = std::move(batch);
  return metrics;
}

Metrics PPOTrainer::step(const DataProto& prompts) {
  check_no_rollout_in_flight("step");
  const auto start = Clock::now();
  DataProto batch = scored_rollouts(prompts, global_step_ + 1, gen_batches_in_step_++);
  return optimize_impl(std::move(batch), seconds_since(start));
}

DataProto PPOTrainer::generate_validation(const DataProto& prompts) {
  const int64_t bs = prompts.size();
  check_no_rollout_in_flight("generate_validation");
  VERL_CHECK_AS(DataError, bs > 0, "generate_validation: the prompt batch is empty");
  ++validation_count_;
  DataProto batch = prompts;
  DataProto::Column uid;
  for (int64_t i = 0; i < bs; ++i) uid.emplace_back("val" + std::to_string(validation_count_) + "-" + std::to_string(i));
  batch.set_column("uid", std::move(uid));
  DataProto gen_batch = pop_generation_input(batch);
  const int64_t seed = settings_.rollout_seed + 2 * kValidationSeedOffset + validation_count_ * kStepSeedStride;
  DataProto out = generate(gen_batch.repeat(settings_.val_n, true), "validation", seed);
  batch = batch.repeat(settings_.val_n, true);
  batch.union_with(out);
  batch.meta_info()["validate"] = true;
  RewardOutput r = call_reward(batch);
  batch.set_tensor("token_level_scores", r.token_level_scores);
  // verl's name: which columns are the reward's extra info (the rollout may have added columns of its own).
  Json extra_keys = Json::array();
  for (auto& [key, column] : r.extra_info) {
    extra_keys.push_back(key);
    batch.set_column(key, std::move(column));
  }
  batch.meta_info()["reward_extra_keys"] = std::move(extra_keys);
  return batch;
}

}  // namespace verl::trainer
