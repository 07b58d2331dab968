// verl::model::init_weights: transformers' random initialisation (PreTrainedModel._init_weights) for a
// model built from a config instead of loaded from a checkpoint. Used by C++ applications that train from
// scratch (examples/cpp_app) and by tests.
#pragma once

#include <cstdint>
#include <optional>

#include "verl/core/export.h"
#include "verl/model/transformer.h"

namespace verl::model {

// Overwrites every parameter as transformers' from_config does for the Qwen2 / Qwen3 / Llama / Mistral families:
// Linear and Embedding weights ~ N(0, initializer_range), biases 0, RMSNorm weights 1, and the embedding
// row of pad_token_id (the padding_idx) 0. initializer_range: the argument, else config.json's
// "initializer_range" (ModelConfig::source_json), else transformers' default 0.02.
//
// Why not LibTorch's default init: with it (Embedding ~ N(0, 1)) a tied-embedding model puts almost all
// probability on one token, so sampled responses do not vary and GRPO groups get no signal; N(0, 0.02)
// gives a near-uniform next-token distribution.
//
// Values are drawn in float32 from a CPU generator seeded with `seed` (name by name, in named_state()
// order) and copied to each parameter's dtype and device: the same seed gives the same weights on any
// device. InvalidArgument for initializer_range <= 0 or a non-numeric config value.
VERL_API void init_weights(CausalLM& model, uint64_t seed, std::optional<double> initializer_range = std::nullopt);

}  // namespace verl::model
