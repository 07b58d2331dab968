// transformers' random initialisation of a CausalLM (verl/model/init_weights.h).
#include "verl/model/init_weights.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <string>

#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::model {
namespace {

double configured_range(const ModelConfig& config) {
  const Json& source = config.source_json;
  if (!source.is_object() || !source.contains("initializer_range")) return 0.02;  // transformers' default
  const Json& value = source["initializer_range"];
  // quote, not dump: the value comes from a config.json and may be any (large, nested) JSON.
  VERL_CHECK(value.is_number(), "init_weights: config.json initializer_range must be a number, got ",
             untrusted::type_name(value), " ", untrusted::quote(value));
  return value.get<double>();
}

}  // namespace

void init_weights(CausalLM& model, uint64_t seed, std::optional<double> initializer_range) {
  const double std_dev = initializer_range ? *initializer_range : configured_range(model.config());
  VERL_CHECK(std::isfinite(std_dev) && std_dev > 0, "init_weights: initializer_range must be positive, got ", std_dev);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::NoGradGuard no_grad;
  for (auto& [name, param] : model.named_state()) {
    if (name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos) {
      continue;  // LoRA adapters keep PEFT's initialisation (B zero: the model computes as its base)
    } else if (name.ends_with("norm.weight")) {  // input/post_attention/final RMSNorm, qwen3's q_norm/k_norm
      param.fill_(1.0);
    } else if (name.ends_with(".bias")) {
      param.zero_();
    } else {
      param.copy_(at::normal(0.0, std_dev, param.sizes(), gen, torch::TensorOptions().dtype(torch::kFloat32)));
    }
  }
  // nn.Embedding(padding_idx=pad_token_id): transformers zeroes the padding row after drawing it.
  const std::optional<int64_t> pad = model.config().pad_token_id;
  if (pad && *pad >= 0 && *pad < model.config().vocab_size) model.model->embed_tokens->weight[*pad].zero_();
}

}  // namespace verl::model
