// SPPO (verl's recipe/sppo): the win-rate advantage and the squared loss against hand-written float64 references
// (loops over the pairs and the sequences), the analytic gradient, micro-batch additivity, the registry and the
// input checks.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>
#include <torch/torch.h>

#include "verl/algo/sppo.h"
#include "verl/core/error.h"

using namespace verl::algo;

namespace {
torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }

// P_i = mean over the other rows j of i's group of 1 / (1 + exp(-(s_i - s_j))); 1/2 alone.
std::vector<double> reference_win_rate(const std::vector<double>& s, const std::vector<int64_t>& group) {
  std::vector<double> p(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    double sum = 0;
    int n = 0;
    for (size_t j = 0; j < s.size(); ++j) {
      if (j == i || group[j] != group[i]) continue;
      sum += 1.0 / (1.0 + std::exp(-(s[i] - s[j])));
      ++n;
    }
    p[i] = n == 0 ? 0.5 : sum / n;
  }
  return p;
}

struct Batch {
  torch::Tensor old_log_prob, log_prob, advantages, mask;
};

// 6 rows of 7 tokens, ragged masks (row 4 fully masked), row-constant advantages as the estimator gives them.
Batch random_batch(uint64_t seed) {
  torch::manual_seed(seed);
  Batch b;
  const int64_t bs = 6, len = 7;
  b.old_log_prob = torch::log(torch::rand({bs, len}, f64()) * 0.9 + 0.05);
  b.log_prob = b.old_log_prob + 0.3 * torch::randn({bs, len}, f64());
  b.mask = torch::zeros({bs, len}, f64());
  const int64_t lengths[] = {7, 3, 5, 1, 0, 6};
  for (int64_t i = 0; i < bs; ++i) b.mask[i].narrow(0, 0, lengths[i]).fill_(1.0);
  b.mask[2][0] = 0.0;  // a row whose first response position is masked (a multi-turn observation)
  b.advantages = torch::randn({bs, 1}, f64()) * b.mask;
  return b;
}
}  // namespace

TEST_CASE("sppo: win rate is the mean Bradley-Terry preference over the other responses of the group") {
  const std::vector<double> s{0.5, -1.0, 2.0, 0.0, 3.0, 3.0, -0.25, 40.0, -40.0};
  const std::vector<int64_t> g{7, 7, 7, 2, 5, 5, 7, 9, 9};  // groups of 4, 1, 2 and 2, interleaved
  const torch::Tensor p = compute_sppo_win_rate(torch::tensor(s, f64()), torch::tensor(g, torch::kLong));
  const std::vector<double> expected = reference_win_rate(s, g);
  REQUIRE(p.scalar_type() == torch::kDouble);
  for (size_t i = 0; i < s.size(); ++i) CHECK(p[static_cast<int64_t>(i)].item<double>() == Approx(expected[i]).epsilon(1e-15));
  CHECK(p[3].item<double>() == 0.5);                                  // alone: no evidence
  CHECK(p[4].item<double>() == 0.5);                                  // equal scores: a coin flip
  CHECK(p[7].item<double>() == Approx(1.0).epsilon(1e-15));           // far apart: no overflow
  CHECK(p[8].item<double>() > 0.0);
  CHECK(p[8].item<double>() == Approx(std::exp(-80.0)).epsilon(1e-12));
  // within a group the win rates of a pair sum to 1 (P(a>b) + P(b>a) = 1)
  CHECK(p[4].item<double>() + p[5].item<double>() == Approx(1.0));
  // a float32 score tensor gives the same float64 result
  const torch::Tensor p32 = compute_sppo_win_rate(torch::tensor(s, f64()).to(torch::kFloat), torch::tensor(g));
  CHECK(torch::allclose(p32, p, 0, 1e-6));
}

TEST_CASE("sppo: advantage is eta * (win rate - 1/2) on the response tokens") {
  torch::manual_seed(3);
  const int64_t bs = 8, len = 5;
  const torch::Tensor rewards = torch::randn({bs, len}, f64());
  torch::Tensor mask = torch::ones({bs, len}, torch::kLong);
  mask[2].narrow(0, 3, 2).zero_();
  const std::vector<int64_t> g{0, 0, 0, 0, 1, 1, 1, 1};
  const double eta = 2.5;
  auto [adv, ret] = compute_sppo_advantage(rewards, mask, torch::tensor(g), eta);
  std::vector<double> scores;
  for (int64_t i = 0; i < bs; ++i) scores.push_back(rewards[i].sum().item<double>());
  const std::vector<double> p = reference_win_rate(scores, g);
  for (int64_t i = 0; i < bs; ++i) {
    for (int64_t t = 0; t < len; ++t) {
      const double expected = mask[i][t].item<int64_t>() ? eta * (p[static_cast<size_t>(i)] - 0.5) : 0.0;
      CHECK(adv[i][t].item<double>() == Approx(expected).epsilon(1e-14).margin(1e-15));
    }
  }
  CHECK(torch::equal(adv, ret));
  // the targets of a group sum to 0: win rates average to 1/2
  CHECK(adv.select(1, 0).narrow(0, 0, 4).sum().item<double>() == Approx(0.0).margin(1e-14));
  // float32 rewards give float32 advantages
  CHECK(compute_sppo_advantage(rewards.to(torch::kFloat), mask, torch::tensor(g), eta).first.scalar_type() ==
        torch::kFloat);
}

