// verl::algo advantage estimators against hand-computed values, against straightforward loop
// references on random float64 batches, their invariants, edge cases, errors and the registry.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <torch/torch.h>
#include <vector>

#include "verl/algo/advantage.h"
#include "verl/core/error.h"

using namespace verl::algo;

namespace {

using Mat = std::vector<std::vector<double>>;
using Vec = std::vector<double>;

torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }

Mat to_mat(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  Mat out(c.size(0), Vec(c.size(1)));
  auto a = c.accessor<double, 2>();
  for (int64_t i = 0; i < c.size(0); ++i)
    for (int64_t j = 0; j < c.size(1); ++j) out[i][j] = a[i][j];
  return out;
}

Vec to_vec(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

std::vector<int64_t> to_ids(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kCPU, torch::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

double max_abs_diff(const torch::Tensor& ours, const Mat& ref) {
  const Mat got = to_mat(ours);
  REQUIRE(got.size() == ref.size());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    REQUIRE(got[i].size() == ref[i].size());
    for (size_t j = 0; j < ref[i].size(); ++j) worst = std::max(worst, std::abs(got[i][j] - ref[i][j]));
  }
  return worst;
}

torch::Tensor mat(const Mat& rows) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, f64());
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) t[i][j] = rows[i][j];
  return t;
}

// A row-constant advantage: each row's value on its mask, 0 elsewhere.
Mat broadcast(const Vec& per_row, const Mat& mask) {
  Mat out = mask;
  for (size_t i = 0; i < mask.size(); ++i)
    for (size_t j = 0; j < mask[i].size(); ++j) out[i][j] = per_row[i] * mask[i][j];
  return out;
}

// ---- straightforward references (textbook loops, written from the papers / verl's docstrings) ----

Vec row_sums(const Mat& r) {
  Vec s;
  for (const auto& row : r) {
    double acc = 0;
    for (double x : row) acc += x;
    s.push_back(acc);
  }
  return s;
}

std::map<int64_t, std::vector<size_t>> members(const std::vector<int64_t>& ids) {
  std::map<int64_t, std::vector<size_t>> g;
  for (size_t i = 0; i < ids.size(); ++i) g[ids[i]].push_back(i);
  return g;
}

double mean_of(const Vec& s, const std::vector<size_t>& rows) {
  double acc = 0;
  for (size_t i : rows) acc += s[i];
  return acc / rows.size();
}

double std_of(const Vec& s, const std::vector<size_t>& rows) {  // unbiased
  const double m = mean_of(s, rows);
  double acc = 0;
  for (size_t i : rows) acc += (s[i] - m) * (s[i] - m);
  return std::sqrt(acc / (rows.size() - 1));
}

// verl's masked_whiten: mean and variance over the mask with its +1e-8 denominators, Bessel-corrected.
Mat whiten(const Mat& x, const Mat& m) {
  double n = 0, sum = 0;
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < x[i].size(); ++j)
      if (m[i][j] != 0) n += 1, sum += x[i][j];
  const double mean = sum / (n + 1e-8);
  double ss = 0;
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < x[i].size(); ++j)
      if (m[i][j] != 0) ss += (x[i][j] - mean) * (x[i][j] - mean);
  const double var = ss / (n + 1e-8) * n / (n - 1);
  Mat out = x;
  for (auto& row : out)
    for (double& v : row) v = (v - mean) / std::sqrt(var + 1e-8);
  return out;
}

std::pair<Mat, Mat> ref_gae(const Mat& r, const Mat& v, const Mat& m, double gamma, double lam) {
  Mat adv = r, ret = r;
  for (size_t i = 0; i < r.size(); ++i) {
    double next_value = 0, running = 0;
    for (size_t t = r[i].size(); t-- > 0;) {
      if (m[i][t] != 0) {  // a response token: one TD step, bootstrapping from the next response token
        running = r[i][t] + gamma * next_value - v[i][t] + gamma * lam * running;
        next_value = v[i][t];
      }
      adv[i][t] = running;
      ret[i][t] = running + v[i][t];
    }
  }
  return {whiten(adv, m), ret};
}

Vec ref_grpo(const Vec& s, const std::vector<int64_t>& ids, double eps, bool norm) {
  Vec a(s.size());
  for (const auto& [id, rows] : members(ids))
    for (size_t i : rows) {
      const double mean = rows.size() > 1 ? mean_of(s, rows) : 0.0;
      const double sd = rows.size() > 1 ? std_of(s, rows) : 1.0;
      a[i] = norm ? (s[i] - mean) / (sd + eps) : s[i] - mean;
    }
  return a;
}

Vec ref_passk(const Vec& s, const std::vector<int64_t>& ids, double eps, bool norm) {
  Vec a(s.size(), 0.0);
  for (const auto& [id, rows] : members(ids)) {
    size_t best = rows[0];
    for (size_t i : rows)
      if (s[i] > s[best]) best = i;
    double second = -std::numeric_limits<double>::infinity();
    for (size_t i : rows)
      if (i != best) second = std::max(second, s[i]);
    a[best] = (s[best] - second) / (norm ? std_of(s, rows) + eps : 1.0);
  }
  return a;
}

// Leave-one-out mean of the other responses; `singleton` is what a group of one gets.
Vec ref_rloo(const Vec& s, const std::vector<int64_t>& ids, bool singleton_keeps_score) {
  Vec a(s.size());
  for (const auto& [id, rows] : members(ids))
    for (size_t i : rows) {
      if (rows.size() == 1) {
        a[i] = singleton_keeps_score ? s[i] : 0.0;
        continue;
      }
      double others = 0;
      for (size_t j : rows)
        if (j != i) others += s[j];
      a[i] = s[i] - others / (rows.size() - 1);
    }
  return a;
}

