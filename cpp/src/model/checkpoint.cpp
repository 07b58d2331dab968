// HF checkpoint directories: load_pretrained / save_pretrained (verl/model/checkpoint.h).
#include "verl/model/checkpoint.h"

#include <map>
#include <set>
#include <sstream>

#include "core/untrusted.h"
#include "json_file.h"
#include "sequence_classifier.h"
#include "staged_directory.h"
#include "verl/core/error.h"
#include "verl/core/json.h"
#include "verl/model/safetensors.h"

namespace verl::model {
namespace fs = std::filesystem;
using detail::commit_directory;
using detail::fsync_dir;
using detail::read_all;
using detail::sibling;
using detail::StagingGuard;
using detail::write_synced;

namespace {

constexpr const char* kConfigName = "config.json";

std::string dtype_name(torch::Dtype d) {
  switch (d) {
    case torch::kFloat: return "float32";
    case torch::kBFloat16: return "bfloat16";
    case torch::kHalf: return "float16";
    case torch::kDouble: return "float64";
    default: VERL_FAIL(InvalidArgument, "save_pretrained: parameters of dtype ", c10::toString(d), " cannot be saved");
  }
}

torch::Dtype dtype_from_name(const std::string& name) {
  if (name == "float32") return torch::kFloat;
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float16") return torch::kHalf;
  if (name == "float64") return torch::kDouble;
  VERL_FAIL(ConfigError, "unsupported torch_dtype '", name, "'");
}

// transformers' class-name prefix of each model_type.
std::string architecture_prefix(const std::string& model_type) {
  if (model_type == "qwen2") return "Qwen2";
  if (model_type == "qwen3") return "Qwen3";
  if (model_type == "llama") return "Llama";
  if (model_type == "mistral") return "Mistral";
  if (model_type == "phi3") return "Phi3";
  VERL_FAIL(InvalidArgument, "no transformers architecture for model_type '", model_type, "'");
}


// config.json, parsed depth-limited (it is untrusted input; see json_file.h). A file that cannot
// be read or parsed is a CheckpointError; values that make no model are ModelConfig's ConfigError.
Json read_config(const fs::path& path) {
  std::error_code ec;
  VERL_CHECK_AS(CheckpointError, fs::exists(fs::symlink_status(path, ec)), "checkpoint '",
                display_path(path.parent_path()), "': missing ", path.filename().string(), " ('", display_path(path),
                "' does not exist)");
  return read_json_file<CheckpointError>(path, "model config");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Names for a message: the first 20, then a count (a config for 4096 layers against a 2-layer
// checkpoint misses tens of thousands).
std::string name_list(const std::vector<std::string>& names) {
  constexpr size_t kShown = 20;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kShown) out += ", ... (" + std::to_string(names.size() - kShown) + " more)";
  return out;
}

// Compares the checkpoint's tensor names and shapes, read from the safetensors headers, with the
// parameters of the model config.json describes (parameter_shapes: computed, not allocated). This
// runs before the model is built, so a config.json that does not fit its weights (say
// num_hidden_layers 4000 beside a 2-layer checkpoint, or a vocab_size 100x the embedding's rows)
// fails naming the tensors, both shapes and both files instead of first allocating the model it
// describes. The rules are load_state_dict's (strict names; a tied model may carry lm_head.weight).
void check_weights_fit_config(const SafeTensorsDir& weights, const ModelConfig& config, HeadKind head,
                              const fs::path& config_path) {
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> expected;
  for (const auto& [name, shape] : parameter_shapes(config, head)) {
    expected.insert(name);
    if (!weights.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const TensorInfo& info = weights.info(name);
    if (info.shape != shape)
      mismatched.push_back(untrusted::escape(name) + " (checkpoint " + shape_text(info.shape) + " in '" +
                           display_path(weights.file(name).path()) + "', config " + shape_text(shape) + ")");
  }
  const bool tied_alias_ok = config.tie_word_embeddings && head == HeadKind::kLanguageModel;
  for (const std::string& name : weights.keys())
    if (!expected.count(name) && !(name == "lm_head.weight" && tied_alias_ok))
      unexpected.push_back(untrusted::escape(name));
  std::string err;
  if (!missing.empty()) err += " missing: [" + name_list(missing) + "];";
  if (!unexpected.empty()) err += " unexpected: [" + name_list(unexpected) + "];";
  if (!mismatched.empty()) err += " shape mismatch: [" + name_list(mismatched) + "];";
  VERL_CHECK_AS(CheckpointError, err.empty(), "checkpoint '", display_path(weights.weights_path()),
                "' does not fit its config '", display_path(config_path), "':", err);
}


}  // namespace

std::shared_ptr<CausalLM> load_pretrained(const fs::path& dir, std::optional<torch::Dtype> dtype, torch::Device device,
                                          HeadKind head) {
  std::error_code ec;  // non-throwing: a symlink loop is "does not exist", not a filesystem_error
  if (fs::is_regular_file(dir, ec)) {
    // Python converts a GGUF file itself (verl.models.gguf_checkpoint); C++ reads checkpoint directories only.
    const bool gguf = dir.extension() == ".gguf";
    VERL_FAIL(CheckpointError, "checkpoint '", display_path(dir), "' is a file, not a checkpoint directory",
               gguf ? "; convert the GGUF file first: python -m verl.models.from_gguf FILE.gguf OUT_DIR (the Python "
                      "API and verl's CLI accept the .gguf path and convert it themselves)"
                    : "");
  }
  VERL_CHECK_AS(CheckpointError, fs::is_directory(dir, ec), "checkpoint directory '", display_path(dir),
                "' does not exist");
  const fs::path config_path = dir / kConfigName;
  ModelConfig config = ModelConfig::from_json(read_config(config_path), config_path.string());
  const torch::Dtype target_dtype = dtype.value_or(dtype_from_name(config.torch_dtype));

  // Open (map and validate) the weights and check them against the config before building the
  // model: a corrupt checkpoint, or a config.json that does not describe it, fails before any
  // parameter is allocated.
  const SafeTensorsDir weights(dir);
  const std::string shown = display_path(weights.weights_path());
  if (head == HeadKind::kValue) {
    VERL_CHECK_AS(CheckpointError, weights.contains("score.weight"), "checkpoint '", shown,
                  "' has no score.weight: not a value-head checkpoint (AutoModelForTokenClassification, "
                  "num_labels=1)");
    const std::vector<int64_t>& score = weights.info("score.weight").shape;
    const int64_t labels = score.empty() ? 0 : score[0];
    VERL_CHECK_AS(CheckpointError, labels == 1, "checkpoint '", shown, "': score.weight has ", labels,
                  " labels, a value head has 1");
  }
  check_weights_fit_config(weights, config, head, config_path);

  auto model = std::make_shared<CausalLM>(std::move(config), head);
  model->to(target_dtype);
  model->to(device);
  try {
    model->load_state_dict(weights.load_all(), /*strict=*/true);
  } catch (const CheckpointError& e) {
    VERL_FAIL(CheckpointError, "checkpoint '", shown, "': ", e.what());
  }
  return model;
}

Json pretrained_config_json(const CausalLM& model) {
  const ModelConfig& c = model.config();
  Json j = c.to_json();
  const std::string prefix = architecture_prefix(c.model_type);
  if (model.head_kind() == HeadKind::kValue) {
    // a reward model keeps its sequence-classifier architecture (last-token pooling, no score bias)
    const bool sequence = is_sequence_classifier(c.source_json);
    j["architectures"] = Json::array({prefix + (sequence ? "ForSequenceClassification" : "ForTokenClassification")});
    // transformers derives num_labels from id2label; score must come out Linear(hidden, 1).
    const bool one_label = j.contains("id2label") && j["id2label"].is_object() && j["id2label"].size() == 1;
    if (!one_label) {
      j["id2label"] = {{"0", "LABEL_0"}};
      j["label2id"] = {{"LABEL_0", 0}};
    }
  } else {
    j["architectures"] = Json::array({prefix + "ForCausalLM"});
  }
  const std::string dtype = dtype_name(model.dtype());
  j["torch_dtype"] = dtype;
  j["dtype"] = dtype;
  return j;
}

std::vector<fs::path> save_pretrained(const CausalLM& model, const fs::path& dir_in, const SaveOptions& options) {
  VERL_CHECK(options.max_shard_bytes > 0, "save_pretrained: max_shard_bytes must be positive, got ",
             options.max_shard_bytes);
  std::error_code ec;  // every std::filesystem call below uses the non-throwing overload
  fs::path dir = fs::absolute(dir_in, ec).lexically_normal();
  VERL_CHECK_AS(CheckpointError, !ec, "cannot save to '", display_path(dir_in), "': ", ec.message());
  if (dir.filename().empty()) dir = dir.parent_path();  // "out/" -> "out"
  fs::create_directories(dir.parent_path(), ec);
  VERL_CHECK_AS(CheckpointError, !ec, "cannot create '", display_path(dir.parent_path()), "': ", ec.message());
  const bool target_exists = fs::exists(fs::symlink_status(dir, ec));
  VERL_CHECK_AS(CheckpointError, !target_exists || fs::is_directory(dir, ec), "cannot save to '", display_path(dir),
                "': it exists and is not a directory");

  // Tokenizer files come from tokenizer_dir, or else are kept from the directory being replaced
  // (saving over a checkpoint must not lose its tokenizer, as transformers' save_pretrained keeps it).
  std::optional<fs::path> tokenizer_src = options.tokenizer_dir;
  if (!tokenizer_src && target_exists) tokenizer_src = dir;
  if (options.tokenizer_dir)
    VERL_CHECK_AS(CheckpointError, fs::is_directory(*options.tokenizer_dir, ec),
                  "save_pretrained: tokenizer directory '", display_path(*options.tokenizer_dir), "' does not exist");

  StagingGuard staging{sibling(dir, "tmp")};
  fs::create_directory(staging.path, ec);
  VERL_CHECK_AS(CheckpointError, !ec, "cannot create '", display_path(staging.path), "': ", ec.message());
  std::vector<fs::path> written;
  auto done = [&](const fs::path& file) {
    written.push_back(file);
    if (options.on_file_written) options.on_file_written(file);
  };

  const fs::path config_path = staging.path / kConfigName;
  Json config = pretrained_config_json(model);
  if (options.config_dtype) config["torch_dtype"] = config["dtype"] = dtype_name(*options.config_dtype);
  write_synced(config_path, config.dump(2) + "\n");
  done(config_path);

  if (options.write_weights) {
    // Registration order is transformers' state_dict order, so shards split where HF's would. A model with LoRA
    // adapters is written merged (W + (B A) * scaling, PEFT's merge_and_unload): the plain model transformers loads;
    // the adapters themselves go to PEFT's files (verl/model/peft_adapter.h).
    const std::map<std::string, torch::Tensor> merged =
        model.lora() ? model.merged_state() : std::map<std::string, torch::Tensor>();
    NamedTensors tensors;
    for (const auto& item : model.named_parameters(true)) {
      if (!model.lora()) {
        tensors.emplace_back(item.key(), item.value().detach());
      } else if (auto it = merged.find(item.key()); it != merged.end()) {
        tensors.emplace_back(item.key(), it->second.detach());
      }
    }
    try {
      for (const fs::path& file : save_sharded(staging.path, tensors, options.max_shard_bytes)) done(file);
    } catch (const InvalidArgument& e) {
      VERL_FAIL(CheckpointError, "cannot save weights to '", display_path(staging.path), "': ", e.what());
    }
  }

  if (tokenizer_src) {
    for (const std::string& name : kTokenizerFiles) {
      const fs::path src = *tokenizer_src / name;
      if (!fs::exists(fs::symlink_status(src, ec)) && !fs::exists(src, ec)) continue;
      VERL_CHECK_AS(CheckpointError, fs::is_regular_file(src, ec), "cannot copy tokenizer file '", display_path(src),
                    "': not a regular file", ec ? " (" + ec.message() + ")" : std::string());
      const fs::path dst = staging.path / name;
      write_synced(dst, read_all(src));
      done(dst);
    }
  }
  fsync_dir(staging.path);
  commit_directory(staging.path, dir);
  staging.committed = true;

  std::vector<fs::path> out;
  for (const fs::path& file : written) out.push_back(dir / file.filename());
  return out;
}

}  // namespace verl::model
