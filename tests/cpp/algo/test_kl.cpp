// verl::algo KL estimators, compute_rewards and KL controllers against hand-computed values,
// independent per-element formulas (values and gradients) and verl's controller arithmetic.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <torch/torch.h>

#include "verl/algo/kl.h"
#include "verl/core/error.h"

using namespace verl::algo;

namespace {

torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }

// Value and d/d(logprob) of one mode, evaluated per element with std:: math.
struct Expected {
  double value, grad;
};

Expected expected(const std::string& mode, double lp, double ref) {
  const double d = lp - ref;
  if (mode == "kl" || mode == "k1") return {d, 1.0};
  if (mode == "abs") return {std::abs(d), d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0)};
  if (mode == "mse" || mode == "k2") return {0.5 * d * d, d};
  // k3 = exp(x) - x - 1 with x = ref - lp clamped to [-20, 20], the result clamped to [-10, 10];
  // either clamp being active cuts the gradient.
  const double x = ref - lp, xc = std::clamp(x, -20.0, 20.0), k3 = std::exp(xc) - xc - 1;
  const bool clamped = x != xc || k3 > 10 || k3 < -10;
  return {std::clamp(k3, -10.0, 10.0), clamped ? 0.0 : 1 - std::exp(x)};
}

}  // namespace

TEST_CASE("kl_penalty: hand-computed values of every mode") {
  torch::Tensor lp = torch::tensor({0.0, -1.0}, f64()), ref = torch::tensor({-1.0, 0.0}, f64());
  CHECK(torch::equal(kl_penalty(lp, ref, "kl"), torch::tensor({1.0, -1.0}, f64())));
  CHECK(torch::equal(kl_penalty(lp, ref, "k1"), torch::tensor({1.0, -1.0}, f64())));
  CHECK(torch::equal(kl_penalty(lp, ref, "abs"), torch::tensor({1.0, 1.0}, f64())));
  CHECK(torch::equal(kl_penalty(lp, ref, "mse"), torch::tensor({0.5, 0.5}, f64())));
  CHECK(torch::equal(kl_penalty(lp, ref, "k2"), torch::tensor({0.5, 0.5}, f64())));
  // ref - lp = -1 and 1: e^-1 + 1 - 1, e^1 - 1 - 1.
  torch::Tensor k3 = torch::tensor({std::exp(-1.0), std::exp(1.0) - 2}, f64());
  CHECK(torch::allclose(kl_penalty(lp, ref, "low_var_kl"), k3, 0, 1e-15));
  CHECK(torch::allclose(kl_penalty(lp, ref, "k3"), k3, 0, 1e-15));
}

TEST_CASE("kl_penalty: low_var_kl clamps the log-ratio to [-20, 20] and the estimate to [-10, 10]") {
  torch::Tensor lp = torch::tensor({0.0, 0.0, 0.0}, f64()), ref = torch::tensor({30.0, -30.0, -5.0}, f64());
  torch::Tensor k3 = kl_penalty(lp, ref, "k3");
  CHECK(k3[0].item<double>() == 10.0);   // exp(20) - 21, clamped
  CHECK(k3[1].item<double>() == 10.0);   // exp(-20) + 19, clamped
  CHECK(k3[2].item<double>() == Approx(std::exp(-5.0) + 4).epsilon(1e-15));
  // Gradient is zero where the clamp is active, the analytic one elsewhere.
  torch::Tensor a = lp.clone().requires_grad_(true);
  kl_penalty(a, ref, "k3").sum().backward();
  CHECK(a.grad()[0].item<double>() == 0.0);
  CHECK(a.grad()[1].item<double>() == 0.0);
  CHECK(a.grad()[2].item<double>() == Approx(1 - std::exp(-5.0)).epsilon(1e-15));
}

TEST_CASE("kl_penalty: values and gradients match per-element formulas on random float64 inputs") {
  torch::manual_seed(7);
  // Wide enough that the k3 clamp is active for some elements.
  torch::Tensor lp = torch::randn({5, 9}, f64()) * 2, ref = torch::randn({5, 9}, f64()) * 2;
  CHECK(kl_penalty(lp, ref, "k3").eq(10).any().item<bool>());
  auto lp_acc = lp.accessor<double, 2>();
  auto ref_acc = ref.accessor<double, 2>();
  for (const std::string mode : {"kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"}) {
    INFO(mode);
    torch::Tensor a = lp.clone().requires_grad_(true);
    torch::Tensor k = kl_penalty(a, ref, mode);
    k.sum().backward();
    double worst_value = 0, worst_grad = 0;
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 9; ++j) {
        const Expected e = expected(mode, lp_acc[i][j], ref_acc[i][j]);
        worst_value = std::max(worst_value, std::abs(k[i][j].item<double>() - e.value));
        worst_grad = std::max(worst_grad, std::abs(a.grad()[i][j].item<double>() - e.grad));
      }
    CHECK(worst_value < 1e-10);
    CHECK(worst_grad < 1e-10);
    CHECK(torch::equal(kl_penalty_forward(lp, ref, mode), k.detach()));
  }
}

TEST_CASE("kl_penalty: '+' modes keep the forward value and take the k2 gradient (straight-through)") {
  torch::manual_seed(8);
  torch::Tensor lp = torch::randn({4, 6}, f64()), ref = torch::randn({4, 6}, f64());
  for (const std::string base : {"kl", "k1", "abs", "low_var_kl", "k3", "mse", "k2"}) {
    INFO(base);
    torch::Tensor a = lp.clone().requires_grad_(true), b = ref.clone().requires_grad_(true);
    torch::Tensor k = kl_penalty(a, b, base + "+");
    CHECK(torch::allclose(k.detach(), kl_penalty(lp, ref, base), 0, 1e-15));
    k.sum().backward();
    CHECK(torch::allclose(a.grad(), lp - ref, 0, 1e-15));   // d/dlp 0.5 (lp - ref)^2
    CHECK(torch::allclose(b.grad(), ref - lp, 0, 1e-15));   // and w.r.t. the reference
  }
}