Vec ref_opo(const Vec& s, const Vec& len, const std::vector<int64_t>& ids) {
  Vec a(s.size());
  for (const auto& [id, rows] : members(ids)) {
    double num = 0, den = 0;
    for (size_t i : rows) num += len[i] * s[i], den += len[i];
    for (size_t i : rows) a[i] = s[i] - (rows.size() > 1 ? num / den : 0.0);
  }
  return a;
}

std::pair<Mat, Mat> ref_reinforce_pp(const Mat& r, const Mat& m, double gamma) {
  Mat ret = r;
  for (size_t i = 0; i < r.size(); ++i) {
    double running = 0;
    for (size_t t = r[i].size(); t-- > 0;) {
      if (m[i][t] != 0) running = r[i][t] + gamma * running;
      ret[i][t] = m[i][t] != 0 ? running : 0.0;
    }
  }
  Mat adv = whiten(ret, m);
  for (size_t i = 0; i < adv.size(); ++i)
    for (size_t t = 0; t < adv[i].size(); ++t) adv[i][t] *= m[i][t];
  return {adv, ret};
}

Mat ref_reinforce_pp_baseline(const Vec& s, const Mat& m, const std::vector<int64_t>& ids) {
  Vec centered(s.size());
  for (const auto& [id, rows] : members(ids))
    for (size_t i : rows) centered[i] = s[i] - (rows.size() > 1 ? mean_of(s, rows) : 0.0);
  Mat adv = whiten(broadcast(centered, m), m);
  for (size_t i = 0; i < adv.size(); ++i)
    for (size_t t = 0; t < adv[i].size(); ++t) adv[i][t] *= m[i][t];
  return adv;
}

std::pair<Mat, Mat> ref_remax(const Mat& r, const Vec& baseline, const Mat& m) {
  Mat ret = r, adv = r;
  for (size_t i = 0; i < r.size(); ++i) {
    double to_go = 0;
    for (size_t t = r[i].size(); t-- > 0;) {
      to_go += r[i][t] * m[i][t];
      ret[i][t] = to_go;
      adv[i][t] = to_go - baseline[i] * m[i][t];
    }
  }
  return {adv, ret};
}

Vec ref_gpg(const Vec& s, const std::vector<int64_t>& ids, double f_norm) {
  double nonzero = 0;
  for (double x : s) nonzero += x != 0;
  const double alpha = s.size() / std::max(nonzero, 1.0);
  Vec a(s.size());
  for (const auto& [id, rows] : members(ids))
    for (size_t i : rows) a[i] = alpha * (s[i] - (rows.size() > 1 ? mean_of(s, rows) : 0.0)) / f_norm;
  return a;
}

// A random float64 batch: multi-turn masks (zeros inside responses), an all-masked row, a row of
// zero rewards, arbitrary group ids (negative, large). Without singletons every group has >= 2 rows.
struct RandomBatch {
  torch::Tensor rewards, mask, index, values, baselines;
};

RandomBatch random_batch(uint64_t seed, bool singletons, int64_t bs = 24, int64_t len = 11) {
  torch::manual_seed(seed);
  RandomBatch b;
  b.rewards = torch::randn({bs, len}, f64()) * (torch::rand({bs, len}, f64()) < 0.5);
  b.rewards[3].zero_();
  b.mask = (torch::rand({bs, len}, f64()) > 0.3).to(torch::kDouble);
  b.mask.select(1, 0).fill_(1);
  b.mask[2].zero_();
  b.values = torch::randn({bs, len}, f64());
  b.baselines = torch::randn({bs}, f64());
  const std::vector<int64_t> pool = {-7, 0, 3, 42, 1000000007, 5, -123456789, 11};
  std::vector<int64_t> ids;
  if (singletons) {
    torch::Tensor pick = torch::randint(0, static_cast<int64_t>(pool.size()), {bs});
    for (int64_t i = 0; i < bs; ++i) ids.push_back(pool[pick[i].item<int64_t>()]);
    ids.back() = 999;  // surely a singleton
  } else {
    for (int64_t i = 0; i < bs; ++i) ids.push_back(pool[(i / 3) % pool.size()]);  // groups of 3
    const torch::Tensor perm = torch::randperm(bs);
    std::vector<int64_t> shuffled(bs);
    for (int64_t i = 0; i < bs; ++i) shuffled[i] = ids[perm[i].item<int64_t>()];
    ids = shuffled;
  }
  b.index = torch::tensor(ids, torch::kLong);
  return b;
}

constexpr double kTol = 1e-10;

}  // namespace

// ---- group ids --------------------------------------------------------------------------------

TEST_CASE("group_ids: uids numbered in order of first appearance") {
  CHECK(to_ids(group_ids({"b", "a", "b", "c", "a"})) == std::vector<int64_t>{0, 1, 0, 2, 1});
  torch::Tensor none = group_ids({});
  CHECK(none.numel() == 0);
  CHECK(none.scalar_type() == torch::kLong);
}

// ---- GAE ----------------------------------------------------------------------------------------

