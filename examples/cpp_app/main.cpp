// GRPO from a C++ program with no Python at all: libverl through find_package(verl) / verl::verl.
//
// The task is the demo's arithmetic ("Compute 37+48." -> "85", as examples/arith/arith_task.py), generated
// here from a seed in verl's dataset schema. The reward is a C++ lambda: decode each response, compare it
// with the row's ground truth, and put the score on the response's last token. Every step prints verl's
// metrics; the program exits non-zero unless every step reports them and all its metrics are finite.
//
//   verl_cpp_app [--model HF_DIR] [--tokenizer PATH] [--steps N] [--seed N]
//
// Without --model it trains a tiny random Qwen2-architecture model (a few seconds on one CPU core); with
// one it loads a Hugging Face checkpoint directory (config.json + *.safetensors) and, unless --tokenizer is
// given, the tokenizer.json beside it.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <torch/torch.h>
#include <verl/verl.h>

namespace {

// The arith tokenizer shipped with the sources (CMakeLists.txt passes its absolute path).
#ifndef VERL_ARITH_TOKENIZER
#define VERL_ARITH_TOKENIZER "examples/arith/tokenizer"
#endif

struct Args {
  std::string model_dir;  // empty: a tiny random model
  std::string tokenizer = VERL_ARITH_TOKENIZER;
  int64_t steps = 3;
  int64_t seed = 1;
};

int64_t parse_int(const std::string& flag, const std::string& value, int64_t min) {
  size_t used = 0;
  int64_t n = min - 1;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || n < min) {
    throw verl::InvalidArgument(flag + " expects an integer >= " + std::to_string(min) + ", got '" + value + "'");
  }
  return n;
}

Args parse_args(int argc, char** argv) {
  Args args;
  bool tokenizer_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw verl::InvalidArgument("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--model") {
      args.model_dir = value;
    } else if (flag == "--tokenizer") {
      args.tokenizer = value;
      tokenizer_given = true;
    } else if (flag == "--steps") {
      args.steps = parse_int(flag, value, 1);
    } else if (flag == "--seed") {
      args.seed = parse_int(flag, value, 0);
    } else {
      throw verl::InvalidArgument("unknown option " + flag +
                                  " (usage: verl_cpp_app [--model HF_DIR] [--tokenizer PATH] [--steps N] [--seed N])");
    }
  }
  if (!args.model_dir.empty() && !tokenizer_given) args.tokenizer = args.model_dir;
  return args;
}

// `count` distinct problems "Compute a+b." / "Compute a-b." with operands 0..99, as rows of verl's RL schema.
std::vector<verl::Json> arith_rows(int64_t count, int64_t seed) {
  std::mt19937_64 rng(static_cast<uint64_t>(seed));  // mt19937_64's output is fixed by the standard
  std::set<std::tuple<int64_t, char, int64_t>> seen;
  std::vector<verl::Json> rows;
  while (static_cast<int64_t>(rows.size()) < count) {
    const int64_t a = static_cast<int64_t>(rng() % 100), b = static_cast<int64_t>(rng() % 100);
    const char op = rng() % 2 == 0 ? '+' : '-';
    if (!seen.insert({a, op, b}).second) continue;
    const std::string question = "Compute " + std::to_string(a) + op + std::to_string(b) + ".";
    rows.push_back({{"data_source", "arith"},
                    {"prompt", verl::Json::array({{{"role", "user"}, {"content", question}}})},
                    {"ability", "math"},
                    {"reward_model", {{"style", "rule"}, {"ground_truth", std::to_string(op == '+' ? a + b : a - b)}}},
                    {"extra_info", {{"split", "train"}, {"index", rows.size()}}}});
  }
  return rows;
}

