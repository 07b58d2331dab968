// ModelConfig <-> HF config.json.
#include "verl/model/model_config.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "verl/core/error.h"
#include "sequence_classifier.h"

namespace verl::model {
namespace {

struct Reader {
  const Json& j;
  const std::string& source;

  bool has(const char* key) const {
    auto it = j.find(key);
    return it != j.end() && !it->is_null();
  }
  const Json& at(const char* key) const {
    VERL_CHECK_AS(ConfigError, has(key), "model config ", source, ": missing required field '", key, "'");
    return j.at(key);
  }
  template <typename T>
  T get(const char* key) const {
    try {
      return at(key).get<T>();
    } catch (const nlohmann::json::exception& e) {
      VERL_FAIL(ConfigError, "model config ", source, ": field '", key, "' has the wrong type (", e.what(), ")");
    }
  }
  template <typename T>
  T get(const char* key, T fallback) const {
    return has(key) ? get<T>(key) : fallback;
  }
};

// rope_scaling (transformers 4.x) or rope_parameters (5.x, which also carries rope_theta).
void parse_rope(const Json& r, const char* field, const std::string& source, ModelConfig& c) {
  VERL_CHECK_AS(ConfigError, r.is_object(), "model config ", source, ": '", field, "' must be an object");
  Reader rd{r, source};
  if (rd.has("rope_theta")) c.rope_theta = rd.get<double>("rope_theta");
  std::string type = rd.get<std::string>("rope_type", rd.get<std::string>("type", "default"));
  if (type == "default") return;
  VERL_CHECK_AS(ConfigError, type == "llama3", "model config ", source, ": ", field, ".rope_type '", type,
                "' is not supported (supported: default, llama3)");
  RopeScaling s;
  for (const char* key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
    VERL_CHECK_AS(ConfigError, rd.has(key), "model config ", source, ": missing required field '", field, ".",
                  key, "' for rope_type llama3");
  s.factor = rd.get<double>("factor");
  s.low_freq_factor = rd.get<double>("low_freq_factor");
  s.high_freq_factor = rd.get<double>("high_freq_factor");
  s.original_max_position_embeddings = rd.get<int64_t>("original_max_position_embeddings");
  c.rope_scaling = s;
}

}  // namespace

ModelConfig ModelConfig::from_json(const Json& j, const std::string& source) {
  VERL_CHECK_AS(ConfigError, j.is_object(), "model config ", source, ": expected a JSON object");
  Reader rd{j, source};
  ModelConfig c;
  c.source_json = j;
  c.model_type = rd.get<std::string>("model_type");
  VERL_CHECK_AS(ConfigError, c.model_type == "qwen2" || c.model_type == "qwen3" || c.model_type == "llama",
                "model config ", source, ": unknown model_type '", c.model_type,
                "' (supported: qwen2, qwen3, llama)");
  c.vocab_size = rd.get<int64_t>("vocab_size");
  c.hidden_size = rd.get<int64_t>("hidden_size");
  c.intermediate_size = rd.get<int64_t>("intermediate_size");
  c.num_hidden_layers = rd.get<int64_t>("num_hidden_layers");
  c.num_attention_heads = rd.get<int64_t>("num_attention_heads");
  c.num_key_value_heads = rd.get<int64_t>("num_key_value_heads", c.num_attention_heads);
  for (auto [name, v] : {std::pair{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
                         {"intermediate_size", c.intermediate_size}, {"num_hidden_layers", c.num_hidden_layers},
                         {"num_attention_heads", c.num_attention_heads},
                         {"num_key_value_heads", c.num_key_value_heads}})
    VERL_CHECK_AS(ConfigError, v > 0, "model config ", source, ": field '", name, "' must be positive, got ", v);
  VERL_CHECK_AS(ConfigError, c.num_attention_heads % c.num_key_value_heads == 0, "model config ", source,
                ": num_attention_heads (", c.num_attention_heads, ") is not a multiple of num_key_value_heads (",
                c.num_key_value_heads, ")");
  // Qwen3Config declares head_dim = 128 as its default; the others derive it.
  const int64_t derived_head_dim = c.model_type == "qwen3" ? 128 : c.hidden_size / c.num_attention_heads;
  c.head_dim = rd.get<int64_t>("head_dim", derived_head_dim);
  VERL_CHECK_AS(ConfigError, c.head_dim > 0 && c.head_dim % 2 == 0, "model config ", source,
                ": head_dim must be positive and even for RoPE, got ", c.head_dim);
  c.rms_norm_eps = rd.get<double>("rms_norm_eps", 1e-6);
  c.max_position_embeddings =
      rd.get<int64_t>("max_position_embeddings", c.model_type == "llama" ? 2048 : 32768);
  c.rope_theta = rd.get<double>("rope_theta", 10000.0);
  if (rd.has("rope_parameters")) parse_rope(j.at("rope_parameters"), "rope_parameters", source, c);
  if (rd.has("rope_scaling")) parse_rope(j.at("rope_scaling"), "rope_scaling", source, c);
  c.tie_word_embeddings = rd.get<bool>("tie_word_embeddings", false);
  const bool attention_bias = rd.get<bool>("attention_bias", false);
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;
    c.o_bias = false;
    VERL_CHECK_AS(ConfigError, !rd.get<bool>("use_sliding_window", false), "model config ", source,
                  ": use_sliding_window=true is not supported");
  } else {
    c.qkv_bias = attention_bias;
    c.o_bias = attention_bias;
  }
  if (c.model_type == "llama") c.mlp_bias = rd.get<bool>("mlp_bias", false);
  if (c.model_type == "qwen3") {
    c.qk_norm = true;
    VERL_CHECK_AS(ConfigError, !rd.get<bool>("use_sliding_window", false), "model config ", source,
                  ": use_sliding_window=true is not supported");
  }
  // transformers' XForSequenceClassification (reward models) has score = Linear(hidden, num_labels, bias=False);
  // XForTokenClassification (critics) has a bias unless token_classification_bias=false.
  c.score_bias = rd.get<bool>("token_classification_bias", !is_sequence_classifier(j));
  if (rd.has("bos_token_id")) c.bos_token_id = rd.get<int64_t>("bos_token_id");
  if (rd.has("pad_token_id")) c.pad_token_id = rd.get<int64_t>("pad_token_id");
  if (rd.has("eos_token_id")) {
    const Json& e = j.at("eos_token_id");
    c.eos_token_ids = e.is_array() ? rd.get<std::vector<int64_t>>("eos_token_id")
                                   : std::vector<int64_t>{rd.get<int64_t>("eos_token_id")};
  }
  // transformers 5 writes "dtype", 4.x "torch_dtype".
  c.torch_dtype = rd.get<std::string>("torch_dtype", rd.get<std::string>("dtype", "float32"));
  VERL_CHECK_AS(ConfigError,
                c.torch_dtype == "float32" || c.torch_dtype == "bfloat16" || c.torch_dtype == "float16" ||
                    c.torch_dtype == "float64",
                "model config ", source, ": torch_dtype '", c.torch_dtype,
                "' is not supported (float32, bfloat16, float16, float64)");
  return c;
}

ModelConfig ModelConfig::from_file(const std::string& path) {
  std::filesystem::path p(path);
  if (std::filesystem::is_directory(p)) p /= "config.json";
  std::ifstream in(p);
  VERL_CHECK_AS(ConfigError, in.good(), "model config ", p.string(), ": cannot open file");
  Json j;
  try {
    j = Json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    VERL_FAIL(ConfigError, "model config ", p.string(), ": invalid JSON (", e.what(), ")");
  }
  return from_json(j, p.string());
}

Json ModelConfig::to_json() const {
  static const std::map<std::string, std::string> architectures = {
      {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"}, {"llama", "LlamaForCausalLM"}};
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
  if (model_type != "qwen2") j["attention_bias"] = qkv_bias;
  if (model_type == "llama") j["mlp_bias"] = mlp_bias;
  if (model_type != "llama") j["use_sliding_window"] = false;
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