TEST_CASE("gae: hand-computed returns, whitened advantages") {
  // gamma = lam = 0.5, rewards [0, 0, 1], values 0.5: raw advantages [-0.28125, -0.125, 0.5].
  torch::Tensor r = mat({{0, 0, 1}}), v = mat({{0.5, 0.5, 0.5}}), m = torch::ones({1, 3}, f64());
  auto [adv, ret] = compute_gae_advantage_return(r, v, m, 0.5, 0.5);
  CHECK(max_abs_diff(ret, {{0.21875, 0.375, 1.0}}) < 1e-15);
  CHECK(max_abs_diff(adv, whiten({{-0.28125, -0.125, 0.5}}, to_mat(m))) < 1e-12);
}

TEST_CASE("gae: a mask-0 (observation) token carries the next value and the advantage through") {
  // Token 1 is an observation: its value 9 is never used, token 0 bootstraps from token 2.
  torch::Tensor r = mat({{0, 0, 1}, {1, 1, 1}}), v = mat({{0.5, 9.0, 0.5}, {0, 0, 0}});
  torch::Tensor m = mat({{1, 0, 1}, {1, 1, 1}});
  auto [adv, ret] = compute_gae_advantage_return(r, v, m, 0.5, 0.5);
  // raw row 0: [-0.125, 0.5, 0.5]; returns = raw + values (the observation keeps 0.5 + 9).
  CHECK(max_abs_diff(ret.slice(0, 0, 1), {{0.375, 9.5, 1.0}}) < 1e-15);
  const Mat raw = {{-0.125, 0.5, 0.5}, {1.3125, 1.25, 1.0}};
  CHECK(max_abs_diff(adv, whiten(raw, to_mat(m))) < 1e-12);
}

TEST_CASE("gae: matches the loop reference on random multi-turn batches") {
  for (uint64_t seed : {1, 2, 3}) {
    RandomBatch b = random_batch(seed, true);
    for (auto [gamma, lam] : {std::pair{1.0, 1.0}, std::pair{0.99, 0.95}, std::pair{0.5, 0.0}}) {
      auto [adv, ret] = compute_gae_advantage_return(b.rewards, b.values, b.mask, gamma, lam);
      auto [ref_adv, ref_ret] = ref_gae(to_mat(b.rewards), to_mat(b.values), to_mat(b.mask), gamma, lam);
      CHECK(max_abs_diff(adv, ref_adv) < kTol);
      CHECK(max_abs_diff(ret, ref_ret) < kTol);
    }
  }
}

TEST_CASE("gae: advantages do not depend on values or rewards at masked positions") {
  RandomBatch b = random_batch(4, true);
  auto [adv, ret] = compute_gae_advantage_return(b.rewards, b.values, b.mask, 0.99, 0.95);
  const torch::Tensor masked = b.mask == 0;
  torch::Tensor other_values = torch::where(masked, torch::randn_like(b.values) * 100, b.values);
  torch::Tensor other_rewards = torch::where(masked, torch::randn_like(b.rewards) * 100, b.rewards);
  auto [adv2, ret2] = compute_gae_advantage_return(other_rewards, other_values, b.mask, 0.99, 0.95);
  CHECK(torch::equal(adv, adv2));
  CHECK(torch::equal(ret.masked_select(~masked), ret2.masked_select(~masked)));
  // Even non-finite values at masked positions stay out of the advantages.
  torch::Tensor nan_values = b.values.masked_fill(masked, std::nan(""));
  CHECK(torch::equal(compute_gae_advantage_return(b.rewards, nan_values, b.mask, 0.99, 0.95).first, adv));
}

TEST_CASE("gae: an all-masked row gets raw advantage 0 and returns equal to its values") {
  RandomBatch b = random_batch(5, true);  // row 2 is all-masked
  auto [adv, ret] = compute_gae_advantage_return(b.rewards, b.values, b.mask, 0.9, 0.9);
  CHECK(torch::allclose(ret[2], b.values[2], 0, 0));
  CHECK(torch::isfinite(adv).all().item<bool>());
}

// ---- GRPO -----------------------------------------------------------------------------------

TEST_CASE("grpo: hand-computed group normalisation, Dr.GRPO without std") {
  // Group 7: scores 1 and 3 (mean 2, std sqrt 2). Group -1: scores 0.5, 0.5, 0.5 (zero variance).
  torch::Tensor r = mat({{0, 1}, {1, 2}, {0.25, 0.25}, {0.5, 0}, {0, 0.5}});
  torch::Tensor m = mat({{1, 1}, {1, 0}, {1, 1}, {1, 1}, {1, 1}});
  torch::Tensor index = torch::tensor({7, 7, -1, -1, -1}, torch::kLong);
  const double a = 1 / (std::sqrt(2.0) + 1e-6);
  auto [adv, ret] = compute_grpo_outcome_advantage(r, m, index);
  // Scores sum the whole row (verl): row 1 scores 3 although its second token is masked.
  CHECK(max_abs_diff(adv, {{-a, -a}, {a, 0}, {0, 0}, {0, 0}, {0, 0}}) < 1e-12);
  CHECK(torch::equal(adv, ret));
  auto [dr, dr_ret] = compute_grpo_outcome_advantage(r, m, index, 1e-6, /*norm_adv_by_std_in_grpo=*/false);
  CHECK(max_abs_diff(dr, {{-1, -1}, {1, 0}, {0, 0}, {0, 0}, {0, 0}}) < 1e-15);
}

