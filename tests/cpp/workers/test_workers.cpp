// verl::workers actor / critic on a tiny float64 model: log-probs equal log_softmax(logits / T) of
// the padded forward, packed == padded, dynamic batching restores order, gradient accumulation is
// invariant to the micro-batch cut (fixed 2 / 8 rows, token budget) for every loss_agg_mode, the
// critic's values and update, and configuration errors that name the key.
#include <functional>

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/workers/actor.h"
#include "verl/workers/critic.h"
#include "tensor_compare.h"

using namespace verl;
using namespace verl::workers;

namespace {

using verl::testing::max_diff;
using verl::testing::max_param_diff;

constexpr int64_t kBatch = 16, kPrompt = 5, kResponse = 6, kVocab = 64;

std::shared_ptr<model::CausalLM> tiny_model(model::HeadKind head = model::HeadKind::kLanguageModel) {
  Json j = {{"model_type", "qwen2"},     {"vocab_size", kVocab},       {"hidden_size", 32},
            {"intermediate_size", 48},   {"num_hidden_layers", 2},     {"num_attention_heads", 4},
            {"num_key_value_heads", 2},  {"rms_norm_eps", 1e-6},       {"rope_theta", 10000.0},
            {"max_position_embeddings", 64}, {"tie_word_embeddings", false}};
  torch::manual_seed(0);
  auto m = std::make_shared<model::CausalLM>(model::ModelConfig::from_json(j), head);
  m->to(torch::kDouble);
  return m;
}

// Left-padded prompts (2..5 tokens), right-padded responses (1..6 tokens), verl's position ids.
DataProto rollout_batch() {
  torch::manual_seed(1);
  torch::Tensor prompt_len = torch::randint(2, kPrompt + 1, {kBatch}, torch::kLong);
  torch::Tensor response_len = torch::randint(1, kResponse + 1, {kBatch}, torch::kLong);
  torch::Tensor cols_p = torch::arange(kPrompt).unsqueeze(0);
  torch::Tensor cols_r = torch::arange(kResponse).unsqueeze(0);
  torch::Tensor prompt_mask = (cols_p >= (kPrompt - prompt_len).unsqueeze(1)).to(torch::kLong);
  torch::Tensor response_mask = (cols_r < response_len.unsqueeze(1)).to(torch::kLong);
  torch::Tensor attention_mask = torch::cat({prompt_mask, response_mask}, 1);
  torch::Tensor input_ids = torch::randint(0, kVocab, {kBatch, kPrompt + kResponse}, torch::kLong) * attention_mask;
  torch::Tensor position_ids = (attention_mask.cumsum(1) - 1).clamp_min(0);
  DataProto d;
  d.set_tensor("input_ids", input_ids);
  d.set_tensor("attention_mask", attention_mask);
  d.set_tensor("position_ids", position_ids);
  d.set_tensor("responses", input_ids.narrow(1, kPrompt, kResponse));
  d.set_tensor("response_mask", response_mask);
  return d;
}

Config actor_config(int64_t micro, bool dynamic, const std::string& agg_mode = "token-mean") {
  Config c;
  c.set("actor_rollout_ref.rollout.n", 2);
  c.set("actor_rollout_ref.rollout.temperature", 0.7);
  c.set("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", 3);
  c.set("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", 5);
  c.set("actor_rollout_ref.actor.ppo_mini_batch_size", 4);  // 4 prompts x n=2 = 8 rows: two mini-batches
  c.set("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", micro);
  c.set("actor_rollout_ref.actor.use_dynamic_bsz", dynamic);
  c.set("actor_rollout_ref.actor.ppo_max_token_len_per_gpu", 25);
  c.set("actor_rollout_ref.actor.ppo_epochs", 2);
  c.set("actor_rollout_ref.actor.shuffle", true);
  c.set("actor_rollout_ref.actor.loss_agg_mode", agg_mode);
  c.set("actor_rollout_ref.actor.entropy_coeff", 0.01);
  c.set("actor_rollout_ref.actor.use_kl_loss", true);
  c.set("actor_rollout_ref.actor.optim.lr", 1e-2);
  c.set("actor_rollout_ref.model.enable_gradient_checkpointing", false);
  // These tests check exact float64 semantics: no mixed precision (test_mixed_precision.cpp covers bf16).
  c.set("actor_rollout_ref.actor.fsdp_config.dtype", "float32");
  c.set("actor_rollout_ref.ref.fsdp_config.dtype", "float32");
  return c;
}

// The log-prob pass without packing (the padded forward).
Config padded_log_prob_config() {
  Config c = actor_config(2, false);
  c.set("actor_rollout_ref.model.use_remove_padding", false);
  return c;
}

// The log-prob pass under a token budget: rows regrouped into micro-batches.
Config dynamic_log_prob_config() {
  Config c = actor_config(2, true);
  c.set("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", 20);
  return c;
}

// The padded forward's log softmax(logits / T) of each response token, 0 at padding.
torch::Tensor reference_log_probs(model::CausalLM& m, const DataProto& d, double temperature) {
  torch::NoGradGuard g;
  torch::Tensor logits =
      m.forward(d.tensor("input_ids"), d.tensor("attention_mask"), d.tensor("position_ids")).narrow(1, kPrompt - 1, kResponse);
  torch::Tensor lp = torch::log_softmax(logits / temperature, -1).gather(-1, d.tensor("responses").unsqueeze(-1)).squeeze(-1);
  return lp * d.tensor("response_mask");
}

// Training inputs: old log-probs slightly off the current policy (so clipping happens), advantages, ref.
DataProto training_batch(ActorWorker& actor) {
  DataProto d = rollout_batch();
  torch::Tensor mask = d.tensor("response_mask").to(torch::kDouble);
  torch::Tensor old = actor.compute_log_prob(d).tensor("old_log_probs");
  torch::manual_seed(2);
  d.set_tensor("old_log_probs", old + 0.3 * torch::randn_like(old) * mask);
  d.set_tensor("advantages", torch::randn_like(old) * mask);
  d.set_tensor("ref_log_prob", old + 0.1 * torch::randn_like(old) * mask);
  return d;
}

}  // namespace

