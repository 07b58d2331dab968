// verl::algo rollout correction (IS weights, rejection, off-policy metrics) and the "bypass_mode" policy loss
// from C++: hand-computed values, the registry entry and errors. (Bitwise parity with verl 0.9.1's Python is
// checked in tests/python/trainer/test_rollout_correction_verl091_parity.py.)
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <torch/torch.h>

#include "verl/algo/policy_loss.h"
#include "verl/algo/reinforce_loss.h"
#include "verl/algo/rollout_correction.h"
#include "verl/core/error.h"

using namespace verl::algo;

namespace {
torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }

// log pi_train - log pi_rollout of ratios [[3, 0.4, 1], [1.5, 1.2, (padding)]].
torch::Tensor log_ratio() { return torch::log(torch::tensor({3.0, 0.4, 1.0, 1.5, 1.2, 9.0}, f64())).view({2, 3}); }
torch::Tensor mask() { return torch::tensor({1.0, 1.0, 1.0, 1.0, 1.0, 0.0}, f64()).view({2, 3}); }
}  // namespace

TEST_CASE("rollout correction: truncated token and sequence weights, IcePop, rejection", "[algo][rollout_corr]") {
  auto token = compute_rollout_correction_weights(log_ratio(), mask(), "token", "2.0");
  CHECK(torch::allclose(token.weights, torch::tensor({2.0, 0.4, 1.0, 1.5, 1.2, 0.0}, f64()).view({2, 3}), 1e-12, 0));
  CHECK(token.metrics.at("rollout_is_ratio_fraction_high") == Approx(0.2));
  auto seq = compute_rollout_correction_weights(log_ratio(), mask(), "sequence", "2");
  CHECK(torch::allclose(seq.weights, torch::tensor({1.2, 1.2, 1.2, 1.8, 1.8, 0.0}, f64()).view({2, 3}), 1e-12, 0));
  auto icepop = compute_rollout_correction_weights(log_ratio(), mask(), "token", "0.6_1.6");
  CHECK(torch::allclose(icepop.weights, torch::tensor({0.0, 0.0, 1.0, 1.5, 1.2, 0.0}, f64()).view({2, 3}), 1e-12, 0));
  auto rejected = compute_rollout_rejection_mask(log_ratio(), mask(), "token_k1", "2.0");
  CHECK(torch::equal(rejected.response_mask, torch::tensor({0.0, 0.0, 1.0, 1.0, 1.0, 0.0}, f64()).view({2, 3})));
  CHECK(rejected.metrics.at("rollout_rs_masked_fraction") == Approx(0.4));
  CHECK_THROWS_AS(compute_rollout_rejection_mask(log_ratio(), mask(), "token_k9", "2.0"), verl::InvalidArgument);
  CHECK_THROWS_AS(compute_rollout_correction_weights(log_ratio(), mask(), "token", "2_1"), verl::InvalidArgument);
}

TEST_CASE("rollout correction: threshold text reads back as the same double", "[algo][rollout_corr]") {
  for (double x : {0.1, 1.0 / 3.0, 2.0, 1e-300, 123456.789}) {
    CHECK(std::strtod(rollout_threshold_text(x).c_str(), nullptr) == x);
  }
}

TEST_CASE("bypass_mode: REINFORCE with the correction's weights on the kept tokens, via the registry",
          "[algo][rollout_corr][policy_loss]") {
  const torch::Tensor rollout = torch::full({2, 3}, -1.0, f64());
  const torch::Tensor current = (rollout + log_ratio()).requires_grad_();
  const torch::Tensor adv = torch::tensor({1.0, -2.0, 0.5, 2.0, 1.0, 3.0}, f64()).view({2, 3});
  PolicyLossConfig cfg;
  RolloutCorrectionConfig corr;
  corr.loss_type = "reinforce";
  corr.rollout_is = "token";
  corr.rollout_rs = "token_k1";
  corr.rollout_rs_threshold = "2.0";
  cfg.policy_loss.rollout_correction = corr;
  const PolicyLossOutput out = get_policy_loss_fn("bypass_mode")(rollout, current, adv, mask(), "token-mean", cfg, {});
  // kept tokens: (0,2), (1,0), (1,1) with weights 1, 1.5, 1.2
  const torch::Tensor kept = torch::tensor({0.0, 0.0, 1.0, 1.0, 1.0, 0.0}, f64()).view({2, 3});
  const torch::Tensor weights = torch::tensor({2.0, 0.4, 1.0, 1.5, 1.2, 0.0}, f64()).view({2, 3});
  const PolicyLossOutput expected =
      compute_policy_loss_reinforce(rollout, current, adv, kept, "token-mean", cfg, weights);
  CHECK(out.pg_loss.item<double>() == Approx(expected.pg_loss.item<double>()).margin(1e-14));
  // -A * log_prob * w, token-mean over the three kept tokens (log_prob = -1 + log ratio)
  const double by_hand =
      -(0.5 * -1.0 * 1.0 + 2.0 * (-1.0 + std::log(1.5)) * 1.5 + 1.0 * (-1.0 + std::log(1.2)) * 1.2) / 3.0;
  CHECK(out.pg_loss.item<double>() == Approx(by_hand).margin(1e-7));  // masked mean's +1e-8 in the count
  CHECK(out.metrics.count("rollout_corr/rollout_is_mean") == 1);
  CHECK(out.metrics.at("rollout_corr/rollout_rs_masked_fraction") == Approx(0.4));
  cfg.policy_loss.rollout_correction.reset();
  CHECK_THROWS_AS(compute_policy_loss_bypass_mode(rollout, current, adv, mask(), "token-mean", cfg),
                  verl::InvalidArgument);
}
