// verl's mixed precision for the training workers: master weights (and so the optimizer state) in the
// model's dtype (`fsdp_config.model_dtype`, fp32 by default), forward and backward in the compute dtype
// (`fsdp_config.dtype`, bfloat16 by default), gradients accumulated in the master dtype.
//
// verl 0.9.1's FSDP engine does this with MixedPrecision(param_dtype=bf16, reduce_dtype=fp32,
// buffer_dtype=fp32) plus torch.autocast(param_dtype) around each forward (fp16 adds a
// ShardedGradScaler(growth_interval=400)); a compute dtype of fp32 turns autocast off. verl-cpp keeps a
// compute-dtype copy of the model instead of autocasting: the copy is refreshed from the master weights
// after each optimizer step, every micro-batch's gradient is added (in the master dtype) to the master
// gradients, and the rollout engine generates from the very same copy, so the rollout log-probs and the
// trainer's recomputation come from the same weights and kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/dist/device_mesh.h"
#include "verl/model/transformer.h"

namespace verl::dist {
class Communicator;
}  // namespace verl::dist

namespace verl::workers {
namespace detail {
class FullyShardedModel;
}  // namespace detail

// The compute dtype a `fsdp_config.dtype` value names -- bfloat16 / bf16, float16 / fp16, float32 / fp32 (verl's
// PrecisionType names, any case) -- or nullopt for `auto`, which only a device resolves (resolve_compute_dtype).
// ConfigError naming `key` for anything else. Needs no device and prints nothing: config validation uses it.
VERL_API std::optional<torch::Dtype> parse_compute_dtype(const std::string& name, const std::string& key);
// The compute dtype for a model on `device`: the dtype `name` names, or for `auto` (verl-cpp's default) bfloat16 --
// verl's default -- where bf16 matrix products run natively (accelerators; CPUs with bf16 matrix instructions, see
// cpu_has_native_bf16_matmul) and float32 on other CPUs, where they are emulated (a GRPO step 7.9x slower in bf16
// on an AVX2 EPYC: benchmarks/RESULTS.md), with a note on stderr once per process. Errors as parse_compute_dtype.
VERL_API torch::Dtype resolve_compute_dtype(const std::string& name, const std::string& key, const torch::Device& device);

// Whether this CPU multiplies bf16 matrices in hardware (x86: AVX512-BF16 or AMX-BF16, with the OS saving the
// registers). Deterministic (CPUID), so `auto` resolves the same way in every run on a machine -- unless the
// environment variable VERL_CPU_BF16 is 1 or 0, which answers instead (tests force both resolutions of `auto`);
// another value is a ConfigError naming it.
VERL_API bool cpu_has_native_bf16_matmul();

// The dtype a model of dtype `model_dtype` computes in under compute dtype `compute`: `compute` when it is a
// 16-bit float narrower than the model (mixed precision), else the model's own dtype (fp32 = no mixed
// precision, as verl skips autocast for fp32; a bf16/fp16 model computes in its own dtype).
VERL_API torch::Dtype effective_compute_dtype(torch::Dtype model_dtype, torch::Dtype compute);

// The warning for a trained model whose master weights are 16-bit (empty when they are not): AdamW then
// updates the 16-bit weights in place, and an update smaller than half a unit in the last place of a weight
// (lr 1e-6 against bf16's 2^-8 relative spacing) rounds away.
VERL_API std::string low_precision_master_warning(torch::Dtype model_dtype, const std::string& model_dtype_key);

// verl's fsdp_size < N (HSDP): the model's shard and replica groups (verl/dist/device_mesh.h).
using ShardGroups = dist::ShardGroups;

// When ZeRO-3 gathers a unit's weights (fsdp_config's switches, as FSDP's): memory and speed only, never the results.
struct VERL_API GatherPolicy {
  // fsdp_config.reshard_after_forward: free a decoder layer's gathered weights after its forward (gathered again for
  // its backward) rather than keeping them until its backward.
  bool reshard_after_forward = true;
  // fsdp_config.forward_prefetch: start the next layer's all-gather before this layer's forward runs, so the two
  // overlap (one more layer's weights gathered at a time). The backward always prefetches the layer before
  // (FSDP's default BACKWARD_PRE).
  bool forward_prefetch = false;
};

// Where a hand-over writes a gathered weight: (HF name, shape, dtype) -> a contiguous tensor of that shape and dtype to
// fill in place (the rollout engine's own weight), or an undefined tensor for a fresh one.
using UnpackTarget = std::function<torch::Tensor(const std::string& name, c10::IntArrayRef shape, torch::Dtype dtype)>;

// The master model and its compute copy for one worker. When nothing is mixed (the compute dtype equals the
// master's), compute() is the master itself and every method is a no-op. Over data-parallel ranks (shard_over) the
// master weights are this rank's ZeRO-3 shards and compute() the sharded module, which gathers its units in the
// compute dtype as it runs (workers/fully_sharded.h).
class VERL_API MixedPrecision {
 public:
  // `compute_dtype` as given by the config (resolve_compute_dtype); the copy is made in
  // effective_compute_dtype(master dtype, compute_dtype) on the master's device, with its gradient
  // checkpointing and requires_grad flags.
  MixedPrecision(std::shared_ptr<model::CausalLM> master, torch::Dtype compute_dtype);

