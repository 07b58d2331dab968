// The training optimizer of the actor and critic workers: AdamW, gradient clipping by global norm,
// and verl's learning-rate schedules (linear warmup, then constant or cosine), with verl 0.9.1's
// keys (actor_rollout_ref.actor.optim.*, critic.optim.*) and formulas
// (verl/utils/torch_functional.py, verl/workers/engine/fsdp/transformer_impl.py).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/core/config.h"
#include "verl/core/export.h"

namespace verl::dist {
class Communicator;
}  // namespace verl::dist

namespace verl::workers {
namespace detail {
class ParameterSharding;
}  // namespace detail

// verl's FSDPOptimizerConfig.
struct VERL_API OptimConfig {
  std::string optimizer = "AdamW";  // only AdamW (torch.optim) is implemented
  double lr = 1e-6;
  double weight_decay = 0.01;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;     // torch.optim.AdamW's default; settable through override_optimizer_config
  bool amsgrad = false;  // override_optimizer_config
  double clip_grad = 1.0;
  int64_t lr_warmup_steps = -1;  // <= 0: use lr_warmup_steps_ratio * total_training_steps
  double lr_warmup_steps_ratio = 0.0;
  int64_t total_training_steps = -1;  // set by the trainer; required by "cosine" and by a warmup ratio
  std::string lr_scheduler_type = "constant";  // "constant" | "cosine" (warmup_style is the old name)
  double min_lr_ratio = 0.0;
  double num_cycles = 0.5;
  bool zero_indexed_step = true;

  // Reads `prefix` (e.g. "actor_rollout_ref.actor.optim"). ConfigError naming the key for values
  // verl rejects (an unknown scheduler or optimizer, min_lr_ratio outside [0, 1], unknown
  // override_optimizer_config keys).
  static OptimConfig from_config(const Config& config, const std::string& prefix);
  // ConfigError (keys under `prefix`) for inconsistent values; called by Optimizer.
  void validate(const std::string& prefix = "optim") const;
  // verl: lr_warmup_steps if > 0, else int(lr_warmup_steps_ratio * total_training_steps).
  int64_t num_warmup_steps() const;
};

// The LR multipliers of verl's schedules at scheduler step `step` (LambdaLR's last_epoch).
// constant: step / max(1, warmup) during warmup, then 1.
VERL_API double constant_schedule_with_warmup(int64_t step, int64_t num_warmup_steps);
// cosine: (step+1 when !zero_indexed_step) linear warmup from 0, then
// max(min_lr_ratio, cos(pi * num_cycles * 2 * progress) * (1 - min_lr_ratio) / 2 + (1 + min_lr_ratio) / 2)
// with progress = (step - warmup) / max(1, total - warmup).
VERL_API double cosine_schedule_with_warmup(int64_t step, int64_t num_warmup_steps, int64_t num_training_steps,
                                            double min_lr_ratio, double num_cycles, bool zero_indexed_step = true);

// AdamW's moments (torch's AdamWParamState): a tensor per parameter (the one-process layout), or a sharded
// optimizer's slice (one flat tensor each). Empty before the first step.
struct VERL_API AdamWMoments {
  int64_t step = 0;  // every parameter's (one optimizer steps them together)
  std::vector<torch::Tensor> exp_avg, exp_avg_sq;
  std::vector<torch::Tensor> max_exp_avg_sq;  // amsgrad only
  bool empty() const { return exp_avg.empty(); }
};

// AdamW + clipping + schedule for one set of parameters. The LR follows torch's LambdaLR: the
// first optimizer step runs at lr * factor(0) and each scheduler_step() advances one step.
class VERL_API Optimizer {
 public:
  // Throws ConfigError (naming `key_prefix` keys) for an invalid config.
  Optimizer(std::vector<torch::Tensor> parameters, OptimConfig config, std::string key_prefix = "optim");
  ~Optimizer();
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;