TEST_CASE("grpo: singleton group keeps its score (verl uses mean 0, std 1, not advantage 0)") {
  torch::Tensor r = mat({{0, 2}, {0, 1}, {0, 3}}), m = torch::ones({3, 2}, f64());
  torch::Tensor index = torch::tensor({5, 9, 9}, torch::kLong);
  auto [adv, ret] = compute_grpo_outcome_advantage(r, m, index);
  CHECK(adv[0][0].item<double>() == Approx(2 / (1 + 1e-6)).epsilon(1e-15));
  auto [dr, dr_ret] = compute_grpo_outcome_advantage(r, m, index, 1e-6, false);
  CHECK(dr[0][1].item<double>() == 2.0);
  // Same convention in grpo_vectorized.
  CHECK(torch::allclose(compute_grpo_vectorized_outcome_advantage(r, m, index).first, adv, 0, 1e-15));
}

TEST_CASE("grpo / grpo_vectorized: match the loop reference and each other on random groups") {
  for (uint64_t seed : {11, 12}) {
    for (bool singletons : {false, true}) {
      RandomBatch b = random_batch(seed, singletons);
      for (bool norm : {true, false}) {
        const Vec ref = ref_grpo(row_sums(to_mat(b.rewards)), to_ids(b.index), 1e-6, norm);
        auto [adv, ret] = compute_grpo_outcome_advantage(b.rewards, b.mask, b.index, 1e-6, norm);
        auto [vec, vec_ret] = compute_grpo_vectorized_outcome_advantage(b.rewards, b.mask, b.index, 1e-6, norm);
        CHECK(max_abs_diff(adv, broadcast(ref, to_mat(b.mask))) < kTol);
        CHECK(max_abs_diff(vec, to_mat(adv)) < kTol);
        CHECK(torch::equal(vec, vec_ret));
      }
    }
  }
}

TEST_CASE("grpo: group ids need not be contiguous, sorted or non-negative") {
  RandomBatch b = random_batch(13, false);
  auto [adv, ret] = compute_grpo_outcome_advantage(b.rewards, b.mask, b.index);
  // Relabelling the groups (any bijection) changes nothing.
  torch::Tensor relabelled = b.index * -3 + 17;
  CHECK(torch::equal(compute_grpo_outcome_advantage(b.rewards, b.mask, relabelled).first, adv));
  // int32 ids work too.
  CHECK(torch::equal(compute_grpo_outcome_advantage(b.rewards, b.mask, b.index.to(torch::kInt)).first, adv));
}

// ---- GRPO pass@k ------------------------------------------------------------------------------

TEST_CASE("grpo_passk: only the best response of a group gets r_max - r_second_max") {
  torch::Tensor r = mat({{1}, {3}, {2}, {2}, {2}, {1}});
  torch::Tensor m = torch::ones({6, 1}, f64());
  torch::Tensor index = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kLong);
  // Group 0: [1, 3, 2], std 1: the 3 gets (3 - 2) / (1 + eps). Group 1 ties at the top: all 0.
  auto [adv, ret] = compute_grpo_passk_outcome_advantage(r, m, index);
  CHECK(max_abs_diff(adv, {{0}, {1 / (1 + 1e-6)}, {0}, {0}, {0}, {0}}) < 1e-15);
  auto [raw, raw_ret] = compute_grpo_passk_outcome_advantage(r, m, index, 1e-6, false);
  CHECK(max_abs_diff(raw, {{0}, {1}, {0}, {0}, {0}, {0}}) < 1e-15);
}

TEST_CASE("grpo_passk: matches the loop reference; a group of one is an error") {
  RandomBatch b = random_batch(21, false);
  for (bool norm : {true, false}) {
    const Vec ref = ref_passk(row_sums(to_mat(b.rewards)), to_ids(b.index), 1e-6, norm);
    CHECK(max_abs_diff(compute_grpo_passk_outcome_advantage(b.rewards, b.mask, b.index, 1e-6, norm).first,
                       broadcast(ref, to_mat(b.mask))) < kTol);
  }
  torch::Tensor index = b.index.clone();
  index[0] = 999;  // a group of one; the group it left keeps two
  CHECK_THROWS_WITH(compute_grpo_passk_outcome_advantage(b.rewards, b.mask, index),
                    Catch::Contains("at least 2 samples per group") && Catch::Contains("group 999"));
}

// ---- RLOO ---------------------------------------------------------------------------------------

TEST_CASE("rloo: hand-computed leave-one-out baseline") {
  // Group [1, 3, 5]: 1 - 4, 3 - 3, 5 - 2.
  torch::Tensor r = mat({{1, 0}, {0, 3}, {5, 0}}), m = mat({{1, 1}, {1, 1}, {1, 0}});
  torch::Tensor index = torch::tensor({4, 4, 4}, torch::kLong);
  CHECK(max_abs_diff(compute_rloo_outcome_advantage(r, m, index).first, {{-3, -3}, {0, 0}, {3, 0}}) < 1e-14);
  CHECK(max_abs_diff(compute_rloo_vectorized_outcome_advantage(r, m, index).first, {{-3, -3}, {0, 0}, {3, 0}}) <
        1e-14);
}

TEST_CASE("rloo: with n=1 the loop version keeps the score, the vectorized one gives 0 (as verl)") {
  torch::Tensor r = mat({{2, 0}, {1, 0}, {3, 0}}), m = torch::ones({3, 2}, f64());
  torch::Tensor index = torch::tensor({0, 1, 1}, torch::kLong);
  CHECK(max_abs_diff(compute_rloo_outcome_advantage(r, m, index).first, {{2, 2}, {-2, -2}, {2, 2}}) < 1e-15);
  CHECK(max_abs_diff(compute_rloo_vectorized_outcome_advantage(r, m, index).first, {{0, 0}, {-2, -2}, {2, 2}}) <
        1e-15);
}

