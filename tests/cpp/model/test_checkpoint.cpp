// verl::model checkpoint directories: save_pretrained -> load_pretrained round trips (families,
// tied, sharded, bf16, value head), the config.json written, tokenizer files, typed errors naming
// the file, and the atomic replacement of an existing directory when a save fails midway.
#include <catch2/catch.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/remove_tree.h"
#include "verl/core/error.h"
#include "verl/model/checkpoint.h"
#include "verl/model/safetensors.h"

using namespace verl::model;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("verl_ckpt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    verl::remove_tree(path, ec);
  }
};

verl::Json tiny_json(const std::string& type, bool tied) {
  verl::Json j = {{"model_type", type},        {"vocab_size", 64},          {"hidden_size", 32},
                  {"intermediate_size", 48},   {"num_hidden_layers", 2},    {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},  {"rms_norm_eps", 1e-6},      {"rope_theta", 10000.0},
                  {"max_position_embeddings", 128}, {"tie_word_embeddings", tied},
                  {"initializer_range", 0.05}, {"my_custom_key", {{"nested", 7}}}, {"eos_token_id", 3}};
  if (type == "qwen3") j["head_dim"] = 16;
  if (type == "llama")
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 16}};
  return j;
}

std::shared_ptr<CausalLM> tiny_model(const std::string& type, bool tied, HeadKind head = HeadKind::kLanguageModel) {
  torch::manual_seed(0);
  auto m = std::make_shared<CausalLM>(ModelConfig::from_json(tiny_json(type, tied)), head);
  torch::NoGradGuard ng;
  for (auto& p : m->parameters()) p.add_(0.1 * torch::randn_like(p));  // norms and biases off their init
  return m;
}

verl::Json read_json(const fs::path& p) {
  std::ifstream in(p);
  return verl::Json::parse(in);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

torch::Tensor logits(CausalLM& m) {
  torch::NoGradGuard ng;
  torch::manual_seed(5);
  return m.forward(torch::randint(64, {2, 24}, torch::kLong));
}

size_t siblings(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir.parent_path())) n += e.path() != dir;
  return n;
}

}  // namespace

TEST_CASE("save_pretrained -> load_pretrained gives identical logits", "[model]") {
  for (const std::string type : {"qwen2", "qwen3", "llama"}) {
    for (bool tied : {false, true}) {
      INFO(type << " tied=" << tied);
      TempDir tmp;
      auto m = tiny_model(type, tied);
      const fs::path dir = tmp.path / "ckpt";
      auto files = save_pretrained(*m, dir);
      CHECK(files == std::vector<fs::path>{dir / "config.json", dir / "model.safetensors"});
      SafeTensorsFile weights(dir / "model.safetensors");
      CHECK(weights.contains("lm_head.weight") == !tied);
      CHECK(weights.metadata().at("format") == "pt");
      verl::Json cfg = read_json(dir / "config.json");
      const std::string arch = type == "qwen2" ? "Qwen2ForCausalLM" : type == "qwen3" ? "Qwen3ForCausalLM" : "LlamaForCausalLM";
      CHECK(cfg["architectures"] == verl::Json::array({arch}));
      CHECK(cfg["torch_dtype"] == "float32");
      CHECK(cfg["dtype"] == "float32");
      CHECK(cfg["tie_word_embeddings"] == tied);
      CHECK(cfg["my_custom_key"]["nested"] == 7);  // unknown keys survive
      CHECK(cfg["initializer_range"] == 0.05);
      CHECK(cfg["eos_token_id"] == 3);
      if (type == "llama") {
        CHECK(cfg["rope_scaling"]["rope_type"] == "llama3");
        CHECK(cfg["rope_parameters"]["rope_type"] == "llama3");
        CHECK(cfg["rope_parameters"]["rope_theta"] == 10000.0);
      }
      auto back = load_pretrained(dir);
      CHECK(back->dtype() == torch::kFloat);
      CHECK(torch::equal(logits(*back), logits(*m)));
      // A second save of the loaded model writes the same config.
      save_pretrained(*back, tmp.path / "again");
      CHECK(read_json(tmp.path / "again" / "config.json") == cfg);
    }
  }
}

