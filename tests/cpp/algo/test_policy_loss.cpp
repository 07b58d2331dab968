// verl::algo policy losses against hand-computed values, loop-by-loop references of verl's formulas,
// analytic and finite-difference gradients, the registry, and the input checks.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>
#include <torch/torch.h>

#include "loss_reference.h"
#include "verl/algo/policy_loss.h"
#include "verl/core/error.h"

using namespace verl::algo;
using verl::test::reference_agg;

namespace {
torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }
double item(const torch::Tensor& t) { return t.item<double>(); }

struct Batch {
  torch::Tensor old_log_prob, log_prob, advantages, mask, weights;
};

// Log-probs of probabilities in (0.02, 0.6) moved by ~0.5 in log space (so that a good share of
// the ratios leave [0.8, 1.2]), standard-normal advantages, ~30% masked positions, row 1 fully masked.
Batch random_batch(uint64_t seed, int64_t bs = 5, int64_t len = 8) {
  torch::manual_seed(seed);
  Batch b;
  b.old_log_prob = torch::log(torch::rand({bs, len}, f64()) * 0.58 + 0.02);
  b.log_prob = (b.old_log_prob + 0.5 * torch::randn({bs, len}, f64())).clamp_max(-0.01);
  b.advantages = torch::randn({bs, len}, f64());
  b.mask = (torch::rand({bs, len}, f64()) > 0.3).to(torch::kDouble);
  b.mask[1].zero_();
  b.weights = torch::rand({bs, len}, f64()) * 1.5 + 0.25;
  return b;
}

// A loss matrix plus the metric numerators a reference accumulates over the valid tokens.
struct Ref {
  torch::Tensor loss;  // (bs, T) float64, already multiplied by the weights
  double clipped = 0, lower = 0, kl = 0, tokens = 0;
  double mean(double numerator) const { return numerator / (tokens + 1e-8); }  // verl's masked_mean
};

using TokenFn = std::function<double(int64_t i, int64_t j, double old_lp, double lp, double adv, Ref& ref)>;

// Runs fn on every valid token (mask != 0) and multiplies by the weight when `weighted`.
Ref token_reference(const Batch& b, bool weighted, const TokenFn& fn) {
  Ref ref;
  ref.loss = torch::zeros_like(b.advantages);
  auto out = ref.loss.accessor<double, 2>();
  auto old_lp = b.old_log_prob.accessor<double, 2>(), lp = b.log_prob.accessor<double, 2>();
  auto adv = b.advantages.accessor<double, 2>(), m = b.mask.accessor<double, 2>(), w = b.weights.accessor<double, 2>();
  for (int64_t i = 0; i < b.mask.size(0); ++i) {
    for (int64_t j = 0; j < b.mask.size(1); ++j) {
      if (m[i][j] == 0) continue;
      ref.tokens += 1;
      out[i][j] = fn(i, j, old_lp[i][j], lp[i][j], adv[i][j], ref) * (weighted ? w[i][j] : 1.0);
    }
  }
  return ref;
}

double clamp(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }

Ref vanilla_reference(const Batch& b, bool weighted, double low, double high, double c) {
  return token_reference(b, weighted, [&](int64_t, int64_t, double old_lp, double lp, double a, Ref& ref) {
    const double log_ratio = clamp(lp - old_lp, -20, 20);
    const double r = std::exp(log_ratio);
    ref.kl += -log_ratio;
    const double unclipped = -a * r, clipped = -a * clamp(r, 1 - low, 1 + high);
    if (clipped > unclipped) ref.clipped += 1;
    const double ppo = std::max(unclipped, clipped);
    if (a >= 0) return ppo;
    if (ppo > -a * c) ref.lower += 1;
    return std::min(ppo, -a * c);
  });
}

Ref cispo_reference(const Batch& b, bool weighted, double low, double high) {
  return token_reference(b, weighted, [&](int64_t, int64_t, double old_lp, double lp, double a, Ref& ref) {
    const double log_ratio = clamp(lp - old_lp, -20, 20);
    const double r = std::exp(log_ratio);
    ref.kl += -log_ratio;
    const double cr = clamp(r, 1 - low, 1 + high);
    if (cr != r) ref.clipped += 1;
    return -cr * a * lp;
  });
}

Ref sapo_reference(const Batch& b, bool weighted, double tau_pos, double tau_neg) {
  return token_reference(b, weighted, [&](int64_t, int64_t, double old_lp, double lp, double a, Ref& ref) {
    const double log_ratio = clamp(lp - old_lp, -20, 20);
    ref.kl += -log_ratio;
    const double tau = a > 0 ? tau_pos : tau_neg;
    const double gate = 1.0 / (1.0 + std::exp(-tau * (std::exp(log_ratio) - 1.0))) * 4.0 / tau;
    return -gate * a;
  });
}

// GSPO: every token of row i sees the sequence ratio s_i = exp(min(mean log ratio, 10)).
Ref gspo_reference(const Batch& b, bool weighted, double low, double high, std::vector<double>* seq_ratio = nullptr) {
  std::vector<double> s(b.mask.size(0));
  auto old_lp = b.old_log_prob.accessor<double, 2>(), lp = b.log_prob.accessor<double, 2>();
  auto m = b.mask.accessor<double, 2>();
  for (int64_t i = 0; i < b.mask.size(0); ++i) {
    double sum = 0, n = 0;
    for (int64_t j = 0; j < b.mask.size(1); ++j) {
      if (m[i][j] != 0) sum += lp[i][j] - old_lp[i][j], n += 1;
    }
    s[i] = std::exp(std::min(sum / std::max(n, 1.0), 10.0));
  }
  if (seq_ratio) *seq_ratio = s;
  return token_reference(b, weighted, [&](int64_t i, int64_t, double o, double l, double a, Ref& ref) {
    ref.kl += o - l;
    const double unclipped = -a * s[i], clipped = -a * clamp(s[i], 1 - low, 1 + high);
    if (clipped > unclipped) ref.clipped += 1;
    return std::max(unclipped, clipped);
  });
}