TEST_CASE("rloo / rloo_vectorized: match the loop reference and each other on random groups") {
  for (uint64_t seed : {31, 32}) {
    RandomBatch b = random_batch(seed, false);
    const Vec s = row_sums(to_mat(b.rewards));
    auto [adv, ret] = compute_rloo_outcome_advantage(b.rewards, b.mask, b.index);
    auto [vec, vec_ret] = compute_rloo_vectorized_outcome_advantage(b.rewards, b.mask, b.index);
    CHECK(max_abs_diff(adv, broadcast(ref_rloo(s, to_ids(b.index), true), to_mat(b.mask))) < kTol);
    CHECK(max_abs_diff(vec, to_mat(adv)) < kTol);
    CHECK(torch::equal(adv, ret));
    // With singletons each follows its own convention.
    RandomBatch u = random_batch(seed, true);
    const Vec su = row_sums(to_mat(u.rewards));
    CHECK(max_abs_diff(compute_rloo_outcome_advantage(u.rewards, u.mask, u.index).first,
                       broadcast(ref_rloo(su, to_ids(u.index), true), to_mat(u.mask))) < kTol);
    CHECK(max_abs_diff(compute_rloo_vectorized_outcome_advantage(u.rewards, u.mask, u.index).first,
                       broadcast(ref_rloo(su, to_ids(u.index), false), to_mat(u.mask))) < kTol);
  }
}

// ---- OPO ----------------------------------------------------------------------------------------

TEST_CASE("opo: length-weighted group baseline, hand-computed") {
  // Lengths 1 and 3, scores 4 and 0: baseline (1*4 + 3*0) / 4 = 1.
  torch::Tensor r = mat({{4, 0, 0}, {0, 0, 0}}), m = mat({{1, 0, 0}, {1, 1, 1}});
  torch::Tensor index = torch::tensor({1, 1}, torch::kLong);
  CHECK(max_abs_diff(compute_opo_outcome_advantage(r, m, index).first, {{3, 0, 0}, {-1, -1, -1}}) < 1e-15);
}

TEST_CASE("opo: matches the loop reference; a group of empty responses gives zeros, not NaN") {
  RandomBatch b = random_batch(41, true);
  const Mat mask = to_mat(b.mask);
  Vec len;
  for (const auto& row : mask) len.push_back(row_sums({row})[0]);
  const Vec ref = ref_opo(row_sums(to_mat(b.rewards)), len, to_ids(b.index));
  CHECK(max_abs_diff(compute_opo_outcome_advantage(b.rewards, b.mask, b.index).first, broadcast(ref, mask)) < kTol);
  // verl's baseline is 0/0 here; every position of these rows is masked, so 0 is the answer.
  torch::Tensor r = mat({{1, 0}, {2, 0}}), m = torch::zeros({2, 2}, f64());
  torch::Tensor adv = compute_opo_outcome_advantage(r, m, torch::tensor({0, 0}, torch::kLong)).first;
  CHECK(torch::equal(adv, torch::zeros({2, 2}, f64())));
}

// ---- REINFORCE++ ------------------------------------------------------------------------------

TEST_CASE("reinforce_plus_plus: hand-computed discounted returns skip observation tokens") {
  // gamma 0.5, token 2 is an observation: returns [1, 2, 0, 2].
  torch::Tensor r = mat({{0, 1, 0, 2}, {1, 1, 1, 1}}), m = mat({{1, 1, 0, 1}, {1, 1, 1, 1}});
  auto [adv, ret] = compute_reinforce_plus_plus_outcome_advantage(r, m, 0.5);
  const Mat returns = {{1, 2, 0, 2}, {1.875, 1.75, 1.5, 1}};
  CHECK(max_abs_diff(ret, returns) < 1e-15);
  Mat expected = whiten(returns, to_mat(m));
  expected[0][2] = 0;
  CHECK(max_abs_diff(adv, expected) < 1e-12);
}

TEST_CASE("reinforce_plus_plus: matches the loop reference on random multi-turn batches") {
  for (double gamma : {1.0, 0.9}) {
    RandomBatch b = random_batch(51, true);
    auto [adv, ret] = compute_reinforce_plus_plus_outcome_advantage(b.rewards, b.mask, gamma);
    auto [ref_adv, ref_ret] = ref_reinforce_pp(to_mat(b.rewards), to_mat(b.mask), gamma);
    CHECK(max_abs_diff(adv, ref_adv) < kTol);
    CHECK(max_abs_diff(ret, ref_ret) < kTol);
  }
}

TEST_CASE("reinforce_plus_plus_baseline: group-mean baseline then batch whitening, vs the reference") {
  for (bool singletons : {false, true}) {
    RandomBatch b = random_batch(52, singletons);
    auto [adv, ret] = compute_reinforce_plus_plus_baseline_outcome_advantage(b.rewards, b.mask, b.index);
    const Mat ref = ref_reinforce_pp_baseline(row_sums(to_mat(b.rewards)), to_mat(b.mask), to_ids(b.index));
    CHECK(max_abs_diff(adv, ref) < kTol);
    CHECK(torch::equal(adv, ret));
  }
}

// ---- ReMax / GPG ------------------------------------------------------------------------------

