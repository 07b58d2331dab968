// The critic worker: values of the response tokens and the clipped value-loss update, with verl
// 0.9.1's semantics (TrainingWorker + verl/workers/utils/losses.py value_loss) and config keys
// (critic.*).
//
// Batches are DataProto with
//   input_ids, attention_mask, position_ids (bs, prompt_length + response_length)  (position_ids optional)
//   responses                         (bs, response_length)
// and for update_critic also
//   response_mask, values (old values), returns (bs, response_length)
#pragma once

#include <map>
#include <memory>
#include <utility>
#include <optional>
#include <string>

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

struct VERL_API CriticConfig {
  int64_t ppo_mini_batch_size = 256;  // prompts; rows per mini-batch = ppo_mini_batch_size * rollout_n
  int64_t rollout_n = 1;              // critic.rollout_n (actor_rollout_ref.rollout.n)
  std::optional<int64_t> ppo_micro_batch_size_per_gpu;
  bool use_dynamic_bsz = false;
  int64_t ppo_max_token_len_per_gpu = 32768;
  std::optional<int64_t> forward_micro_batch_size_per_gpu;  // compute_values
  int64_t forward_max_token_len_per_gpu = 32768;
  int64_t ppo_epochs = 1;
  bool shuffle = false;
  int64_t data_loader_seed = 42;
  double cliprange_value = 0.5;
  std::string loss_agg_mode = "token-mean";
  std::optional<double> loss_scale_factor;
  OptimConfig optim;
  // critic.fsdp.dtype: the compute dtype of the value passes and the update; the model's own dtype holds the
  // master weights and the optimizer state (verl/workers/mixed_precision.h). float32: no mixed precision. The
  // default is ppo_trainer.yaml's.
  std::string dtype = config_default("critic.fsdp.dtype").get<std::string>();
  bool reshard_after_forward = true;  // critic.fsdp.reshard_after_forward (ZeRO-3, as the actor's)
  bool forward_prefetch = false;       // critic.fsdp.forward_prefetch (as the actor's)
  bool use_remove_padding = true;  // critic.model.use_remove_padding
  bool enable_gradient_checkpointing = false;

  // Reads the `critic` block of a verl config and validates (ConfigError naming the key).
  static CriticConfig from_config(const Config& config, const std::string& prefix = "critic");
  void validate() const;
};

class TrainEngine;  // verl/workers/train_engine.h

class VERL_API CriticWorker {
 public:
  // `model` must have the value head (HeadKind::kValue); shared, trained in place.
  CriticWorker(const Config& config, std::shared_ptr<model::CausalLM> model);
  CriticWorker(CriticConfig config, std::shared_ptr<model::CausalLM> model);
  ~CriticWorker();

  // DataProto{values (bs, response_length)}: the value of the state before each response token
  // (verl's values[:, -response_length-1:-1]), 0 at padding. No gradient; micro-batched by
  // forward_micro_batch_size_per_gpu or forward_max_token_len_per_gpu, results in input order.
  DataProto compute_values(const DataProto& data);

  // ppo_epochs x mini-batches x micro-batches of verl's clipped value loss (cliprange_value,
  // loss_agg_mode, normalised by the mini-batch), one clipped AdamW step per mini-batch, one
  // scheduler step per call. Metrics: critic/vf_loss, critic/vf_clipfrac, critic/vpred_mean,
  // critic/loss, critic/grad_norm, critic/lr, critic/mfu (mean over mini-batches, as actor/mfu).
  std::map<std::string, double> update_critic(const DataProto& data);

  // Data parallelism over the communicator's ranks (null: one process, the default): update_critic() then takes this
  // rank's rows as its share of every mini-batch (ppo_mini_batch_size stays global, as in verl), normalises the
  // loss by all ranks' tokens and sequences, and the model is sharded over the ranks (ZeRO-3, verl's FSDP FULL_SHARD:
  // MixedPrecision::shard_over): each rank keeps 1/N of the weights and of the AdamW state, gathers each layer's
  // weights in the compute dtype as it runs, and reduce-scatters the gradients into its shards. Every rank must then
  // run the same passes with the same number of micro-batches. The model's weights are read and written through
  // precision() from then on (the sharding's full_state / load_full_state). Before the first update, with the same
  // weights on every rank.
  void set_data_parallel(std::shared_ptr<dist::Communicator> communicator, const ShardGroups& groups = {});

  // This worker's methods on `group`, each with its dispatch mode (verl's @register): compute_values (rows padded to
  // the ranks) and update_critic (rows split; metrics back) for role "critic", compute_cost_values and
  // update_cost_critic for role "cost_critic" (Safe-RLHF's). Every rank registers them before the first call.
  void register_methods(dist::WorkerGroup& group, const std::string& role);

  const CriticConfig& config() const { return config_; }
  std::shared_ptr<model::CausalLM> model() const { return model_; }
  // The model the passes run on: model() in the compute dtype (model() itself when nothing is mixed).
  std::shared_ptr<model::CausalLM> compute_model();
  MixedPrecision& precision();
  Optimizer& optimizer();
  // The training engine the passes and the update run on (workers/train_engine.h).
  TrainEngine& engine();

 private:
  CriticConfig config_;
  std::shared_ptr<model::CausalLM> model_;
  std::unique_ptr<TrainEngine> engine_;
};

}  // namespace verl::workers
