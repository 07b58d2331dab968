// ModelConfig <-> HF config.json.
#include "verl/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "core/untrusted.h"
#include "json_file.h"
#include "sequence_classifier.h"
#include "verl/core/error.h"

namespace verl::model {
namespace {

// Upper bounds on the architecture fields of a config.json. A config.json comes with downloaded
// checkpoints, and these fields size allocations (the model is built from them), so a value no
// real model has must fail here, naming the field, instead of asking the allocator for
// terabytes. Each bound is ~100x the largest released dense model (Llama 3.1 405B: hidden 16384,
// intermediate 53248, 126 layers, 128 heads; vocabularies reach 262144; contexts 10M tokens).
struct FieldBound {
  const char* name;
  int64_t max;
};
constexpr FieldBound kVocabSize{"vocab_size", int64_t{1} << 24};
constexpr FieldBound kHiddenSize{"hidden_size", int64_t{1} << 17};
constexpr FieldBound kIntermediateSize{"intermediate_size", int64_t{1} << 20};
constexpr FieldBound kNumHiddenLayers{"num_hidden_layers", int64_t{1} << 12};
constexpr FieldBound kNumAttentionHeads{"num_attention_heads", int64_t{1} << 12};
constexpr FieldBound kNumKeyValueHeads{"num_key_value_heads", int64_t{1} << 12};
constexpr FieldBound kHeadDim{"head_dim", int64_t{1} << 12};
// Positions size the rollout engine's per-sequence block tables; 2^30 keeps their arithmetic far
// from overflow while admitting every released context length.
constexpr int64_t kMaxPositions = int64_t{1} << 30;

// Typed, range-checked access to one JSON object of config.json. Every failure is a ConfigError
// naming the field and the file; values are quoted bounded and escaped (untrusted::quote), never
// dumped whole.
struct Reader {
  const Json& j;
  const std::string& source;  // the file, already escaped for messages
  std::string prefix = "";    // "rope_scaling." for a nested object

  bool has(const char* key) const {
    auto it = j.find(key);
    return it != j.end() && !it->is_null();
  }
  const Json& at(const char* key) const {
    VERL_CHECK_AS(ConfigError, has(key), "model config ", source, ": missing required field '", prefix, key, "'");
    return *j.find(key);
  }
  [[noreturn]] void wrong_type(const char* key, const char* expected) const {
    const Json& v = at(key);
    VERL_FAIL(ConfigTypeError, "model config ", source, ": field '", prefix, key, "' has the wrong type: expected ",
              expected, ", got ", untrusted::type_name(v), " ", untrusted::quote(v));
  }

  // An integer in [min, max]. Floats are refused rather than truncated (nlohmann's get<int64_t>
  // casts 1e30 to an undefined value), as transformers' own range(num_hidden_layers) would.
  int64_t integer(const char* key, int64_t min, int64_t max) const {
    const Json& v = at(key);
    if (!v.is_number_integer()) wrong_type(key, "integer");
    const bool too_big = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max);
    VERL_CHECK_AS(ConfigError, !too_big && v.get<int64_t>() >= min && v.get<int64_t>() <= max, "model config ",
                  source, ": field '", prefix, key, "' is ", untrusted::quote(v), ", outside [", min, ", ", max, "]");
    return v.get<int64_t>();
  }
  int64_t integer(const char* key, int64_t min, int64_t max, int64_t fallback) const {
    return has(key) ? integer(key, min, max) : fallback;
  }
  int64_t bounded(const FieldBound& f) const { return integer(f.name, 1, f.max); }
  int64_t bounded(const FieldBound& f, int64_t fallback) const { return has(f.name) ? bounded(f) : fallback; }

  // A finite number > 0 (or >= 0 with allow_zero): NaN / inf / negative values would only turn
  // into NaN logits far from here.
  double number(const char* key, bool allow_zero = false) const {
    const Json& v = at(key);
    if (!v.is_number()) wrong_type(key, "number");
    const double d = v.get<double>();
    VERL_CHECK_AS(ConfigError, std::isfinite(d) && (d > 0 || (allow_zero && d == 0)), "model config ", source,
                  ": field '", prefix, key, "' must be finite and ", allow_zero ? ">= 0" : "> 0", ", got ",
                  untrusted::quote(v));
    return d;
  }
  double number(const char* key, double fallback, bool allow_zero = false) const {
    return has(key) ? number(key, allow_zero) : fallback;
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!at(key).is_boolean()) wrong_type(key, "bool");
    return at(key).get<bool>();
  }

