// verl::algo::compute_value_loss and compute_entropy_loss against hand-computed values, loop
// references of verl's formulas and analytic gradients, plus their input checks.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <torch/torch.h>

#include "loss_reference.h"
#include "verl/algo/value_loss.h"
#include "verl/core/error.h"

using namespace verl::algo;
using verl::test::reference_agg;

namespace {
torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }
double item(const torch::Tensor& t) { return t.item<double>(); }

struct ValueBatch {
  torch::Tensor vpreds, returns, values, mask;
};

ValueBatch random_values(uint64_t seed, int64_t bs = 5, int64_t len = 7) {
  torch::manual_seed(seed);
  ValueBatch b;
  b.values = torch::randn({bs, len}, f64());
  b.vpreds = b.values + 0.5 * torch::randn({bs, len}, f64());  // often beyond values +- 0.2
  b.returns = torch::randn({bs, len}, f64());
  b.mask = (torch::rand({bs, len}, f64()) > 0.3).to(torch::kDouble);
  b.mask[0].zero_();
  return b;
}

// Per token max((v - R)^2, (clip(v, old - c, old + c) - R)^2); counts where the clipped one is larger.
torch::Tensor value_loss_matrix(const ValueBatch& b, double c, double* clipped = nullptr) {
  torch::Tensor out = torch::zeros_like(b.vpreds);
  auto o = out.accessor<double, 2>();
  auto v = b.vpreds.accessor<double, 2>(), r = b.returns.accessor<double, 2>(), old = b.values.accessor<double, 2>();
  auto m = b.mask.accessor<double, 2>();
  double count = 0;
  for (int64_t i = 0; i < out.size(0); ++i) {
    for (int64_t j = 0; j < out.size(1); ++j) {
      if (m[i][j] == 0) continue;
      const double vc = std::min(std::max(v[i][j], old[i][j] - c), old[i][j] + c);
      const double l1 = (v[i][j] - r[i][j]) * (v[i][j] - r[i][j]), l2 = (vc - r[i][j]) * (vc - r[i][j]);
      if (l2 > l1) count += 1;
      o[i][j] = std::max(l1, l2);
    }
  }
  if (clipped) *clipped = count;
  return out;
}
}  // namespace

TEST_CASE("compute_value_loss: hand-computed loss and clip fraction") {
  // v=1 old=0.5 -> clipped to 0.7, R=2: max(1, 1.69) clipped | v=2 old=2, R=1: 1
  // v=0.5 old=0.5, R=0: 0.25 | v=3 old=1 -> 1.2, R=2: max(1, 0.64) = 1
  torch::Tensor vpreds = torch::tensor({{1.0, 2.0}, {0.5, 3.0}}, f64());
  torch::Tensor values = torch::tensor({{0.5, 2.0}, {0.5, 1.0}}, f64());
  torch::Tensor returns = torch::tensor({{2.0, 1.0}, {0.0, 2.0}}, f64());
  torch::Tensor mask = torch::ones({2, 2}, f64());
  ValueLossOutput out = compute_value_loss(vpreds, returns, values, mask, 0.2);
  CHECK(item(out.vf_loss) == Approx(0.5 * (1.69 + 1.0 + 0.25 + 1.0) / 4.0).epsilon(1e-12));
  CHECK(item(out.vf_clipfrac) == Approx(1.0 / (4.0 + 1e-8)).epsilon(1e-14));
  // Masking the clipped token leaves three unclipped ones.
  mask[0][0] = 0;
  out = compute_value_loss(vpreds, returns, values, mask, 0.2, "token-sum");
  CHECK(item(out.vf_loss) == Approx(0.5 * (1.0 + 0.25 + 1.0)).epsilon(1e-12));
  CHECK(item(out.vf_clipfrac) == 0.0);
}

