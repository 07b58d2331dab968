// Safe-RLHF (PPO-Lagrangian): the multiplier's projected ascent step and the combined advantage against the formulas.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <torch/torch.h>

#include "verl/algo/safe_rlhf.h"
#include "verl/core/error.h"

using namespace verl::algo;

TEST_CASE("safe_rlhf: lambda <- clamp(lambda + lr * (mean cost - limit), 0, lambda_max)") {
  // a violated constraint raises lambda, a satisfied one lowers it
  CHECK(update_lagrange_multiplier(1.0, 0.8, 0.5, 0.1, std::nullopt) == Approx(1.0 + 0.1 * 0.3).epsilon(1e-15));
  CHECK(update_lagrange_multiplier(1.0, 0.2, 0.5, 0.1, std::nullopt) == Approx(1.0 - 0.1 * 0.3).epsilon(1e-15));
  CHECK(update_lagrange_multiplier(0.01, -3.0, 0.5, 0.1, std::nullopt) == 0.0);  // projected onto lambda >= 0
  CHECK(update_lagrange_multiplier(1.9, 10.0, 0.0, 0.1, 2.0) == 2.0);             // and onto lambda <= lambda_max
  CHECK(update_lagrange_multiplier(1.0, 1e6, 0.0, 1.0, std::nullopt) == Approx(1e6 + 1.0));  // no upper bound
  CHECK(update_lagrange_multiplier(0.7, 5.0, 0.0, 0.0, std::nullopt) == 0.7);     // lr 0: a fixed multiplier
  // a sequence of steps equals the closed form while no bound is hit
  double lambda = 0.5;
  double expected = 0.5;
  for (double cost : {0.9, 0.7, 0.6, 0.55}) {
    lambda = update_lagrange_multiplier(lambda, cost, 0.5, 0.25, 3.0);
    expected += 0.25 * (cost - 0.5);
  }
  CHECK(lambda == Approx(expected).epsilon(1e-15));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(update_lagrange_multiplier(-0.1, 0.0, 0.0, 0.1, std::nullopt), verl::InvalidArgument);
  CHECK_THROWS_AS(update_lagrange_multiplier(1.0, nan, 0.0, 0.1, std::nullopt), verl::InvalidArgument);
  CHECK_THROWS_AS(update_lagrange_multiplier(1.0, 0.0, 0.0, -0.1, std::nullopt), verl::InvalidArgument);
  CHECK_THROWS_AS(update_lagrange_multiplier(1.0, 0.0, 0.0, 0.1, -1.0), verl::InvalidArgument);
}

TEST_CASE("safe_rlhf: advantage (A_r - lambda A_c) / (1 + lambda)") {
  torch::manual_seed(2);
  const torch::Tensor ar = torch::randn({4, 6}, torch::kDouble);
  const torch::Tensor ac = torch::randn({4, 6}, torch::kDouble);
  for (double lambda : {0.0, 0.3, 1.0, 7.5}) {
    const torch::Tensor a = safe_rlhf_advantages(ar, ac, lambda);
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t t = 0; t < 6; ++t) {
        const double expected = (ar[i][t].item<double>() - lambda * ac[i][t].item<double>()) / (1.0 + lambda);
        CHECK(a[i][t].item<double>() == Approx(expected).epsilon(1e-14).margin(1e-15));
      }
    }
  }
  CHECK(torch::equal(safe_rlhf_advantages(ar, ac, 0.0), ar));  // lambda 0: plain PPO's advantage
  CHECK_THROWS_AS(safe_rlhf_advantages(ar, ac, -1.0), verl::InvalidArgument);
  CHECK_THROWS_AS(safe_rlhf_advantages(ar, ac.narrow(1, 0, 5), 1.0), verl::InvalidArgument);
  CHECK_THROWS_AS(safe_rlhf_advantages(ar, ac.to(torch::kFloat), 1.0), verl::InvalidArgument);
}