Ref dppo_reference(const Batch& b, bool weighted, double low, double high, double c, bool binary_kl) {
  return token_reference(b, weighted, [&](int64_t, int64_t, double old_lp, double lp, double a, Ref& ref) {
    const double log_ratio = clamp(lp - old_lp, -20, 20);
    const double r = std::exp(log_ratio);
    ref.kl += -log_ratio;
    const double p = std::exp(lp), op = std::exp(old_lp);
    bool valid;
    if (binary_kl) {
      const double kl = op * (old_lp - lp) + (1 - op) * std::log((1.0 - op + 1e-8) / (1.0 - p + 1e-8));
      valid = a > 0 ? (kl <= high || p <= op) : (kl <= low || p >= op);
    } else {
      valid = a > 0 ? (p - op <= high) : (p - op >= -low);
    }
    if (!valid) ref.clipped += 1;
    if (valid && r > c) ref.lower += 1;
    return valid ? -a * std::min(r, c) * lp : 0.0;
  });
}

// KL-Cov: the k = max(1, int(n * ratio)) valid tokens with the largest (A - mean A)(lp - mean lp).
Ref kl_cov_reference(const Batch& b, bool weighted, double ratio, double coef) {
  auto lp = b.log_prob.accessor<double, 2>(), adv = b.advantages.accessor<double, 2>();
  auto m = b.mask.accessor<double, 2>();
  std::vector<std::pair<int64_t, int64_t>> valid;
  double mean_a = 0, mean_lp = 0;
  for (int64_t i = 0; i < b.mask.size(0); ++i) {
    for (int64_t j = 0; j < b.mask.size(1); ++j) {
      if (m[i][j] != 0) valid.emplace_back(i, j), mean_a += adv[i][j], mean_lp += lp[i][j];
    }
  }
  const auto n = static_cast<double>(valid.size());
  mean_a /= n;
  mean_lp /= n;
  std::vector<size_t> order(valid.size());
  std::iota(order.begin(), order.end(), 0);
  auto cov = [&](size_t v) {
    auto [i, j] = valid[v];
    return (adv[i][j] - mean_a) * (lp[i][j] - mean_lp);
  };
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return cov(x) > cov(y); });
  const auto k = std::max<size_t>(1, static_cast<size_t>(n * ratio));
  std::vector<std::vector<bool>> top(b.mask.size(0), std::vector<bool>(b.mask.size(1), false));
  for (size_t t = 0; t < k; ++t) top[valid[order[t]].first][valid[order[t]].second] = true;
  return token_reference(b, weighted, [&](int64_t i, int64_t j, double old_lp, double l, double a, Ref& ref) {
    const double log_ratio = l - old_lp;
    ref.kl += std::abs(log_ratio);
    return -a * std::exp(log_ratio) + (top[i][j] ? coef * std::abs(log_ratio) : 0.0);
  });
}

// verl's Clip-Cov selection: candidates in row-major order, the first clip_num of a torch.randperm
// drawn from the default generator (seeded by the caller) are cut.
Ref clip_cov_reference(const Batch& b, bool weighted, double low, double high, double cov_ratio, double lb,
                       double ub) {
  auto old_lp = b.old_log_prob.accessor<double, 2>(), lp = b.log_prob.accessor<double, 2>();
  auto adv = b.advantages.accessor<double, 2>(), m = b.mask.accessor<double, 2>();
  double n = 0, sum_a = 0, sum_lp = 0;
  for (int64_t i = 0; i < b.mask.size(0); ++i) {
    for (int64_t j = 0; j < b.mask.size(1); ++j) {
      if (m[i][j] != 0) n += 1, sum_a += adv[i][j], sum_lp += lp[i][j];
    }
  }
  const double mean_a = sum_a / (n + 1e-8), mean_lp = sum_lp / (n + 1e-8);
  std::vector<std::pair<int64_t, int64_t>> candidates;
  for (int64_t i = 0; i < b.mask.size(0); ++i) {
    for (int64_t j = 0; j < b.mask.size(1); ++j) {
      if (m[i][j] == 0) continue;
      const double r = std::exp(lp[i][j] - old_lp[i][j]);
      if (-adv[i][j] * clamp(r, 1 - low, 1 + high) > -adv[i][j] * r) continue;  // PPO already clips it
      const double cov = (adv[i][j] - mean_a) * (lp[i][j] - mean_lp);
      if (cov > lb && cov < ub) candidates.emplace_back(i, j);
    }
  }
  std::vector<std::vector<bool>> cut(b.mask.size(0), std::vector<bool>(b.mask.size(1), false));
  if (!candidates.empty()) {
    const int64_t clip_num = std::max<int64_t>(static_cast<int64_t>(cov_ratio * n), 1);
    torch::Tensor perm = torch::randperm(static_cast<int64_t>(candidates.size()), torch::kLong);
    for (int64_t t = 0; t < std::min<int64_t>(clip_num, perm.size(0)); ++t) {
      auto [i, j] = candidates[perm[t].item<int64_t>()];
      cut[i][j] = true;
    }
  }
  return token_reference(b, weighted, [&](int64_t i, int64_t j, double o, double l, double a, Ref& ref) {
    ref.kl += o - l;
    if (cut[i][j]) {
      ref.clipped += 1;
      return 0.0;
    }
    const double r = std::exp(l - o);
    return std::max(-a * r, -a * clamp(r, 1 - low, 1 + high));
  });
}

struct GeoRef {
  double loss = 0, clipfrac = 0, clipfrac_lower = 0, kl = 0;
};
GeoRef geo_mean_reference(const Batch& b, bool weighted, double low, double high) {
  auto old_lp = b.old_log_prob.accessor<double, 2>(), lp = b.log_prob.accessor<double, 2>();
  auto adv = b.advantages.accessor<double, 2>(), m = b.mask.accessor<double, 2>();
  auto w = b.weights.accessor<double, 2>();
  GeoRef g;
  double tokens = 0, higher = 0, lower = 0, kl = 0;
  for (int64_t i = 0; i < b.mask.size(0); ++i) {
    double n = 0, log_ratio_sum = 0, adv_sum = 0, log_w_sum = 0;
    for (int64_t j = 0; j < b.mask.size(1); ++j) {
      if (m[i][j] == 0) continue;
      const double x = lp[i][j] - old_lp[i][j], xc = clamp(x, -low, high), a = adv[i][j];
      // The clip is taken only where it lowers sign(A) * log r.
      const double s = a > 0 ? 1.0 : (a < 0 ? -1.0 : 0.0);
      log_ratio_sum += s * std::min(s * x, s * xc);
      adv_sum += a;
      log_w_sum += std::log(w[i][j] + 1e-10);
      n += 1;
      kl += -x;
      if (x != xc && a > 0) higher += 1;
      if (x != xc && a < 0) lower += 1;
    }
    tokens += n;
    double seq_loss = -(adv_sum / (n + 1e-8)) * std::exp(log_ratio_sum / (n + 1e-8));
    if (weighted) seq_loss *= std::exp(log_w_sum / (n + 1e-8));
    g.loss += seq_loss / static_cast<double>(b.mask.size(0));  // mean over all rows
  }
  g.clipfrac = higher / (tokens + 1e-8);
  g.clipfrac_lower = lower / (tokens + 1e-8);
  g.kl = kl / (tokens + 1e-8);
  return g;
}