  std::string string(const char* key) const {
    if (!at(key).is_string()) wrong_type(key, "string");
    return at(key).get<std::string>();
  }
  std::string string(const char* key, const std::string& fallback) const { return has(key) ? string(key) : fallback; }

  // A token id (bos/eos/pad): any integer; transformers does not range-check them either.
  int64_t token_id(const char* key, const Json& v) const {
    VERL_CHECK_AS(ConfigTypeError, v.is_number_integer() && !(v.is_number_unsigned() &&
                                                              v.get<uint64_t>() > uint64_t{INT64_MAX}),
                  "model config ", source, ": field '", prefix, key, "' must hold integer token ids, got ",
                  untrusted::quote(v));
    return v.get<int64_t>();
  }
};

// a * b and a + b, or nullopt on int64 overflow.
std::optional<int64_t> mul(std::optional<int64_t> a, std::optional<int64_t> b) {
  int64_t out = 0;
  if (!a || !b || __builtin_mul_overflow(*a, *b, &out)) return std::nullopt;
  return out;
}
std::optional<int64_t> add(std::optional<int64_t> a, std::optional<int64_t> b) {
  int64_t out = 0;
  if (!a || !b || __builtin_add_overflow(*a, *b, &out)) return std::nullopt;
  return out;
}

// Parameters of the largest model the config describes (every bias, an untied LM head), and the
// bytes of that many float64 values, with every step checked: the per-field bounds already keep
// this far below 2^63, and this check keeps it so if they are ever raised.
void check_total_size(const ModelConfig& c, const std::string& source) {
  using I = std::optional<int64_t>;
  const I h = c.hidden_size, q = c.q_size(), kv = c.kv_size();
  const I attention = add(add(mul(h, add(q, mul(2, kv))), add(q, mul(2, kv))),  // q/k/v weights and biases
                          add(add(mul(q, h), h), mul(2, c.head_dim)));           // o_proj, o bias, q/k norms
  const I mlp = add(mul(mul(3, h), c.intermediate_size), add(mul(2, c.intermediate_size), h));
  const I layer = add(add(attention, mlp), mul(2, h));  // + two RMSNorms
  const I embeddings = mul(c.vocab_size, h);
  const I total = add(add(mul(c.num_hidden_layers, layer), mul(2, embeddings)), add(mul(2, h), 1));
  const I bytes = mul(total, 8);
  VERL_CHECK_AS(ConfigError, bytes.has_value(), "model config ", source,
                ": vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads and head_dim "
                "describe a model whose size in bytes overflows int64");
}

