// The fused CPU vanilla policy loss against the device-generic ATen formula: loss, gradient and
// metrics for every aggregation mode, mask dtype, weights, ties and garbage outside the mask.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <torch/torch.h>

#include "algo/vanilla_loss_kernel.h"
#include "verl/algo/agg_loss.h"
#include "verl/algo/policy_loss.h"
#include "verl/core/error.h"

using namespace verl::algo;
namespace kernels = verl::algo::detail;

namespace {

struct Inputs {
  torch::Tensor old_log_prob, log_prob, advantages, mask, weights;
};

// Ratios spread over [0.5, 2] (many clipped on both sides), some exact ties (ratio 1, A = 0),
// multi-turn masks with an all-masked row, garbage (NaN, -inf) outside the mask.
Inputs random_inputs(uint64_t seed, torch::ScalarType mask_dtype, int64_t bs = 6, int64_t len = 40) {
  torch::manual_seed(seed);
  Inputs in;
  in.old_log_prob = torch::log(torch::rand({bs, len}, torch::kDouble) * 0.9 + 0.05);
  in.log_prob = in.old_log_prob + 0.7 * torch::randn({bs, len}, torch::kDouble);
  in.log_prob.select(1, 3).copy_(in.old_log_prob.select(1, 3));  // ratio exactly 1: pg_losses1 == pg_losses2
  in.advantages = torch::randn({bs, len}, torch::kDouble);
  in.advantages.select(1, 5).zero_();
  in.log_prob.select(1, 7).copy_(in.old_log_prob.select(1, 7) + 25.0);  // log-ratio clamped at 20
  const torch::Tensor valid = torch::rand({bs, len}, torch::kDouble) > 0.25;
  valid[2].fill_(false);
  in.mask = valid.to(mask_dtype);
  in.weights = torch::rand({bs, len}, torch::kDouble) + 0.5;
  const torch::Tensor outside = valid.logical_not();
  in.old_log_prob.masked_fill_(outside, -std::numeric_limits<double>::infinity());
  in.log_prob.masked_fill_(outside, std::nan(""));
  in.advantages.masked_fill_(outside, std::nan(""));
  return in;
}

PolicyLossConfig config(double low, double high, double c, const std::string& mode) {
  PolicyLossConfig cfg;
  cfg.clip_ratio_low = low;
  cfg.clip_ratio_high = high;
  cfg.clip_ratio_c = c;
  cfg.loss_agg_mode = mode;
  return cfg;
}

}  // namespace

TEST_CASE("vanilla fused kernel: loss, gradient and metrics equal the ATen formula (float64)") {
  uint64_t seed = 10;
  for (torch::ScalarType mask_dtype : {torch::kLong, torch::kBool, torch::kDouble}) {
    for (const std::string& mode : loss_agg_modes()) {
      for (bool weighted : {false, true}) {
        const Inputs in = random_inputs(++seed, mask_dtype);
        const PolicyLossConfig cfg = config(0.2, 0.28, 3.0, mode);
        const torch::Tensor weights = weighted ? in.weights : torch::Tensor();
        REQUIRE(kernels::vanilla_fusable(in.old_log_prob, in.log_prob, in.advantages, in.mask));

        const torch::Tensor lp_fused = in.log_prob.clone().requires_grad_(true);
        const PolicyLossOutput fused =
            compute_policy_loss_vanilla(in.old_log_prob, lp_fused, in.advantages, in.mask, mode, cfg, weights);
        fused.pg_loss.backward();
        const torch::Tensor lp_aten = in.log_prob.clone().requires_grad_(true);
        const PolicyLossOutput aten = kernels::compute_policy_loss_vanilla_aten(in.old_log_prob, lp_aten,
                                                                              in.advantages, in.mask, mode, cfg,
                                                                              weights);
        aten.pg_loss.backward();

        INFO("mask dtype " << mask_dtype << ", mode " << mode << ", weighted " << weighted);
        CHECK(std::abs(fused.pg_loss.item<double>() - aten.pg_loss.item<double>()) <= 1e-10);
        CHECK(torch::isfinite(lp_fused.grad()).all().item<bool>());
        CHECK((lp_fused.grad() - lp_aten.grad()).abs().max().item<double>() <= 1e-10);
        REQUIRE(fused.metrics.size() == aten.metrics.size());
        for (const auto& [name, value] : aten.metrics) {
          INFO(name);
          // The clip fractions are float32 in verl (`.float()` indicators).
          CHECK(std::abs(fused.metrics.at(name) - value) <= 1e-7);
        }
        CHECK(fused.metrics.at("actor/pg_clipfrac") > 0);
        CHECK(fused.metrics.at("actor/pg_clipfrac_lower") > 0);
      }
    }
  }
}