TEST_CASE("sharded save splits by max_shard_bytes and loads back", "[model]") {
  TempDir tmp;
  auto m = tiny_model("qwen2", false);
  const fs::path dir = tmp.path / "sharded";
  auto files = save_pretrained(*m, dir, {.max_shard_bytes = 20000});
  CHECK(fs::exists(dir / kSafeWeightsIndexName));
  CHECK_FALSE(fs::exists(dir / kSafeWeightsName));
  verl::Json index = read_json(dir / kSafeWeightsIndexName);
  CHECK(index["weight_map"].size() == m->named_state().size());
  std::set<std::string> shards;
  for (const auto& [name, shard] : index["weight_map"].items()) shards.insert(shard.get<std::string>());
  CHECK(shards.size() > 2);
  CHECK(files.size() == 1 + shards.size() + 1);  // config, shards, index
  auto back = load_pretrained(dir);
  CHECK(torch::equal(logits(*back), logits(*m)));
  // Replacing the sharded checkpoint with a single-file one leaves no stale shard behind.
  save_pretrained(*m, dir);
  for (const auto& e : fs::directory_iterator(dir))
    CHECK((e.path().filename() == "config.json" || e.path().filename() == "model.safetensors"));
}

TEST_CASE("bf16 saves stay bf16; dtype and device are the caller's", "[model]") {
  TempDir tmp;
  auto m = tiny_model("qwen3", false);
  m->to(torch::kBFloat16);
  save_pretrained(*m, tmp.path / "bf16");
  CHECK(SafeTensorsFile(tmp.path / "bf16" / "model.safetensors").info("model.norm.weight").dtype == "BF16");
  CHECK(read_json(tmp.path / "bf16" / "config.json")["torch_dtype"] == "bfloat16");
  auto auto_dtype = load_pretrained(tmp.path / "bf16");
  CHECK(auto_dtype->dtype() == torch::kBFloat16);
  CHECK(torch::equal(logits(*auto_dtype), logits(*m)));
  auto f32 = load_pretrained(tmp.path / "bf16", torch::kFloat);
  CHECK(f32->dtype() == torch::kFloat);
  CHECK(torch::equal(f32->named_state().at("model.norm.weight"),
                     m->named_state().at("model.norm.weight").to(torch::kFloat)));
}

TEST_CASE("value head checkpoints", "[model]") {
  TempDir tmp;
  auto v = tiny_model("llama", false, HeadKind::kValue);
  save_pretrained(*v, tmp.path / "critic");
  verl::Json cfg = read_json(tmp.path / "critic" / "config.json");
  CHECK(cfg["architectures"] == verl::Json::array({"LlamaForTokenClassification"}));
  CHECK(cfg["id2label"] == verl::Json({{"0", "LABEL_0"}}));
  CHECK(SafeTensorsFile(tmp.path / "critic" / "model.safetensors").contains("score.bias"));
  auto back = load_pretrained(tmp.path / "critic", {}, torch::kCPU, HeadKind::kValue);
  CHECK(back->head_kind() == HeadKind::kValue);
  CHECK(torch::equal(logits(*back), logits(*v)));
  // Heads must match the checkpoint.
  CHECK_THROWS_WITH(load_pretrained(tmp.path / "critic"),
                    Catch::Contains("unexpected: [score.bias, score.weight]") && Catch::Contains("model.safetensors"));
  save_pretrained(*tiny_model("llama", false), tmp.path / "actor");
  CHECK_THROWS_WITH(load_pretrained(tmp.path / "actor", {}, torch::kCPU, HeadKind::kValue),
                    Catch::Contains("score.weight") && Catch::Contains("actor"));
}