TEST_CASE("compute_value_loss: random float64 inputs match the loop reference in every mode") {
  ValueBatch b = random_values(70);
  double clipped = 0;
  torch::Tensor ref = value_loss_matrix(b, 0.2, &clipped);
  REQUIRE(clipped > 0);
  for (const char* mode : {"token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
                           "seq-mean-token-sum-norm"}) {
    INFO(mode);
    ValueLossOutput out = compute_value_loss(b.vpreds, b.returns, b.values, b.mask, 0.2, mode);
    CHECK(std::abs(item(out.vf_loss) - 0.5 * reference_agg(ref, b.mask, mode)) <= 1e-10);
    CHECK(std::abs(item(out.vf_clipfrac) - clipped / (b.mask.sum().item<double>() + 1e-8)) <= 1e-10);
    // Global batch info is forwarded to agg_loss.
    ValueLossOutput global = compute_value_loss(b.vpreds, b.returns, b.values, b.mask, 0.2, mode, 2, 50.0, 9.0, 3.0);
    CHECK(std::abs(item(global.vf_loss) - 0.5 * reference_agg(ref, b.mask, mode, 2, 50.0, 9.0, 3.0)) <= 1e-10);
  }
  CHECK_THROWS_WITH(compute_value_loss(b.vpreds, b.returns, b.values, b.mask, 0.2, "token-mean", 2),
                    Catch::Contains("batch_num_tokens is required"));
}

TEST_CASE("compute_value_loss: the gradient is (v - R) / N where unclipped, 0 where the clipped term wins") {
  ValueBatch b = random_values(71);
  torch::Tensor v = b.vpreds.clone().requires_grad_(true);
  compute_value_loss(v, b.returns, b.values, b.mask, 0.2).vf_loss.backward();
  const double n = b.mask.sum().item<double>();
  torch::Tensor expected = torch::zeros_like(v);
  auto vp = b.vpreds.accessor<double, 2>(), r = b.returns.accessor<double, 2>(), old = b.values.accessor<double, 2>();
  auto m = b.mask.accessor<double, 2>();
  for (int64_t i = 0; i < v.size(0); ++i) {
    for (int64_t j = 0; j < v.size(1); ++j) {
      if (m[i][j] == 0) continue;
      const double vc = std::min(std::max(vp[i][j], old[i][j] - 0.2), old[i][j] + 0.2);
      const double l1 = std::pow(vp[i][j] - r[i][j], 2), l2 = std::pow(vc - r[i][j], 2);
      // 0.5 * d(v - R)^2 / dv = v - R; the clipped term is constant in v once v is clipped.
      if (l1 >= l2) expected[i][j] = (vp[i][j] - r[i][j]) / n;
    }
  }
  CHECK((v.grad() - expected).abs().max().item<double>() < 1e-12);
}

TEST_CASE("compute_value_loss: empty batch, shape mismatch and NaN inside the mask are errors") {
  torch::Tensor empty = torch::zeros({0, 3}, f64());
  CHECK_THROWS_WITH(compute_value_loss(empty, empty, empty, empty, 0.2), Catch::Contains("empty batch"));
  ValueBatch b = random_values(72, 2, 3);
  CHECK_THROWS_MATCHES(compute_value_loss(b.vpreds, b.returns.slice(1, 0, 2), b.values, b.mask, 0.2),
                       verl::InvalidArgument,
                       Catch::Message("returns and response_mask must have the same shape, got [2, 2] and [2, 3]"));
  b.mask.fill_(1.0);
  torch::Tensor nan_v = b.vpreds.clone();
  nan_v[1][1] = std::nan("");
  CHECK_THROWS_WITH(compute_value_loss(nan_v, b.returns, b.values, b.mask, 0.2), Catch::Contains("vpreds holds NaN"));
  // Outside the mask it is ignored, gradient included.
  b.mask[1][1] = 0;
  torch::Tensor v = nan_v.clone().requires_grad_(true);
  ValueLossOutput out = compute_value_loss(v, b.returns, b.values, b.mask, 0.2);
  out.vf_loss.backward();
  CHECK(std::isfinite(item(out.vf_loss)));
  CHECK(torch::isfinite(v.grad()).all().item<bool>());
}