TEST_CASE("remax: hand-computed reward-to-go minus the greedy baseline") {
  torch::Tensor r = mat({{0, 1, 7, 2}}), m = mat({{1, 1, 0, 1}});
  auto [adv, ret] = compute_remax_outcome_advantage(r, torch::tensor({1.5}, f64()), m);
  // The masked 7 is dropped; the masked position keeps its return as advantage (no baseline).
  CHECK(max_abs_diff(ret, {{3, 3, 2, 2}}) < 1e-15);
  CHECK(max_abs_diff(adv, {{1.5, 1.5, 2, 0.5}}) < 1e-15);
}

TEST_CASE("remax: matches the loop reference") {
  RandomBatch b = random_batch(61, true);
  auto [adv, ret] = compute_remax_outcome_advantage(b.rewards, b.baselines, b.mask);
  auto [ref_adv, ref_ret] = ref_remax(to_mat(b.rewards), to_vec(b.baselines), to_mat(b.mask));
  CHECK(max_abs_diff(adv, ref_adv) < kTol);
  CHECK(max_abs_diff(ret, ref_ret) < kTol);
}

TEST_CASE("gpg: hand-computed alpha and group baseline") {
  // Scores [1, 0, 3, 0], two nonzero: alpha = 4 / 2; group means 0.5 and 1.5.
  torch::Tensor r = mat({{1}, {0}, {3}, {0}}), m = torch::ones({4, 1}, f64());
  torch::Tensor index = torch::tensor({0, 0, 1, 1}, torch::kLong);
  CHECK(max_abs_diff(compute_gpg_outcome_advantage(r, m, index).first, {{1}, {-1}, {3}, {-3}}) < 1e-15);
  CHECK(max_abs_diff(compute_gpg_outcome_advantage(r, m, index, 2.0).first, {{0.5}, {-0.5}, {1.5}, {-1.5}}) < 1e-15);
  // All scores zero: alpha = bs / max(0, 1), advantages 0.
  CHECK(torch::equal(compute_gpg_outcome_advantage(r * 0, m, index).first, torch::zeros({4, 1}, f64())));
  CHECK_THROWS_AS(compute_gpg_outcome_advantage(r, m, index, 0.0), verl::InvalidArgument);
}

TEST_CASE("gpg: matches the loop reference") {
  for (bool singletons : {false, true}) {
    RandomBatch b = random_batch(62, singletons);
    const Vec ref = ref_gpg(row_sums(to_mat(b.rewards)), to_ids(b.index), 1.5);
    CHECK(max_abs_diff(compute_gpg_outcome_advantage(b.rewards, b.mask, b.index, 1.5).first,
                       broadcast(ref, to_mat(b.mask))) < kTol);
  }
}

// ---- validation -----------------------------------------------------------------------------

TEST_CASE("estimators: empty batch is an InvalidArgument") {
  torch::Tensor r = torch::zeros({0, 4}, f64()), m = torch::zeros({0, 4}, f64());
  torch::Tensor index = torch::zeros({0}, torch::kLong);
  CHECK_THROWS_WITH(compute_grpo_outcome_advantage(r, m, index), Catch::Contains("empty batch"));
  CHECK_THROWS_WITH(compute_gae_advantage_return(r, r, m, 1, 1), Catch::Contains("empty batch"));
  CHECK_THROWS_AS(compute_reinforce_plus_plus_outcome_advantage(r, m, 1), verl::InvalidArgument);
  CHECK_THROWS_AS(compute_remax_outcome_advantage(r, torch::zeros({0}, f64()), m), verl::InvalidArgument);
}

TEST_CASE("estimators: mismatched shapes name both shapes") {
  torch::Tensor r = torch::zeros({2, 3}, f64()), m = torch::ones({2, 4}, f64());
  torch::Tensor index = torch::tensor({0, 0}, torch::kLong);
  CHECK_THROWS_WITH(compute_grpo_outcome_advantage(r, m, index),
                    Catch::Contains("[2, 3]") && Catch::Contains("[2, 4]"));
  CHECK_THROWS_WITH(compute_gae_advantage_return(r, torch::zeros({2, 4}, f64()), r * 0 + 1, 1, 1),
                    Catch::Contains("[2, 3]") && Catch::Contains("[2, 4]"));
  CHECK_THROWS_WITH(compute_rloo_outcome_advantage(r, r, torch::tensor({0, 0, 0}, torch::kLong)),
                    Catch::Contains("index must have shape [2]"));
  CHECK_THROWS_WITH(compute_remax_outcome_advantage(r, torch::zeros({3}, f64()), r),
                    Catch::Contains("reward_baselines must have shape [2]"));
  CHECK_THROWS_AS(compute_grpo_outcome_advantage(r, r, torch::tensor({0.0, 1.0})), verl::InvalidArgument);
}