// rope_scaling (transformers 4.x) or rope_parameters (5.x, which also carries rope_theta).
void parse_rope(const Json& r, const char* field, const std::string& source, ModelConfig& c) {
  VERL_CHECK_AS(ConfigTypeError, r.is_object(), "model config ", source, ": field '", field,
                "' must be an object, got ", untrusted::type_name(r));
  Reader rd{r, source, std::string(field) + "."};
  if (rd.has("rope_theta")) c.rope_theta = rd.number("rope_theta");
  // transformers 5 writes partial_rotary_factor 1.0 into every Phi-3 rope_parameters; RoPE on part of a head is not
  // implemented.
  const double partial = rd.number("partial_rotary_factor", 1.0);
  VERL_CHECK_AS(ConfigError, partial == 1.0, "model config ", source, ": ", field, ".partial_rotary_factor = ",
                partial, " is not supported (RoPE over the whole head only: 1.0)");
  std::string type = rd.string("rope_type", rd.string("type", "default"));
  if (type == "default") return;
  // Phi-3's long-context RoPE (Phi-3-mini-128k, Phi-3.5; transformers maps "su" and "yarn" to it for phi3).
  const bool longrope = type == "longrope" || (c.model_type == "phi3" && (type == "su" || type == "yarn"));
  VERL_CHECK_AS(ConfigError, !longrope, "model config ", source, ": ", field, ".rope_type ",
                untrusted::quote(Json(type)), " (longrope: short_factor / long_factor) is not supported yet; a Phi-3 "
                "checkpoint with the default RoPE (rope_scaling null: Phi-3-mini-4k, Phi-3-medium-4k) loads");
  VERL_CHECK_AS(ConfigError, c.model_type != "phi3", "model config ", source, ": ", field, ".rope_type ",
                untrusted::quote(Json(type)), " is not a Phi-3 RoPE (Phi3Config: default, longrope)");
  VERL_CHECK_AS(ConfigError, type == "llama3", "model config ", source, ": ", field, ".rope_type ",
                untrusted::quote(Json(type)), " is not supported (supported: default, llama3)");
  RopeScaling s;
  for (const char* key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
    VERL_CHECK_AS(ConfigError, rd.has(key), "model config ", source, ": missing required field '", field, ".",
                  key, "' for rope_type llama3");
  s.factor = rd.number("factor");
  s.low_freq_factor = rd.number("low_freq_factor");
  s.high_freq_factor = rd.number("high_freq_factor");
  s.original_max_position_embeddings = rd.integer("original_max_position_embeddings", 1, kMaxPositions);
  c.rope_scaling = s;
}

// The layers' sliding windows as transformers' MistralConfig / Qwen2Config / Qwen3Config decide them. Mistral: every
// layer has sliding_window (absent: MistralConfig's 4096; null: none). Qwen2 / Qwen3: none unless use_sliding_window;
// then sliding_window (absent: 4096; null: none) on the layers layer_types calls "sliding_attention", or without
// layer_types on the layers from max_window_layers (default 28) on. Phi-3: every layer has sliding_window (absent or
// null: none). Llama has no window.
void parse_sliding_windows(const Json& j, const Reader& rd, const std::string& source, ModelConfig& c) {
  // Phi-3: sliding_window on every layer as Mistral's, but Phi3Config's default is none (absent = null).
  if (c.model_type == "phi3" && !rd.has("sliding_window")) return;
  const bool mistral = c.model_type == "mistral" || c.model_type == "phi3";
  if (!mistral && !(c.model_type == "qwen2" || c.model_type == "qwen3")) return;
  if (!mistral && !rd.boolean("use_sliding_window", false)) return;
  const auto window = j.find("sliding_window");  // null (no window) differs from absent (4096) here
  if (window != j.end() && window->is_null()) return;
  const int64_t w = rd.integer("sliding_window", 1, kMaxPositions, 4096);
  const int64_t layers = c.num_hidden_layers;
  std::vector<int64_t> windows(static_cast<size_t>(layers), w);
  if (!mistral) {
    if (rd.has("layer_types")) {
      const Json& types = rd.at("layer_types");
      VERL_CHECK_AS(ConfigError, types.is_array() && static_cast<int64_t>(types.size()) == layers, "model config ",
                    source, ": layer_types must list one entry per layer (", layers, ")");
      for (int64_t i = 0; i < layers; ++i) {
        const Json& t = types[static_cast<size_t>(i)];
        VERL_CHECK_AS(ConfigError, t == "sliding_attention" || t == "full_attention", "model config ", source,
                      ": layer_types[", i, "] is ", untrusted::quote(t),
                      " (supported: sliding_attention, full_attention)");
        if (t == "full_attention") windows[static_cast<size_t>(i)] = 0;
      }
    } else {
      const int64_t first = rd.integer("max_window_layers", 0, kMaxPositions, 28);
      for (int64_t i = 0; i < std::min(first, layers); ++i) windows[static_cast<size_t>(i)] = 0;
    }
  }
  if (std::any_of(windows.begin(), windows.end(), [](int64_t x) { return x > 0; })) c.sliding_windows = windows;
}

}  // namespace

