// The decoder's linear layer with an optional unmerged LoRA adapter (see verl/model/linear.h).
#include "verl/model/linear.h"

#include <cmath>

#include "verl/core/error.h"

namespace verl::model {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias) {
  // torch.nn.Linear's shapes; the values are the loader's (or init_weights') business.
  // torch::nn::Linear's initialisation, draw for draw (a model built from a config and not loaded stays as it was).
  weight = register_parameter("weight", torch::empty({out_features, in_features}));
  if (bias) this->bias = register_parameter("bias", torch::empty({out_features}));
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    torch::nn::init::uniform_(this->bias, -bound, bound);
  }
}

torch::Tensor Linear::forward(const torch::Tensor& x) {
  // at::linear, as torch.nn.Linear runs it. LibTorch's LinearImpl::forward (F::linear) computes matmul and then adds
  // the bias for >2-D inputs, rounding twice in bf16; at::linear fuses the bias into the GEMM, which is what
  // transformers' bf16 numbers are made of.
  torch::Tensor y = torch::linear(x, weight, bias);
  if (lora_A.is_empty() || !adapter_enabled_) return y;
  // PEFT: result = result + lora_B(lora_A(dropout(x))) * scaling (no dropout: verl's adapters have none), with its
  // roundings in every dtype -- the product, then its scaling, then the sum -- but the scaling and the sum in place:
  // two (tokens, out) tensors instead of four. Autograd allows it: neither linear's backward reads its output, and the
  // scaling's backward reads only the scalar. (One addmm with alpha = scaling would round once in bf16: other numbers
  // than PEFT's, which verl-cpp keeps.)
  torch::Tensor delta = torch::linear(torch::linear(x, lora_A->weight), lora_B->weight);
  delta.mul_(scaling_);
  return y.add_(delta);
}

void Linear::add_adapter(int64_t rank, double scaling, const torch::Tensor& a_init) {
  VERL_CHECK(lora_A.is_empty(), "Linear.add_adapter: the layer has an adapter already");
  VERL_CHECK(rank > 0 && a_init.dim() == 2 && a_init.size(0) == rank && a_init.size(1) == weight.size(1),
             "Linear.add_adapter: A must be (", rank, ", ", weight.size(1), "), got ", a_init.sizes());
  const auto options = weight.options();
  lora_A = register_module("lora_A", torch::nn::Linear(torch::nn::LinearOptions(weight.size(1), rank).bias(false)));
  lora_B = register_module("lora_B", torch::nn::Linear(torch::nn::LinearOptions(rank, weight.size(0)).bias(false)));
  torch::NoGradGuard no_grad;
  lora_A->to(options.device(), options.dtype().toScalarType());
  lora_B->to(options.device(), options.dtype().toScalarType());
  lora_A->weight.copy_(a_init);
  lora_B->weight.zero_();
  scaling_ = scaling;
}

torch::Tensor Linear::merged_weight() const {
  if (lora_A.is_empty()) return weight;
  return weight + torch::matmul(lora_B->weight, lora_A->weight) * scaling_;
}

}  // namespace verl::model