TEST_CASE("estimators: NaN or Inf input is an error instead of NaN output") {
  RandomBatch b = random_batch(71, false);
  torch::Tensor inside = b.rewards.clone();
  inside[0][0] = std::nan("");  // column 0 is always inside the mask
  CHECK_THROWS_WITH(compute_grpo_outcome_advantage(inside, b.mask, b.index), Catch::Contains("token_level_rewards"));
  CHECK_THROWS_AS(compute_gae_advantage_return(inside, b.values, b.mask, 1, 1), verl::InvalidArgument);
  CHECK_THROWS_AS(compute_reinforce_plus_plus_outcome_advantage(inside, b.mask, 1), verl::InvalidArgument);
  torch::Tensor bad_values = b.values.clone();
  bad_values[1][0] = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(compute_gae_advantage_return(b.rewards, bad_values, b.mask, 1, 1), Catch::Contains("values"));
  torch::Tensor bad_baselines = b.baselines.clone();
  bad_baselines[0] = std::nan("");
  CHECK_THROWS_WITH(compute_remax_outcome_advantage(b.rewards, bad_baselines, b.mask),
                    Catch::Contains("reward_baselines"));
  // Outside the mask: token-level estimators never read it; outcome ones sum the whole row (verl)
  // and so must refuse it.
  torch::Tensor outside = b.rewards.clone();
  outside[2][5] = std::nan("");  // row 2 is all-masked
  CHECK(torch::isfinite(compute_reinforce_plus_plus_outcome_advantage(outside, b.mask, 1).first).all().item<bool>());
  CHECK(torch::isfinite(compute_remax_outcome_advantage(outside, b.baselines, b.mask).first).all().item<bool>());
  CHECK_THROWS_AS(compute_rloo_outcome_advantage(outside, b.mask, b.index), verl::InvalidArgument);
}

TEST_CASE("estimators: all-masked rows give finite results, zero where an outcome is masked") {
  RandomBatch b = random_batch(72, true);  // row 2 is all-masked
  for (const AdvantageResult& res :
       {compute_grpo_outcome_advantage(b.rewards, b.mask, b.index),
        compute_rloo_outcome_advantage(b.rewards, b.mask, b.index),
        compute_opo_outcome_advantage(b.rewards, b.mask, b.index),
        compute_gpg_outcome_advantage(b.rewards, b.mask, b.index),
        compute_reinforce_plus_plus_baseline_outcome_advantage(b.rewards, b.mask, b.index),
        compute_reinforce_plus_plus_outcome_advantage(b.rewards, b.mask, 0.9)}) {
    CHECK(torch::isfinite(res.first).all().item<bool>());
    CHECK(res.first[2].abs().max().item<double>() == 0);
  }
}

// ---- dtypes, autograd, devices -------------------------------------------------------------

TEST_CASE("estimators: float32 and bfloat16 inputs keep their dtype and agree with float64") {
  RandomBatch b = random_batch(81, false);
  for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    const double tol = dtype == torch::kFloat ? 1e-4 : 0.1;
    // Inputs rounded to the dtype, so the comparison measures the arithmetic only.
    torch::Tensor r = b.rewards.to(dtype), v = b.values.to(dtype), m = b.mask.to(dtype);
    auto [adv, ret] = compute_grpo_outcome_advantage(r, m, b.index);
    CHECK(adv.scalar_type() == dtype);
    CHECK(torch::allclose(adv.to(torch::kDouble),
                          compute_grpo_outcome_advantage(r.to(torch::kDouble), b.mask, b.index).first, tol, tol));
    auto [gae, gae_ret] = compute_gae_advantage_return(r, v, m, 0.99, 0.95);
    CHECK(gae.scalar_type() == dtype);
    CHECK(gae_ret.scalar_type() == dtype);
    auto ref = compute_gae_advantage_return(r.to(torch::kDouble), v.to(torch::kDouble), b.mask, 0.99, 0.95);
    CHECK(torch::allclose(gae.to(torch::kDouble), ref.first, tol, tol));
    CHECK(compute_rloo_vectorized_outcome_advantage(r, m, b.index).first.scalar_type() == dtype);
  }
  // GAE promotes rewards and values as torch does.
  CHECK(compute_gae_advantage_return(b.rewards.to(torch::kFloat), b.values, b.mask, 1, 1).first.scalar_type() ==
        torch::kDouble);
  // Masks of any dtype.
  auto base = compute_grpo_outcome_advantage(b.rewards, b.mask, b.index).first;
  CHECK(torch::equal(compute_grpo_outcome_advantage(b.rewards, b.mask.to(torch::kBool), b.index).first, base));
  CHECK(torch::equal(compute_grpo_outcome_advantage(b.rewards, b.mask.to(torch::kLong), b.index).first, base));
}

TEST_CASE("estimators: outputs are constants for the loss (no autograd graph, as verl's no_grad)") {
  RandomBatch b = random_batch(82, false);
  torch::Tensor r = b.rewards.clone().requires_grad_(true), v = b.values.clone().requires_grad_(true);
  CHECK_FALSE(compute_gae_advantage_return(r, v, b.mask, 1, 1).first.requires_grad());
  CHECK_FALSE(compute_gae_advantage_return(r, v, b.mask, 1, 1).second.requires_grad());
  CHECK_FALSE(compute_grpo_outcome_advantage(r, b.mask, b.index).first.requires_grad());
}