torch::Tensor none() { return {}; }

PolicyLossOutput run(const PolicyLossFn& fn, const Batch& b, const std::string& mode, const PolicyLossConfig& cfg,
                     bool weighted) {
  return fn(b.old_log_prob, b.log_prob, b.advantages, b.mask, mode, cfg, weighted ? b.weights : none());
}

const std::vector<std::string> kModes = {"token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
                                         "seq-mean-token-sum-norm"};
const std::vector<std::string> kLosses = {"vanilla", "dppo_tv", "dppo_kl", "gspo", "sapo", "gpg",
                                          "clip_cov", "kl_cov", "geo_mean", "dro", "cispo"};

PolicyLossConfig config_for(const std::string& name) {
  PolicyLossConfig cfg;
  cfg.policy_loss.loss_mode = name;
  if (name == "dro") cfg.policy_loss.dro_beta = 0.5;
  return cfg;
}

// Central finite difference of f at x (float64), one element at a time.
torch::Tensor finite_difference(const std::function<double(const torch::Tensor&)>& f, const torch::Tensor& x,
                                double h = 1e-6) {
  torch::Tensor grad = torch::zeros_like(x);
  torch::Tensor flat = grad.view(-1);
  for (int64_t k = 0; k < x.numel(); ++k) {
    torch::Tensor plus = x.clone(), minus = x.clone();
    plus.view(-1)[k] += h;
    minus.view(-1)[k] -= h;
    flat[k] = (f(plus) - f(minus)) / (2 * h);
  }
  return grad;
}
}  // namespace

// ---- vanilla ---------------------------------------------------------------------------------

TEST_CASE("vanilla: hand-computed loss, clip fractions and ppo_kl") {
  // Ratios r = exp(log_prob - 0). Token by token with clip 0.2 and clip_ratio_c 3:
  //   A= 1 r=1.5 -> clipped to -1.2 | A= 1 r=0.5 -> -0.5 | A=-1 r=1.5 -> 1.5 | A=-1 r=4 -> dual clip 3
  //   A=-1 r=0.5 -> clipped to 0.8  | A= 2 r=5   -> clipped to -2.4 | two masked tokens.
  torch::Tensor r = torch::tensor({{1.5, 0.5, 1.5, 4.0}, {0.5, 5.0, 9.0, 0.1}}, f64());
  torch::Tensor adv = torch::tensor({{1.0, 1.0, -1.0, -1.0}, {-1.0, 2.0, 5.0, -3.0}}, f64());
  torch::Tensor mask = torch::tensor({{1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 0.0, 0.0}}, f64());
  torch::Tensor old_lp = torch::zeros({2, 4}, f64());
  PolicyLossConfig cfg;
  PolicyLossOutput out = compute_policy_loss_vanilla(old_lp, torch::log(r), adv, mask, "token-mean", cfg);
  CHECK(item(out.pg_loss) == Approx((-1.2 - 0.5 + 1.5 + 3.0 + 0.8 - 2.4) / 6.0).epsilon(1e-12));
  CHECK(out.metrics.at("actor/pg_clipfrac") == Approx(3.0 / (6.0 + 1e-8)).epsilon(1e-14));
  CHECK(out.metrics.at("actor/pg_clipfrac_lower") == Approx(1.0 / (6.0 + 1e-8)).epsilon(1e-14));
  CHECK(out.metrics.at("actor/ppo_kl") ==
        Approx(-std::log(1.5 * 0.5 * 1.5 * 4.0 * 0.5 * 5.0) / (6.0 + 1e-8)).epsilon(1e-12));
  CHECK(out.metrics.size() == 3);
}

TEST_CASE("vanilla: dual clip bounds the loss of negative advantages at -A * clip_ratio_c") {
  torch::Tensor r = torch::tensor({{2.0, 3.5, 10.0, 10.0}}, f64());
  torch::Tensor adv = torch::tensor({{-2.0, -2.0, -2.0, 2.0}}, f64());
  torch::Tensor mask = torch::ones({1, 4}, f64());
  PolicyLossConfig cfg;
  cfg.clip_ratio_c = 3.0;
  // token-sum keeps the per-token losses visible: 4 (under the bound) + 6 + 6 (bounded) - 2.4 (A > 0 unaffected).
  PolicyLossOutput out =
      compute_policy_loss_vanilla(torch::zeros({1, 4}, f64()), torch::log(r), adv, mask, "token-sum", cfg);
  CHECK(item(out.pg_loss) == Approx(4.0 + 6.0 + 6.0 - 2.4).epsilon(1e-12));
  CHECK(out.metrics.at("actor/pg_clipfrac_lower") == Approx(2.0 / (4.0 + 1e-8)).epsilon(1e-14));
  // The dual-clipped tokens get no gradient; the unbounded negative one gets -A * r.
  torch::Tensor lp = torch::log(r).requires_grad_(true);
  compute_policy_loss_vanilla(torch::zeros({1, 4}, f64()), lp, adv, mask, "token-sum", cfg).pg_loss.backward();
  CHECK(lp.grad()[0][0].item<double>() == Approx(4.0).epsilon(1e-12));
  CHECK(lp.grad()[0][1].item<double>() == 0.0);
  CHECK(lp.grad()[0][2].item<double>() == 0.0);
  CHECK(lp.grad()[0][3].item<double>() == 0.0);  // A > 0, r above 1 + clip: clipped
  // clip_ratio_c must exceed 1, as verl asserts.
  cfg.clip_ratio_c = 1.0;
  CHECK_THROWS_WITH(
      compute_policy_loss_vanilla(torch::zeros({1, 4}, f64()), torch::log(r), adv, mask, "token-sum", cfg),
      Catch::Contains("should be greater than 1.0"));
}