TEST_CASE("sppo: loss and gradient equal a float64 reference") {
  const Batch b = random_batch(11);
  const int64_t bs = b.mask.size(0);
  torch::Tensor lp = b.log_prob.clone().requires_grad_(true);
  PolicyLossConfig config;
  const PolicyLossOutput out = compute_policy_loss_sppo(b.old_log_prob, lp, b.advantages, b.mask, "token-mean", config);
  out.pg_loss.backward();

  // reference: per row, d = sum_t m (lp - old) - target; loss = mean over rows with a response token of d^2;
  // d loss / d lp[i][t] = 2 d_i m[i][t] / n_rows
  std::vector<double> d(static_cast<size_t>(bs), 0.0);
  int n_rows = 0;
  double loss = 0, ratio_sum = 0, target_sum = 0;
  for (int64_t i = 0; i < bs; ++i) {
    double ratio = 0, target = 0;
    bool any = false, first_seen = false;
    for (int64_t t = 0; t < b.mask.size(1); ++t) {
      if (b.mask[i][t].item<double>() == 0) continue;
      ratio += b.log_prob[i][t].item<double>() - b.old_log_prob[i][t].item<double>();
      if (!first_seen) target = b.advantages[i][t].item<double>(), first_seen = true;
      any = true;
    }
    if (!any) continue;
    d[static_cast<size_t>(i)] = ratio - target;
    loss += (ratio - target) * (ratio - target);
    ratio_sum += ratio;
    target_sum += target;
    ++n_rows;
  }
  REQUIRE(n_rows == 5);
  CHECK(out.pg_loss.item<double>() == Approx(loss / n_rows).epsilon(1e-13));
  for (int64_t i = 0; i < bs; ++i) {
    for (int64_t t = 0; t < b.mask.size(1); ++t) {
      const double expected = 2.0 * d[static_cast<size_t>(i)] * b.mask[i][t].item<double>() / n_rows;
      CHECK(lp.grad()[i][t].item<double>() == Approx(expected).epsilon(1e-13).margin(1e-15));
    }
  }
  CHECK(out.metrics.at("actor/log_ratio_mean") == Approx(ratio_sum / n_rows).epsilon(1e-13));
  CHECK(out.metrics.at("actor/preference_mean") == Approx(target_sum / n_rows).epsilon(1e-13));

  // at the reference (log_prob == old_log_prob) the gradient is -2 * target / n: REINFORCE with the target
  torch::Tensor at_ref = b.old_log_prob.clone().requires_grad_(true);
  compute_policy_loss_sppo(b.old_log_prob, at_ref, b.advantages, b.mask, "token-mean", config).pg_loss.backward();
  CHECK(torch::allclose(at_ref.grad(), -2.0 * b.advantages * b.mask / n_rows, 0, 1e-15));
}

TEST_CASE("sppo: micro-batch losses normalised by the global batch add up to the batch's") {
  const Batch b = random_batch(5);
  PolicyLossConfig whole;
  const double full = compute_policy_loss_sppo(b.old_log_prob, b.log_prob, b.advantages, b.mask, "token-mean", whole)
                          .pg_loss.item<double>();
  PolicyLossConfig part;
  part.global_batch_info.global_batch_size = 5;  // the rows with response tokens (row 4 has none)
  double sum = 0;
  for (int64_t start : {0, 2, 4}) {
    sum += compute_policy_loss_sppo(b.old_log_prob.narrow(0, start, 2), b.log_prob.narrow(0, start, 2),
                                    b.advantages.narrow(0, start, 2), b.mask.narrow(0, start, 2), "token-mean", part)
               .pg_loss.item<double>();
  }
  CHECK(sum == Approx(full).epsilon(1e-13));
}

TEST_CASE("sppo: registered as a policy loss; bad inputs are InvalidArgument") {
  CHECK(policy_loss_registry().contains("sppo"));
  const Batch b = random_batch(1);
  PolicyLossConfig config;
  CHECK_THROWS_AS(compute_policy_loss_sppo(b.old_log_prob, b.log_prob, b.advantages, b.mask, "token-mean", config,
                                           torch::ones_like(b.mask)),
                  verl::InvalidArgument);
  CHECK_THROWS_AS(compute_policy_loss_sppo(b.old_log_prob, b.log_prob.narrow(1, 0, 3), b.advantages, b.mask,
                                           "token-mean", config),
                  verl::InvalidArgument);
  const torch::Tensor r = torch::zeros({4, 3}, f64());
  const torch::Tensor m = torch::ones({4, 3}, f64());
  CHECK_THROWS_AS(compute_sppo_advantage(r, m, torch::tensor(std::vector<int64_t>{0, 0, 1, 1}), 0.0),
                  verl::InvalidArgument);
  CHECK_THROWS_AS(compute_sppo_advantage(r, m, torch::tensor(std::vector<int64_t>{0, 0, 1}), 1.0),
                  verl::InvalidArgument);
  CHECK_THROWS_AS(compute_sppo_advantage(r, m, torch::tensor(std::vector<double>{0, 0, 1, 1}), 1.0),
                  verl::InvalidArgument);
  torch::Tensor nan = r.clone();
  nan[1][2] = std::nan("");
  CHECK_THROWS_WITH(compute_sppo_advantage(nan, m, torch::tensor(std::vector<int64_t>{0, 0, 1, 1}), 1.0),
                    Catch::Contains("NaN or Inf"));
}