  // ZeRO stage 2 over the data-parallel ranks of `communicator` (verl's FSDP keeps the optimizer sharded): this rank
  // then holds the AdamW state of 1/N of the weights only; step() averages the gradients over the ranks into that
  // slice (reduce-scatter), clips by the norm of the whole gradient, updates the slice and all-gathers the weights
  // into every rank's parameters, so each rank ends with the weights one process would have. Every rank must call
  // step() and save() together. Call before the first step(); a world of one changes nothing. (The PPO workers shard
  // the weights too, ZeRO-3, through the overload below; this one serves a model every rank keeps whole.)
  void shard_over(std::shared_ptr<dist::Communicator> communicator);
  // ZeRO-3: the parameters themselves are sharded (a FullyShardedModel over this optimizer's parameters, in their
  // order); the AdamW updates this rank's master shards. Call before the first step.
  void shard_over(std::shared_ptr<detail::ParameterSharding> sharding);
  bool sharded() const { return shard_ != nullptr; }
  // Bytes of AdamW state (moments) this rank holds.
  int64_t state_bytes() const;

  void zero_grad();
  // Clips every gradient by the global L2 norm (torch.nn.utils.clip_grad_norm_ with max_norm =
  // clip_grad), then steps AdamW. A non-finite norm skips the update and drops the gradients, as
  // verl does. Returns the norm before clipping (NaN/Inf when skipped).
  double step();
  // Advances the schedule one step and returns the new learning rate.
  double scheduler_step();

  double lr() const;                             // the learning rate the next step() uses
  double lr_factor(int64_t step) const;          // the schedule's multiplier at a scheduler step
  int64_t scheduler_step_count() const { return last_epoch_; }
  // Restores the schedule position (resume); sets the LR accordingly.
  void set_scheduler_step_count(int64_t last_epoch);
  int64_t skipped_steps() const { return skipped_steps_; }  // updates skipped for a non-finite norm

  // Checkpoint of the AdamW state (moments, step counts) and the schedule position, as a torch
  // archive written to a temporary file and renamed. load() needs an optimizer over the same
  // parameter shapes; CheckpointError naming the file otherwise. A sharded optimizer writes the same one-process
  // file (rank 0 writes what every rank's slice gathers to; every rank calls save) and loads its slice of it, so a
  // checkpoint loads at any number of ranks.
  void save(const std::string& path) const;
  void load(const std::string& path);
  // The moments in the one-process layout, a tensor per parameter (a sharded optimizer keeps its slice of them);
  // CheckpointError naming `source` when they do not fit the parameters. Empty moments: not stepped yet.
  void load_moments(const AdamWMoments& whole, const std::string& source);
  // A sharded optimizer's own slice of the moments, as it holds them (per-rank checkpoint files), and its inverse:
  // the slice of the same layout, CheckpointError naming `source` when its size differs.
  AdamWMoments shard_moments() const;
  void load_shard_moments(const AdamWMoments& slice, const std::string& source);
  void set_skipped_steps(int64_t count);
  const OptimConfig& config() const { return config_; }
  torch::optim::AdamW& adamw() { return *adamw_; }
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }

 private:
  void apply_lr();
  double local_step();    // one process
  double sharded_step();  // ZeRO-2 (OptimizerShard) or ZeRO-3 (FullyShardedModel)

  OptimConfig config_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<torch::optim::AdamW> adamw_;
  int64_t num_warmup_steps_ = 0;
  int64_t last_epoch_ = 0;
  int64_t skipped_steps_ = 0;
  std::shared_ptr<detail::ParameterSharding> shard_;
};

// torch.nn.utils.clip_grad_norm_(parameters, max_norm) (foreach-free, any device): returns the
// total L2 norm of the gradients (a 0-dim tensor, not synchronised) and scales them in place by
// min(1, max_norm / (norm + 1e-6)). Parameters without a gradient are ignored.
VERL_API torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm);

}  // namespace verl::workers
