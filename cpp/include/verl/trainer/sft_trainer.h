// Supervised fine-tuning (the warm start before RL): next-token cross-entropy on the tokens a loss mask
// selects (the assistant's reply), with verl 0.9.1's semantics (verl/trainer/sft_trainer.py,
// verl/workers/utils/losses.py sft_loss) and keys (sft_trainer.yaml: data.*, optim.*, model.*).
//
// Batches are DataProto with
//   input_ids       (bs, seq) integer  prompt + response tokens, padding anywhere attention_mask is 0
//   attention_mask  (bs, seq)          nonzero for real tokens (every row has at least one)
//   loss_mask       (bs, seq)          nonzero where the token is a training target, predicted from the real
//                                      token before it in its row (a row's first real token is never a target)
// The loss of a step is -sum(log p(target)) / (number of targets in the whole batch): token-mean over the
// global batch whatever the micro-batching, as verl's sft_loss with batch_num_tokens. Used by
// python/verl/trainer/sft_trainer.py (datasets, loop, checkpoints) through verl._C.trainer.SFTTrainer.
//
// The step runs on the training engine every role shares (workers/train_engine.h: mixed precision, ZeRO-3 / HSDP,
// the optimizer and schedule); set_data_parallel() spreads it over data-parallel ranks (torchrun), each rank taking
// its share of every batch, with the loss, the gradients and the metrics of the one-process step.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/data/data_proto.h"
#include "verl/model/transformer.h"
#include "verl/workers/lora.h"
#include "verl/workers/mixed_precision.h"
#include "verl/workers/optim.h"

namespace verl::dist {
class Communicator;
}  // namespace verl::dist

namespace verl::workers {
class TrainEngine;  // verl/workers/train_engine.h
}  // namespace verl::workers

namespace verl::trainer {

struct VERL_API SFTConfig {
  int64_t micro_batch_size_per_gpu = 4;   // data.micro_batch_size_per_gpu
  bool use_dynamic_bsz = true;            // data.use_dynamic_bsz
  int64_t max_token_len_per_gpu = 8192;   // data.max_token_len_per_gpu
  bool use_remove_padding = true;         // model.use_remove_padding
  bool enable_gradient_checkpointing = true;  // model.enable_gradient_checkpointing
  // engine.dtype: the compute dtype of every forward and backward (verl/workers/mixed_precision.h; `auto`: bf16 where
  // the device multiplies bf16 natively, else fp32), the model's own dtype (model.dtype) holding the master weights
  // and the optimizer state.
  std::string dtype = "auto";
  bool reshard_after_forward = true;      // engine.reshard_after_forward (ZeRO-3 over several ranks)
  bool forward_prefetch = false;          // engine.forward_prefetch
  workers::OptimConfig optim;             // optim.*
  // model.lora_rank / lora_alpha / target_modules / exclude_modules / lora_adapter_path: adapters put on the model
  // before the engine is built (its optimizer then holds theirs alone); nullopt: full fine-tuning.
  std::optional<workers::LoraSettings> lora;
  uint64_t lora_seed = 0;                 // data.seed: the draw of new adapters' A matrices

  // Reads a Config::load_sft() tree. `total_training_steps` (the trainer's count: every batch of every
  // epoch, or trainer.total_training_steps) replaces optim.total_training_steps, as verl's SFT trainer
  // does; the cosine schedule and a warmup ratio need it. ConfigError naming the key for bad values.
  static SFTConfig from_config(const Config& config, std::optional<int64_t> total_training_steps = std::nullopt);
  void validate() const;
};

// The token-level cross-entropy summed over a batch's targets.
struct VERL_API SFTLossSum {
  double loss_sum = 0;     // -sum log p(target)
  int64_t num_tokens = 0;  // targets
  double mean() const { return num_tokens > 0 ? loss_sum / static_cast<double>(num_tokens) : 0.0; }
};

class VERL_API SFTTrainer {
 public:
  // Trains `model` in place (shared, not copied). Throws ConfigError for an invalid config.
  SFTTrainer(SFTConfig config, std::shared_ptr<model::CausalLM> model);
  ~SFTTrainer();

  // Data parallelism over `communicator`'s ranks (null or one rank: one process): ZeRO-3 (HSDP with `groups`), every
  // rank keeping 1/N of the weights and of the optimizer state. Every rank then calls train_step with the same global
  // batch and trains on its contiguous share of the rows (data.train_batch_size must divide over the ranks); the loss
  // is normalised by all ranks' targets and the returned metrics are the global batch's, as one process's. loss_sum
  // runs the whole batch on every rank. Before the first step, with the same weights on every rank.
  void set_data_parallel(std::shared_ptr<dist::Communicator> communicator, const workers::ShardGroups& groups = {});

  // One optimizer step over the whole batch (micro-batched by micro_batch_size_per_gpu rows or by the
  // max_token_len_per_gpu budget, gradients accumulated), then one scheduler step. Returns verl's
  // metrics: train/loss (token-mean), train/grad_norm (before clipping), train/lr (as verl: the rate after
  // the scheduler step, i.e. the one the next step uses), train/global_tokens (real tokens in the batch).
  // DataError for a missing tensor, inconsistent shapes, non-integer or out-of-vocabulary ids, a row
  // without real tokens or longer than max_token_len_per_gpu (dynamic batching), or a batch without
  // targets; the model, its gradients and the optimizer are left untouched then. A non-finite gradient
  // norm skips the update (verl's behaviour) and is reported as train/grad_norm.
  std::map<std::string, double> train_step(const DataProto& batch);

  // The loss of a batch under the current weights, without gradients (validation): sums, so callers
  // aggregate several batches into one token-mean. A batch without targets gives {0, 0}; other bad
  // batches throw DataError as train_step does.
  SFTLossSum loss_sum(const DataProto& batch);

  workers::Optimizer& optimizer();
  // The training engine the step runs on: checkpoints (save_checkpoint / load_checkpoint), weight bytes, sharding.
  workers::TrainEngine& engine() { return *engine_; }
  const SFTConfig& config() const { return config_; }
  std::shared_ptr<model::CausalLM> model() const { return model_; }
  int64_t global_step() const { return global_step_; }
  void set_global_step(int64_t step) { global_step_ = step; }

 private:
  SFTConfig config_;
  std::shared_ptr<model::CausalLM> model_;
  std::unique_ptr<workers::TrainEngine> engine_;
  int64_t global_step_ = 0;
};

}  // namespace verl::trainer
