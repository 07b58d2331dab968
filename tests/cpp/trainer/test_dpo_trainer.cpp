// verl::trainer::DPOTrainer on tiny float64 models: the step's metrics and gradient norm equal an independent
// computation (padded forward, log_softmax + gather, the DPO formula by hand), the update is invariant to the
// micro-batch cut (pairs, token budget, padding removed or not), the reference stays frozen, bad pair batches are
// DataErrors that change nothing, and a tiny random model learns a toy preference (held-out accuracy +30 points).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/trainer/dpo_trainer.h"
#include "tensor_compare.h"

using namespace verl;
using verl::trainer::DPOConfig;
using verl::trainer::DPOTrainer;

namespace {

using verl::testing::max_param_diff;

constexpr int64_t kPairs = 4, kSeq = 12, kVocab = 64;

std::shared_ptr<model::CausalLM> tiny_model(uint64_t seed = 0, torch::Dtype dtype = torch::kDouble) {
  Json j = {{"model_type", "qwen2"},     {"vocab_size", kVocab},       {"hidden_size", 32},
            {"intermediate_size", 48},   {"num_hidden_layers", 2},     {"num_attention_heads", 4},
            {"num_key_value_heads", 2},  {"rms_norm_eps", 1e-6},       {"rope_theta", 10000.0},
            {"max_position_embeddings", 64}, {"tie_word_embeddings", false}};
  torch::manual_seed(seed);
  auto m = std::make_shared<model::CausalLM>(model::ModelConfig::from_json(j), model::HeadKind::kLanguageModel);
  m->to(dtype);
  return m;
}

// kPairs pairs, rows 2i (chosen) and 2i + 1 (rejected): the same prompt of 2..4 tokens, then completions of
// different lengths (loss_mask 1), right-padded to kSeq.
DataProto pair_batch(uint64_t seed = 1) {
  torch::manual_seed(seed);
  const int64_t rows = 2 * kPairs;
  torch::Tensor prompt_len = torch::randint(2, 5, {kPairs}, torch::kLong).repeat_interleave(2);
  torch::Tensor len = prompt_len + torch::randint(1, kSeq - 4 + 1, {rows}, torch::kLong);
  torch::Tensor prompts = torch::randint(0, kVocab, {kPairs, kSeq}, torch::kLong).repeat_interleave(2, 0);
  torch::Tensor cols = torch::arange(kSeq).unsqueeze(0);
  torch::Tensor in_prompt = cols < prompt_len.unsqueeze(1);
  torch::Tensor attention_mask = (cols < len.unsqueeze(1)).to(torch::kLong);
  torch::Tensor input_ids =
      torch::where(in_prompt, prompts, torch::randint(0, kVocab, {rows, kSeq}, torch::kLong)) * attention_mask;
  DataProto d;
  d.set_tensor("input_ids", input_ids);
  d.set_tensor("attention_mask", attention_mask);
  d.set_tensor("loss_mask", (~in_prompt).to(torch::kLong) * attention_mask);
  return d;
}

DPOConfig dpo_config(const std::vector<std::string>& overrides = {}, double beta = 0.5, double ls = 0.0,
                     const std::string& type = "sigmoid", double lr = 0.01) {
  std::vector<std::string> all = {"data.micro_batch_size_per_gpu=2", "data.use_dynamic_bsz=false",
                                  "optim.lr=" + std::to_string(lr), "optim.weight_decay=0.0",
                                  "model.enable_gradient_checkpointing=false",
                                  // these tests hold the step to an fp64 computation: the model's own dtype computes
                                  // (the shipped `auto` is bf16 on a CPU with bf16 units)
                                  "engine.dtype=fp32"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return DPOConfig::from_config(Config::load_sft("", all), beta, ls, type, 10);
}

// Each row's summed completion log-prob from the padded forward (right padding: log_softmax at t - 1 gathered at t).
torch::Tensor reference_sequence_logps(model::CausalLM& m, const DataProto& d) {
  torch::Tensor ids = d.tensor("input_ids"), attn = d.tensor("attention_mask");
  torch::Tensor logp = torch::log_softmax(m.forward(ids, attn).narrow(1, 0, kSeq - 1), -1)
                           .gather(-1, ids.narrow(1, 1, kSeq - 1).unsqueeze(-1))
                           .squeeze(-1);
  torch::Tensor mask = (d.tensor("loss_mask") * attn).narrow(1, 1, kSeq - 1).to(torch::kDouble);
  return (logp * mask).sum(1);
}

torch::Tensor even(const torch::Tensor& t) { return t.slice(0, 0, t.size(0), 2); }
torch::Tensor odd(const torch::Tensor& t) { return t.slice(0, 1, t.size(0), 2); }

}  // namespace

TEST_CASE("dpo: step metrics and gradient norm equal an independent padded computation", "[trainer][dpo]") {
  DataProto d = pair_batch();
  for (const bool remove_padding : {true, false}) {
    DYNAMIC_SECTION("use_remove_padding=" << remove_padding) {
      auto policy = tiny_model(0), reference = tiny_model(7);
      // the independent computation, on copies
      auto p2 = tiny_model(0), r2 = tiny_model(7);
      torch::Tensor pol = reference_sequence_logps(*p2, d);
      torch::Tensor ref;
      {
        torch::NoGradGuard g;
        ref = reference_sequence_logps(*r2, d);
      }
      const double beta = 0.5;
      torch::Tensor delta = (even(pol) - even(ref)) - (odd(pol) - odd(ref));
      torch::Tensor losses = -torch::log_sigmoid(beta * delta);
      losses.mean().backward();
      double sq = 0;
      for (const auto& q : p2->parameters()) sq += q.grad().pow(2).sum().item<double>();

      DPOTrainer t(dpo_config({std::string("model.use_remove_padding=") + (remove_padding ? "true" : "false")}),
                   policy, reference);
      auto metrics = t.train_step(d);
      torch::Tensor cr = beta * (even(pol) - even(ref)).detach(), rr = beta * (odd(pol) - odd(ref)).detach();
      CHECK(metrics.at("loss") == Approx(losses.mean().item<double>()).epsilon(1e-12));
      CHECK(metrics.at("rewards/chosen") == Approx(cr.mean().item<double>()).epsilon(1e-10));
      CHECK(metrics.at("rewards/rejected") == Approx(rr.mean().item<double>()).epsilon(1e-10));
      CHECK(metrics.at("rewards/margins") == Approx((cr - rr).mean().item<double>()).epsilon(1e-10));
      CHECK(metrics.at("rewards/accuracies") == (cr > rr).to(torch::kDouble).mean().item<double>());
      CHECK(metrics.at("logps/chosen") == Approx(even(pol).mean().item<double>()).epsilon(1e-12));
      CHECK(metrics.at("logps/rejected") == Approx(odd(pol).mean().item<double>()).epsilon(1e-12));
      CHECK(metrics.at("grad_norm") == Approx(std::sqrt(sq)).epsilon(1e-10));
      CHECK(metrics.at("learning_rate") == Approx(0.01));
      CHECK(std::abs(metrics.at("rewards/margins")) > 1e-3);  // the two models differ: the test is not vacuous
      // the reference is frozen and unchanged; the policy moved
      CHECK(max_param_diff(*reference, *tiny_model(7)) == 0.0);
      CHECK(max_param_diff(*policy, *tiny_model(0)) > 1e-4);
      CHECK(t.global_step() == 1);
    }
  }
}

TEST_CASE("dpo: the default reference is a frozen copy; policy == reference gives zero rewards and log 2",
          "[trainer][dpo]") {
  DataProto d = pair_batch(3);
  auto policy = tiny_model(0);
  DPOTrainer t(dpo_config(), policy);
  REQUIRE(t.reference() != policy);
  CHECK(max_param_diff(*t.reference(), *policy) == 0.0);
  trainer::DPOMetricSums before = t.evaluate(d);
  CHECK(before.num_pairs == kPairs);
  auto m = before.means();
  CHECK(m.at("loss") == Approx(std::log(2.0)).epsilon(1e-14));
  CHECK(m.at("rewards/chosen") == 0.0);
  CHECK(m.at("rewards/accuracies") == 0.0);  // ties are not wins (TRL: chosen > rejected)
  torch::Tensor seq = t.sequence_log_probs(d);
  CHECK((seq - reference_sequence_logps(*tiny_model(0), d).detach()).abs().max().item<double>() < 1e-11);
  t.train_step(d);
  t.train_step(d);
  CHECK(max_param_diff(*t.reference(), *tiny_model(0)) == 0.0);
  CHECK((t.sequence_log_probs(d, /*reference=*/true) - seq).abs().max().item<double>() < 1e-12);
  // trained on this batch twice: the chosen sequences gained on the rejected ones
  CHECK(t.evaluate(d).means().at("rewards/margins") > 0.0);
}

TEST_CASE("dpo: the update is invariant to the micro-batch cut and to padding removal", "[trainer][dpo]") {
  DataProto d1 = pair_batch(1), d2 = pair_batch(2);
  const std::vector<std::vector<std::string>> variants = {
      {"data.micro_batch_size_per_gpu=1"},
      {"data.micro_batch_size_per_gpu=4"},
      {"data.micro_batch_size_per_gpu=3", "model.use_remove_padding=false"},
      {"data.use_dynamic_bsz=true", "data.max_token_len_per_gpu=24"},
      {"data.use_dynamic_bsz=true", "data.max_token_len_per_gpu=40", "model.enable_gradient_checkpointing=true"},
  };
  for (const std::string type : {"sigmoid", "ipo", "hinge"}) {
    auto base = tiny_model(0);
    DPOTrainer tb(dpo_config(variants[0], 0.5, 0.0, type), base, tiny_model(7));
    auto b1 = tb.train_step(d1);
    tb.train_step(d2);
    for (size_t i = 1; i < variants.size(); ++i) {
      DYNAMIC_SECTION(type << " variant " << i) {
        auto m = tiny_model(0);
        DPOTrainer t(dpo_config(variants[i], 0.5, 0.0, type), m, tiny_model(7));
        auto r1 = t.train_step(d1);
        t.train_step(d2);
        CHECK(max_param_diff(*m, *base) < 1e-10);
        CHECK(r1.at("loss") == Approx(b1.at("loss")).epsilon(1e-12));
        CHECK(r1.at("grad_norm") == Approx(b1.at("grad_norm")).epsilon(1e-10));
      }
    }
  }
}

TEST_CASE("dpo: bad pair batches are DataErrors and change nothing", "[trainer][dpo]") {
  auto policy = tiny_model(0);
  DPOTrainer t(dpo_config(), policy);
  DataProto good = pair_batch();
  auto with = [&](const std::string& key, const torch::Tensor& value) {
    DataProto d = good;
    d.set_tensor(key, value);
    return d;
  };
  // an odd number of rows
  DataProto odd_rows;
  for (const char* key : {"input_ids", "attention_mask", "loss_mask"}) {
    odd_rows.set_tensor(key, good.tensor(key).narrow(0, 0, 3));
  }
  CHECK_THROWS_WITH(t.train_step(odd_rows), Catch::Contains("even number"));
  // pair 2's rejected completion is empty
  torch::Tensor loss_mask = good.tensor("loss_mask").clone();
  loss_mask[5].zero_();
  CHECK_THROWS_WITH(t.train_step(with("loss_mask", loss_mask)),
                    Catch::Contains("rejected sequence of pair 2") && Catch::Contains("row 5"));
  CHECK_THROWS_AS(t.evaluate(with("loss_mask", loss_mask)), DataError);
  // token ids outside the vocabulary, a missing tensor
  CHECK_THROWS_WITH(t.train_step(with("input_ids", good.tensor("input_ids") + kVocab)), Catch::Contains("DPO batch"));
  DataProto missing;
  missing.set_tensor("input_ids", good.tensor("input_ids"));
  CHECK_THROWS_AS(t.train_step(missing), DataError);
  // a pair over the token budget
  DPOTrainer budget(dpo_config({"data.use_dynamic_bsz=true", "data.max_token_len_per_gpu=8"}), tiny_model(0));
  CHECK_THROWS_WITH(budget.train_step(good), Catch::Contains("data.max_token_len_per_gpu=8"));
  CHECK(max_param_diff(*policy, *tiny_model(0)) == 0.0);
  CHECK(t.global_step() == 0);
  // the DPO keys
  CHECK_THROWS_WITH(dpo_config({}, 0.1, 0.2, "hinge"), Catch::Contains("dpo.label_smoothing"));
  CHECK_THROWS_AS(dpo_config({}, 0.1, 0.0, "kto"), ConfigError);
}

// A toy preference: after a random 3-token prompt, completions of 4 tokens drawn from the even token ids are
// preferred to completions drawn from the odd ones. Held-out pairs are fresh prompts and completions. Accuracy =
// the share of held-out pairs whose chosen completion has the higher log-prob under the policy: about 50% for the
// random model, near 100% once it prefers even tokens.
namespace {

DataProto toy_pairs(int64_t pairs, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t prompt = 3, completion = 4, len = prompt + completion;
  torch::Tensor ids = torch::empty({2 * pairs, len}, torch::kLong);
  torch::Tensor p = torch::randint(0, kVocab, {pairs, prompt}, torch::kLong).repeat_interleave(2, 0);
  ids.narrow(1, 0, prompt).copy_(p);
  torch::Tensor draws = torch::randint(0, kVocab / 2, {2 * pairs, completion}, torch::kLong) * 2;
  torch::Tensor parity = (torch::arange(2 * pairs) % 2).unsqueeze(1);  // row 2i even ids, row 2i + 1 odd ids
  ids.narrow(1, prompt, completion).copy_(draws + parity);
  torch::Tensor loss_mask = torch::zeros({2 * pairs, len}, torch::kLong);
  loss_mask.narrow(1, prompt, completion).fill_(1);
  DataProto d;
  d.set_tensor("input_ids", ids);
  d.set_tensor("attention_mask", torch::ones({2 * pairs, len}, torch::kLong));
  d.set_tensor("loss_mask", loss_mask);
  return d;
}

double preference_accuracy(DPOTrainer& t, const DataProto& d) {
  torch::Tensor s = t.sequence_log_probs(d);
  return (even(s) > odd(s)).to(torch::kDouble).mean().item<double>();
}

}  // namespace

TEST_CASE("dpo: a tiny random model learns a toy preference (held-out accuracy +30 points)", "[trainer][dpo]") {
  for (const std::string type : {"sigmoid", "ipo", "hinge"}) {
    DYNAMIC_SECTION(type) {
      auto policy = tiny_model(0, torch::kFloat);
      DPOTrainer t(dpo_config({"data.micro_batch_size_per_gpu=16"}, 0.1, 0.0, type, 3e-3), policy);
      const DataProto held_out = toy_pairs(200, 999);
      const double before = preference_accuracy(t, held_out);
      for (int step = 0; step < 30; ++step) t.train_step(toy_pairs(16, 100 + step));
      const double after = preference_accuracy(t, held_out);
      INFO("held-out preference accuracy " << before << " -> " << after);
      CHECK(before < 0.7);
      CHECK(after - before >= 0.30);
      CHECK(t.evaluate(held_out).means().at("rewards/accuracies") >= 0.9);
    }
  }
}
