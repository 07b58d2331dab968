// verl::model::Linear: the decoder's linear layer (torch.nn.Linear's weight / bias, at::linear's numerics) with an
// optional LoRA adapter (verl/model/lora.h) computed beside it unmerged, as PEFT's lora.Linear computes it.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "verl/core/export.h"

namespace verl::model {

class VERL_API Linear : public torch::nn::Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias);

  // at::linear(x, weight, bias) (the bias fused into the GEMM, as torch.nn.Linear runs it), plus
  // lora_B(lora_A(x)) * scaling while an adapter is present and enabled.
  torch::Tensor forward(const torch::Tensor& x);

  // Registers lora_A (rank, in) and lora_B (out, rank) as submodules (parameters lora_A.weight, lora_B.weight) in the
  // weight's dtype and device: A filled with `a_init` (rank, in), B zero. InvalidArgument when one is present.
  void add_adapter(int64_t rank, double scaling, const torch::Tensor& a_init);
  bool has_adapter() const { return !lora_A.is_empty(); }
  double adapter_scaling() const { return scaling_; }
  // While disabled the layer computes the base linear alone (PEFT's disable_adapter()).
  void set_adapter_enabled(bool enabled) { adapter_enabled_ = enabled; }
  // weight + (B A) * scaling: the weight an adapter folds into (PEFT's merge; get_delta_weight's expression).
  torch::Tensor merged_weight() const;

  torch::Tensor weight, bias;  // (out, in), (out,) or undefined
  torch::nn::Linear lora_A{nullptr}, lora_B{nullptr};

 private:
  double scaling_ = 0;
  bool adapter_enabled_ = true;
};

}  // namespace verl::model