std::string strip(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  return begin == std::string::npos ? "" : text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// A tiny Qwen2-architecture model over the tokenizer's vocabulary, initialised as transformers' from_config.
std::shared_ptr<verl::model::CausalLM> tiny_qwen2(const verl::tokenizer::Tokenizer& tokenizer, int64_t seed) {
  if (!tokenizer.eos_token_id() || !tokenizer.pad_token_id())
    throw verl::InvalidArgument("the tokenizer needs eos_token and pad_token (tokenizer_config.json) for a new model");
  verl::Json config = {{"model_type", "qwen2"},
                       {"vocab_size", tokenizer.vocab_size()},
                       {"hidden_size", 64},
                       {"intermediate_size", 128},
                       {"num_hidden_layers", 2},
                       {"num_attention_heads", 4},
                       {"num_key_value_heads", 2},
                       {"max_position_embeddings", 128},
                       {"tie_word_embeddings", true},
                       {"eos_token_id", *tokenizer.eos_token_id()},
                       {"pad_token_id", *tokenizer.pad_token_id()}};
  auto model = std::make_shared<verl::model::CausalLM>(verl::model::ModelConfig::from_json(config));
  verl::model::init_weights(*model, static_cast<uint64_t>(seed));
  return model;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    torch::set_num_threads(1);

    // verl's config keys and defaults (ppo_trainer.yaml), with the overrides a CLI user would type.
    const verl::Config config = verl::Config::load(
        "", {"algorithm.adv_estimator=grpo",
             "data.train_batch_size=4",  // prompts per step
             "data.max_prompt_length=32", "data.max_response_length=8", "data.seed=" + std::to_string(args.seed),
             "actor_rollout_ref.rollout.n=4",  // responses per prompt: the GRPO group
             "actor_rollout_ref.rollout.seed=" + std::to_string(args.seed),
             "actor_rollout_ref.actor.ppo_mini_batch_size=4",  // prompts per optimizer step
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
             "actor_rollout_ref.actor.optim.lr=1e-3",
             "actor_rollout_ref.model.enable_gradient_checkpointing=false"});

    // Prompts: chat rows -> ChatML -> token ids, left-padded to data.max_prompt_length, shuffled each epoch.
    const verl::tokenizer::Tokenizer tokenizer = verl::tokenizer::Tokenizer::from_file(args.tokenizer);
    verl::data::RLHFDataset dataset(arith_rows(64, args.seed), tokenizer,
                                    verl::data::RLHFDatasetOptions::from_config(config));
    verl::data::RLDataLoader loader = verl::data::RLDataLoader::from_config(dataset, config);

    std::shared_ptr<verl::model::CausalLM> model =
        args.model_dir.empty() ? tiny_qwen2(tokenizer, args.seed)
                               : verl::model::load_pretrained(args.model_dir, torch::kFloat32);

    // The reward: 1 when the decoded response is exactly the answer, on the last valid response token.
    // Surrounding whitespace is ignored, as in arith_task.compute_score. (A random model is never right, so
    // its scores, GRPO's advantages and pg_loss stay 0: the run shows the pipeline, not learning; a model that
    // already answers some problems, given with --model, gets a learning signal.)
    verl::RewardFn reward = [&tokenizer](const verl::DataProto& batch) {
      const torch::Tensor responses = batch.tensor("responses");                   // (bs, response_length)
      const torch::Tensor lengths = batch.tensor("response_mask").sum(-1).cpu();  // (bs,)
      torch::Tensor scores = torch::zeros(responses.sizes(), torch::kFloat32);
      for (int64_t i = 0; i < batch.size(); ++i) {
        const int64_t length = lengths[i].item<int64_t>();
        if (length == 0) continue;
        const torch::Tensor ids = responses[i].slice(0, 0, length).to(torch::kCPU, torch::kInt32).contiguous();
        const std::string text = tokenizer.decode({ids.data_ptr<int32_t>(), ids.data_ptr<int32_t>() + length},
                                                  /*skip_special_tokens=*/true);
        const auto truth = batch.column("reward_model")[static_cast<size_t>(i)]["ground_truth"].get<std::string>();
        scores[i][length - 1] = strip(text) == truth ? 1.0 : 0.0;
      }
      return verl::RewardOutput{scores.to(responses.device()), {}};
    };

    verl::trainer::PPOTrainerOptions options;
    options.pad_token_id = dataset.pad_token_id();
    if (auto eos = tokenizer.eos_token_id()) options.eos_token_ids = {*eos};
    options.total_training_steps = args.steps;
    verl::PPOTrainer trainer(config, {model, nullptr, nullptr, nullptr}, reward, options);

    // One line per step with some of verl's metric names (trainer.step returns them all).
    const std::vector<std::string> shown = {"critic/score/mean", "actor/pg_loss", "actor/entropy",
                                            "response_length/mean", "timing_s/step"};
    bool ok = true;
    while (trainer.global_step() < args.steps) {
      for (const verl::DataProto& prompts : loader.next_epoch()) {
        const verl::trainer::Metrics metrics = trainer.step(prompts);
        std::cout << "step " << trainer.global_step();
        for (const std::string& key : shown) {
          const auto it = metrics.find(key);
          if (it == metrics.end()) {
            std::cout << " | " << key << " MISSING";
            ok = false;
          } else {
            std::cout << " | " << key << " " << std::fixed << std::setprecision(4) << it->second;
          }
        }
        std::cout << std::endl;
        for (const auto& [key, value] : metrics) {
          if (!std::isfinite(value)) {
            std::cerr << "step " << trainer.global_step() << ": " << key << " is not finite\n";
            ok = false;
          }
        }
        if (trainer.global_step() >= args.steps) break;
      }
    }
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
  } catch (const std::exception& e) {  // verl::Error subclasses name the key, file or sample at fault
    std::cerr << "verl_cpp_app: " << e.what() << "\n";
    return EXIT_FAILURE;
  }
}