ModelConfig ModelConfig::from_json(const Json& j, const std::string& source_name) {
  const std::string source = untrusted::escape(source_name, 4096);
  VERL_CHECK_AS(ConfigError, j.is_object(), "model config ", source, ": expected a JSON object, got ",
                untrusted::type_name(j));
  Reader rd{j, source};
  ModelConfig c;
  c.model_type = rd.string("model_type");
  VERL_CHECK_AS(ConfigError,
                c.model_type == "qwen2" || c.model_type == "qwen3" || c.model_type == "llama" ||
                    c.model_type == "mistral" || c.model_type == "phi3",
                "model config ", source, ": unknown model_type ", untrusted::quote(Json(c.model_type)),
                " (supported: qwen2, qwen3, llama, mistral, phi3)");
  const bool phi3 = c.model_type == "phi3";
  c.vocab_size = rd.bounded(kVocabSize);
  c.hidden_size = rd.bounded(kHiddenSize);
  c.intermediate_size = rd.bounded(kIntermediateSize);
  c.num_hidden_layers = rd.bounded(kNumHiddenLayers);
  c.num_attention_heads = rd.bounded(kNumAttentionHeads);
  c.num_key_value_heads = rd.bounded(kNumKeyValueHeads, c.num_attention_heads);
  VERL_CHECK_AS(ConfigError, c.num_attention_heads % c.num_key_value_heads == 0, "model config ", source,
                ": num_attention_heads (", c.num_attention_heads, ") is not a multiple of num_key_value_heads (",
                c.num_key_value_heads, ")");
  // Qwen3Config declares head_dim = 128 as its default; the others derive it.
  const int64_t derived_head_dim = c.model_type == "qwen3" ? 128 : c.hidden_size / c.num_attention_heads;
  c.head_dim = rd.has(kHeadDim.name) ? rd.bounded(kHeadDim) : derived_head_dim;
  VERL_CHECK_AS(ConfigError, c.head_dim > 0 && c.head_dim % 2 == 0, "model config ", source,
                ": head_dim must be positive and even for RoPE, got ", c.head_dim,
                rd.has(kHeadDim.name) ? "" : " (hidden_size / num_attention_heads)");
  check_total_size(c, source);
  c.rms_norm_eps = rd.number("rms_norm_eps", phi3 ? 1e-5 : 1e-6, /*allow_zero=*/true);  // Phi3Config's 1e-5
  // transformers' defaults: LlamaConfig 2048, MistralConfig 4096 * 32, Phi3Config 4096, Qwen2/Qwen3Config 32768.
  const int64_t default_positions = c.model_type == "llama"     ? 2048
                                    : c.model_type == "mistral" ? 131072
                                    : phi3                      ? 4096
                                                                : 32768;
  c.max_position_embeddings = rd.integer("max_position_embeddings", 1, kMaxPositions, default_positions);
  c.rope_theta = rd.number("rope_theta", 10000.0);
  if (rd.has("rope_parameters")) parse_rope(rd.at("rope_parameters"), "rope_parameters", source, c);
  if (rd.has("rope_scaling")) parse_rope(rd.at("rope_scaling"), "rope_scaling", source, c);
  c.tie_word_embeddings = rd.boolean("tie_word_embeddings", false);
  const bool attention_bias = rd.boolean("attention_bias", false);
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;
    c.o_bias = false;
  } else {
    c.qkv_bias = attention_bias;
    c.o_bias = attention_bias;
  }
  if (c.model_type == "llama") c.mlp_bias = rd.boolean("mlp_bias", false);
  if (c.model_type == "mistral") c.qkv_bias = c.o_bias = false;  // Llama's decoder without biases
  if (phi3) {
    // Mistral's decoder with fused projections and no biases. Its dropouts act in training only, and verl-cpp trains
    // without dropout: a non-zero one would train a different model than the config describes.
    c.qkv_bias = c.o_bias = false;
    c.fused_projections = true;
    for (const char* key : {"resid_pdrop", "embd_pdrop", "attention_dropout"}) {
      const double p = rd.number(key, 0.0, /*allow_zero=*/true);
      VERL_CHECK_AS(ConfigError, p == 0.0, "model config ", source, ": ", key, " = ", p,
                    " is not supported (verl-cpp has no dropout): use 0.0");
    }
    // Phi3Config reads partial_rotary_factor at the top level too.
    const double partial = rd.number("partial_rotary_factor", 1.0);
    VERL_CHECK_AS(ConfigError, partial == 1.0, "model config ", source, ": partial_rotary_factor = ", partial,
                  " is not supported (RoPE over the whole head only: 1.0)");
  }
  parse_sliding_windows(j, rd, source, c);
  if (c.model_type == "qwen3") c.qk_norm = true;
  // transformers' XForSequenceClassification (reward models) has score = Linear(hidden, num_labels, bias=False);
  // XForTokenClassification (critics) has a bias unless token_classification_bias=false.
  c.score_bias = rd.boolean("token_classification_bias", !is_sequence_classifier(j));
  if (rd.has("bos_token_id")) c.bos_token_id = rd.token_id("bos_token_id", rd.at("bos_token_id"));
  if (rd.has("pad_token_id")) c.pad_token_id = rd.token_id("pad_token_id", rd.at("pad_token_id"));
  if (rd.has("eos_token_id")) {
    const Json& e = rd.at("eos_token_id");
    if (e.is_array()) {
      for (const Json& id : e) c.eos_token_ids.push_back(rd.token_id("eos_token_id", id));
    } else {
      c.eos_token_ids = {rd.token_id("eos_token_id", e)};
    }
  }
  // transformers 5 writes "dtype", 4.x "torch_dtype".
  c.torch_dtype = rd.string("torch_dtype", rd.string("dtype", "float32"));
  VERL_CHECK_AS(ConfigError,
                c.torch_dtype == "float32" || c.torch_dtype == "bfloat16" || c.torch_dtype == "float16" ||
                    c.torch_dtype == "float64",
                "model config ", source, ": torch_dtype ", untrusted::quote(Json(c.torch_dtype)),
                " is not supported (float32, bfloat16, float16, float64)");
  // Kept last: the copy is only made of a config that passed every check.
  c.source_json = j;
  return c;
}