TEST_CASE("vanilla: clip_ratio_low/high set the asymmetric range, unset ones fall back to clip_ratio") {
  // A = 1, r = 1.25 and A = -1, r = 0.75.
  torch::Tensor lp = torch::log(torch::tensor({{1.25, 0.75}}, f64()));
  torch::Tensor adv = torch::tensor({{1.0, -1.0}}, f64());
  torch::Tensor old_lp = torch::zeros({1, 2}, f64()), mask = torch::ones({1, 2}, f64());
  auto per_token = [&](const PolicyLossConfig& cfg) {
    return item(compute_policy_loss_vanilla(old_lp, lp, adv, mask, "token-sum", cfg).pg_loss);
  };
  PolicyLossConfig cfg;  // verl's defaults: 0.2 / 0.2
  CHECK(per_token(cfg) == Approx(-1.2 + 0.8).epsilon(1e-12));
  cfg.clip_ratio_high = 0.28;  // clip-higher: 1.25 is inside [0.8, 1.28]
  CHECK(per_token(cfg) == Approx(-1.25 + 0.8).epsilon(1e-12));
  cfg.clip_ratio_low = 0.3;  // 0.75 is inside [0.7, 1.28]
  CHECK(per_token(cfg) == Approx(-1.25 + 0.75).epsilon(1e-12));
  cfg.clip_ratio_low.reset();
  cfg.clip_ratio_high.reset();
  cfg.clip_ratio = 0.1;  // both bounds from clip_ratio: [0.9, 1.1]
  CHECK(per_token(cfg) == Approx(-1.1 + 0.9).epsilon(1e-12));
}

TEST_CASE("vanilla: random float64 inputs match the loop reference in every mode, with and without IS weights") {
  Batch b = random_batch(20);
  PolicyLossConfig cfg;
  cfg.clip_ratio_low = 0.2;
  cfg.clip_ratio_high = 0.28;
  cfg.clip_ratio_c = 1.5;  // low enough that the dual clip binds on some tokens
  for (bool weighted : {false, true}) {
    Ref ref = vanilla_reference(b, weighted, 0.2, 0.28, 1.5);
    REQUIRE(ref.clipped > 0);
    REQUIRE(ref.lower > 0);
    for (const std::string& mode : kModes) {
      INFO(mode << " weighted=" << weighted);
      PolicyLossOutput out = run(compute_policy_loss_vanilla, b, mode, cfg, weighted);
      CHECK(std::abs(item(out.pg_loss) - reference_agg(ref.loss, b.mask, mode)) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/pg_clipfrac") - ref.mean(ref.clipped)) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/pg_clipfrac_lower") - ref.mean(ref.lower)) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/ppo_kl") - ref.mean(ref.kl)) <= 1e-10);
    }
  }
  // Global batch info reaches agg_loss.
  cfg.global_batch_info.dp_size = 4;
  cfg.global_batch_info.batch_num_tokens = 100.0;
  Ref ref = vanilla_reference(b, false, 0.2, 0.28, 1.5);
  CHECK(std::abs(item(run(compute_policy_loss_vanilla, b, "token-mean", cfg, false).pg_loss) -
                 reference_agg(ref.loss, b.mask, "token-mean", 4, 100.0)) <= 1e-10);
}

TEST_CASE("vanilla: autograd gradient equals the analytic gradient of the clipped objective") {
  Batch b = random_batch(21);
  PolicyLossConfig cfg;
  cfg.clip_ratio_c = 2.0;
  torch::Tensor lp = b.log_prob.clone().requires_grad_(true);
  compute_policy_loss_vanilla(b.old_log_prob, lp, b.advantages, b.mask, "token-mean", cfg, b.weights)
      .pg_loss.backward();
  // d/dlp of w * loss / N: -A r w / N where the unclipped term is the active one, 0 where a clip is.
  torch::Tensor expected = torch::zeros_like(lp);
  const double n = b.mask.sum().item<double>();
  auto e = expected.accessor<double, 2>();
  auto o = b.old_log_prob.accessor<double, 2>(), l = b.log_prob.accessor<double, 2>();
  auto a = b.advantages.accessor<double, 2>(), m = b.mask.accessor<double, 2>(), w = b.weights.accessor<double, 2>();
  for (int64_t i = 0; i < lp.size(0); ++i) {
    for (int64_t j = 0; j < lp.size(1); ++j) {
      if (m[i][j] == 0) continue;
      const double r = std::exp(l[i][j] - o[i][j]);
      const bool ppo_clipped = (a[i][j] > 0 && r > 1.2) || (a[i][j] < 0 && r < 0.8);
      const bool dual_clipped = a[i][j] < 0 && r > 2.0;
      if (!ppo_clipped && !dual_clipped) e[i][j] = -a[i][j] * r * w[i][j] / n;
    }
  }
  CHECK((lp.grad() - expected).abs().max().item<double>() < 1e-12);
}

TEST_CASE("vanilla, sapo, gpg, geo_mean, dro, kl_cov, clip_cov: autograd gradient matches finite differences") {
  Batch b = random_batch(22, 3, 5);
  for (const std::string& name : {"vanilla", "sapo", "gpg", "geo_mean", "dro", "kl_cov", "clip_cov"}) {
    INFO(name);
    PolicyLossFn fn = get_policy_loss_fn(name);
    PolicyLossConfig cfg = config_for(name);
    cfg.policy_loss.clip_cov_lb = 0.0;  // clip_cov: cut every candidate in (0, 5), a set fixed under small moves
    cfg.policy_loss.clip_cov_ratio = 1.0;
    cfg.policy_loss.kl_cov_ratio = 0.3;
    auto loss_at = [&](const torch::Tensor& lp) {
      return item(fn(b.old_log_prob, lp, b.advantages, b.mask, "seq-mean-token-mean", cfg, b.weights).pg_loss);
    };
    torch::Tensor lp = b.log_prob.clone().requires_grad_(true);
    fn(b.old_log_prob, lp, b.advantages, b.mask, "seq-mean-token-mean", cfg, b.weights).pg_loss.backward();
    CHECK((lp.grad() - finite_difference(loss_at, b.log_prob)).abs().max().item<double>() < 1e-7);
  }
}

// ---- the other losses against their references -------------------------------------------------