TEST_CASE("tokenizer files are copied, or kept when saving over a checkpoint", "[model]") {
  TempDir tmp;
  const fs::path tok = tmp.path / "tok";
  fs::create_directories(tok);
  write_text(tok / "tokenizer.json", "{\"model\": {}}");
  write_text(tok / "tokenizer_config.json", "{\"eos_token\": \"<e>\"}");
  write_text(tok / "generation_config.json", "{\"eos_token_id\": 3}");
  write_text(tok / "unrelated.txt", "x");
  auto m = tiny_model("qwen2", true);
  const fs::path dir = tmp.path / "out";
  save_pretrained(*m, dir, {.tokenizer_dir = tok});
  CHECK(read_text(dir / "tokenizer.json") == read_text(tok / "tokenizer.json"));
  CHECK(read_text(dir / "generation_config.json") == read_text(tok / "generation_config.json"));
  CHECK_FALSE(fs::exists(dir / "unrelated.txt"));
  CHECK_FALSE(fs::exists(dir / "vocab.json"));
  write_text(dir / "optimizer.pt", "stale");
  save_pretrained(*m, dir);  // no tokenizer_dir: the directory's own tokenizer files are kept
  CHECK(read_text(dir / "tokenizer_config.json") == read_text(tok / "tokenizer_config.json"));
  CHECK_FALSE(fs::exists(dir / "optimizer.pt"));  // the directory is replaced as a whole
  CHECK(siblings(dir) == 1);                      // only tok: no staging or old directories left
  fs::create_directory(tok / "merges.txt");       // present but not a file
  CHECK_THROWS_WITH(save_pretrained(*m, dir, {.tokenizer_dir = tok}), Catch::Contains("merges.txt"));
  CHECK_THROWS_AS(save_pretrained(*m, dir, {.tokenizer_dir = tmp.path / "nope"}), verl::CheckpointError);
}

TEST_CASE("a failed save leaves the previous checkpoint intact", "[model]") {
  TempDir tmp;
  auto old_model = tiny_model("qwen3", false);
  const fs::path dir = tmp.path / "ckpt";
  save_pretrained(*old_model, dir, {.max_shard_bytes = 20000});
  const std::string old_index = read_text(dir / kSafeWeightsIndexName);
  const torch::Tensor old_logits = logits(*old_model);

  torch::manual_seed(9);
  CausalLM new_model(ModelConfig::from_json(tiny_json("qwen3", false)));
  int written = 0;
  SaveOptions crash{.max_shard_bytes = 20000, .on_file_written = [&](const fs::path& f) {
                      if (f.filename().string().rfind("model-", 0) == 0 && ++written == 2)
                        throw std::runtime_error("simulated crash after " + f.filename().string());
                    }};
  CHECK_THROWS_WITH(save_pretrained(new_model, dir, crash), Catch::Contains("simulated crash"));
  CHECK(written == 2);
  CHECK(read_text(dir / kSafeWeightsIndexName) == old_index);
  CHECK(torch::equal(logits(*load_pretrained(dir)), old_logits));
  CHECK(siblings(dir) == 0);  // the staging directory is gone

  // A complete save then replaces it.
  save_pretrained(new_model, dir);
  CHECK(torch::equal(logits(*load_pretrained(dir)), logits(new_model)));
  CHECK_FALSE(fs::exists(dir / kSafeWeightsIndexName));
  write_text(tmp.path / "file", "x");
  CHECK_THROWS_AS(save_pretrained(new_model, tmp.path / "file"), verl::CheckpointError);
}

