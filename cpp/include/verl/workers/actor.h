// The actor worker (and the reference policy): log-prob passes and the PPO-family policy update,
// with verl 0.9.1's semantics (verl/workers/engine_workers.py TrainingWorker, the FSDP engine's
// forward_backward_batch / optimizer_step, verl/workers/utils/losses.py ppo_loss) and its config
// keys (actor_rollout_ref.actor.*, .rollout.log_prob_*, .ref.log_prob_*, .model.*).
//
// Batches are DataProto with
//   input_ids, attention_mask, position_ids (bs, prompt_length + response_length)  (position_ids optional)
//   responses                         (bs, response_length)  int64
// and for update_policy also
//   response_mask, old_log_probs, advantages (bs, response_length)
//   ref_log_prob (when use_kl_loss), rollout_is_weights (optional; passed to the policy loss)
#pragma once

#include <map>
#include <memory>
#include <utility>
#include <optional>
#include <string>

#include "verl/algo/policy_loss.h"
#include "verl/core/config.h"
#include "verl/core/config_default.h"
#include "verl/core/export.h"
#include "verl/data/data_proto.h"
#include "verl/model/transformer.h"
#include "verl/workers/mixed_precision.h"
#include "verl/workers/optim.h"

namespace verl::dist {
class Communicator;
class WorkerGroup;  // verl/dist/worker_group.h
}  // namespace verl::dist

namespace verl::workers {

class TrainEngine;  // verl/workers/train_engine.h

using Metrics = std::map<std::string, double>;

// Which config block a log-prob pass reads its micro-batching from.
enum class PolicyRole {
  kActor,      // actor_rollout_ref.rollout.log_prob_* ; trains with actor_rollout_ref.actor.*
  kReference,  // actor_rollout_ref.ref.log_prob_* ; frozen (update_policy is an error)
};

struct VERL_API ActorConfig {
  // actor_rollout_ref.actor
  int64_t ppo_mini_batch_size = 256;  // prompts; rows per mini-batch = ppo_mini_batch_size * rollout_n
  int64_t rollout_n = 1;              // actor_rollout_ref.rollout.n
  std::optional<int64_t> ppo_micro_batch_size_per_gpu;
  bool use_dynamic_bsz = false;
  int64_t ppo_max_token_len_per_gpu = 16384;
  int64_t ppo_epochs = 1;
  bool shuffle = false;
  int64_t data_loader_seed = 42;
  algo::PolicyLossConfig policy;  // clip ratios, loss_agg_mode, policy_loss.*
  std::optional<double> loss_scale_factor;
  double entropy_coeff = 0.0;
  bool calculate_entropy = false;
  bool use_kl_loss = false;
  double kl_loss_coef = 0.001;
  std::string kl_loss_type = "low_var_kl";
  OptimConfig optim;
  // log-prob passes (rollout.* for the actor, ref.* for the reference)
  std::optional<int64_t> log_prob_micro_batch_size_per_gpu;
  bool log_prob_use_dynamic_bsz = false;
  int64_t log_prob_max_token_len_per_gpu = 16384;
  double temperature = 1.0;  // actor_rollout_ref.rollout.temperature (meta_info["temperature"] wins)
  // actor_rollout_ref.actor.fsdp_config.dtype (the reference: ref.fsdp_config.dtype): the compute dtype of
  // every forward and backward; the model's own dtype (fsdp_config.model_dtype) holds the master weights and
  // the optimizer state (verl/workers/mixed_precision.h). float32 turns mixed precision off. The default is
  // ppo_trainer.yaml's.
  std::string dtype = config_default("actor_rollout_ref.actor.fsdp_config.dtype").get<std::string>();
  // actor_rollout_ref.actor.fsdp_config.reshard_after_forward: over several data-parallel ranks (ZeRO-3), free each
  // decoder layer's gathered weights after its forward (gathered again for its backward) or keep them until then.
  bool reshard_after_forward = true;
  // actor_rollout_ref.actor.fsdp_config.forward_prefetch: over several ranks, gather the next layer's weights while
  // this one runs (GatherPolicy).
  bool forward_prefetch = false;
  // actor_rollout_ref.model
  bool use_remove_padding = true;
  bool enable_gradient_checkpointing = false;