ModelConfig ModelConfig::from_json_text(std::string_view text, const std::string& source) {
  return from_json(untrusted::parse_json<ConfigError>(text, "model config " + untrusted::escape(source, 4096), "text"),
                   source);
}

ModelConfig ModelConfig::from_file(const std::string& path) {
  std::filesystem::path p(path);
  std::error_code ec;  // the non-throwing overload: a symlink loop is reported by the read below
  if (std::filesystem::is_directory(p, ec)) p /= "config.json";
  return from_json(read_json_file<ConfigError>(p, "model config"), p.string());
}

Json ModelConfig::to_json() const {
  static const std::map<std::string, std::string> architectures = {
      {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"}, {"llama", "LlamaForCausalLM"},
      {"mistral", "MistralForCausalLM"}, {"phi3", "Phi3ForCausalLM"}};
  Json j = source_json.is_object() ? source_json : Json::object();
  if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty())
    j["architectures"] = Json::array({architectures.at(model_type)});
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = rms_norm_eps;
  j["rope_theta"] = rope_theta;
  Json rope_parameters = {{"rope_type", "default"}, {"rope_theta", rope_theta}};
  if (rope_scaling) {
    j["rope_scaling"] = {{"rope_type", rope_scaling->rope_type},
                         {"factor", rope_scaling->factor},
                         {"low_freq_factor", rope_scaling->low_freq_factor},
                         {"high_freq_factor", rope_scaling->high_freq_factor},
                         {"original_max_position_embeddings", rope_scaling->original_max_position_embeddings}};
    rope_parameters = j["rope_scaling"];
    rope_parameters["rope_theta"] = rope_theta;
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["rope_parameters"] = std::move(rope_parameters);
  j["max_position_embeddings"] = max_position_embeddings;
  j["tie_word_embeddings"] = tie_word_embeddings;
  if (model_type == "qwen3" || model_type == "llama") j["attention_bias"] = qkv_bias;
  if (model_type == "llama") j["mlp_bias"] = mlp_bias;
  const auto windowed = std::find_if(sliding_windows.begin(), sliding_windows.end(), [](int64_t w) { return w > 0; });
  const Json window = windowed == sliding_windows.end() ? Json(nullptr) : Json(*windowed);
  if (model_type == "mistral" || model_type == "phi3") j["sliding_window"] = window;
  if (model_type == "qwen2" || model_type == "qwen3") {
    j["use_sliding_window"] = !window.is_null();
    if (!window.is_null()) {
      j["sliding_window"] = window;
      Json types = Json::array();
      for (int64_t w : sliding_windows) types.push_back(w > 0 ? "sliding_attention" : "full_attention");
      j["layer_types"] = std::move(types);
    }
  }
  if (!score_bias) j["token_classification_bias"] = false;
  j["bos_token_id"] = bos_token_id ? Json(*bos_token_id) : Json(nullptr);
  if (eos_token_ids.empty())
    j["eos_token_id"] = nullptr;
  else if (eos_token_ids.size() == 1)
    j["eos_token_id"] = eos_token_ids[0];
  else
    j["eos_token_id"] = eos_token_ids;
  j["pad_token_id"] = pad_token_id ? Json(*pad_token_id) : Json(nullptr);
  j["torch_dtype"] = torch_dtype;
  j["dtype"] = torch_dtype;
  return j;
}

void ModelConfig::save(const std::string& path) const {
  std::ofstream out(path);
  VERL_CHECK_AS(CheckpointError, out.good(), "cannot write model config ", path);
  out << to_json().dump(2) << "\n";
  VERL_CHECK_AS(CheckpointError, out.good(), "cannot write model config ", path);
}

}  // namespace verl::model
