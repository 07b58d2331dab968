// GAE's reverse scan: the fused CPU kernel against the device-generic ATen loop and a plain loop,
// on random multi-turn masks, plus its finiteness counting.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <torch/torch.h>

#include "kernels/aten/compositions.h"
#include "kernels/cpu/gae.h"
#include "verl/algo/advantage.h"
#include "verl/algo/functional.h"

using namespace verl::algo;
namespace kernels {
using namespace verl::kernels::cpu;
using verl::kernels::aten::gae_scan_aten;
}  // namespace kernels

namespace {

// Multi-turn masks: runs of 1s (responses) and 0s (observations), some rows all 0, some all 1.
torch::Tensor multi_turn_mask(int64_t bs, int64_t len, uint64_t seed) {
  torch::manual_seed(seed);
  torch::Tensor mask = torch::zeros({bs, len}, torch::kBool);
  auto m = mask.accessor<bool, 2>();
  for (int64_t i = 0; i < bs; ++i) {
    if (i % 7 == 3) continue;  // all masked
    bool on = true;
    for (int64_t t = 0; t < len; ++t) {
      if (i % 7 != 5 && torch::rand({1}).item<double>() < 0.15) on = !on;  // row i%7==5: all valid
      m[i][t] = on;
    }
  }
  return mask;
}

// verl's loop, element by element in double.
torch::Tensor loop_reference(const torch::Tensor& r, const torch::Tensor& v, const torch::Tensor& valid, double gamma,
                             double lam) {
  const torch::Tensor rd = r.to(torch::kDouble), vd = v.to(torch::kDouble);
  torch::Tensor adv = torch::zeros_like(rd);
  auto ra = rd.accessor<double, 2>(), va = vd.accessor<double, 2>(), out = adv.accessor<double, 2>();
  auto m = valid.accessor<bool, 2>();
  for (int64_t i = 0; i < rd.size(0); ++i) {
    double next_value = 0, last = 0;
    for (int64_t t = rd.size(1) - 1; t >= 0; --t) {
      const double delta = ra[i][t] + gamma * next_value - va[i][t];
      const double gae = delta + gamma * lam * last;
      const double mt = m[i][t] ? 1.0 : 0.0;
      next_value = va[i][t] * mt + (1 - mt) * next_value;
      last = gae * mt + (1 - mt) * last;
      out[i][t] = last;
    }
  }
  return adv;
}

}  // namespace

TEST_CASE("gae_scan: the fused CPU kernel equals the ATen loop and verl's loop on multi-turn masks") {
  for (uint64_t seed : {1, 2, 3}) {
    const int64_t bs = 23, len = 57;
    const torch::Tensor valid = multi_turn_mask(bs, len, seed);
    const torch::Tensor r = torch::randn({bs, len}, torch::kDouble), v = torch::randn({bs, len}, torch::kDouble);
    for (auto [gamma, lam] : {std::pair{1.0, 1.0}, std::pair{0.99, 0.95}, std::pair{0.5, 0.0}}) {
      const kernels::GaeScan fused = kernels::gae_scan_cpu(r, v, valid, gamma, lam);
      CHECK(fused.nonfinite_rewards == 0);
      CHECK(fused.nonfinite_values == 0);
      const torch::Tensor aten = kernels::gae_scan_aten(r, v, valid, gamma, lam);
      CHECK((fused.advantages - aten).abs().max().item<double>() <= 1e-10);
      CHECK((fused.advantages - loop_reference(r, v, valid, gamma, lam)).abs().max().item<double>() <= 1e-10);
      // float32: same operation order and rounding as the ATen loop.
      const torch::Tensor r32 = r.to(torch::kFloat), v32 = v.to(torch::kFloat);
      const torch::Tensor fused32 = kernels::gae_scan_cpu(r32, v32, valid, gamma, lam).advantages;
      CHECK(fused32.scalar_type() == torch::kFloat);
      CHECK((fused32 - kernels::gae_scan_aten(r32, v32, valid, gamma, lam)).abs().max().item<double>() <= 1e-6);
    }
  }
}

TEST_CASE("gae_scan: non-contiguous inputs, and the public function on both paths' inputs") {
  const int64_t bs = 9, len = 31;
  const torch::Tensor valid = multi_turn_mask(bs, len, 4);
  const torch::Tensor r = torch::randn({len, bs}, torch::kDouble).t(), v = torch::randn({len, bs}, torch::kDouble).t();
  REQUIRE_FALSE(r.is_contiguous());
  const torch::Tensor fused = kernels::gae_scan_cpu(r, v, valid, 0.9, 0.8).advantages;
  CHECK((fused - loop_reference(r, v, valid, 0.9, 0.8)).abs().max().item<double>() <= 1e-10);
  // The fused whole result (CPU) equals the ATen loop + masked_whiten, bitwise in float32.
  for (torch::ScalarType dtype : {torch::kDouble, torch::kFloat}) {
    for (torch::ScalarType mask_dtype : {torch::kLong, torch::kBool, torch::kFloat}) {
      const torch::Tensor mask = valid.to(mask_dtype), rd = r.to(dtype), vd = v.to(dtype);
      const kernels::GaeResult fused = kernels::gae_advantage_return_cpu(rd, vd, mask, 0.9, 0.8);
      const torch::Tensor raw = kernels::gae_scan_aten(rd, vd, mask, 0.9, 0.8);
      CHECK(torch::equal(fused.returns, raw + vd));
      CHECK(torch::equal(fused.advantages, masked_whiten(raw, valid.to(dtype))));
      const auto [adv, ret] = compute_gae_advantage_return(rd, vd, mask, 0.9, 0.8);
      CHECK(torch::equal(adv, fused.advantages));
    }
  }
  CHECK_THROWS_WITH(kernels::gae_advantage_return_cpu(r, v, torch::zeros({bs, len}), 0.9, 0.8),
                    Catch::Contains("At least one element"));
}

TEST_CASE("gae_scan: counts NaN/Inf inside the mask only; the public function names the input") {
  const int64_t bs = 4, len = 6;
  torch::Tensor valid = torch::ones({bs, len}, torch::kBool);
  valid[2].fill_(false);
  torch::Tensor r = torch::randn({bs, len}, torch::kDouble), v = torch::randn({bs, len}, torch::kDouble);
  r[2][1] = std::nan("");  // outside the mask: ignored
  v[2][3] = std::numeric_limits<double>::infinity();
  kernels::GaeScan scan = kernels::gae_scan_cpu(r, v, valid, 0.9, 0.9);
  CHECK(scan.nonfinite_rewards == 0);
  CHECK(scan.nonfinite_values == 0);
  CHECK(torch::isfinite(scan.advantages).all().item<bool>());
  r[0][0] = std::nan("");
  r[1][5] = -std::numeric_limits<double>::infinity();
  v[3][2] = std::nan("");
  scan = kernels::gae_scan_cpu(r, v, valid, 0.9, 0.9);
  CHECK(scan.nonfinite_rewards == 2);
  CHECK(scan.nonfinite_values == 1);
  CHECK_THROWS_WITH(compute_gae_advantage_return(r, v, valid.to(torch::kLong), 0.9, 0.9),
                    Catch::Contains("token_level_rewards") && Catch::Contains("2 position(s)"));
}