TEST_CASE("load_pretrained errors name the file", "[model]") {
  TempDir tmp;
  auto m = tiny_model("qwen2", false);
  const fs::path dir = tmp.path / "ckpt";
  CHECK_THROWS_WITH(load_pretrained(dir), Catch::Contains(dir.string()));
  // A file where a directory belongs; a GGUF file gets the command that converts it.
  write_text(tmp.path / "model.gguf", "GGUF");
  CHECK_THROWS_AS(load_pretrained(tmp.path / "model.gguf"), verl::CheckpointError);
  CHECK_THROWS_WITH(load_pretrained(tmp.path / "model.gguf"), Catch::Contains("python -m verl.models.from_gguf"));
  CHECK_THROWS_WITH(load_pretrained(tmp.path / "model.gguf"), Catch::Contains("is a file, not a checkpoint directory"));
  save_pretrained(*m, dir);

  fs::rename(dir / "config.json", tmp.path / "config.json");
  CHECK_THROWS_AS(load_pretrained(dir), verl::CheckpointError);
  CHECK_THROWS_WITH(load_pretrained(dir), Catch::Contains("config.json"));
  write_text(dir / "config.json", "{\"model_type\": ");
  CHECK_THROWS_AS(load_pretrained(dir), verl::CheckpointError);
  CHECK_THROWS_WITH(load_pretrained(dir), Catch::Contains((dir / "config.json").string()));
  verl::Json cfg = read_json(tmp.path / "config.json");
  cfg["model_type"] = "gpt2";
  write_text(dir / "config.json", cfg.dump());
  CHECK_THROWS_AS(load_pretrained(dir), verl::ConfigError);
  fs::copy_file(tmp.path / "config.json", dir / "config.json", fs::copy_options::overwrite_existing);

  // Truncated weights.
  const std::string bytes = read_text(dir / "model.safetensors");
  write_text(dir / "model.safetensors", bytes.substr(0, bytes.size() - 100));
  CHECK_THROWS_AS(load_pretrained(dir), verl::CheckpointError);
  CHECK_THROWS_WITH(load_pretrained(dir), Catch::Contains("model.safetensors"));
  fs::remove(dir / "model.safetensors");
  CHECK_THROWS_WITH(load_pretrained(dir), Catch::Contains("model.safetensors"));

  // A shard listed by the index is missing.
  save_pretrained(*m, dir, {.max_shard_bytes = 20000});
  const std::string shard = read_json(dir / kSafeWeightsIndexName)["weight_map"]["model.norm.weight"];
  fs::remove(dir / shard);
  CHECK_THROWS_AS(load_pretrained(dir), verl::CheckpointError);
  CHECK_THROWS_WITH(load_pretrained(dir), Catch::Contains(shard));
}

// ---- issue 21: fuzzing findings (untrusted config.json beside the weights) --------------------

namespace {

template <typename ErrorT, typename F>
std::string error_of(F&& action) {
  try {
    action();
  } catch (const ErrorT& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception type: " << e.what());
  }
  FAIL("no exception");
  return "";
}

void rewrite_config(const fs::path& dir, const std::function<void(verl::Json&)>& edit) {
  verl::Json cfg = read_json(dir / "config.json");
  edit(cfg);
  write_text(dir / "config.json", cfg.dump());
}

}  // namespace

