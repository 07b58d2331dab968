// verl::algo GDPO, Optimal Token Baseline estimators, PF-PPO weights and the REINFORCE loss against
// hand-computed values, invariants and errors. (Bitwise parity with verl 0.9.1's Python is checked
// in tests/python/trainer/test_core_algos_verl091_parity.py.)
#include <catch2/catch.hpp>
#include <cmath>
#include <torch/torch.h>

#include "verl/algo/gdpo.h"
#include "verl/algo/optimal_token_baseline.h"
#include "verl/algo/pf_ppo.h"
#include "verl/algo/reinforce_loss.h"
#include "verl/core/error.h"

using namespace verl::algo;

namespace {
torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }
}  // namespace

TEST_CASE("optimal token baseline: hand-computed group of two, zero tail, singleton", "[algo][otb]") {
  const torch::Tensor mask = torch::tensor({1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0}, f64()).view({3, 4});
  const torch::Tensor rewards = torch::tensor({0.0, 0.0, 0.0, 2.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0}, f64()).view({3, 4});
  const torch::Tensor logp = torch::full({3, 4}, -1.0, f64());
  const torch::Tensor spsq = torch::full({3, 4}, 0.5, f64());
  const torch::Tensor index = torch::tensor({7, 7, 9}, torch::kLong);
  const auto [adv, ret] = compute_optimal_token_baseline_advantage(rewards, mask, index, logp, spsq);
  const double w = 1 - 2 * std::exp(-1.0) + 0.5;  // W_t = (t + 1) w for every row
  // t = 0: B = (2 w + 1 w) / (2 w + eps); t = 1: B = (2 * 2w + 1 * 2w) / (4w + eps)
  CHECK(adv[0][0].item<double>() == Approx(2.0 - 3 * w / (2 * w + 1e-8)).margin(1e-12));
  CHECK(adv[1][1].item<double>() == Approx(1.0 - 6 * w / (4 * w + 1e-8)).margin(1e-12));
  // row 0 is the group's strictly longest (4 > 2): no baseline from t = 2 on
  CHECK(torch::equal(adv[0].slice(0, 2), ret[0].slice(0, 2)));
  CHECK(torch::equal(adv[2], ret[2] * mask[2]));  // singleton group: advantage = return
  CHECK(torch::equal(adv[1].slice(0, 2), torch::zeros({2}, f64())));  // masked positions
  const auto no_tail = compute_optimal_token_baseline_advantage(rewards, mask, index, logp, spsq, {}, false);
  CHECK_FALSE(torch::equal(no_tail.first[0].slice(0, 2), ret[0].slice(0, 2)));
}

TEST_CASE("multi-turn optimal token baseline squeezes observation tokens out", "[algo][otb]") {
  // Row 1 has an observation token at t = 1: its second response token (t = 2) lines up with row 0's t = 1.
  const torch::Tensor mask = torch::tensor({1.0, 1.0, 0.0, 1.0, 0.0, 1.0}, f64()).view({2, 3});
  const torch::Tensor rewards = torch::tensor({0.0, 4.0, 0.0, 0.0, 0.0, 2.0}, f64()).view({2, 3});
  const torch::Tensor logp = torch::zeros({2, 3}, f64());  // pi = 1: w = -1 + sum_pi_squared
  const torch::Tensor spsq = torch::full({2, 3}, 3.0, f64());  // w = 2, W = 2, 4
  const torch::Tensor index = torch::zeros({2}, torch::kLong);
  const auto [adv, ret] = compute_multi_turn_optimal_token_baseline_advantage(rewards, mask, index, logp, spsq);
  const double b0 = (4.0 * 2 + 2.0 * 2) / (4 + 1e-8), b1 = (4.0 * 4 + 2.0 * 4) / (8 + 1e-8);
  CHECK(adv[0][0].item<double>() == Approx(4.0 - b0).margin(1e-12));
  CHECK(adv[0][1].item<double>() == Approx(4.0 - b1).margin(1e-12));
  CHECK(adv[1][0].item<double>() == Approx(2.0 - b0).margin(1e-12));
  CHECK(adv[1][2].item<double>() == Approx(2.0 - b1).margin(1e-12));
  CHECK(adv[1][1].item<double>() == 0.0);
  CHECK_THROWS_AS(compute_multi_turn_optimal_token_baseline_advantage(rewards, mask * 0.5, index, logp, spsq),
                  verl::InvalidArgument);
  CHECK_THROWS_AS(compute_optimal_token_baseline_advantage(rewards, mask, index, logp.slice(1, 0, 2), spsq),
                  verl::InvalidArgument);
  CHECK_THROWS_AS(compute_optimal_token_baseline_advantage(rewards, mask, torch::zeros({3}, torch::kLong), logp, spsq),
                  verl::InvalidArgument);
}