TEST_CASE("estimators: CUDA results equal CPU results") {
  if (!torch::cuda::is_available()) {
    WARN("CUDA not available; skipped");
    return;
  }
  RandomBatch b = random_batch(83, false);
  const torch::Device cuda("cuda");
  torch::Tensor r = b.rewards.to(cuda), m = b.mask.to(cuda), v = b.values.to(cuda), base = b.baselines.to(cuda);
  // The index may stay on the host.
  auto check = [](const AdvantageResult& gpu, const AdvantageResult& cpu) {
    CHECK(gpu.first.device().is_cuda());
    CHECK(torch::allclose(gpu.first.cpu(), cpu.first, 1e-12, 1e-12));
    CHECK(torch::allclose(gpu.second.cpu(), cpu.second, 1e-12, 1e-12));
  };
  check(compute_gae_advantage_return(r, v, m, 0.99, 0.95),
        compute_gae_advantage_return(b.rewards, b.values, b.mask, 0.99, 0.95));
  check(compute_grpo_outcome_advantage(r, m, b.index), compute_grpo_outcome_advantage(b.rewards, b.mask, b.index));
  check(compute_grpo_passk_outcome_advantage(r, m, b.index.to(cuda)),
        compute_grpo_passk_outcome_advantage(b.rewards, b.mask, b.index));
  check(compute_rloo_vectorized_outcome_advantage(r, m, b.index),
        compute_rloo_vectorized_outcome_advantage(b.rewards, b.mask, b.index));
  check(compute_opo_outcome_advantage(r, m, b.index), compute_opo_outcome_advantage(b.rewards, b.mask, b.index));
  check(compute_gpg_outcome_advantage(r, m, b.index), compute_gpg_outcome_advantage(b.rewards, b.mask, b.index));
  check(compute_reinforce_plus_plus_outcome_advantage(r, m, 0.9),
        compute_reinforce_plus_plus_outcome_advantage(b.rewards, b.mask, 0.9));
  check(compute_reinforce_plus_plus_baseline_outcome_advantage(r, m, b.index),
        compute_reinforce_plus_plus_baseline_outcome_advantage(b.rewards, b.mask, b.index));
  check(compute_remax_outcome_advantage(r, base, m), compute_remax_outcome_advantage(b.rewards, b.baselines, b.mask));
}

// ---- registry ---------------------------------------------------------------------------------

TEST_CASE("registry: every verl estimator name is registered and dispatches with the config") {
  for (const char* name : {"gae", "grpo", "grpo_vectorized", "grpo_passk", "rloo", "rloo_vectorized", "opo",
                           "reinforce_plus_plus", "reinforce_plus_plus_baseline", "remax", "gpg"}) {
    INFO(name);
    CHECK(adv_estimator_registry().contains(name));
  }
  RandomBatch b = random_batch(91, false);
  AdvantageInputs in{b.rewards, b.mask, b.index, b.values, b.baselines};
  AdvantageConfig cfg;
  cfg.gamma = 0.9;
  cfg.lam = 0.8;
  cfg.norm_adv_by_std_in_grpo = false;
  CHECK(torch::equal(get_adv_estimator_fn("gae")(in, cfg).first,
                     compute_gae_advantage_return(b.rewards, b.values, b.mask, 0.9, 0.8).first));
  CHECK(torch::equal(get_adv_estimator_fn("grpo")(in, cfg).first,
                     compute_grpo_outcome_advantage(b.rewards, b.mask, b.index, 1e-6, false).first));
  CHECK(torch::equal(get_adv_estimator_fn("grpo_passk")(in, cfg).first,
                     compute_grpo_passk_outcome_advantage(b.rewards, b.mask, b.index, 1e-6, false).first));
  CHECK(torch::equal(get_adv_estimator_fn("reinforce_plus_plus")(in, cfg).second,
                     compute_reinforce_plus_plus_outcome_advantage(b.rewards, b.mask, 0.9).second));
  CHECK(torch::equal(get_adv_estimator_fn("remax")(in, cfg).first,
                     compute_remax_outcome_advantage(b.rewards, b.baselines, b.mask).first));
}

TEST_CASE("registry: a missing input names the input and the estimator") {
  RandomBatch b = random_batch(92, false);
  AdvantageInputs in{b.rewards, b.mask, {}, {}, {}};
  CHECK_THROWS_WITH(get_adv_estimator_fn("gae")(in, {}), Catch::Contains("'gae'") && Catch::Contains("'values'"));
  CHECK_THROWS_WITH(get_adv_estimator_fn("rloo")(in, {}), Catch::Contains("'rloo'") && Catch::Contains("'index'"));
  CHECK_THROWS_WITH(get_adv_estimator_fn("remax")(in, {}),
                    Catch::Contains("'remax'") && Catch::Contains("'reward_baselines'"));
  CHECK_THROWS_AS(get_adv_estimator_fn("grpo")(AdvantageInputs{}, {}), verl::InvalidArgument);
}

namespace {
AdvantageResult custom_estimator(const AdvantageInputs& in, const AdvantageConfig&) {
  return {in.token_level_rewards * 2, in.token_level_rewards};
}
AdvantageResult other_estimator(const AdvantageInputs& in, const AdvantageConfig&) {
  return {in.token_level_rewards, in.token_level_rewards};
}
}  // namespace

TEST_CASE("registry: same function again is fine, another under a taken name throws, unknown lists names") {
  const void* id = reinterpret_cast<const void*>(&custom_estimator);
  register_adv_est("test_custom_double", custom_estimator, id);
  CHECK_NOTHROW(register_adv_est("test_custom_double", custom_estimator, id));
  CHECK_THROWS_WITH(register_adv_est("test_custom_double", other_estimator,
                                     reinterpret_cast<const void*>(&other_estimator)),
                    Catch::Contains("already been registered"));
  CHECK_THROWS_AS(register_adv_est("grpo", other_estimator, reinterpret_cast<const void*>(&other_estimator)),
                  verl::InvalidArgument);
  AdvantageInputs in;
  in.token_level_rewards = torch::ones({1, 2}, f64());
  CHECK(get_adv_estimator_fn("test_custom_double")(in, {}).first.sum().item<double>() == 4.0);
  CHECK_THROWS_WITH(get_adv_estimator_fn("no_such_estimator"),
                    Catch::Contains("no_such_estimator") && Catch::Contains("grpo") && Catch::Contains("gae") &&
                        Catch::Contains("remax"));
}