TEST_CASE("compute_value_loss: float32 and bfloat16 run and backpropagate") {
  ValueBatch b = random_values(73);
  const double ref = item(compute_value_loss(b.vpreds, b.returns, b.values, b.mask, 0.2).vf_loss);
  for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    INFO(dtype);
    torch::Tensor v = b.vpreds.to(dtype).requires_grad_(true);
    ValueLossOutput out = compute_value_loss(v, b.returns.to(dtype), b.values.to(dtype), b.mask.to(dtype), 0.2);
    out.vf_loss.backward();
    CHECK(out.vf_loss.scalar_type() == dtype);
    CHECK(torch::isfinite(v.grad()).all().item<bool>());
    if (dtype == torch::kFloat) CHECK(item(out.vf_loss) == Approx(ref).epsilon(1e-5));
  }
}

TEST_CASE("compute_entropy_loss: the aggregated entropy of softmax(logits), with its gradient") {
  torch::manual_seed(74);
  torch::Tensor logits = torch::randn({3, 4, 6}, f64()).requires_grad_(true);
  torch::Tensor mask = (torch::rand({3, 4}, f64()) > 0.3).to(torch::kDouble);
  mask[2].zero_();
  // -sum p log p per position, written out.
  torch::Tensor ref_entropy = torch::zeros({3, 4}, f64());
  torch::Tensor values = logits.detach();
  auto l = values.accessor<double, 3>();
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      double mx = l[i][j][0];
      for (int64_t k = 1; k < 6; ++k) mx = std::max(mx, l[i][j][k]);
      double z = 0;
      for (int64_t k = 0; k < 6; ++k) z += std::exp(l[i][j][k] - mx);
      double h = 0;
      for (int64_t k = 0; k < 6; ++k) {
        const double p = std::exp(l[i][j][k] - mx) / z;
        h -= p * std::log(p);
      }
      ref_entropy[i][j] = h;
    }
  }
  for (const char* mode : {"token-mean", "seq-mean-token-mean"}) {
    INFO(mode);
    CHECK(std::abs(item(compute_entropy_loss(logits, mask, mode)) - reference_agg(ref_entropy, mask, mode)) <= 1e-10);
  }
  // Gradient against autograd through the textbook formula.
  torch::Tensor naive_in = logits.detach().clone().requires_grad_(true);
  compute_entropy_loss(logits, mask).backward();
  torch::Tensor p = torch::softmax(naive_in, -1);
  torch::Tensor naive = -(p * torch::log_softmax(naive_in, -1)).sum(-1);
  ((naive * mask).sum() / mask.sum()).backward();
  CHECK((logits.grad() - naive_in.grad()).abs().max().item<double>() < 1e-12);
}

TEST_CASE("compute_entropy_loss: shape mismatch, empty batch and NaN logits inside the mask are errors") {
  torch::Tensor logits = torch::randn({2, 3, 5}, f64());
  CHECK_THROWS_WITH(compute_entropy_loss(logits, torch::ones({2, 4}, f64())),
                    Catch::Contains("[2, 3, 5]") && Catch::Contains("[2, 4]"));
  CHECK_THROWS_AS(compute_entropy_loss(torch::randn({2, 3}, f64()), torch::ones({2, 3}, f64())),
                  verl::InvalidArgument);
  CHECK_THROWS_WITH(compute_entropy_loss(torch::zeros({0, 3, 5}, f64()), torch::zeros({0, 3}, f64())),
                    Catch::Contains("empty batch"));
  torch::Tensor mask = torch::ones({2, 3}, f64());
  logits[1][2][4] = std::nan("");
  CHECK_THROWS_WITH(compute_entropy_loss(logits, mask), Catch::Contains("logits holds NaN or Inf"));
  mask[1][2] = 0;
  CHECK(std::isfinite(item(compute_entropy_loss(logits, mask))));
}
