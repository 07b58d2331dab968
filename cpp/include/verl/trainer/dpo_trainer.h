// Direct Preference Optimization: the policy learns from pairs (prompt, chosen, rejected) against a frozen reference
// model, with TRL's losses (`sigmoid`, `ipo`, `hinge`: verl/algo/dpo_loss.h), parameters (beta, label_smoothing,
// loss_type) and metric names, on the SFT trainer's step machinery (config keys, packed forward, micro-batching,
// AdamW and schedule). Used by python/verl/trainer/dpo_trainer.py through verl._C.trainer.DPOTrainer.
//
// Batches are DataProto with the SFT layout (sft_trainer.h), 2 * num_pairs rows: row 2i is pair i's chosen sequence,
// row 2i + 1 its rejected one, each prompt + completion with loss_mask on the completion tokens. Padding is
// removed before the forward (model.use_remove_padding) as in SFT. A sequence's log-prob is the sum of
// log p(token) over its loss_mask targets. Micro-batches hold whole pairs: data.micro_batch_size_per_gpu pairs,
// or pairs whose two sequences together fit data.max_token_len_per_gpu tokens (data.use_dynamic_bsz).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <torch/types.h>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/data/data_proto.h"
#include "verl/model/transformer.h"
#include "verl/trainer/sft_trainer.h"
#include "verl/workers/optim.h"

namespace verl::trainer {

struct VERL_API DPOConfig {
  SFTConfig step;                     // data.* / model.* / optim.* of the SFT tree (micro-batches count pairs)
  double beta = 0.1;                  // dpo.beta (TRL's default)
  double label_smoothing = 0.0;       // dpo.label_smoothing (sigmoid only)
  std::string loss_type = "sigmoid";  // dpo.loss_type: sigmoid | ipo | hinge

  // The SFT tree (Config::load_sft) for the step keys, and the DPO parameters. ConfigError naming the key.
  static DPOConfig from_config(const Config& config, double beta, double label_smoothing, const std::string& loss_type,
                               std::optional<int64_t> total_training_steps = std::nullopt);
  void validate() const;
};

// Sums over pairs of TRL's DPO metrics; means() divides them by num_pairs.
struct VERL_API DPOMetricSums {
  double loss = 0, chosen_rewards = 0, rejected_rewards = 0, accuracies = 0, margins = 0, chosen_logps = 0,
         rejected_logps = 0;
  int64_t num_pairs = 0;
  // loss, rewards/chosen, rewards/rejected, rewards/accuracies (chosen reward > rejected reward), rewards/margins,
  // logps/chosen, logps/rejected: means over the pairs (0 without pairs).
  std::map<std::string, double> means() const;
  DPOMetricSums& operator+=(const DPOMetricSums& other);
};

class VERL_API DPOTrainer {
 public:
  // Trains `policy` in place (shared, not copied). `reference`: the frozen reference model (its parameters stop
  // requiring gradients); nullptr = a copy of the policy's weights now (TRL's default). It must have the
  // policy's vocabulary, device and the LM head. ConfigError for an invalid config.
  DPOTrainer(DPOConfig config, std::shared_ptr<model::CausalLM> policy,
             std::shared_ptr<model::CausalLM> reference = nullptr);
  ~DPOTrainer();

  // Data parallelism over `communicator`'s ranks, as SFTTrainer::set_data_parallel: the policy ZeRO-3 sharded (HSDP
  // with `groups`), every rank training on its contiguous share of the pairs, metrics those of the global batch. The
  // frozen reference stays whole on every rank (it only runs forwards on the rank's own pairs).
  void set_data_parallel(std::shared_ptr<dist::Communicator> communicator, const workers::ShardGroups& groups = {});

  // One optimizer + scheduler step over the batch: the reference log-probs of every sequence once (no gradients),
  // then per micro-batch the policy's and the loss (mean over the batch's pairs), gradients accumulated, clipped
  // (optim.clip_grad), AdamW. Returns the DPOMetricSums means plus grad_norm (before clipping) and learning_rate
  // (the rate after the scheduler step, as the SFT trainer's train/lr). DataError for a bad batch (the SFT
  // trainer's checks: tensors, shapes, token ids, empty rows), an odd number of rows, a sequence without a
  // completion token, or a pair longer than the token budget; nothing changes then.
  std::map<std::string, double> train_step(const DataProto& batch);

  // The metric sums of a batch under the current weights, without gradients (evaluation). DataError as train_step.
  DPOMetricSums evaluate(const DataProto& batch);

  // (2 * num_pairs,) float64: each sequence's summed completion log-prob under the policy (or the reference),
  // without gradients. DataError as train_step.
  torch::Tensor sequence_log_probs(const DataProto& batch, bool reference = false);

  workers::Optimizer& optimizer();
  // The policy's training engine: checkpoints (save_checkpoint / load_checkpoint), weight bytes, sharding.
  workers::TrainEngine& engine() { return *engine_; }
  const DPOConfig& config() const { return config_; }
  std::shared_ptr<model::CausalLM> model() const { return policy_; }
  // The separate reference model; null with LoRA and no reference given (the policy's base, adapters disabled).
  std::shared_ptr<model::CausalLM> reference() const { return reference_; }
  int64_t global_step() const { return global_step_; }
  void set_global_step(int64_t step) { global_step_ = step; }

 private:
  std::unique_ptr<workers::TrainEngine> make_reference_engine() const;
  // Forward passes of the reference: its own engine, or the policy's engine with the adapters disabled.
  void reference_passes(size_t count, const std::function<void(model::CausalLM&, size_t)>& pass);

  DPOConfig config_;
  std::shared_ptr<model::CausalLM> policy_;
  std::shared_ptr<model::CausalLM> reference_;
  std::unique_ptr<workers::TrainEngine> engine_;            // the policy's
  std::unique_ptr<workers::TrainEngine> reference_engine_;  // the reference's: forwards only (null: see reference())
  int64_t global_step_ = 0;
};

}  // namespace verl::trainer