TEST_CASE("bug 3: config.json with num_hidden_layers 1e9 fails naming the field before allocating", "[model]") {
  TempDir tmp;
  const fs::path dir = tmp.path / "ckpt";
  save_pretrained(*tiny_model("qwen2", false), dir);
  const std::string saved = read_text(dir / "config.json");
  for (const char* field : {"num_hidden_layers", "hidden_size", "vocab_size", "intermediate_size",
                            "num_attention_heads"}) {
    write_text(dir / "config.json", saved);
    rewrite_config(dir, [&](verl::Json& c) { c[field] = int64_t{1'000'000'000}; });
    const std::string message = error_of<verl::ConfigError>([&] { load_pretrained(dir); });
    INFO(message);
    CHECK(message.find(std::string("'") + field + "'") != std::string::npos);
    CHECK(message.find((dir / "config.json").string()) != std::string::npos);
  }
}

TEST_CASE("bug 3: a config.json that does not fit the weights fails on their headers, before allocating",
          "[model]") {
  TempDir tmp;
  const fs::path dir = tmp.path / "ckpt";
  save_pretrained(*tiny_model("qwen2", false), dir);
  const std::string weights = (dir / "model.safetensors").string();
  const std::string config = (dir / "config.json").string();
  // Every size at its bound: building this model would need ~2^56 parameters, so passing here
  // (a CheckpointError, not an allocation failure) shows nothing was allocated first.
  rewrite_config(dir, [](verl::Json& c) {
    c["vocab_size"] = int64_t{1} << 24;
    c["hidden_size"] = int64_t{1} << 17;
    c["intermediate_size"] = int64_t{1} << 20;
    c["num_hidden_layers"] = 4096;
    c["num_attention_heads"] = 1024;
    c["num_key_value_heads"] = 1024;
  });
  std::string message = error_of<verl::CheckpointError>([&] { load_pretrained(dir); });
  INFO(message);
  CHECK(message.find(weights) != std::string::npos);
  CHECK(message.find(config) != std::string::npos);
  CHECK(message.find("model.embed_tokens.weight (checkpoint [64, 32] in '" + weights + "', config [16777216, 131072])") !=
        std::string::npos);
  CHECK(message.find("missing: [model.layers.2.self_attn.q_proj.weight") != std::string::npos);
  CHECK(message.find("more)") != std::string::npos);  // tens of thousands of names are counted, not listed
  CHECK(message.size() < 8000);

  // One field off: the message names the tensor and both shapes.
  rewrite_config(dir, [](verl::Json& c) {
    c = tiny_json("qwen2", false);
    c["intermediate_size"] = 50;
  });
  message = error_of<verl::CheckpointError>([&] { load_pretrained(dir); });
  CHECK(message.find("shape mismatch: [model.layers.0.mlp.gate_proj.weight (checkpoint [48, 32] in '" + weights +
                     "', config [50, 32])") != std::string::npos);
}

TEST_CASE("bug 9 / 11: deep, out-of-range and unreadable config.json are CheckpointErrors naming it", "[model]") {
  TempDir tmp;
  const fs::path dir = tmp.path / "ckpt";
  save_pretrained(*tiny_model("llama", false), dir);
  const fs::path config = dir / "config.json";
  verl::Json good = read_json(config);
  // The fuzzer's input: a value nested 100,000 deep (the config was copied recursively).
  std::string text = good.dump();
  text.insert(1, R"("my_custom_key": )" + std::string(100000, '[') + std::string(100000, ']') + ",");
  write_text(config, text);
  CHECK_THROWS_WITH(load_pretrained(dir), Catch::Contains(config.string()) && Catch::Contains("nesting deeper"));
  text = good.dump();
  text.insert(1, R"("rope_theta": 1e400,)");
  write_text(config, text);
  CHECK_THROWS_WITH(load_pretrained(dir), Catch::Contains(config.string()) && Catch::Contains("not valid JSON"));
  CHECK_THROWS_AS(load_pretrained(dir), verl::CheckpointError);
  fs::remove(config);
  fs::create_symlink("config.json", config);  // a loop
  const std::string message = error_of<verl::CheckpointError>([&] { load_pretrained(dir); });
  CHECK(message.find(config.string()) != std::string::npos);
  CHECK(message.find("symbolic links") != std::string::npos);
  // A checkpoint directory whose name is not UTF-8 is named escaped.
  CHECK_THROWS_WITH(load_pretrained(tmp.path / "ckpt\xff"), Catch::Contains("ckpt\\xff"));
}

TEST_CASE("bug 13: load_pretrained does not follow weight_map outside the checkpoint", "[model]") {
  TempDir tmp;
  auto m = tiny_model("qwen3", false);
  const fs::path dir = tmp.path / "ckpt";
  save_pretrained(*m, dir, {.max_shard_bytes = 20000});
  // The attacker's copy of one shard, outside the directory, and an index pointing at it.
  verl::Json index = read_json(dir / kSafeWeightsIndexName);
  const std::string shard = index["weight_map"]["model.norm.weight"];
  fs::copy_file(dir / shard, tmp.path / shard);
  for (auto& [name, file] : index["weight_map"].items())
    if (file == shard) file = "../" + shard;
  write_text(dir / kSafeWeightsIndexName, index.dump());
  const std::string message = error_of<verl::CheckpointError>([&] { load_pretrained(dir); });
  CHECK(message.find((dir / kSafeWeightsIndexName).string()) != std::string::npos);
  CHECK(message.find("\"../" + shard + "\"") != std::string::npos);
}

TEST_CASE("a checkpoint of symlinks (the Hugging Face hub cache) loads", "[model]") {
  TempDir tmp;
  auto m = tiny_model("qwen2", true);
  const fs::path staged = tmp.path / "staged";
  save_pretrained(*m, staged, {.max_shard_bytes = 20000});
  const fs::path blobs = tmp.path / "hub" / "blobs", snapshot = tmp.path / "hub" / "snapshots" / "0123abc";
  fs::create_directories(blobs);
  fs::create_directories(snapshot);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(staged)) files.push_back(e.path());
  for (const fs::path& f : files) {
    fs::rename(f, blobs / ("sha-" + f.filename().string()));
    fs::create_symlink(fs::path("../../blobs") / ("sha-" + f.filename().string()), snapshot / f.filename());
  }
  CHECK(torch::equal(logits(*load_pretrained(snapshot)), logits(*m)));
}