TEST_CASE("gspo: random float64 inputs match the sequence-ratio reference; the gradient is -A * s_i per token") {
  Batch b = random_batch(30);
  PolicyLossConfig cfg;
  cfg.clip_ratio_low = 0.03;  // GSPO's ratios are sequence means: a narrow range makes the clip bind
  cfg.clip_ratio_high = 0.04;
  for (bool weighted : {false, true}) {
    std::vector<double> s;
    Ref ref = gspo_reference(b, weighted, 0.03, 0.04, &s);
    REQUIRE(ref.clipped > 0);
    for (const std::string& mode : {"token-mean", "seq-mean-token-mean"}) {
      INFO(mode << " weighted=" << weighted);
      PolicyLossOutput out = run(compute_policy_loss_gspo, b, mode, cfg, weighted);
      CHECK(std::abs(item(out.pg_loss) - reference_agg(ref.loss, b.mask, mode)) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/pg_clipfrac") - ref.mean(ref.clipped)) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/ppo_kl") - ref.mean(ref.kl)) <= 1e-10);
      CHECK(out.metrics.at("actor/pg_clipfrac_lower") == 0.0);
    }
    if (weighted) continue;
    torch::Tensor lp = b.log_prob.clone().requires_grad_(true);
    compute_policy_loss_gspo(b.old_log_prob, lp, b.advantages, b.mask, "token-sum", cfg).pg_loss.backward();
    torch::Tensor expected = torch::zeros_like(lp);
    auto a = b.advantages.accessor<double, 2>(), m = b.mask.accessor<double, 2>();
    for (int64_t i = 0; i < lp.size(0); ++i) {
      const bool clipped_up = s[i] > 1.04, clipped_down = s[i] < 0.97;
      for (int64_t j = 0; j < lp.size(1); ++j) {
        const bool clipped = (a[i][j] > 0 && clipped_up) || (a[i][j] < 0 && clipped_down);
        if (m[i][j] != 0 && !clipped) expected[i][j] = -a[i][j] * s[i];
      }
    }
    CHECK((lp.grad() - expected).abs().max().item<double>() < 1e-12);
  }
}

TEST_CASE("sapo: random float64 inputs match the gate reference, always aggregated seq-mean-token-mean") {
  Batch b = random_batch(31);
  PolicyLossConfig cfg;
  cfg.tau_pos = 1.0;
  cfg.tau_neg = 1.05;
  for (bool weighted : {false, true}) {
    Ref ref = sapo_reference(b, weighted, 1.0, 1.05);
    const double expected = reference_agg(ref.loss, b.mask, "seq-mean-token-mean");
    for (const std::string& mode : kModes) {  // verl ignores the mode passed to SAPO
      INFO(mode << " weighted=" << weighted);
      PolicyLossOutput out = run(compute_policy_loss_sapo, b, mode, cfg, weighted);
      CHECK(std::abs(item(out.pg_loss) - expected) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/ppo_kl") - ref.mean(ref.kl)) <= 1e-10);
      CHECK(out.metrics.at("actor/pg_clipfrac") == 0.0);
      CHECK(out.metrics.at("actor/pg_clipfrac_lower") == 0.0);
    }
  }
  // At r = 1 the gate is 2 / tau for every tau: sigmoid(0) * 4 / tau.
  torch::Tensor zeros = torch::zeros({1, 2}, f64());
  torch::Tensor adv = torch::tensor({{1.0, -1.0}}, f64());
  PolicyLossOutput at_one =
      compute_policy_loss_sapo(zeros, zeros, adv, torch::ones({1, 2}, f64()), "token-mean", cfg);
  CHECK(item(at_one.pg_loss) == Approx((-2.0 / 1.0 + 2.0 / 1.05) / (2.0 + 1e-8)).epsilon(1e-12));
}

TEST_CASE("gpg, dro, cispo: random float64 inputs match their references") {
  Batch b = random_batch(32);
  for (bool weighted : {false, true}) {
    PolicyLossConfig cfg;
    cfg.clip_ratio_high = 0.28;
    Ref gpg = token_reference(b, weighted, [](int64_t, int64_t, double, double lp, double a, Ref&) { return -lp * a; });
    Ref cispo = cispo_reference(b, weighted, 0.2, 0.28);
    cfg.policy_loss.dro_beta = 0.7;
    Ref dro = token_reference(b, weighted, [](int64_t, int64_t, double o, double lp, double a, Ref& ref) {
      ref.kl += o - lp;
      return -(lp * a - 0.5 * 0.7 * (lp - o) * (lp - o));
    });
    for (const std::string& mode : {"token-mean", "seq-mean-token-sum"}) {
      INFO(mode << " weighted=" << weighted);
      PolicyLossOutput g = run(compute_policy_loss_gpg, b, mode, cfg, weighted);
      CHECK(std::abs(item(g.pg_loss) - reference_agg(gpg.loss, b.mask, mode)) <= 1e-10);
      CHECK(g.metrics.empty());
      PolicyLossOutput c = run(compute_policy_loss_cispo, b, mode, cfg, weighted);
      CHECK(std::abs(item(c.pg_loss) - reference_agg(cispo.loss, b.mask, mode)) <= 1e-10);
      CHECK(std::abs(c.metrics.at("actor/pg_clipfrac") - cispo.mean(cispo.clipped)) <= 1e-10);
      CHECK(std::abs(c.metrics.at("actor/ppo_kl") - cispo.mean(cispo.kl)) <= 1e-10);
      CHECK(c.metrics.at("actor/pg_clipfrac_lower") == 0.0);
      PolicyLossOutput d = run(compute_policy_loss_dro, b, mode, cfg, weighted);
      CHECK(std::abs(item(d.pg_loss) - reference_agg(dro.loss, b.mask, mode)) <= 1e-10);
      CHECK(std::abs(d.metrics.at("actor/ppo_kl") - dro.mean(dro.kl)) <= 1e-10);
      CHECK(d.metrics.size() == 1);
    }
  }
  PolicyLossConfig cfg;
  CHECK_THROWS_WITH(run(compute_policy_loss_dro, b, "token-mean", cfg, false), Catch::Contains("dro_beta"));
  cfg.policy_loss.dro_beta = 0.0;
  CHECK_THROWS_WITH(run(compute_policy_loss_dro, b, "token-mean", cfg, false), Catch::Contains("dro_beta"));
}

TEST_CASE("cispo: the clipped ratio is a constant weight, the gradient is -clip(r) * A per token") {
  Batch b = random_batch(33);
  PolicyLossConfig cfg;
  torch::Tensor lp = b.log_prob.clone().requires_grad_(true);
  compute_policy_loss_cispo(b.old_log_prob, lp, b.advantages, b.mask, "token-sum", cfg).pg_loss.backward();
  torch::Tensor r = torch::exp(b.log_prob - b.old_log_prob);
  torch::Tensor expected = -torch::clamp(r, 0.8, 1.2) * b.advantages * b.mask;
  CHECK((lp.grad() - expected).abs().max().item<double>() < 1e-12);
}

TEST_CASE("geo_mean: random float64 inputs match the geometric-mean reference, loss_agg_mode ignored") {
  Batch b = random_batch(34);
  PolicyLossConfig cfg;
  cfg.clip_ratio_low = 0.1;
  cfg.clip_ratio_high = 0.15;
  for (bool weighted : {false, true}) {
    GeoRef ref = geo_mean_reference(b, weighted, 0.1, 0.15);
    REQUIRE(ref.clipfrac > 0);
    REQUIRE(ref.clipfrac_lower > 0);
    for (const std::string& mode : {"token-mean", "seq-mean-token-sum"}) {
      INFO(mode << " weighted=" << weighted);
      PolicyLossOutput out = run(compute_policy_loss_geo_mean, b, mode, cfg, weighted);
      CHECK(std::abs(item(out.pg_loss) - ref.loss) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/pg_clipfrac") - ref.clipfrac) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/pg_clipfrac_lower") - ref.clipfrac_lower) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/ppo_kl") - ref.kl) <= 1e-10);
    }
  }
}