TEST_CASE("compute_log_prob equals log_softmax(logits / T), packed == padded, any batching", "[workers]") {
  auto m = tiny_model();
  DataProto d = rollout_batch();
  torch::Tensor expected = reference_log_probs(*m, d, 0.7);

  ActorWorker packed(actor_config(2, false), m);
  DataProto out = packed.compute_log_prob(d, true);
  CHECK(out.meta_info()["temperature"].get<double>() == 0.7);
  CHECK(max_diff(out.tensor("old_log_probs"), expected) < 1e-12);
  CHECK(out.tensor("entropys").sizes() == expected.sizes());
  CHECK((out.tensor("entropys") * (1 - d.tensor("response_mask"))).abs().max().item<double>() == 0.0);

  ActorWorker padded(padded_log_prob_config(), m);
  CHECK(max_diff(padded.compute_log_prob(d).tensor("old_log_probs"), expected) < 1e-12);

  // Token budget: rows regrouped into micro-batches, results back in input order.
  ActorWorker dynamic(dynamic_log_prob_config(), m);
  DataProto dyn = dynamic.compute_log_prob(d, true);
  CHECK(max_diff(dyn.tensor("old_log_probs"), expected) < 1e-12);
  CHECK(max_diff(dyn.tensor("entropys"), out.tensor("entropys")) < 1e-12);

  // meta_info temperature wins over the config, as verl's batch.meta_info["temperature"].
  d.meta_info()["temperature"] = 1.0;
  CHECK(max_diff(packed.compute_log_prob(d).tensor("old_log_probs"), reference_log_probs(*m, d, 1.0)) < 1e-12);

  // The reference policy runs the same pass under its own key.
  ActorWorker ref(actor_config(2, false), m, PolicyRole::kReference);
  d.meta_info().erase("temperature");
  CHECK(max_diff(ref.compute_ref_log_prob(d).tensor("ref_log_prob"), expected) < 1e-12);
  CHECK_THROWS_AS(ref.update_policy(d), InvalidArgument);
}