TEST_CASE("vanilla fused kernel: float32 agrees with the ATen formula") {
  const Inputs in = random_inputs(3, torch::kLong, 64, 300);
  const PolicyLossConfig cfg = config(0.2, 0.2, 3.0, "token-mean");
  const torch::Tensor old32 = in.old_log_prob.to(torch::kFloat), adv32 = in.advantages.to(torch::kFloat);
  const torch::Tensor lp_fused = in.log_prob.to(torch::kFloat).requires_grad_(true);
  const torch::Tensor lp_aten = in.log_prob.to(torch::kFloat).requires_grad_(true);
  const PolicyLossOutput fused = compute_policy_loss_vanilla(old32, lp_fused, adv32, in.mask, "token-mean", cfg, {});
  const PolicyLossOutput aten =
      kernels::compute_policy_loss_vanilla_aten(old32, lp_aten, adv32, in.mask, "token-mean", cfg, {});
  fused.pg_loss.backward();
  aten.pg_loss.backward();
  CHECK(fused.pg_loss.scalar_type() == torch::kFloat);
  CHECK(std::abs(fused.pg_loss.item<double>() - aten.pg_loss.item<double>()) <= 1e-6);
  CHECK((lp_fused.grad() - lp_aten.grad()).abs().max().item<double>() <= 1e-8);
  for (const auto& [name, value] : aten.metrics) CHECK(std::abs(fused.metrics.at(name) - value) <= 1e-6);
}

TEST_CASE("vanilla fused kernel: NaN/Inf inside the mask names the input; other inputs take the ATen path") {
  Inputs in = random_inputs(4, torch::kLong);
  const PolicyLossConfig cfg = config(0.2, 0.2, 3.0, "token-mean");
  const int64_t col = 0;
  int64_t row = 0;
  while (in.mask[row][col].item<int64_t>() == 0) ++row;
  torch::Tensor adv = in.advantages.clone();
  adv[row][col] = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(compute_policy_loss_vanilla(in.old_log_prob, in.log_prob, adv, in.mask, "token-mean", cfg, {}),
                    Catch::Contains("advantages holds NaN or Inf at 1 position(s)"));
  torch::Tensor old_lp = in.old_log_prob.clone();
  old_lp[row][col] = std::nan("");
  CHECK_THROWS_AS(compute_policy_loss_vanilla(old_lp, in.log_prob, in.advantages, in.mask, "token-mean", cfg, {}),
                  verl::InvalidArgument);
  // Gradient wanted for advantages, or mixed dtypes: not fusable, same results through ATen.
  const torch::Tensor adv_grad = in.advantages.clone().requires_grad_(true);
  CHECK_FALSE(kernels::vanilla_fusable(in.old_log_prob, in.log_prob, adv_grad, in.mask));
  CHECK_FALSE(kernels::vanilla_fusable(in.old_log_prob.to(torch::kFloat), in.log_prob, in.advantages, in.mask));
  const PolicyLossOutput fused =
      compute_policy_loss_vanilla(in.old_log_prob, in.log_prob, in.advantages, in.mask, "token-mean", cfg, {});
  const PolicyLossOutput generic =
      compute_policy_loss_vanilla(in.old_log_prob, in.log_prob, adv_grad, in.mask, "token-mean", cfg, {});
  CHECK(std::abs(fused.pg_loss.item<double>() - generic.pg_loss.item<double>()) <= 1e-10);
}
