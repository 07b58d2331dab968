// verl::model::init_weights: transformers' from_config initialisation (N(0, initializer_range) weights, zero
// biases, unit norms, zero padding row), seeded, and the near-uniform next-token distribution it gives.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>

#include "verl/core/error.h"
#include "verl/model/init_weights.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"

using namespace verl;
using namespace verl::model;

namespace {

Json qwen2_json() {
  return Json{{"model_type", "qwen2"},        {"vocab_size", 304},          {"hidden_size", 128},
              {"intermediate_size", 192},      {"num_hidden_layers", 2},     {"num_attention_heads", 4},
              {"num_key_value_heads", 2},     {"max_position_embeddings", 64}, {"tie_word_embeddings", true},
              {"eos_token_id", 2},            {"pad_token_id", 0}};
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TEST_CASE("init_weights: transformers' initialisation of every parameter", "[model]") {
  CausalLM m(ModelConfig::from_json(qwen2_json()));
  init_weights(m, /*seed=*/1);
  int normals = 0;
  for (const auto& [name, p] : m.named_state()) {
    INFO(name);
    if (ends_with(name, "norm.weight")) {
      CHECK(torch::all(p == 1).item<bool>());
    } else if (ends_with(name, ".bias")) {  // qwen2's q/k/v biases
      CHECK(torch::all(p == 0).item<bool>());
    } else {
      ++normals;
      torch::Tensor values = p.to(torch::kDouble);
      if (name == "model.embed_tokens.weight") values = values.slice(0, 1);  // row 0 is the padding row
      // N(0, 0.02): with >= 4096 samples the sample std is within 0.001 (about 7 standard errors) of 0.02
      REQUIRE(values.numel() >= 4096);
      CHECK(values.std().item<double>() == Approx(0.02).margin(0.001));
      CHECK(std::abs(values.mean().item<double>()) < 0.002);
    }
  }
  CHECK(normals == 1 + 2 * 7);  // embedding (tied lm_head), per layer q/k/v/o and gate/up/down
  CHECK(torch::all(m.model->embed_tokens->weight[0] == 0).item<bool>());  // padding_idx = pad_token_id

  // near-uniform next-token distribution: entropy close to log(vocab)
  torch::NoGradGuard no_grad;
  torch::Tensor logits = m.forward(torch::tensor({{5, 17, 42, 100}}, torch::kLong));
  torch::Tensor logp = torch::log_softmax(logits.to(torch::kDouble), -1);
  const double entropy = -(logp.exp() * logp).sum(-1).mean().item<double>();
  CHECK(entropy > 0.99 * std::log(304.0));
}

TEST_CASE("init_weights: seeded, device- and order-independent draws; initializer_range", "[model]") {
  CausalLM a(ModelConfig::from_json(qwen2_json())), b(ModelConfig::from_json(qwen2_json())),
      c(ModelConfig::from_json(qwen2_json()));
  torch::manual_seed(123);  // the global RNG plays no part
  init_weights(a, 5);
  torch::manual_seed(456);
  init_weights(b, 5);
  init_weights(c, 6);
  auto sa = a.named_state(), sb = b.named_state(), sc = c.named_state();
  for (const auto& [name, p] : sa) {
    INFO(name);
    CHECK(torch::equal(p, sb.at(name)));
  }
  CHECK(!torch::equal(sa.at("model.layers.0.mlp.up_proj.weight"), sc.at("model.layers.0.mlp.up_proj.weight")));

  Json wide = qwen2_json();
  wide["initializer_range"] = 0.1;
  CausalLM w(ModelConfig::from_json(wide));
  init_weights(w, 5);
  CHECK(w.model->embed_tokens->weight.slice(0, 1).std().item<double>() == Approx(0.1).margin(0.005));
  init_weights(w, 5, /*initializer_range=*/0.02);  // the argument wins over config.json
  CHECK(w.model->embed_tokens->weight.slice(0, 1).std().item<double>() == Approx(0.02).margin(0.001));
  // bf16 parameters get the same draws, rounded
  CausalLM half(ModelConfig::from_json(qwen2_json()));
  half.to(torch::kBFloat16);
  init_weights(half, 5);
  CHECK(torch::allclose(half.named_state().at("model.layers.1.self_attn.o_proj.weight").to(torch::kFloat),
                        sa.at("model.layers.1.self_attn.o_proj.weight"), 0, 1e-3));

  CHECK_THROWS_AS(init_weights(a, 5, 0.0), InvalidArgument);
  wide["initializer_range"] = "big";
  CausalLM bad(ModelConfig::from_json(wide));
  CHECK_THROWS_AS(init_weights(bad, 5), InvalidArgument);
}