  // Reads `prefix` (default "actor_rollout_ref") of a verl config and validates. ConfigError naming
  // the key for: both or neither of ppo_micro_batch_size / _per_gpu without dynamic batching, an
  // unknown policy_loss.loss_mode, loss_agg_mode or kl_loss_type, out-of-range values.
  static ActorConfig from_config(const Config& config, PolicyRole role = PolicyRole::kActor,
                                 const std::string& prefix = "actor_rollout_ref");
  void validate(PolicyRole role = PolicyRole::kActor) const;
};

class VERL_API ActorWorker {
 public:
  // The worker shares `model` (no copy): it holds the master weights, which the actor trains in place;
  // passes run on a copy in the compute dtype (config.dtype) when that is narrower than the model's
  // (compute_model()). Gradient checkpointing is set from the config. The reference role builds no
  // optimizer. A trained bf16/fp16 model logs low_precision_master_warning to stderr.
  ActorWorker(const Config& config, std::shared_ptr<model::CausalLM> model, PolicyRole role = PolicyRole::kActor);
  ActorWorker(ActorConfig config, std::shared_ptr<model::CausalLM> model, PolicyRole role = PolicyRole::kActor);
  ~ActorWorker();

  // Log-probs of the responses under the current weights, no gradient: DataProto with
  // `old_log_probs` (bs, response_length) and, when calculate_entropy (or meta_info
  // "calculate_entropy"), `entropys`; when meta_info "calculate_sum_pi_squared" is true (verl's
  // batch flag from actor.calculate_sum_pi_squared), `sum_pi_squared`; meta_info {"temperature": T}. Micro-batched by
  // log_prob_micro_batch_size_per_gpu or the log_prob_max_token_len_per_gpu budget, results in input
  // order. Padding slots hold 0. meta_info["metrics"]["mfu"] is verl's forward-only MFU of the pass.
  DataProto compute_log_prob(const DataProto& data, std::optional<bool> calculate_entropy = std::nullopt);
  // Same pass, output key `ref_log_prob` (verl's compute_ref_log_prob). On the actor of a LoRA model, the pass runs
  // with the adapters disabled: the reference policy is the base model (verl's ref_in_actor), no second copy.
  DataProto compute_ref_log_prob(const DataProto& data);

  // ppo_epochs x mini-batches (ppo_mini_batch_size * rollout.n rows, verl's DataLoader order) x
  // micro-batches; each micro-batch's loss is normalised by the whole mini-batch (tokens /
  // sequences), so gradient accumulation equals one big batch. One clipped AdamW step per
  // mini-batch, one scheduler step per call. Returns verl's metrics: actor/pg_loss, actor/pg_clipfrac,
  // actor/ppo_kl, actor/pg_clipfrac_lower (per loss mode), actor/entropy_loss, actor/kl_loss,
  // actor/kl_coef, actor/loss, actor/grad_norm, actor/lr, and actor/mfu (the mean over mini-batches of
  // each one's model FLOPs utilisation, verl's train_batch "mfu"; see verl/model/flops_counter.h). ConfigError
  // when the batch does not split into mini-batches (or a mini-batch into micro-batches); DataError for missing keys.
  Metrics update_policy(const DataProto& data);
  // update_policy on a batch without old_log_probs, when the update is on-policy (one epoch of one mini-batch):
  // every micro-batch's forward then runs on the very weights the old-log-prob pass would run on, so its
  // log-probs, detached, serve as old_log_probs (the PPO ratio starts at exactly 1, as verl's on-policy update).
  // Returns old_log_probs and entropys (bs, response_length) in input order -- what compute_log_prob(data, true)
  // would return -- and update_policy's metrics. When old_log_prob_from_update_is_exact() holds, they and the update
  // are bitwise those of compute_log_prob followed by update_policy. DataError when the update is not on-policy
  // (ppo_epochs > 1, or more than one mini-batch) or the batch has old_log_probs.
  std::pair<DataProto, Metrics> update_policy_on_policy(const DataProto& data);
  // Whether update_policy_on_policy on a batch of `global_rows` rows (over all data-parallel ranks) gives bitwise
  // the numbers of compute_log_prob followed by update_policy: one epoch, one mini-batch of all rows, no shuffle,
  // and the update cuts its micro-batches exactly as the log-prob pass does (the same *_use_dynamic_bsz and the
  // same micro-batch size or token budget), so each micro-batch's forward is the pass's, on the same rows.
  bool old_log_prob_from_update_is_exact(int64_t global_rows) const;

