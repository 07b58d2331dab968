// verl::model::ModelConfig: the architecture of a Qwen2 / Qwen3 / Llama / Mistral / Phi-3 decoder, read from and
// written to a Hugging Face config.json. Used by CausalLM (transformer.h), checkpoint I/O and rollout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "verl/core/export.h"
#include "verl/core/json.h"

namespace verl::model {

// Llama 3.1 frequency-dependent RoPE scaling (rope_type "llama3"), the only scaling supported.
struct VERL_API RopeScaling {
  std::string rope_type = "llama3";
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct VERL_API ModelConfig {
  std::string model_type;  // "qwen2", "qwen3", "llama", "mistral" or "phi3"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads (no GQA)
  int64_t head_dim = 0;             // qwen3: explicit (HF default 128); others: hidden / heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<RopeScaling> rope_scaling;
  int64_t max_position_embeddings = 2048;
  bool tie_word_embeddings = false;
  // q/k/v projection bias (qwen2: always true; llama/qwen3: the attention_bias field).
  bool qkv_bias = false;
  // o_proj bias (llama/qwen3: attention_bias; qwen2: never).
  bool o_bias = false;
  bool mlp_bias = false;   // llama's mlp_bias
  bool qk_norm = false;    // qwen3: per-head RMSNorm on q and k before RoPE
  // phi3: one self_attn.qkv_proj (rows [q; k; v]) instead of q/k/v_proj, and one mlp.gate_up_proj (rows [gate; up])
  // instead of gate/up_proj, under Hugging Face's names, each computed as one GEMM whose output is split.
  bool fused_projections = false;
  // Sliding-window attention, per decoder layer: a query attends to the `window` latest keys, itself included
  // (transformers' kv_idx > q_idx - sliding_window); 0 = full causal attention. Empty: no layer has a window.
  // Mistral: sliding_window on every layer; Qwen2 / Qwen3 with use_sliding_window: layer_types, else the layers
  // from max_window_layers on.
  std::vector<int64_t> sliding_windows;
  int64_t sliding_window(int64_t layer) const {
    return sliding_windows.empty() ? 0 : sliding_windows.at(static_cast<size_t>(layer));
  }
  // Value head (score Linear(hidden, 1)) bias: transformers' token_classification_bias, default true.
  bool score_bias = true;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // config.json's eos_token_id, an int or a list
  std::optional<int64_t> pad_token_id;
  std::string torch_dtype = "float32";  // "float32", "bfloat16", "float16" or "float64"
  // The config.json object this config was parsed from (empty when built in code). to_json()
  // starts from it, so keys ModelConfig does not model (initializer_range, layer_types, id2label,
  // quantization hints, ...) survive a load -> save round trip.
  Json source_json = Json::object();

  // Parses an HF config.json object; `source` names the file in error messages.
  // Unknown model_type, missing required fields, values of the wrong type and unsupported
  // features throw ConfigError naming the field and `source`. A config.json is untrusted input
  // (it comes with downloaded checkpoints) and its sizes decide what gets allocated, so every
  // size field is also bounded (e.g. num_hidden_layers <= 4096, hidden_size <= 131072,
  // vocab_size <= 2^24) and the whole model's size must fit int64: absurd values fail here,
  // naming the field, before any tensor exists.
  static ModelConfig from_json(const Json& j, const std::string& source = "<config.json>");
  // Parses config.json text with the depth-limited parser (core/untrusted.h), then from_json:
  // every failure, invalid JSON and deep nesting included, is a ConfigError naming `source`.
  static ModelConfig from_json_text(std::string_view text, const std::string& source = "<config.json>");
  // Reads a config.json file, or the config.json inside a directory (as from_json_text).
  static ModelConfig from_file(const std::string& path);
  // A config.json that transformers (4.x and 5.x) loads into the same architecture: source_json's
  // keys, with every modelled field overwritten (rope in both spellings: rope_theta + rope_scaling
  // for 4.x, rope_parameters for 5.x; dtype as both torch_dtype and dtype).
  Json to_json() const;
  void save(const std::string& path) const;

  int64_t q_size() const { return num_attention_heads * head_dim; }
  int64_t kv_size() const { return num_key_value_heads * head_dim; }
};

}  // namespace verl::model
