// Model FLOPs utilisation (MFU): verl 0.9.1's FLOP estimate for a batch (verl/utils/flops_counter.py
// FlopsCounter) and the device's peak. Used by the actor and critic workers for perf/mfu/{actor,critic,actor_infer}.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/model/model_config.h"

namespace verl::trainer {

// verl's FlopsCounter for the dense decoder family (_estimate_qwen2_flops, used by verl for qwen2, qwen3,
// llama, mistral): the FLOPs of one forward + backward pass over sequences of the given lengths,
//   6 * N_dense * sum(seqlens) + 6 * sum(seqlen^2) * head_dim * num_attention_heads * num_hidden_layers,
//   N_dense = L * (3 * hidden * intermediate + hidden * (q + k + v + o sizes)) + 2 * vocab * hidden,
// exactly as verl counts them (embedding and LM head both counted, whether tied or not; norms and
// rotary embeddings ignored). A forward-only pass is a third of it.
class VERL_API FlopsCounter {
 public:
  explicit FlopsCounter(const model::ModelConfig& config);

  // FLOPs of training on sequences of `batch_seqlens` valid tokens each (verl's estimate_flops times
  // delta_time). InvalidArgument for a negative length.
  double estimate_flops(const std::vector<int64_t>& batch_seqlens) const;
  // Parameters the dense term multiplies (verl's dense_N).
  double dense_params() const { return dense_params_; }

 private:
  double dense_params_ = 0;
  double attention_factor_ = 0;  // head_dim * num_attention_heads * num_hidden_layers
};

// The peak FLOP/s of `device` for matrix multiplies in `dtype`, measured once per process and
// (device, dtype, thread count) and cached. On the CPU: every intra-op thread times a single-threaded square
// torch::mm (up to 1024, sized from a small probe so one mm takes ~20 ms even where the dtype's kernel is slow) by
// its own CPU clock, and the peak is the fastest core's rate times the thread count -- time lost to other processes
// does not count, so a busy machine does not lower the peak (a wall-clock peak did, and MFU then read above 1). On
// accelerators: the best of several timed 4096 mms. ~0.2-0.5 s once. verl instead looks the device
// name up in a spec-sheet table (get_device_flops: H100 989e12, ..., "CPU" 448e9), which says nothing
// about a given CPU; the measured peak is what this machine's cores can reach, so MFU in (0, 1] reads as
// "fraction of this machine's matmul throughput". On GPUs it is below the spec sheet (dense bf16 mm
// reaches ~70-80% of it), so the MFU reads correspondingly higher than verl's.
VERL_API double device_peak_flops(const torch::Device& device, torch::ScalarType dtype);

// Blocks until the work queued on `device` has finished (nothing to wait for on the CPU), so that a
// wall-clock interval ending here covers the kernels themselves and not just their launches.
VERL_API void synchronize_device(const torch::Device& device);

// verl's mfu = estimated FLOPs / delta_time / peak / world_size, divided by 3 for a forward-only pass
// (engine_workers.py TrainingWorker._postprocess_output). InvalidArgument unless delta_time > 0 and
// peak_flops > 0.
VERL_API double model_flops_utilization(double flops, double delta_time, double peak_flops, int64_t world_size = 1,
                                        bool forward_only = false);

}  // namespace verl::trainer
