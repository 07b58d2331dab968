// verl's FLOP estimate and the MFU arithmetic (see verl/model/flops_counter.h).
#include "verl/model/flops_counter.h"

#include "verl/core/error.h"

namespace verl::model {

FlopsCounter::FlopsCounter(const ModelConfig& config) {
  VERL_CHECK(config.hidden_size > 0 && config.num_hidden_layers > 0 && config.num_attention_heads > 0 &&
                 config.vocab_size > 0 && config.intermediate_size > 0,
             "FlopsCounter: the model config has non-positive sizes (hidden_size=", config.hidden_size,
             ", num_hidden_layers=", config.num_hidden_layers, ")");
  const double hidden = static_cast<double>(config.hidden_size);
  const double head_dim =
      static_cast<double>(config.head_dim > 0 ? config.head_dim : config.hidden_size / config.num_attention_heads);
  const double heads = static_cast<double>(config.num_attention_heads);
  const double kv_heads =
      static_cast<double>(config.num_key_value_heads > 0 ? config.num_key_value_heads : config.num_attention_heads);
  const double layers = static_cast<double>(config.num_hidden_layers);
  const double q_size = heads * head_dim;
  const double kv_size = kv_heads * head_dim;
  // SwiGLU MLP: gate, up and down projections.
  const double mlp = hidden * static_cast<double>(config.intermediate_size) * 3;
  // q, k, v and the output projection (verl writes the last as num_attention_heads * head_dim).
  const double attn_linear = hidden * (q_size + 2 * kv_size + q_size);
  const double embedding_and_lm_head = static_cast<double>(config.vocab_size) * hidden * 2;
  dense_params_ = (mlp + attn_linear) * layers + embedding_and_lm_head;
  attention_factor_ = head_dim * heads * layers;
}

double FlopsCounter::estimate_flops(const std::vector<int64_t>& batch_seqlens) const {
  double tokens = 0;
  double seqlen_square_sum = 0;
  for (int64_t s : batch_seqlens) {
    VERL_CHECK(s >= 0, "FlopsCounter::estimate_flops: negative sequence length ", s);
    tokens += static_cast<double>(s);
    seqlen_square_sum += static_cast<double>(s) * static_cast<double>(s);
  }
  // Forward (2 FLOPs per multiply-add) + backward (twice the forward) = 6 per parameter and token; the
  // attention scores and the weighted sum of values are verl's 6 * sum(s^2) * head_dim * heads per layer.
  return 6 * dense_params_ * tokens + 6 * seqlen_square_sum * attention_factor_;
}

double model_flops_utilization(double flops, double delta_time, double peak_flops, int64_t world_size,
                               bool forward_only) {
  VERL_CHECK(delta_time > 0, "model_flops_utilization: delta_time must be positive, got ", delta_time);
  VERL_CHECK(peak_flops > 0, "model_flops_utilization: peak_flops must be positive, got ", peak_flops);
  VERL_CHECK(world_size >= 1, "model_flops_utilization: world_size must be >= 1, got ", world_size);
  double mfu = flops / delta_time / peak_flops / static_cast<double>(world_size);
  if (forward_only) mfu /= 3.0;
  return mfu;
}

}  // namespace verl::model