  // Whether the compute dtype differs from the master weights' (a compute copy, or sharded units gathered narrower).
  bool mixed() const;
  torch::Dtype compute_dtype() const;
  const std::shared_ptr<model::CausalLM>& master() const { return master_; }
  // The model to run forward/backward on, its weights equal to the master's rounded to the compute dtype:
  // refreshed first when a master parameter changed since the last refresh (an optimizer step, a
  // checkpoint load, any in-place write: tracked by the tensors' version counters).
  const std::shared_ptr<model::CausalLM>& compute();
  // Copies the master weights into the compute copy when they changed (see compute()).
  void refresh();
  // Sets gradient checkpointing on both models.
  void set_gradient_checkpointing(bool enabled);

  // ZeRO-3 over `communicator`'s ranks (gathering as `policy` says): the master model's weights
  // become this rank's shards (the same weights on every rank first), the compute copy goes, and compute() is the
  // sharded master. Every rank must then run the same passes. A null communicator or a world of one changes nothing.
  // `generation_tp` > 1: the layout for a tensor-parallel rollout of that size (workers/fully_sharded.h).
  // `groups` (HSDP): shard over groups.shard, replicated across groups.replicas, instead of over `communicator`.
  void shard_over(std::shared_ptr<dist::Communicator> communicator, const GatherPolicy& policy,
                  int64_t generation_tp = 1, const ShardGroups& groups = {});
  // The ZeRO-3 sharding (null before shard_over): the optimizer updates its master shards.
  const std::shared_ptr<detail::FullyShardedModel>& sharding() const { return sharding_; }
  // The weights compute() runs with, by HF name in the compute dtype -- what the rollout engine generates from --
  // handed to `fn`: sharded, a unit at a time as gathered from every rank's shards (collective: every rank calls it);
  // else at once, the compute model's own tensors. Sharded, `into` may name where each weight is unpacked
  // (FullyShardedModel::for_each_unit_state). Returns the bytes this rank received (0 unsharded).
  int64_t for_each_compute_state(const std::function<void(const std::map<std::string, torch::Tensor>&)>& fn,
                                 const UnpackTarget& into = {});
  // Changes whenever the weights do (an optimizer step, a load, an in-place write): compares hand-overs.
  int64_t weights_version() const;
  // The end of a pass without backward: the sharded units gathered for it are freed. No-op unsharded.
  void release();

  // The factor to multiply the loss by before backward(): 1, or the dynamic loss scale of fp16 compute
  // (torch's GradScaler defaults as verl sets them: 2^16 initially, x0.5 after a non-finite gradient,
  // x2 after 400 finite steps in a row).
  double loss_scale() const { return loss_scale_; }
  // Adds the compute copy's gradients (divided by loss_scale()) to the master gradients in the master's
  // dtype and drops them from the copy: call after each micro-batch's backward(), so accumulation over
  // micro-batches happens in the master dtype. Sharded: the rest of the backward's gradients are reduce-scattered
  // into the master shards' (FullyShardedModel::finish_backward).
  void accumulate_grads();
  // After each optimizer step: `finite` = the gradient norm was finite (the step was taken). Moves the fp16
  // loss scale; no-op otherwise.
  void update_loss_scale(bool finite);

 private:
  std::vector<std::pair<const void*, int64_t>> master_versions() const;
  bool has_copy() const { return compute_ != master_; }  // unsharded mixed precision: a compute-dtype module

  std::shared_ptr<model::CausalLM> master_;
  std::shared_ptr<model::CausalLM> compute_;
  std::vector<torch::Tensor> master_params_, compute_params_;  // same order
  std::vector<std::pair<const void*, int64_t>> synced_versions_;
  std::shared_ptr<detail::FullyShardedModel> sharding_;
  double loss_scale_ = 1.0;
  int64_t finite_steps_ = 0;
};

}  // namespace verl::workers