TEST_CASE("compute_log_prob gives sum_pi_squared = sum_v softmax(logits / T)^2 when asked", "[workers]") {
  auto m = tiny_model();
  DataProto d = rollout_batch();
  // The float64 reference from the full padded logits: the squared probabilities summed over the vocabulary.
  auto reference = [&](double temperature) {
    torch::NoGradGuard g;
    torch::Tensor logits = m->forward(d.tensor("input_ids"), d.tensor("attention_mask"), d.tensor("position_ids"))
                               .narrow(1, kPrompt - 1, kResponse);
    return torch::softmax(logits / temperature, -1).pow(2).sum(-1) * d.tensor("response_mask");
  };
  torch::Tensor expected = reference(0.7);
  REQUIRE(expected.scalar_type() == torch::kDouble);
  d.meta_info()["calculate_sum_pi_squared"] = true;

  ActorWorker packed(actor_config(2, false), m);
  DataProto out = packed.compute_log_prob(d);
  REQUIRE(out.has_tensor("sum_pi_squared"));
  CHECK(out.tensor("sum_pi_squared").scalar_type() == torch::kDouble);
  CHECK(max_diff(out.tensor("sum_pi_squared"), expected) < 1e-12);
  // Between the uniform distribution's 1 / V (Cauchy-Schwarz) and a point mass's 1.
  torch::Tensor real = expected.masked_select(d.tensor("response_mask").to(torch::kBool));
  CHECK(real.min().item<double>() >= 1.0 / kVocab);
  CHECK(real.max().item<double>() <= 1.0);

  ActorWorker padded(padded_log_prob_config(), m);
  CHECK(max_diff(padded.compute_log_prob(d).tensor("sum_pi_squared"), expected) < 1e-12);

  ActorWorker dynamic(dynamic_log_prob_config(), m);
  CHECK(max_diff(dynamic.compute_log_prob(d).tensor("sum_pi_squared"), expected) < 1e-12);

  // Peaked logits (temperature 0.05): the log-space form stays exact where the probabilities are far from uniform.
  d.meta_info()["temperature"] = 0.05;
  CHECK(max_diff(packed.compute_log_prob(d).tensor("sum_pi_squared"), reference(0.05)) < 1e-12);

  // Only when asked: the flag false or absent gives no sum_pi_squared.
  d.meta_info()["calculate_sum_pi_squared"] = false;
  CHECK_FALSE(packed.compute_log_prob(d).has_tensor("sum_pi_squared"));
  d.meta_info().erase("calculate_sum_pi_squared");
  CHECK_FALSE(packed.compute_log_prob(d).has_tensor("sum_pi_squared"));
}

