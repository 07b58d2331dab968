// verl::trainer::SFTTrainer on a tiny float64 model: the loss equals log_softmax + gather over the padded batch,
// a train_step equals a hand-written clip + AdamW + cosine-schedule step, the update is invariant to the
// micro-batch cut (rows, token budget, padding removed or not), tokens with loss_mask 0 do not reach the
// gradient, bad batches are DataError and change nothing, and Config::load_sft's keys and rules.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/trainer/sft_trainer.h"
#include "tensor_compare.h"

using namespace verl;
using verl::trainer::SFTConfig;
using verl::trainer::SFTTrainer;

namespace {

using verl::testing::max_diff;
using verl::testing::max_param_diff;

constexpr int64_t kBatch = 6, kSeq = 12, kVocab = 64;

std::shared_ptr<model::CausalLM> tiny_model() {
  Json j = {{"model_type", "qwen2"},     {"vocab_size", kVocab},       {"hidden_size", 32},
            {"intermediate_size", 48},   {"num_hidden_layers", 2},     {"num_attention_heads", 4},
            {"num_key_value_heads", 2},  {"rms_norm_eps", 1e-6},       {"rope_theta", 10000.0},
            {"max_position_embeddings", 64}, {"tie_word_embeddings", false}};
  torch::manual_seed(0);
  auto m = std::make_shared<model::CausalLM>(model::ModelConfig::from_json(j), model::HeadKind::kLanguageModel);
  m->to(torch::kDouble);
  return m;
}

// Right-padded rows of 3..kSeq tokens: a prompt (loss_mask 0) then a response (loss_mask 1), as the SFT
// dataset collates them. Row 0 also marks its first token (which has nothing before it: never a target).
DataProto sft_batch(uint64_t seed = 1) {
  torch::manual_seed(seed);
  torch::Tensor len = torch::randint(3, kSeq + 1, {kBatch}, torch::kLong);
  len[1] = kSeq;  // one full row
  torch::Tensor prompt = (torch::rand({kBatch}, torch::kDouble) * (len - 1).to(torch::kDouble)).to(torch::kLong) + 1;
  prompt[1] = 2;  // row 1: targets at columns 2..11
  torch::Tensor cols = torch::arange(kSeq).unsqueeze(0);
  torch::Tensor attention_mask = (cols < len.unsqueeze(1)).to(torch::kLong);
  torch::Tensor loss_mask = ((cols >= prompt.unsqueeze(1)) & (cols < len.unsqueeze(1))).to(torch::kLong);
  loss_mask[0][0] = 1;
  torch::Tensor input_ids = torch::randint(0, kVocab, {kBatch, kSeq}, torch::kLong) * attention_mask;
  DataProto d;
  d.set_tensor("input_ids", input_ids);
  d.set_tensor("attention_mask", attention_mask);
  d.set_tensor("loss_mask", loss_mask);
  return d;
}

// Config::load_sft with test-sized batches; total_training_steps for the schedule.
SFTConfig sft_config(const std::vector<std::string>& overrides = {}, int64_t total_steps = 4) {
  std::vector<std::string> all = {"data.train_batch_size=6", "data.micro_batch_size_per_gpu=2",
                                  "data.use_dynamic_bsz=false", "optim.lr=0.01", "optim.weight_decay=0.1",
                                  "optim.clip_grad=0.05", "optim.lr_scheduler_type=cosine",
                                  "model.enable_gradient_checkpointing=false",
                                  // these tests hold the step to an fp64 computation: the model's own dtype computes
                                  // (the shipped `auto` is bf16 on a CPU with bf16 units)
                                  "engine.dtype=fp32"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return SFTConfig::from_config(Config::load_sft("", all), total_steps);
}

// The independent reference: the padded forward's log_softmax at t - 1 gathered at token t, for every t >= 1
// that is real and marked by loss_mask (right padding: the token before a real token is real).
// Returns (-sum log p, number of targets).
std::pair<torch::Tensor, int64_t> reference_loss_sum(model::CausalLM& m, const DataProto& d) {
  torch::Tensor ids = d.tensor("input_ids");
  torch::Tensor attn = d.tensor("attention_mask");
  torch::Tensor logits = m.forward(ids, attn);  // (bs, seq, vocab)
  torch::Tensor logp = torch::log_softmax(logits.narrow(1, 0, kSeq - 1), -1)
                           .gather(-1, ids.narrow(1, 1, kSeq - 1).unsqueeze(-1))
                           .squeeze(-1);
  torch::Tensor mask = (d.tensor("loss_mask") * attn).narrow(1, 1, kSeq - 1).to(torch::kDouble);
  return {-(logp * mask).sum(), mask.sum().item<int64_t>()};
}

// One reference SFT step by hand: token-mean loss, backward, clip by the global norm
// (max_norm / (norm + 1e-6), torch's clip_grad_norm_), AdamW (decoupled weight decay, bias-corrected moments).
struct ReferenceAdamW {
  std::vector<torch::Tensor> params, exp_avg, exp_avg_sq;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay, clip;
  int64_t t = 0;

  ReferenceAdamW(std::vector<torch::Tensor> p, double wd, double clip_grad)
      : params(std::move(p)), weight_decay(wd), clip(clip_grad) {
    for (const auto& q : params) {
      exp_avg.push_back(torch::zeros_like(q));
      exp_avg_sq.push_back(torch::zeros_like(q));
    }
  }

  // Returns the gradient norm before clipping.
  double step(model::CausalLM& m, const DataProto& d, double lr) {
    for (auto& q : params) q.mutable_grad() = torch::Tensor();
    auto [sum, n] = reference_loss_sum(m, d);
    (sum / static_cast<double>(n)).backward();
    double sq = 0;
    for (const auto& q : params) sq += q.grad().pow(2).sum().item<double>();
    const double norm = std::sqrt(sq);
    const double coef = std::min(1.0, clip / (norm + 1e-6));
    torch::NoGradGuard g;
    ++t;
    for (size_t i = 0; i < params.size(); ++i) {
      torch::Tensor grad = params[i].grad() * coef;
      exp_avg[i] = beta1 * exp_avg[i] + (1 - beta1) * grad;
      exp_avg_sq[i] = beta2 * exp_avg_sq[i] + (1 - beta2) * grad * grad;
      const double bc1 = 1 - std::pow(beta1, t), bc2 = 1 - std::pow(beta2, t);
      params[i].mul_(1 - lr * weight_decay);
      params[i].sub_(lr * (exp_avg[i] / bc1) / ((exp_avg_sq[i] / bc2).sqrt() + eps));
    }
    return norm;
  }
};

// verl's cosine factor without warmup (zero-indexed): 0.5 * (1 + cos(pi * 2 * num_cycles * step / total)).
double cosine_factor(int64_t step, int64_t total) {
  return 0.5 * (1 + std::cos(M_PI * static_cast<double>(step) / static_cast<double>(total)));
}

}  // namespace

TEST_CASE("sft: loss equals log_softmax + gather over the padded batch", "[trainer][sft]") {
  DataProto d = sft_batch();
  auto ref = tiny_model();
  auto [ref_sum, ref_n] = [&] {
    torch::NoGradGuard g;
    return reference_loss_sum(*ref, d);
  }();
  REQUIRE(ref_n > kBatch);  // every row has a response
  for (const bool remove_padding : {true, false}) {
    DYNAMIC_SECTION("use_remove_padding=" << remove_padding) {
      SFTTrainer t(sft_config({std::string("model.use_remove_padding=") + (remove_padding ? "true" : "false")}),
                   tiny_model());
      trainer::SFTLossSum s = t.loss_sum(d);
      CHECK(s.num_tokens == ref_n);
      CHECK(std::abs(s.loss_sum - ref_sum.item<double>()) < 1e-11);
      // train/loss is the token-mean under the weights before the update
      auto metrics = t.train_step(d);
      CHECK(std::abs(metrics.at("train/loss") - ref_sum.item<double>() / ref_n) < 1e-13);
      CHECK(metrics.at("train/global_tokens") == d.tensor("attention_mask").sum().item<double>());
      // verl's train MFU of the step: a positive fraction of this machine's measured matmul peak
      CHECK(metrics.at("train/mfu") > 0.0);
      CHECK(metrics.at("train/mfu") <= 1.0);
    }
  }
}

TEST_CASE("sft: train_step equals a hand-written clip + AdamW + cosine schedule step", "[trainer][sft]") {
  DataProto d1 = sft_batch(1), d2 = sft_batch(2);
  auto m = tiny_model(), ref = tiny_model();
  SFTTrainer t(sft_config({}, 4), m);
  ReferenceAdamW adam(ref->parameters(), 0.1, 0.05);

  auto r1 = t.train_step(d1);
  const double norm1 = adam.step(*ref, d1, 0.01 * cosine_factor(0, 4));
  CHECK(norm1 > 0.05);  // clipping is active
  CHECK(r1.at("train/grad_norm") == Approx(norm1).epsilon(1e-12));
  CHECK(r1.at("train/lr") == Approx(0.01 * cosine_factor(1, 4)).epsilon(1e-14));  // verl: after the scheduler step
  CHECK(max_param_diff(*m, *ref) < 1e-10);

  auto r2 = t.train_step(d2);
  const double norm2 = adam.step(*ref, d2, 0.01 * cosine_factor(1, 4));
  CHECK(r2.at("train/grad_norm") == Approx(norm2).epsilon(1e-12));
  CHECK(r2.at("train/lr") == Approx(0.01 * cosine_factor(2, 4)).epsilon(1e-14));
  CHECK(max_param_diff(*m, *ref) < 1e-10);
  CHECK(max_param_diff(*m, *tiny_model()) > 1e-3);  // the weights moved
  CHECK(t.global_step() == 2);
}

TEST_CASE("sft: the update is invariant to the micro-batch cut and to padding removal", "[trainer][sft]") {
  DataProto d1 = sft_batch(1), d2 = sft_batch(2);
  const std::vector<std::vector<std::string>> variants = {
      {"data.micro_batch_size_per_gpu=1"},
      {"data.micro_batch_size_per_gpu=4"},
      {"data.micro_batch_size_per_gpu=4", "model.use_remove_padding=false"},
      {"data.use_dynamic_bsz=true", "data.max_token_len_per_gpu=14"},
      {"data.use_dynamic_bsz=true", "data.max_token_len_per_gpu=14", "model.use_remove_padding=false"},
      {"data.micro_batch_size_per_gpu=6", "model.enable_gradient_checkpointing=true"},
  };
  auto base = tiny_model();
  SFTTrainer tb(sft_config(variants[0]), base);
  auto b1 = tb.train_step(d1);
  auto b2 = tb.train_step(d2);
  for (size_t i = 1; i < variants.size(); ++i) {
    DYNAMIC_SECTION("variant " << i) {
      auto m = tiny_model();
      SFTTrainer t(sft_config(variants[i]), m);
      auto r1 = t.train_step(d1);
      auto r2 = t.train_step(d2);
      CHECK(max_param_diff(*m, *base) < 1e-10);
      CHECK(std::abs(r1.at("train/loss") - b1.at("train/loss")) < 1e-12);
      CHECK(std::abs(r2.at("train/loss") - b2.at("train/loss")) < 1e-12);
      CHECK(r2.at("train/grad_norm") == Approx(b2.at("train/grad_norm")).epsilon(1e-10));
    }
  }
}

TEST_CASE("sft: tokens with loss_mask 0 do not reach the gradient", "[trainer][sft]") {
  DataProto d = sft_batch(3);
  // Tokens after each row's last target, with loss_mask 0, are changed: no target sees them (causal) and they
  // are no targets, so the update is the same.
  torch::Tensor lm = d.tensor("loss_mask"), attn = d.tensor("attention_mask");
  torch::Tensor changed_ids = d.tensor("input_ids").clone(), changed_mask = lm.clone();
  int64_t changed = 0;
  for (int64_t r = 0; r < kBatch; ++r) {
    const int64_t len = attn[r].sum().item<int64_t>();
    if (len < 4) continue;
    for (int64_t c = len - 2; c < len; ++c) {
      changed_mask[r][c] = 0;
      changed_ids[r][c] = (changed_ids[r][c].item<int64_t>() + 17) % kVocab;
      ++changed;
    }
  }
  REQUIRE(changed > 0);
  DataProto masked = d, garbled = d;
  masked.set_tensor("loss_mask", changed_mask);
  garbled.set_tensor("loss_mask", changed_mask);
  garbled.set_tensor("input_ids", changed_ids);
  // plus a row whose loss_mask is all 0: it trains nothing
  DataProto with_row(DataProto::TensorMap{
      {"input_ids", torch::cat({changed_ids, torch::randint(0, kVocab, {1, kSeq}, torch::kLong)}, 0)},
      {"attention_mask", torch::cat({attn, torch::ones({1, kSeq}, torch::kLong)}, 0)},
      {"loss_mask", torch::cat({changed_mask, torch::zeros({1, kSeq}, torch::kLong)}, 0)}});
  auto a = tiny_model(), b = tiny_model(), c = tiny_model();
  SFTTrainer ta(sft_config(), a), tb(sft_config(), b), tc(sft_config(), c);
  auto ra = ta.train_step(masked);
  auto rb = tb.train_step(garbled);
  auto rc = tc.train_step(with_row);
  CHECK(max_param_diff(*a, *b) < 1e-12);
  CHECK(max_param_diff(*a, *c) < 1e-12);
  CHECK(ra.at("train/loss") == Approx(rb.at("train/loss")).epsilon(1e-13));
  CHECK(ra.at("train/loss") == Approx(rc.at("train/loss")).epsilon(1e-13));
  // ... while changing a token that is a target does change the update
  auto e = tiny_model();
  SFTTrainer te(sft_config(), e);
  torch::Tensor target_changed = d.tensor("input_ids").clone();
  target_changed[1][kSeq - 3] = (target_changed[1][kSeq - 3].item<int64_t>() + 1) % kVocab;
  REQUIRE(changed_mask[1][kSeq - 3].item<int64_t>() == 1);
  DataProto other = masked;
  other.set_tensor("input_ids", target_changed);
  te.train_step(other);
  CHECK(max_param_diff(*a, *e) > 1e-6);
}

TEST_CASE("sft: bad batches are DataError and change nothing", "[trainer][sft]") {
  auto m = tiny_model();
  SFTTrainer t(sft_config({"data.use_dynamic_bsz=true", "data.max_token_len_per_gpu=12"}), m);
  t.train_step(sft_batch(1));  // AdamW state and schedule exist
  auto before = m->named_state();
  std::map<std::string, torch::Tensor> snapshot, grads;
  for (const auto& [k, v] : before) {
    snapshot[k] = v.clone();
    grads[k] = v.grad().defined() ? v.grad().clone() : torch::Tensor();
  }
  const double lr = t.optimizer().lr();

  auto expect_data_error = [&](const DataProto& bad, const std::string& fragment) {
    CHECK_THROWS_AS(t.train_step(bad), DataError);
    CHECK_THROWS_WITH(t.train_step(bad), Catch::Contains(fragment));
  };
  {
    DataProto bad = sft_batch(2);
    bad.pop({"loss_mask"});
    expect_data_error(bad, "loss_mask");
    CHECK_THROWS_AS(t.loss_sum(bad), DataError);
  }
  {
    DataProto bad = sft_batch(2);
    bad.set_tensor("attention_mask", bad.tensor("attention_mask").narrow(1, 0, kSeq - 1));
    expect_data_error(bad, "'attention_mask' has shape");
  }
  {
    DataProto bad = sft_batch(2);
    bad.set_tensor("loss_mask", torch::zeros_like(bad.tensor("loss_mask")));
    expect_data_error(bad, "nothing to train on");
    // only first tokens marked: still no target
    torch::Tensor first = torch::zeros_like(bad.tensor("loss_mask"));
    first.select(1, 0).fill_(1);
    bad.set_tensor("loss_mask", first);
    expect_data_error(bad, "nothing to train on");
  }
  {
    DataProto bad = sft_batch(2);
    torch::Tensor ids = bad.tensor("input_ids").clone();
    ids[0][1] = kVocab;
    bad.set_tensor("input_ids", ids);
    expect_data_error(bad, "vocab_size");
  }
  {
    DataProto bad = sft_batch(2);
    bad.set_tensor("input_ids", bad.tensor("input_ids").to(torch::kFloat));
    expect_data_error(bad, "integer token ids");
  }
  {
    DataProto bad = sft_batch(2);
    torch::Tensor attn = bad.tensor("attention_mask").clone();
    attn[2].zero_();
    bad.set_tensor("attention_mask", attn);
    expect_data_error(bad, "no real token");
  }
  {
    DataProto bad = sft_batch(2);  // row 1 has kSeq = 12 tokens; a budget of 12 fits, 11 does not
    SFTTrainer small(sft_config({"data.use_dynamic_bsz=true", "data.max_token_len_per_gpu=11"}), m);
    CHECK_THROWS_WITH(small.train_step(bad), Catch::Contains("data.max_token_len_per_gpu=11"));
  }
  CHECK(t.global_step() == 1);
  CHECK(t.optimizer().lr() == lr);
  CHECK(t.optimizer().scheduler_step_count() == 1);
  for (const auto& [k, v] : m->named_state()) {
    INFO(k);
    CHECK(torch::equal(v, snapshot.at(k)));
    CHECK(v.grad().defined() == grads.at(k).defined());
    if (v.grad().defined()) CHECK(torch::equal(v.grad(), grads.at(k)));
  }
  // and a good batch still trains afterwards
  t.train_step(sft_batch(2));
  CHECK(t.global_step() == 2);
}

TEST_CASE("sft: optimizer save/load continues exactly", "[trainer][sft]") {
  auto straight = tiny_model();
  SFTTrainer ts(sft_config(), straight);
  for (uint64_t s = 1; s <= 3; ++s) ts.train_step(sft_batch(s));

  auto first = tiny_model();
  SFTTrainer t1(sft_config(), first);
  t1.train_step(sft_batch(1));
  t1.train_step(sft_batch(2));
  const std::string path = (std::filesystem::temp_directory_path() / "verl_test_sft_optim.pt").string();
  t1.optimizer().save(path);
  auto resumed = tiny_model();
  resumed->load_state_dict(first->named_state());
  SFTTrainer t2(sft_config(), resumed);
  t2.optimizer().load(path);
  std::filesystem::remove(path);
  auto r = t2.train_step(sft_batch(3));
  CHECK(max_param_diff(*resumed, *straight) == 0.0);
  CHECK(r.at("train/lr") == Approx(0.01 * cosine_factor(3, 4)).epsilon(1e-14));
}

TEST_CASE("sft config: verl's sft_trainer keys and defaults, its own rules", "[trainer][sft][config]") {
  Config c = Config::load_sft();
  CHECK(c.is_sft());
  CHECK_FALSE(Config().is_sft());
  CHECK(c.get_as<int64_t>("data.train_batch_size") == 256);
  CHECK(c.get_as<int64_t>("data.micro_batch_size_per_gpu") == 4);
  CHECK(c.get_as<int64_t>("data.max_length") == 1024);
  CHECK(c.get_as<std::string>("data.truncation") == "error");
  CHECK(c.get_as<double>("optim.lr") == 1e-3);
  CHECK(c.get_as<std::string>("trainer.default_local_dir") == "checkpoints/gsm8k-sft/test");
  SFTConfig s = SFTConfig::from_config(c);
  CHECK(s.use_dynamic_bsz);
  CHECK(s.dtype == "auto");  // engine.dtype: the actor's default
  CHECK(s.reshard_after_forward);
  CHECK(s.max_token_len_per_gpu == 8192);
  CHECK(s.optim.clip_grad == 1.0);
  CHECK(s.optim.weight_decay == 0.01);

  CHECK_THROWS_WITH(Config::load_sft("", {"data.max_lenght=10"}), Catch::Contains("did you mean 'data.max_length'"));
  CHECK_THROWS_AS(Config::load_sft("", {"data.truncation=middle"}), ConfigError);  // RL prompts only
  CHECK_NOTHROW(Config::load("", {"data.truncation=middle"}));
  CHECK_THROWS_WITH(Config::load_sft("", {"data.micro_batch_size_per_gpu=0"}),
                    Catch::Contains("data.micro_batch_size_per_gpu"));
  CHECK_THROWS_WITH(Config::load_sft("", {"optim.min_lr_ratio=2.0"}), Catch::Contains("optim.min_lr_ratio"));
  CHECK_THROWS_WITH(Config::load_sft("", {"model.dtype=fp8"}), Catch::Contains("model.dtype"));
  CHECK_THROWS_AS(Config::load_sft("", {"data.max_length=abc"}), ConfigTypeError);
  // the PPO tree's keys are not the SFT tree's
  CHECK_THROWS_AS(Config::load_sft("", {"actor_rollout_ref.rollout.n=2"}), ConfigError);
  // a copy keeps its tree's rules
  Config copy = c;
  copy.set("data.truncation", "middle");  // set() checks the type; validate() the choices
  CHECK_THROWS_AS(copy.validate(), ConfigError);
  // cosine needs the trainer's step count: ConfigError naming the key when it is missing
  Config cosine = Config::load_sft("", {"optim.lr_scheduler_type=cosine"});
  CHECK_THROWS_WITH(SFTConfig::from_config(cosine), Catch::Contains("optim.total_training_steps"));
  CHECK(SFTConfig::from_config(cosine, 10).optim.total_training_steps == 10);
  CHECK_THROWS_AS(SFTConfig::from_config(cosine, 0), ConfigError);
}