TEST_CASE("gdpo: one unit-weight component is GRPO whitened over the batch", "[algo][gdpo]") {
  torch::manual_seed(3);
  const torch::Tensor rewards = torch::randn({6, 4}, f64());
  const torch::Tensor mask = torch::ones({6, 4}, f64());
  const torch::Tensor index = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kLong);
  const auto [adv, ret] = compute_gdpo_outcome_advantage({rewards}, mask, index);
  const torch::Tensor grpo = compute_grpo_outcome_advantage(rewards, mask, index).first;
  // verl's masked mean divides by count + 1e-8 and whitening adds 1e-8 to the variance: ~1e-9 off
  CHECK(torch::allclose(adv, (grpo - grpo.mean()) / torch::sqrt(grpo.var() + 1e-8), 0, 1e-8));
  // weights scale the components before whitening: 2 * A alone whitens to nearly the same advantages
  const auto doubled = compute_gdpo_outcome_advantage({rewards}, mask, index, 1e-6, true, std::vector<double>{2.0});
  CHECK(torch::allclose(doubled.first, adv, 0, 1e-7));
  CHECK_FALSE(torch::equal(doubled.first, adv));
  CHECK_THROWS_AS(compute_gdpo_outcome_advantage({}, mask, index), verl::InvalidArgument);
  CHECK_THROWS_AS(compute_gdpo_outcome_advantage({rewards}, mask, index, 1e-6, true, std::vector<double>{1, 2}),
                  verl::InvalidArgument);
  const torch::Tensor placed = gdpo_component_rewards(torch::tensor({1.5, -2.0}),
                                                      torch::tensor({1, 1, 1, 0, 1, 1, 1, 1}, torch::kLong).view({2, 4}), 2,
                                                      torch::ones({2, 2}));
  CHECK(torch::equal(placed, torch::tensor({1.5f, 0.0f, 0.0f, -2.0f}).view({2, 2})));
}

TEST_CASE("pf_ppo weights and the REINFORCE loss", "[algo][pf_ppo][policy_loss]") {
  const torch::Tensor scores = torch::tensor({-2.0, 0.0, 3.0, 3.0});
  CHECK(torch::allclose(pf_ppo_weights(scores, "max_min"), torch::tensor({1.0f, 1e-8f, 1.0f, 1.0f})));
  CHECK(torch::allclose(pf_ppo_weights(scores, "max_random"), torch::tensor({0.1f, 0.1f, 0.4f, 0.4f})));
  CHECK_THROWS_AS(pf_ppo_weights(scores, "softmax"), verl::InvalidArgument);
  const torch::Tensor drawn = pf_ppo_sample_indices(torch::tensor({0.0, 0.0, 5.0}).view({3, 1}), "pow", 2.0);
  CHECK(torch::equal(drawn, torch::full({3}, 2, torch::kLong)));  // the others weigh 1e-8 / 25

  const torch::Tensor lp = torch::tensor({-1.0, -2.0, -0.5}, f64()).view({1, 3}).requires_grad_();
  const torch::Tensor rollout = torch::tensor({-1.5, -2.0, -9.0}, f64()).view({1, 3});
  const torch::Tensor adv = torch::tensor({2.0, -1.0, 4.0}, f64()).view({1, 3});
  const torch::Tensor mask = torch::tensor({1.0, 1.0, 0.0}, f64()).view({1, 3});
  const PolicyLossOutput out =
      compute_policy_loss_reinforce(rollout, lp, adv, mask, "seq-mean-token-sum", PolicyLossConfig{});
  CHECK(out.pg_loss.item<double>() == Approx(-(2.0 * -1.0 + -1.0 * -2.0)).margin(1e-12));
  CHECK(out.metrics.at("actor/ppo_kl") == Approx(-0.25).margin(1e-8));
  out.pg_loss.backward();
  CHECK(torch::allclose(lp.grad(), torch::tensor({-2.0, 1.0, 0.0}, f64()).view({1, 3})));
}