TEST_CASE("update_policy: gradient accumulation is invariant to the micro-batch cut", "[workers]") {
  for (const std::string mode : {"token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}) {
    DYNAMIC_SECTION("loss_agg_mode " << mode) {
      auto m2 = tiny_model(), m8 = tiny_model(), mdyn = tiny_model();
      ActorWorker a2(actor_config(2, false, mode), m2);
      ActorWorker a8(actor_config(8, false, mode), m8);
      ActorWorker adyn(actor_config(2, true, mode), mdyn);
      DataProto d = training_batch(a2);
      Metrics r2 = a2.update_policy(d);
      Metrics r8 = a8.update_policy(d);
      Metrics rdyn = adyn.update_policy(d);
      CHECK(max_param_diff(*m2, *m8) < 1e-10);
      CHECK(max_param_diff(*m2, *mdyn) < 1e-10);
      // The weights moved.
      CHECK(max_param_diff(*m2, *tiny_model()) > 1e-4);
      for (const char* key : {"actor/pg_loss", "actor/loss", "actor/kl_loss", "actor/entropy_loss", "actor/grad_norm"}) {
        INFO(key);
        REQUIRE(r2.count(key));
        CHECK(r2.at(key) == Approx(r8.at(key)).epsilon(1e-9));
        CHECK(r2.at(key) == Approx(rdyn.at(key)).epsilon(1e-9));
      }
      for (const char* key : {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower", "actor/kl_coef", "actor/lr"}) {
        INFO(key);
        CHECK(r2.count(key));
      }
      CHECK(r2.at("actor/kl_coef") == Approx(0.001).epsilon(1e-12));  // a mean of equal floats
      CHECK(r2.at("actor/lr") == 1e-2);
    }
  }
}

TEST_CASE("update_policy with gradient checkpointing equals the plain backward", "[workers]") {
  auto plain = tiny_model(), ckpt = tiny_model();
  Config c = actor_config(4, false);
  ActorWorker a_plain(c, plain);
  c.set("actor_rollout_ref.model.enable_gradient_checkpointing", true);
  ActorWorker a_ckpt(c, ckpt);
  CHECK(ckpt->gradient_checkpointing());
  DataProto d = training_batch(a_plain);
  a_plain.update_policy(d);
  a_ckpt.update_policy(d);
  CHECK(max_param_diff(*plain, *ckpt) < 1e-12);
}

namespace {

// One epoch of one mini-batch (8 prompts x n = 2 = the 16 rows), the log-prob pass's micro-batching: the on-policy
// update's forward is the pass's.
Config on_policy_config() {
  Config c = actor_config(4, false);
  c.set("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", 4);
  c.set("actor_rollout_ref.actor.ppo_mini_batch_size", 8);
  c.set("actor_rollout_ref.actor.ppo_epochs", 1);
  c.set("actor_rollout_ref.actor.shuffle", false);
  c.set("actor_rollout_ref.actor.entropy_coeff", 0.0);  // the update alone would compute no entropy
  return c;
}

}  // namespace

TEST_CASE("update_policy_on_policy: old log-probs, entropies and the update bitwise those of the separate pass",
          "[workers]") {
  struct Case {
    const char* name;
    std::function<void(Config&)> edit;
    torch::Dtype model_dtype;
  };
  const std::vector<Case> cases = {
      {"fixed micro-batches, float64", [](Config&) {}, torch::kDouble},
      {"fixed micro-batches, float32", [](Config&) {}, torch::kFloat},
      {"token budget",
       [](Config& c) {
         c.set("actor_rollout_ref.actor.use_dynamic_bsz", true);
         c.set("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", 25);
       },
       torch::kFloat},
      {"padded forward", [](Config& c) { c.set("actor_rollout_ref.model.use_remove_padding", false); }, torch::kFloat},
      {"gradient checkpointing",
       [](Config& c) { c.set("actor_rollout_ref.model.enable_gradient_checkpointing", true); }, torch::kFloat},
      {"bf16 compute over float32 master weights",
       [](Config& c) { c.set("actor_rollout_ref.actor.fsdp_config.dtype", "bfloat16"); }, torch::kFloat},
      {"entropy in the loss",
       [](Config& c) { c.set("actor_rollout_ref.actor.entropy_coeff", 0.01); }, torch::kFloat},
  };
  for (const Case& k : cases) {
    DYNAMIC_SECTION(k.name) {
      Config c = on_policy_config();
      k.edit(c);
      auto separate = tiny_model(), fused = tiny_model();
      separate->to(k.model_dtype);
      fused->to(k.model_dtype);
      ActorWorker a_separate(c, separate), a_fused(c, fused);
      REQUIRE(a_fused.old_log_prob_from_update_is_exact(kBatch));

      DataProto d = rollout_batch();
      torch::manual_seed(2);
      d.set_tensor("advantages", torch::randn({kBatch, kResponse}) * d.tensor("response_mask"));
      d.set_tensor("ref_log_prob", torch::full({kBatch, kResponse}, -1.0));
      DataProto pass = a_separate.compute_log_prob(d, /*calculate_entropy=*/true);
      DataProto with_old = d;
      with_old.set_tensor("old_log_probs", pass.tensor("old_log_probs"));
      const Metrics m_separate = a_separate.update_policy(with_old);
      const auto [out, m_fused] = a_fused.update_policy_on_policy(d);

      CHECK(torch::equal(out.tensor("old_log_probs"), pass.tensor("old_log_probs")));
      CHECK(torch::equal(out.tensor("entropys"), pass.tensor("entropys")));
      CHECK(max_param_diff(*separate, *fused) == 0.0);
      CHECK(max_param_diff(*fused, *tiny_model()) > 1e-4);  // the weights moved
      CHECK(m_fused.size() == m_separate.size());
      for (const auto& [key, value] : m_separate) {
        if (key == "actor/mfu") continue;  // a time
        INFO(key);
        REQUIRE(m_fused.count(key));
        CHECK(m_fused.at(key) == value);
      }
      CHECK(m_fused.at("actor/ppo_kl") == 0.0);  // the ratio starts at exactly 1
    }
  }
}

TEST_CASE("update_policy_on_policy: where it is exact, and what it refuses", "[workers]") {
  auto m = tiny_model();
  const Config base = on_policy_config();
  CHECK(ActorWorker(base, tiny_model()).old_log_prob_from_update_is_exact(kBatch));
  CHECK_FALSE(ActorWorker(base, tiny_model()).old_log_prob_from_update_is_exact(2 * kBatch));  // two mini-batches
  const std::vector<std::pair<std::string, Json>> inexact = {
      {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", 2},  // the pass cuts micro-batches of 4
      {"actor_rollout_ref.actor.shuffle", true},
      {"actor_rollout_ref.actor.ppo_epochs", 2},
      {"actor_rollout_ref.rollout.log_prob_use_dynamic_bsz", true},  // the update does not (actor.use_dynamic_bsz)
  };
  for (const auto& [key, value] : inexact) {
    INFO(key);
    Config c = base;
    c.set(key, value);
    CHECK_FALSE(ActorWorker(c, tiny_model()).old_log_prob_from_update_is_exact(kBatch));
  }
  Config budgets = base;
  budgets.set("actor_rollout_ref.actor.use_dynamic_bsz", true);
  budgets.set("actor_rollout_ref.rollout.log_prob_use_dynamic_bsz", true);
  budgets.set("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", 30);  // the update's: 25
  CHECK_FALSE(ActorWorker(budgets, tiny_model()).old_log_prob_from_update_is_exact(kBatch));
  budgets.set("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", 25);
  CHECK(ActorWorker(budgets, tiny_model()).old_log_prob_from_update_is_exact(kBatch));
  CHECK_FALSE(ActorWorker(base, tiny_model(), PolicyRole::kReference).old_log_prob_from_update_is_exact(kBatch));

  DataProto d = rollout_batch();
  d.set_tensor("advantages", torch::ones({kBatch, kResponse}, torch::kDouble));
  d.set_tensor("ref_log_prob", torch::zeros({kBatch, kResponse}, torch::kDouble));
  Config epochs = base;
  epochs.set("actor_rollout_ref.actor.ppo_epochs", 2);
  CHECK_THROWS_AS(ActorWorker(epochs, tiny_model()).update_policy_on_policy(d), DataError);
  Config two_mini_batches = base;
  two_mini_batches.set("actor_rollout_ref.actor.ppo_mini_batch_size", 4);
  CHECK_THROWS_AS(ActorWorker(two_mini_batches, tiny_model()).update_policy_on_policy(d), DataError);
  DataProto with_old = d;
  with_old.set_tensor("old_log_probs", torch::zeros({kBatch, kResponse}, torch::kDouble));
  CHECK_THROWS_AS(ActorWorker(base, m).update_policy_on_policy(with_old), DataError);
  CHECK(max_param_diff(*m, *tiny_model()) == 0.0);  // refused before any step
}

TEST_CASE("critic: values at the token before each response token; invariant accumulation", "[workers]") {
  auto m = tiny_model(model::HeadKind::kValue);
  DataProto d = rollout_batch();
  Config c;
  c.set("actor_rollout_ref.rollout.n", 2);
  c.set("critic.ppo_mini_batch_size", 4);
  c.set("critic.ppo_micro_batch_size_per_gpu", 2);
  c.set("critic.forward_micro_batch_size_per_gpu", 3);
  c.set("critic.ppo_epochs", 2);
  c.set("critic.optim.lr", 1e-2);
  c.set("critic.model.enable_gradient_checkpointing", false);
  c.set("critic.fsdp.dtype", "float32");  // exact float64 semantics, no mixed precision
  CriticWorker critic(c, m);
  torch::Tensor values = critic.compute_values(d).tensor("values");
  torch::Tensor expected;
  {
    torch::NoGradGuard g;
    expected = m->forward(d.tensor("input_ids"), d.tensor("attention_mask"), d.tensor("position_ids"))
                   .narrow(1, kPrompt - 1, kResponse) *
               d.tensor("response_mask");
  }
  CHECK(max_diff(values, expected) < 1e-12);

  torch::manual_seed(5);
  torch::Tensor mask = d.tensor("response_mask").to(torch::kDouble);
  d.set_tensor("values", values + 0.3 * torch::randn_like(values) * mask);
  d.set_tensor("returns", torch::randn_like(values) * mask);
  Config c8 = c;
  c8.set("critic.ppo_micro_batch_size_per_gpu", 8);
  Config cdyn = c;
  cdyn.set("critic.use_dynamic_bsz", true);
  cdyn.set("critic.ppo_max_token_len_per_gpu", 25);
  auto m8 = tiny_model(model::HeadKind::kValue), mdyn = tiny_model(model::HeadKind::kValue);
  CriticWorker critic8(c8, m8), critic_dyn(cdyn, mdyn);
  auto r2 = critic.update_critic(d);
  auto r8 = critic8.update_critic(d);
  auto rdyn = critic_dyn.update_critic(d);
  CHECK(max_param_diff(*m, *m8) < 1e-10);
  CHECK(max_param_diff(*m, *mdyn) < 1e-10);
  CHECK(r2.at("critic/vf_loss") == Approx(r8.at("critic/vf_loss")).epsilon(1e-9));
  CHECK(r2.at("critic/grad_norm") == Approx(rdyn.at("critic/grad_norm")).epsilon(1e-9));
  for (const char* key : {"critic/vf_clipfrac", "critic/vpred_mean", "critic/loss", "critic/lr"}) CHECK(r2.count(key));
}

TEST_CASE("float-valued actor keys whose verl default is written as an integer", "[workers]") {
  // verl's ppo_trainer.yaml has entropy_coeff: 0 (an int) for a float field.
  Config c = Config::load("", {"actor_rollout_ref.actor.entropy_coeff=0.01"});
  CHECK(c.get_as<double>("actor_rollout_ref.actor.entropy_coeff") == 0.01);
  CHECK_THROWS_AS(Config::load("", {"actor_rollout_ref.actor.ppo_epochs=1.5"}), ConfigTypeError);
}

TEST_CASE("worker configuration errors name the key", "[workers]") {
  auto m = tiny_model();
  DataProto d = rollout_batch();
  {
    Config c = actor_config(2, false);
    c.set("actor_rollout_ref.actor.ppo_mini_batch_size", 3);  // 6 rows do not divide 16
    ActorWorker a(c, m);
    DataProto t = training_batch(a);
    CHECK_THROWS_AS(a.update_policy(t), ConfigError);
    CHECK_THROWS_WITH(a.update_policy(t), Catch::Contains("actor_rollout_ref.actor.ppo_mini_batch_size"));
  }
  {
    Config c = actor_config(3, false);  // 3 does not divide the mini-batch of 8 rows
    ActorWorker a(c, m);
    DataProto t = training_batch(a);
    CHECK_THROWS_WITH(a.update_policy(t), Catch::Contains("ppo_micro_batch_size_per_gpu"));
  }
  {
    Config c = actor_config(2, false);
    c.set("actor_rollout_ref.actor.policy_loss.loss_mode", "no_such_loss");
    CHECK_THROWS_AS(ActorWorker(c, m), ConfigError);
    CHECK_THROWS_WITH(ActorWorker(c, m), Catch::Contains("actor_rollout_ref.actor.policy_loss.loss_mode"));
  }
  {
    Config c = actor_config(2, false);
    c.set("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", nullptr);
    CHECK_THROWS_WITH(ActorWorker(c, m), Catch::Contains("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"));
  }
  {
    Config c;  // the default tree leaves the critic's micro-batch size unset
    CHECK_THROWS_WITH(CriticWorker(c, tiny_model(model::HeadKind::kValue)),
                      Catch::Contains("critic.ppo_micro_batch_size_per_gpu"));
  }
  // A value-head model is no policy and vice versa.
  CHECK_THROWS_AS(ActorWorker(actor_config(2, false), tiny_model(model::HeadKind::kValue)), InvalidArgument);
  // Missing training inputs are data errors naming the key.
  ActorWorker a(actor_config(2, false), m);
  CHECK_THROWS_WITH(a.update_policy(d), Catch::Contains("old_log_probs"));
}

TEST_CASE("rollout_correction.bypass_mode: the actor's loss is bypass_mode with algorithm.rollout_correction",
          "[workers]") {
  Config c = actor_config(2, false);
  c.set("actor_rollout_ref.actor.use_kl_loss", false);
  ActorConfig plain = ActorConfig::from_config(c);
  CHECK(plain.policy.policy_loss.loss_mode == "vanilla");
  CHECK_FALSE(plain.policy.policy_loss.rollout_correction.has_value());

  Config bypass = c;
  bypass.set("algorithm.rollout_correction.bypass_mode", true);
  bypass.set("algorithm.rollout_correction.loss_type", "reinforce");
  bypass.set("algorithm.rollout_correction.rollout_is", "token");
  bypass.set("algorithm.rollout_correction.rollout_is_threshold", 1.5);
  ActorConfig b = ActorConfig::from_config(bypass);
  CHECK(b.policy.policy_loss.loss_mode == "bypass_mode");  // as verl's apply_bypass_mode sets it
  REQUIRE(b.policy.policy_loss.rollout_correction.has_value());
  CHECK(b.policy.policy_loss.rollout_correction->loss_type == "reinforce");
  CHECK(b.policy.policy_loss.rollout_correction->rollout_is == std::optional<std::string>("token"));
  CHECK(b.policy.policy_loss.rollout_correction->rollout_is_threshold == std::optional<std::string>("1.5"));
  // The reference policy computes no loss: its config stays as it was.
  CHECK(ActorConfig::from_config(bypass, PolicyRole::kReference).policy.policy_loss.loss_mode == "vanilla");

  // ppo_clip without IS or rejection is PPO's clipped loss on the rollout's log-probs: the same update as the
  // vanilla loss, bit for bit; reinforce is another loss, so another update.
  auto trained = [&](const Config& config) {
    auto m = tiny_model();
    ActorWorker a(config, m);
    DataProto d = training_batch(a);
    a.update_policy(d);
    return m;
  };
  auto vanilla = trained(c);
  Config ppo_clip = c;
  ppo_clip.set("algorithm.rollout_correction.bypass_mode", true);
  CHECK(max_param_diff(*trained(ppo_clip), *vanilla) == 0.0);
  CHECK(max_param_diff(*trained(bypass), *vanilla) > 1e-6);

  Config bad = c;
  bad.set("algorithm.rollout_correction.bypass_mode", true);
  bad.set("algorithm.rollout_correction.loss_type", "ppo");
  CHECK_THROWS_AS(ActorConfig::from_config(bad), ConfigError);
  CHECK_THROWS_WITH(ActorConfig::from_config(bad), Catch::Contains("algorithm.rollout_correction.loss_type"));
}