TEST_CASE("dppo_tv, dppo_kl: random float64 inputs match the trust-region references") {
  Batch b = random_batch(35);
  PolicyLossConfig cfg;
  cfg.clip_ratio_low = 0.03;
  cfg.clip_ratio_high = 0.05;
  cfg.clip_ratio_c = 1.3;  // truncation bound, low enough to bind
  for (bool binary_kl : {false, true}) {
    PolicyLossFn fn = binary_kl ? PolicyLossFn(compute_policy_loss_dppo_kl) : PolicyLossFn(compute_policy_loss_dppo_tv);
    for (bool weighted : {false, true}) {
      Ref ref = dppo_reference(b, weighted, 0.03, 0.05, 1.3, binary_kl);
      REQUIRE(ref.clipped > 0);
      REQUIRE(ref.lower > 0);
      for (const std::string& mode : {"token-mean", "seq-mean-token-mean"}) {
        INFO(mode << " weighted=" << weighted << " binary_kl=" << binary_kl);
        PolicyLossOutput out = run(fn, b, mode, cfg, weighted);
        CHECK(std::abs(item(out.pg_loss) - reference_agg(ref.loss, b.mask, mode)) <= 1e-10);
        CHECK(std::abs(out.metrics.at("actor/pg_clipfrac") - ref.mean(ref.clipped)) <= 1e-10);
        CHECK(std::abs(out.metrics.at("actor/pg_clipfrac_lower") - ref.mean(ref.lower)) <= 1e-10);
        CHECK(std::abs(out.metrics.at("actor/ppo_kl") - ref.mean(ref.kl)) <= 1e-10);
      }
    }
  }
}

