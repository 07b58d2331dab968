// Model FLOPs utilisation (MFU): verl 0.9.1's FLOP estimate for a batch (verl/utils/flops_counter.py
// FlopsCounter), a function of the model config alone, and the MFU over a device peak (core/device.h). Used by the
// actor and critic workers for perf/mfu/{actor,critic,actor_infer}.
#pragma once

#include <cstdint>
#include <vector>

#include "verl/core/export.h"
#include "verl/model/model_config.h"

namespace verl::model {

// verl's FlopsCounter for the dense decoder family (_estimate_qwen2_flops, used by verl for qwen2, qwen3,
// llama, mistral): the FLOPs of one forward + backward pass over sequences of the given lengths,
//   6 * N_dense * sum(seqlens) + 6 * sum(seqlen^2) * head_dim * num_attention_heads * num_hidden_layers,
//   N_dense = L * (3 * hidden * intermediate + hidden * (q + k + v + o sizes)) + 2 * vocab * hidden,
// exactly as verl counts them (embedding and LM head both counted, whether tied or not; norms and
// rotary embeddings ignored). A forward-only pass is a third of it.
class VERL_API FlopsCounter {
 public:
  explicit FlopsCounter(const ModelConfig& config);

  // FLOPs of training on sequences of `batch_seqlens` valid tokens each (verl's estimate_flops times
  // delta_time). InvalidArgument for a negative length.
  double estimate_flops(const std::vector<int64_t>& batch_seqlens) const;
  // Parameters the dense term multiplies (verl's dense_N).
  double dense_params() const { return dense_params_; }

 private:
  double dense_params_ = 0;
  double attention_factor_ = 0;  // head_dim * num_attention_heads * num_hidden_layers
};

// verl's mfu = estimated FLOPs / delta_time / peak / world_size, divided by 3 for a forward-only pass
// (engine_workers.py TrainingWorker._postprocess_output). InvalidArgument unless delta_time > 0 and
// peak_flops > 0.
VERL_API double model_flops_utilization(double flops, double delta_time, double peak_flops, int64_t world_size = 1,
                                        bool forward_only = false);

}  // namespace verl::model