TEST_CASE("kl_penalty: unknown modes and 'full' are errors listing the supported modes") {
  torch::Tensor lp = torch::zeros({2}), ref = torch::zeros({2});
  CHECK_THROWS_WITH(kl_penalty(lp, ref, "k4"), Catch::Contains("'k4'") && Catch::Contains("low_var_kl"));
  CHECK_THROWS_WITH(kl_penalty(lp, ref, "k4+"), Catch::Contains("'k4+'"));
  CHECK_THROWS_WITH(kl_penalty(lp, ref, "full"), Catch::Contains("does not implement 'full'"));
  CHECK_THROWS_AS(kl_penalty(lp, ref, "+"), verl::InvalidArgument);
  CHECK_THROWS_AS(kl_penalty(lp, ref, ""), verl::InvalidArgument);
  // kl_penalty_forward has no straight-through modes (verl raises there too).
  CHECK_THROWS_AS(kl_penalty_forward(lp, ref, "k3+"), verl::InvalidArgument);
  CHECK_THROWS_WITH(kl_penalty(lp, torch::zeros({3}), "kl"), Catch::Contains("[2]") && Catch::Contains("[3]"));
}

TEST_CASE("kl_penalty: bfloat16 and float32 keep their dtype") {
  torch::Tensor lp = torch::randn({3, 4}), ref = torch::randn({3, 4});
  CHECK(kl_penalty(lp, ref, "k3").scalar_type() == torch::kFloat);
  CHECK(kl_penalty(lp.to(torch::kBFloat16), ref.to(torch::kBFloat16), "k3+").scalar_type() == torch::kBFloat16);
}

TEST_CASE("compute_rewards: scores minus kl_ratio times the k1 estimate, differentiable") {
  torch::Tensor scores = torch::tensor({{1.0, 0.0}}, f64());
  torch::Tensor old_lp = torch::tensor({{-1.0, -2.0}}, f64()).requires_grad_(true);
  torch::Tensor ref_lp = torch::tensor({{-1.5, -1.0}}, f64());
  torch::Tensor rewards = compute_rewards(scores, old_lp, ref_lp, 0.1);
  CHECK(torch::allclose(rewards.detach(), torch::tensor({{0.95, 0.1}}, f64()), 0, 1e-15));
  rewards.sum().backward();
  CHECK(torch::allclose(old_lp.grad(), torch::full({1, 2}, -0.1, f64()), 0, 1e-15));
  CHECK_THROWS_AS(compute_rewards(scores, old_lp, torch::zeros({1, 3}, f64()), 0.1), verl::InvalidArgument);
  CHECK_THROWS_AS(compute_rewards(torch::zeros({2, 2}, f64()), old_lp, ref_lp, 0.1), verl::InvalidArgument);
}

TEST_CASE("FixedKLController: update leaves the coefficient unchanged") {
  FixedKLController ctrl(0.05);
  ctrl.update(123.0, 1000);
  CHECK(ctrl.value == 0.05);
}

TEST_CASE("AdaptiveKLController: proportional error clipped to +-0.2, scaled by n_steps / horizon") {
  AdaptiveKLController ctrl(0.1, 0.1, 100);
  CHECK(ctrl.target == 0.1);
  CHECK(ctrl.horizon == 100);
  ctrl.update(0.2, 10);  // error 1 -> 0.2: * 1.02
  CHECK(ctrl.value == Approx(0.102).epsilon(1e-14));
  ctrl.update(0.05, 10);  // error -0.5 -> -0.2: * 0.98
  CHECK(ctrl.value == Approx(0.102 * 0.98).epsilon(1e-14));
  ctrl.update(0.11, 50);  // error 0.1 (inside the band): * 1.05
  CHECK(ctrl.value == Approx(0.102 * 0.98 * 1.05).epsilon(1e-12));
  CHECK_THROWS_WITH(AdaptiveKLController(0.1, 0.1, 0), Catch::Contains("horizon must be larger than 0"));
}

TEST_CASE("get_kl_controller: fixed and adaptive from kl_ctrl settings, others are errors") {
  std::unique_ptr<KLController> fixed = get_kl_controller("fixed", 0.2);
  REQUIRE(dynamic_cast<FixedKLController*>(fixed.get()) != nullptr);
  CHECK(fixed->value == 0.2);
  std::unique_ptr<KLController> adaptive = get_kl_controller("adaptive", 0.3, 6.0, 500);
  auto* a = dynamic_cast<AdaptiveKLController*>(adaptive.get());
  REQUIRE(a != nullptr);
  CHECK(a->value == 0.3);
  CHECK(a->target == 6.0);
  CHECK(a->horizon == 500);
  adaptive->update(12.0, 500);  // through the base: error clipped to 0.2, full horizon
  CHECK(adaptive->value == Approx(0.36).epsilon(1e-14));
  CHECK(get_kl_controller("fixed")->value == 0.001);  // verl's KLControlConfig default
  CHECK_THROWS_AS(get_kl_controller("adaptive", 0.1, 0.1, -1), verl::InvalidArgument);
  CHECK_THROWS_WITH(get_kl_controller("pid"), Catch::Contains("'pid'") && Catch::Contains("adaptive"));
}
