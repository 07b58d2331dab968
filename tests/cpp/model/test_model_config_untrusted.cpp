// Issue 21's fuzzing findings on config.json (bugs 3, 9, 11): ModelConfig refuses sizes no model
// has, naming the field and the file, before anything is allocated; config.json text nested
// 100,000 deep or holding 1e400 is a ConfigError, not a stack overflow or a library exception;
// and parameter_shapes (what load_pretrained compares with a checkpoint) matches the model.
#include <catch2/catch.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/remove_tree.h"
#include "core/untrusted.h"
#include "verl/core/error.h"
#include "verl/model/init_weights.h"
#include "verl/model/transformer.h"

using namespace verl::model;
namespace fs = std::filesystem;

namespace {

verl::Json tiny_json(const std::string& type = "qwen2") {
  verl::Json j = {{"model_type", type},       {"vocab_size", 64},       {"hidden_size", 32},
                  {"intermediate_size", 48},  {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                  {"num_key_value_heads", 2}, {"rms_norm_eps", 1e-6},   {"max_position_embeddings", 128}};
  if (type == "qwen3") j["head_dim"] = 16;
  return j;
}

// The ConfigError message from_json(j, source) throws ("" if it does not throw one).
std::string config_error(const verl::Json& j, const std::string& source = "hub/config.json") {
  try {
    ModelConfig::from_json(j, source);
  } catch (const verl::ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string config_text_error(const std::string& text, const std::string& source = "hub/config.json") {
  try {
    ModelConfig::from_json_text(text, source);
  } catch (const verl::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("bug 3: absurd sizes in config.json are refused naming the field and the file", "[model]") {
  // The fuzzer's input: num_hidden_layers 1e9 built a model of 17 GB before anything compared it
  // with the checkpoint. Each size field, at values from "a lot" to "past int64".
  struct Case {
    const char* field;
    verl::Json value;
  };
  const Case cases[] = {
      {"num_hidden_layers", 1'000'000'000},       {"num_hidden_layers", 4097},
      {"hidden_size", int64_t{1} << 40},          {"vocab_size", int64_t{1} << 40},
      {"intermediate_size", int64_t{1} << 62},    {"num_attention_heads", 1'000'000},
      {"num_key_value_heads", 1'000'000},         {"head_dim", int64_t{1} << 31},
      {"max_position_embeddings", INT64_MAX},     {"vocab_size", uint64_t{18446744073709551615ULL}},
      {"hidden_size", 0},                         {"num_hidden_layers", -3},
  };
  for (const Case& c : cases) {
    verl::Json j = tiny_json("qwen3");
    j[c.field] = c.value;
    const std::string message = config_error(j);
    INFO(c.field << " = " << c.value.dump() << ": " << message);
    CHECK(message.find(std::string("'") + c.field + "'") != std::string::npos);
    CHECK(message.find("hub/config.json") != std::string::npos);
  }
  // Floats are not truncated into sizes (nlohmann's get<int64_t> of 1e30 is undefined behaviour).
  verl::Json j = tiny_json();
  j["num_hidden_layers"] = 1e30;
  CHECK_THROWS_AS(ModelConfig::from_json(j), verl::ConfigTypeError);
  CHECK_THROWS_WITH(ModelConfig::from_json(j), Catch::Contains("num_hidden_layers") && Catch::Contains("integer"));
  j["num_hidden_layers"] = 2.0;
  CHECK_THROWS_AS(ModelConfig::from_json(j), verl::ConfigTypeError);
  // The largest real models stay well inside the bounds (Llama 3.1 405B).
  j = {{"model_type", "llama"},        {"vocab_size", 128256},        {"hidden_size", 16384},
       {"intermediate_size", 53248},   {"num_hidden_layers", 126},    {"num_attention_heads", 128},
       {"num_key_value_heads", 8},     {"max_position_embeddings", 131072}};
  CHECK(ModelConfig::from_json(j).num_hidden_layers == 126);
}

TEST_CASE("bug 3: fields at their bounds still describe a model whose size fits int64", "[model]") {
  verl::Json j = tiny_json("qwen3");
  j["vocab_size"] = int64_t{1} << 24;
  j["hidden_size"] = int64_t{1} << 17;
  j["intermediate_size"] = int64_t{1} << 20;
  j["num_hidden_layers"] = int64_t{1} << 12;
  j["num_attention_heads"] = int64_t{1} << 12;
  j["num_key_value_heads"] = int64_t{1} << 12;
  j["head_dim"] = int64_t{1} << 12;
  // Parsing only: nothing is allocated for a config (it would be ~2^56 parameters).
  const ModelConfig c = ModelConfig::from_json(j);
  int64_t total = 0;
  for (const auto& [name, shape] : parameter_shapes(c, HeadKind::kLanguageModel)) {
    int64_t numel = 1;
    for (int64_t d : shape) REQUIRE_FALSE(__builtin_mul_overflow(numel, d, &numel));
    REQUIRE_FALSE(__builtin_add_overflow(total, numel, &total));
  }
  int64_t bytes = 0;
  CHECK_FALSE(__builtin_mul_overflow(total, int64_t{8}, &bytes));
}

TEST_CASE("config.json values of the wrong type or out of range name the field", "[model]") {
  verl::Json j = tiny_json();
  j["rms_norm_eps"] = "small";
  CHECK_THROWS_WITH(ModelConfig::from_json(j, "c.json"),
                    Catch::Contains("'rms_norm_eps'") && Catch::Contains("number") && Catch::Contains("c.json"));
  j = tiny_json();
  j["rope_theta"] = -1.0;
  CHECK_THROWS_WITH(ModelConfig::from_json(j), Catch::Contains("'rope_theta'"));
  j = tiny_json();
  j["tie_word_embeddings"] = verl::Json::array({1});
  CHECK_THROWS_AS(ModelConfig::from_json(j), verl::ConfigTypeError);
  j = tiny_json();
  j["eos_token_id"] = verl::Json::array({1, "two"});
  CHECK_THROWS_WITH(ModelConfig::from_json(j), Catch::Contains("eos_token_id") && Catch::Contains("\"two\""));
  j = tiny_json("llama");
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 1e300}};
  CHECK_THROWS_WITH(ModelConfig::from_json(j), Catch::Contains("rope_scaling.original_max_position_embeddings"));
  // A long, binary model_type is quoted bounded and escaped, not copied whole into the message.
  j = tiny_json();
  j["model_type"] = std::string(100000, 'x') + "\x01";
  const std::string message = config_error(j);
  CHECK(message.find("unknown model_type") != std::string::npos);
  CHECK(message.size() < 1000);
}

TEST_CASE("bug 9: config.json text nested 100,000 deep is a ConfigError, not a stack overflow", "[model]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string text = R"({"model_type": "qwen2", "my_custom_key": )" + deep + "}";
  const std::string message = config_text_error(text);
  CHECK(message.find("hub/config.json") != std::string::npos);
  CHECK(message.find("nesting deeper than 128 levels") != std::string::npos);
  // Through the file reader too, as load_model and CausalLM(path) read it.
  const fs::path dir = fs::temp_directory_path() / ("verl_cfg_untrusted_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << text;
  CHECK_THROWS_AS(ModelConfig::from_file(dir.string()), verl::ConfigError);
  CHECK_THROWS_WITH(ModelConfig::from_file(dir.string()),
                    Catch::Contains((dir / "config.json").string()) && Catch::Contains("nesting deeper"));
  // A symlink loop in place of config.json: a ConfigError naming it, not a filesystem_error.
  fs::remove(dir / "config.json");
  fs::create_symlink(dir / "config.json", dir / "config.json");
  CHECK_THROWS_AS(ModelConfig::from_file(dir.string()), verl::ConfigError);
  CHECK_THROWS_WITH(ModelConfig::from_file(dir.string()), Catch::Contains("config.json"));
  verl::remove_tree(dir);
}

TEST_CASE("bug 11: numbers out of range and invalid bytes in config.json text are ConfigErrors", "[model]") {
  // nlohmann reports 1e400 as out_of_range, not parse_error: it must still end as a ConfigError.
  std::string message = config_text_error(R"({"model_type": "qwen2", "rope_theta": 1e400})");
  CHECK(message.find("hub/config.json") != std::string::npos);
  CHECK(message.find("not valid JSON") != std::string::npos);
  // Bytes that are not UTF-8 in a string: the parser's message quotes them; ours escapes them.
  message = config_text_error("{\"model_type\": \"qwen2\xff\xfe\"}");
  CHECK(message.find("not valid JSON") != std::string::npos);
  CHECK(verl::untrusted::is_utf8(message));
  // A source name that is not UTF-8 (a Linux path is any bytes) is escaped as well.
  message = config_text_error("{}", "dir\xff/config.json");
  CHECK(message.find("dir\\xff/config.json") != std::string::npos);
  CHECK(verl::untrusted::is_utf8(message));
}

TEST_CASE("parameter_shapes lists CausalLM's parameters in order without allocating them", "[model]") {
  for (const std::string type : {"qwen2", "qwen3", "llama", "phi3"}) {
    for (bool tied : {false, true}) {
      for (HeadKind head : {HeadKind::kLanguageModel, HeadKind::kValue}) {
        verl::Json j = tiny_json(type);
        j["tie_word_embeddings"] = tied;
        if (type == "llama") {
          j["attention_bias"] = true;
          j["mlp_bias"] = true;
        }
        if (head == HeadKind::kValue && tied) j["token_classification_bias"] = false;
        const ModelConfig c = ModelConfig::from_json(j);
        CausalLM model(c, head);
        std::vector<std::pair<std::string, std::vector<int64_t>>> actual;
        for (const auto& item : model.named_parameters(true)) actual.push_back({item.key(), item.value().sizes().vec()});
        INFO(type << (tied ? " tied" : "") << (head == HeadKind::kValue ? " value head" : ""));
        CHECK(parameter_shapes(c, head) == actual);
      }
    }
  }
}

TEST_CASE("init_weights quotes a bad initializer_range from config.json bounded", "[model]") {
  // Nested just under the parser's limit and long: the message must not carry the whole value.
  verl::Json range = verl::Json::array();
  for (int i = 0; i < 10000; ++i) range.push_back(std::string(100, 'r'));
  for (int depth = 0; depth < 100; ++depth) range = verl::Json::array({range});
  verl::Json j = tiny_json();
  j["initializer_range"] = range;
  CausalLM model(ModelConfig::from_json(j));
  try {
    init_weights(model, 0);
    FAIL("no InvalidArgument");
  } catch (const verl::InvalidArgument& e) {
    const std::string message = e.what();
    CHECK(message.find("initializer_range must be a number, got array [[[") != std::string::npos);
    CHECK(message.size() < 1000);
  }
}