  // Data parallelism over the communicator's ranks (null: one process, the default): update_policy() then takes this
  // rank's rows as its share of every mini-batch (ppo_mini_batch_size stays global, as in verl), normalises the
  // loss by all ranks' tokens and sequences, and the model is sharded over the ranks (ZeRO-3, verl's FSDP FULL_SHARD:
  // MixedPrecision::shard_over): each rank keeps 1/N of the weights and of the AdamW state, gathers each layer's
  // weights in the compute dtype as it runs, and reduce-scatters the gradients into its shards. Every rank must then
  // run the same passes with the same number of micro-batches. The model's weights are read and written through
  // precision() from then on (for_each_compute_state(), the sharding's full_state / load_full_state). Before the first
  // update, with the same weights on every rank. `generation_tp` > 1 lays the shards out for a tensor-parallel
  // rollout of that size (the 3D-HybridEngine, workers/fully_sharded.h).
  // `groups`: HSDP (verl's fsdp_size < N), the groups the weights are sharded over and replicated across.
  void set_data_parallel(std::shared_ptr<dist::Communicator> communicator, int64_t generation_tp = 1,
                         const ShardGroups& groups = {});

  // This worker's methods on `group`, each with its dispatch mode (verl's @register): the actor's compute_log_prob
  // (rows padded to the ranks), update_actor and update_actor_on_policy (rows split; metrics back); the reference's
  // compute_ref_log_prob -- also the actor's with `reference_in_actor` (a LoRA actor's base model is the reference).
  // Every rank registers them before the controller's first call.
  void register_methods(dist::WorkerGroup& group, bool reference_in_actor = false);

  const ActorConfig& config() const { return config_; }
  PolicyRole role() const { return role_; }
  std::shared_ptr<model::CausalLM> model() const { return model_; }
  // The model the passes run on, its weights those of model() in the compute dtype (model() itself when
  // nothing is mixed), refreshed if model() changed since. The rollout engine generates from it.
  std::shared_ptr<model::CausalLM> compute_model();
  MixedPrecision& precision();
  Optimizer& optimizer();  // InvalidArgument for the reference role
  // The training engine the passes and the update run on (workers/train_engine.h).
  TrainEngine& engine();

 private:
  DataProto log_prob_pass(const DataProto& data, bool calculate_entropy, const std::string& output_key,
                          bool calculate_sum_pi_squared = false);
  // update_policy; with `on_policy`, the batch has no old_log_probs and each micro-batch's forward gives them
  // (and the entropies), collected there in input order.
  struct OnPolicyLogProbs {
    torch::Tensor old_log_probs, entropys;
  };
  Metrics update(const DataProto& data, OnPolicyLogProbs* on_policy);

  ActorConfig config_;
  std::shared_ptr<model::CausalLM> model_;
  PolicyRole role_;
  algo::PolicyLossFn policy_loss_fn_;
  std::unique_ptr<TrainEngine> engine_;
};

}  // namespace verl::workers