TEST_CASE("kl_cov: the top kl_cov_ratio share of covariances gets the |log ratio| penalty") {
  Batch b = random_batch(36);
  PolicyLossConfig cfg;
  cfg.policy_loss.kl_cov_ratio = 0.25;
  cfg.policy_loss.ppo_kl_coef = 0.7;
  for (bool weighted : {false, true}) {
    Ref ref = kl_cov_reference(b, weighted, 0.25, 0.7);
    for (const std::string& mode : {"token-mean", "seq-mean-token-sum"}) {
      INFO(mode << " weighted=" << weighted);
      PolicyLossOutput out = run(compute_policy_loss_kl_cov, b, mode, cfg, weighted);
      CHECK(std::abs(item(out.pg_loss) - reference_agg(ref.loss, b.mask, mode)) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/ppo_kl") - ref.mean(ref.kl)) <= 1e-10);
      CHECK(out.metrics.size() == 1);
    }
  }
  // A tiny ratio still penalises one token: max(1, int(n * ratio)).
  cfg.policy_loss.kl_cov_ratio = 1e-6;
  Ref one = kl_cov_reference(b, false, 1e-6, 0.7);
  CHECK(std::abs(item(run(compute_policy_loss_kl_cov, b, "token-mean", cfg, false).pg_loss) -
                 reference_agg(one.loss, b.mask, "token-mean")) <= 1e-10);
  cfg.policy_loss.kl_cov_ratio = 0.0;
  CHECK_THROWS_WITH(run(compute_policy_loss_kl_cov, b, "token-mean", cfg, false), Catch::Contains("kl_cov_ratio"));
}

TEST_CASE("clip_cov: candidates in the covariance window are cut, a random subset chosen as verl") {
  Batch b = random_batch(37, 6, 10);
  PolicyLossConfig cfg;
  cfg.policy_loss.clip_cov_lb = 0.0;
  cfg.policy_loss.clip_cov_ub = 0.5;
  for (double ratio : {1.0, 0.1}) {  // every candidate cut / a random handful
    cfg.policy_loss.clip_cov_ratio = ratio;
    for (bool weighted : {false, true}) {
      INFO("clip_cov_ratio=" << ratio << " weighted=" << weighted);
      torch::manual_seed(99);
      Ref ref = clip_cov_reference(b, weighted, 0.2, 0.2, ratio, 0.0, 0.5);
      REQUIRE(ref.clipped > 1);
      torch::manual_seed(99);
      PolicyLossOutput out = run(compute_policy_loss_clip_cov, b, "token-mean", cfg, weighted);
      CHECK(std::abs(item(out.pg_loss) - reference_agg(ref.loss, b.mask, "token-mean")) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/pg_clipfrac") - ref.mean(ref.clipped)) <= 1e-10);
      CHECK(std::abs(out.metrics.at("actor/ppo_kl") - ref.mean(ref.kl)) <= 1e-10);
      CHECK(out.metrics.size() == 2);
    }
  }
  // The window (lb, ub) empty of candidates: plain PPO.
  cfg.policy_loss.clip_cov_lb = 100.0;
  cfg.policy_loss.clip_cov_ub = 200.0;
  Ref ppo = vanilla_reference(b, false, 0.2, 0.2, 1e9);
  PolicyLossOutput out = run(compute_policy_loss_clip_cov, b, "token-mean", cfg, false);
  CHECK(std::abs(item(out.pg_loss) - reference_agg(ppo.loss, b.mask, "token-mean")) <= 1e-10);
  CHECK(out.metrics.at("actor/pg_clipfrac") == 0.0);
  cfg.policy_loss.clip_cov_ratio = 0.0;
  CHECK_THROWS_WITH(run(compute_policy_loss_clip_cov, b, "token-mean", cfg, false), Catch::Contains("clip_cov_ratio"));
}

// ---- the deprecated 4-tuple form ---------------------------------------------------------------

TEST_CASE("compute_policy_loss (deprecated): the vanilla loss and metrics as four tensors") {
  Batch b = random_batch(40);
  ClippedPolicyLoss t = compute_policy_loss(b.old_log_prob, b.log_prob, b.advantages, b.mask, 0.2, std::nullopt, 0.28,
                                            2.0, "seq-mean-token-mean");
  Ref ref = vanilla_reference(b, false, 0.2, 0.28, 2.0);
  CHECK(std::abs(item(t.pg_loss) - reference_agg(ref.loss, b.mask, "seq-mean-token-mean")) <= 1e-10);
  CHECK(std::abs(item(t.pg_clipfrac) - ref.mean(ref.clipped)) <= 1e-10);
  CHECK(std::abs(item(t.ppo_kl) - ref.mean(ref.kl)) <= 1e-10);
  CHECK(std::abs(item(t.pg_clipfrac_lower) - ref.mean(ref.lower)) <= 1e-10);
  CHECK_THROWS_WITH(compute_policy_loss(b.old_log_prob, b.log_prob, b.advantages, b.mask, std::nullopt),
                    Catch::Contains("cliprange"));
  CHECK_NOTHROW(compute_policy_loss(b.old_log_prob, b.log_prob, b.advantages, b.mask, std::nullopt, 0.2, 0.2));
  CHECK_THROWS_WITH(compute_policy_loss(b.old_log_prob, b.log_prob, b.advantages, b.mask, 0.2, {}, {}, 0.9),
                    Catch::Contains("clip_ratio_c"));
}

// ---- registry ----------------------------------------------------------------------------------

TEST_CASE("policy loss registry: built-ins under verl's names, same identity re-registers, conflicts throw") {
  for (const std::string& name : kLosses) CHECK(policy_loss_registry().contains(name));
  Batch b = random_batch(50);
  PolicyLossConfig cfg;
  CHECK(item(run(get_policy_loss_fn("vanilla"), b, "token-mean", cfg, true).pg_loss) ==
        item(run(compute_policy_loss_vanilla, b, "token-mean", cfg, true).pg_loss));

  CHECK_NOTHROW(register_policy_loss("vanilla", compute_policy_loss_vanilla,
                                     reinterpret_cast<const void*>(&compute_policy_loss_vanilla)));
  CHECK_THROWS_AS(register_policy_loss("vanilla", compute_policy_loss_gpg,
                                       reinterpret_cast<const void*>(&compute_policy_loss_gpg)),
                  verl::InvalidArgument);
  CHECK_THROWS_WITH(register_policy_loss("vanilla", compute_policy_loss_gpg,
                                         reinterpret_cast<const void*>(&compute_policy_loss_gpg)),
                    Catch::Contains("already been registered"));

  static const int custom_identity = 0;
  PolicyLossFn custom = [](const torch::Tensor&, const torch::Tensor& log_prob, const torch::Tensor&,
                           const torch::Tensor& mask, const std::string& mode, const PolicyLossConfig&,
                           const torch::Tensor&) {
    return PolicyLossOutput{agg_loss(log_prob.square(), mask, mode), {{"custom/metric", 1.0}}};
  };
  register_policy_loss("test_square_loss", custom, &custom_identity);
  CHECK_NOTHROW(register_policy_loss("test_square_loss", custom, &custom_identity));
  PolicyLossOutput out = run(get_policy_loss_fn("test_square_loss"), b, "token-sum", cfg, false);
  CHECK(item(out.pg_loss) == Approx(item((b.log_prob.square() * b.mask).sum())).epsilon(1e-14));
  CHECK(out.metrics.at("custom/metric") == 1.0);

  CHECK_THROWS_AS(get_policy_loss_fn("no_such_loss"), verl::InvalidArgument);
  CHECK_THROWS_WITH(get_policy_loss_fn("no_such_loss"),
                    Catch::Contains("no_such_loss") && Catch::Contains("vanilla") && Catch::Contains("cispo") &&
                        Catch::Contains("geo_mean"));
  CHECK_THROWS_AS(register_policy_loss("empty_fn", PolicyLossFn(), &custom_identity), verl::InvalidArgument);
}

// ---- edge cases and input checks, for every built-in -------------------------------------------

TEST_CASE("every policy loss: a fully masked row changes nothing but the row count") {
  Batch b = random_batch(60, 4, 6);
  b.mask[1].zero_();
  // The same batch without the masked row.
  torch::Tensor keep = torch::tensor({0, 2, 3});
  Batch small{b.old_log_prob.index_select(0, keep), b.log_prob.index_select(0, keep),
              b.advantages.index_select(0, keep), b.mask.index_select(0, keep), b.weights.index_select(0, keep)};
  for (const std::string& name : kLosses) {
    for (const std::string& mode : {"token-mean", "seq-mean-token-mean"}) {
      INFO(name << " " << mode);
      PolicyLossConfig cfg = config_for(name);
      torch::manual_seed(1);
      PolicyLossOutput full = run(get_policy_loss_fn(name), b, mode, cfg, true);
      torch::manual_seed(1);
      PolicyLossOutput part = run(get_policy_loss_fn(name), small, mode, cfg, true);
      // geo_mean averages over all rows, fully masked ones included (as 0), as verl does.
      const double rows = name == "geo_mean" ? 3.0 / 4.0 : 1.0;
      CHECK(std::abs(item(full.pg_loss) - item(part.pg_loss) * rows) <= 1e-12);
      for (const auto& [key, value] : part.metrics) CHECK(std::abs(full.metrics.at(key) - value) <= 1e-12);
    }
  }
}

TEST_CASE("every policy loss: empty batch, shape mismatch and NaN inside the mask are InvalidArgument") {
  for (const std::string& name : kLosses) {
    INFO(name);
    PolicyLossFn fn = get_policy_loss_fn(name);
    PolicyLossConfig cfg = config_for(name);
    torch::Tensor empty = torch::zeros({0, 5}, f64());
    CHECK_THROWS_WITH(fn(empty, empty, empty, empty, "token-mean", cfg, {}), Catch::Contains("empty batch"));

    Batch b = random_batch(61, 2, 4);
    CHECK_THROWS_MATCHES(fn(b.old_log_prob, b.log_prob.slice(1, 0, 3), b.advantages, b.mask, "token-mean", cfg, {}),
                         verl::InvalidArgument,
                         Catch::Message("log_prob and response_mask must have the same shape, got [2, 3] and [2, 4]"));
    torch::Tensor wide = torch::ones({2, 5}, f64());
    CHECK_THROWS_WITH(fn(b.old_log_prob, b.log_prob, b.advantages, b.mask, "token-mean", cfg, wide),
                      Catch::Contains("rollout_is_weights") && Catch::Contains("[2, 5]") && Catch::Contains("[2, 4]"));

    b.mask.fill_(1.0);
    torch::Tensor nan_adv = b.advantages.clone();
    nan_adv[0][2] = std::nan("");
    CHECK_THROWS_WITH(fn(b.old_log_prob, b.log_prob, nan_adv, b.mask, "token-mean", cfg, {}),
                      Catch::Contains("advantages holds NaN or Inf"));
    torch::Tensor inf_lp = b.log_prob.clone();
    inf_lp[1][0] = -INFINITY;
    CHECK_THROWS_WITH(fn(b.old_log_prob, inf_lp, b.advantages, b.mask, "token-mean", cfg, {}),
                      Catch::Contains("log_prob holds NaN or Inf"));
  }
}

TEST_CASE("every policy loss: NaN and -inf outside the mask reach neither the loss nor the gradient") {
  Batch b = random_batch(62, 3, 6);
  Batch dirty = b;
  dirty.old_log_prob = b.old_log_prob.clone();
  dirty.log_prob = b.log_prob.clone();
  dirty.advantages = b.advantages.clone();
  torch::Tensor outside = b.mask == 0;
  REQUIRE(outside.any().item<bool>());
  dirty.old_log_prob.masked_fill_(outside, std::nan(""));
  dirty.log_prob.masked_fill_(outside, -INFINITY);
  dirty.advantages.masked_fill_(outside, std::nan(""));
  for (const std::string& name : kLosses) {
    INFO(name);
    PolicyLossFn fn = get_policy_loss_fn(name);
    PolicyLossConfig cfg = config_for(name);
    torch::Tensor lp = dirty.log_prob.clone().requires_grad_(true);
    torch::manual_seed(2);
    PolicyLossOutput out = fn(dirty.old_log_prob, lp, dirty.advantages, b.mask, "seq-mean-token-sum", cfg, b.weights);
    out.pg_loss.backward();
    torch::manual_seed(2);
    PolicyLossOutput clean = run(fn, b, "seq-mean-token-sum", cfg, true);
    CHECK(std::abs(item(out.pg_loss) - item(clean.pg_loss)) <= 1e-12);
    CHECK(torch::isfinite(lp.grad()).all().item<bool>());
    CHECK(lp.grad().masked_select(outside).abs().max().item<double>() == 0.0);
  }
}

TEST_CASE("every policy loss: float32 and bfloat16 inputs run, stay finite and backpropagate") {
  Batch b = random_batch(63);
  for (const std::string& name : kLosses) {
    PolicyLossFn fn = get_policy_loss_fn(name);
    PolicyLossConfig cfg = config_for(name);
    torch::manual_seed(3);
    const double ref = item(run(fn, b, "token-mean", cfg, true).pg_loss);
    for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
      INFO(name << " " << dtype);
      torch::Tensor lp = b.log_prob.to(dtype).requires_grad_(true);
      torch::manual_seed(3);
      PolicyLossOutput out = fn(b.old_log_prob.to(dtype), lp, b.advantages.to(dtype), b.mask.to(dtype), "token-mean",
                                cfg, b.weights.to(dtype));
      out.pg_loss.backward();
      CHECK(std::isfinite(item(out.pg_loss)));
      REQUIRE(lp.grad().defined());
      CHECK(lp.grad().scalar_type() == dtype);
      CHECK(torch::isfinite(lp.grad()).all().item<bool>());
      for (const auto& [key, value] : out.metrics) CHECK(std::isfinite(value));
      // float32 follows float64 closely except where a token-selection rule flips on rounding.
      const bool selects = name == "clip_cov" || name == "kl_cov" || name == "dppo_tv" || name == "dppo_kl";
      if (dtype == torch::kFloat && !selects) CHECK(item(out.pg_loss) == Approx(ref).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("every policy loss: CUDA results equal CPU results (runs only where CUDA is available)") {
  if (!torch::cuda::is_available()) return;
  Batch b = random_batch(64);
  auto cuda = [](const torch::Tensor& t) { return t.to(torch::kCUDA); };
  for (const std::string& name : kLosses) {
    INFO(name);
    PolicyLossFn fn = get_policy_loss_fn(name);
    PolicyLossConfig cfg = config_for(name);
    torch::manual_seed(4);
    PolicyLossOutput cpu = run(fn, b, "seq-mean-token-mean", cfg, true);
    torch::manual_seed(4);
    torch::Tensor lp = cuda(b.log_prob).requires_grad_(true);
    PolicyLossOutput gpu = fn(cuda(b.old_log_prob), lp, cuda(b.advantages), cuda(b.mask), "seq-mean-token-mean", cfg,
                              cuda(b.weights));
    gpu.pg_loss.backward();
    CHECK(gpu.pg_loss.device().is_cuda());
    CHECK(std::abs(item(gpu.pg_loss) - item(cpu.pg_loss)) <= 1e-10);
    for (const auto& [key, value] : cpu.metrics) CHECK(std::abs(gpu.metrics.at(key) - value) <= 1e-10);
  }
}
