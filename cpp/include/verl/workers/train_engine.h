// The training engine under every role (verl's BaseEngine: train_batch / infer_batch / checkpoints): one model's
// master weights, its compute copy in the compute dtype (workers/mixed_precision.h), the optimizer and LR schedule,
// ZeRO-3 / HSDP sharding over the data-parallel ranks, gradient checkpointing and the micro-batching that keeps every
// rank's collectives in step. The actor, the critic, the reference policy, the SFT and the DPO trainers each hold
// one and hand it their loss as a function of a micro-batch; none of them runs its own backward, accumulation or
// optimizer step. It is the seam where LoRA, expert and sequence parallelism and offload plug in
// (docs/architecture.md, "The training engine").
//
// The engine knows nothing of batches' keys: a role cuts its batch into micro-batches (micro_batches()), and for
// each index the engine asks the role's loss function for the micro-batch's loss, already normalised by the global
// batch (all ranks' tokens or rows) -- gradients then add up over micro-batches and average over the ranks to the
// gradient one process would take on the whole batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/model/transformer.h"
#include "verl/workers/micro_batch.h"
#include "verl/workers/data_parallel.h"
#include "verl/workers/mixed_precision.h"
#include "verl/workers/optim.h"

namespace verl::dist {
class WorkerGroup;  // verl/dist/worker_group.h
}  // namespace verl::dist

namespace verl::workers {

// What a role builds its engine from: the keys of its config block.
struct TrainEngineOptions {
  // fsdp_config.dtype (the compute dtype's name, `auto` resolved on the model's device) and its key, for errors.
  std::string dtype = "fp32";
  std::string dtype_key;
  // the model's own dtype key (fsdp_config.model_dtype): a trained 16-bit master logs a warning naming it.
  std::string model_dtype_key;
  // null: the engine only infers (the reference policy); no optimizer, no gradients.
  std::optional<OptimConfig> optim;
  std::string optim_key;  // the optimizer block ("actor_rollout_ref.actor.optim"), for errors
  GatherPolicy gather;    // fsdp_config.reshard_after_forward / forward_prefetch
  bool enable_gradient_checkpointing = false;
};

// How a role cuts its rows into micro-batches: a fixed number of rows, or (dynamic) a token budget.
struct MicroBatching {
  bool dynamic = false;
  int64_t rows = 1;          // rows per micro-batch when not dynamic
  int64_t max_tokens = 1;    // token budget per micro-batch when dynamic
};

class VERL_API TrainEngine {
 public:
  // The loss of micro-batch `index`, run on `model` (the compute model), normalised by the global batch; an undefined
  // tensor contributes nothing (and runs no backward).
  using LossFn = std::function<torch::Tensor(model::CausalLM& model, size_t index)>;

  // Shares `model` (its weights are the master weights, trained in place).
  TrainEngine(std::shared_ptr<model::CausalLM> model, TrainEngineOptions options);

  // Data parallelism over `communicator`'s ranks (null or a world of one: nothing changes): ZeRO-3, the model's
  // weights and the optimizer state become this rank's 1/N shards (HSDP: `groups`), gathered unit by unit in the
  // compute dtype as passes run. `generation_tp` > 1 lays the shards out for a tensor-parallel rollout of that size.
  // Before the first step, with the same weights on every rank. Every rank then runs the same passes.
  void shard_over(std::shared_ptr<dist::Communicator> communicator, int64_t generation_tp = 1,
                  const ShardGroups& groups = {});
  // The ranks the engine's batches are spread over (the one-process identity before shard_over).
  const detail::DataParallel& data_parallel() const { return dp_; }
  const std::shared_ptr<dist::Communicator>& communicator() const { return communicator_; }
  int64_t rank() const { return communicator_ ? communicator_->rank() : 0; }

  // Rows [0, seq_lens.size()) cut as `how` says; dynamic cuts have the same count on every rank (each sharded
  // forward is a collective), the most any rank needs.
  RowGroups micro_batches(const std::vector<int64_t>& seq_lens, const MicroBatching& how) const;

  // One optimizer step: gradients zeroed, then for each of `num_micro` micro-batches loss_fn's loss backward (times
  // the fp16 loss scale) and its gradients added to the master gradients, then the clipped optimizer step (sharded:
  // gradients averaged over the ranks first), the loss scale moved and the compute copy refreshed. Returns the
  // gradient norm before clipping (non-finite: the step was skipped). No scheduler step (scheduler_step()).
  double train_batch(size_t num_micro, const LossFn& loss_fn);
  // `num_micro` passes without gradients, fn(model, index) each; the sharded units gathered for them are freed after.
  void infer_batch(size_t num_micro, const std::function<void(model::CausalLM& model, size_t index)>& fn);
  // One LR scheduler step; returns the rate the next step uses.
  double scheduler_step();

  // The model's master weights (this rank's shards once sharded) and the model passes run on.
  const std::shared_ptr<model::CausalLM>& model() const { return model_; }
  const std::shared_ptr<model::CausalLM>& compute_model() { return precision_->compute(); }
  MixedPrecision& precision() { return *precision_; }
  bool trainable() const { return optimizer_ != nullptr; }
  Optimizer& optimizer();  // InvalidArgument for an engine that only infers
  bool sharded() const { return precision_->sharding() != nullptr; }

  // This rank's master weight and optimizer state bytes (1/N of the one-process numbers under ZeRO-3).
  int64_t weight_bytes() const;
  int64_t optimizer_state_bytes() const;

  // Checkpoints, every rank calling (no collective): sharded, this rank's model and optimizer shard files in `dir`
  // (workers/sharded_checkpoint.h), plus config.json and the tokenizer files from the shard group's rank 0; one
  // process, the optimizer and scheduler state in `dir`/optim.pt (the weights are the caller's Hugging Face files).
  void save_checkpoint(const std::filesystem::path& dir, const std::optional<std::string>& tokenizer_dir);
  // The weights and optimizer state of `dir`: per-rank shard files (at any layout), or a Hugging Face directory with
  // optim.pt, every rank keeping its own shards. CheckpointError naming the file when one is missing or bad.
  void load_checkpoint(const std::filesystem::path& dir);
  // The whole weights in the master dtype, as a new model on every rank (sharded: a collective).
  std::shared_ptr<model::CausalLM> gather_model();

  // The engine's collective checkpoint methods on `group`, broadcast to every rank (verl's ONE_TO_ALL), named
  // "<role>.save_optimizer" (meta_info path), "<role>.save_checkpoint" (dir, tokenizer_dir) and
  // "<role>.gather_model", whose whole model the controller then takes with take_gathered_model().
  void register_methods(dist::WorkerGroup& group, const std::string& role);
  // The controller's result of the last "<role>.gather_model" call (null after it was taken).
  std::shared_ptr<model::CausalLM> take_gathered_model();
  // The whole weights `state` (load_state_dict's names and checks, strict): every rank keeps its shards.
  void load_full_state(const std::map<std::string, torch::Tensor>& state);

 private:
  std::shared_ptr<model::CausalLM> model_;
  std::shared_ptr<model::CausalLM> gathered_;  // the controller's last "<role>.gather_model" result
  TrainEngineOptions options_;
  std::unique_ptr<MixedPrecision> precision_;
  std::unique_ptr<Optimizer> optimizer_;
  std::shared_ptr<dist::Communicator> communicator_;
  detail::DataParallel dp_;
};

}  // namespace verl::workers
