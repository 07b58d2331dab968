// verl::algo functional helpers against hand-computed values and independent formulas.
#include <catch2/catch.hpp>
#include <cmath>
#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"

using namespace verl::algo;

namespace {
torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }
double item(const torch::Tensor& t) { return t.item<double>(); }
}  // namespace

TEST_CASE("masked_mean / masked_sum: hand-computed values, NaN outside the mask ignored") {
  torch::Tensor v = torch::tensor({{1.0, 2.0, std::nan("")}, {4.0, 5.0, 6.0}}, f64());
  torch::Tensor m = torch::tensor({{1.0, 1.0, 0.0}, {1.0, 0.0, 0.0}}, f64());
  CHECK(item(masked_sum(v, m)) == 7.0);
  CHECK(item(masked_mean(v, m)) == Approx(7.0 / (3.0 + 1e-8)).epsilon(1e-14));  // verl's +1e-8
  torch::Tensor rows = masked_mean(v, m, std::vector<int64_t>{1});
  CHECK(rows[0].item<double>() == Approx(3.0 / (2.0 + 1e-8)).epsilon(1e-14));
  CHECK(rows[1].item<double>() == Approx(4.0 / (1.0 + 1e-8)).epsilon(1e-14));
  CHECK_THROWS_AS(masked_mean(v, torch::ones({3}, f64())), verl::InvalidArgument);
}

TEST_CASE("masked_var: unbiased matches the textbook formula, errors as verl") {
  torch::manual_seed(0);
  torch::Tensor v = torch::randn({4, 7}, f64());
  torch::Tensor m = (torch::rand({4, 7}, f64()) > 0.3).to(torch::kDouble);
  torch::Tensor picked = v.masked_select(m.to(torch::kBool));
  const double n = static_cast<double>(picked.numel());
  const double mean = picked.mean().item<double>();
  const double ref = (picked - mean).pow(2).sum().item<double>() / (n - 1);
  // verl divides by (count + 1e-8): the reference carries the same relative 1e-8 / n.
  CHECK(item(masked_var(v, m)) == Approx(ref).epsilon(1e-8));
  CHECK(item(masked_var(v, m, false)) == Approx(ref * (n - 1) / n).epsilon(1e-8));
  CHECK_THROWS_WITH(masked_var(v, torch::zeros_like(m)), Catch::Contains("At least one element"));
  torch::Tensor one = torch::zeros_like(m);
  one[0][0] = 1;
  CHECK_THROWS_WITH(masked_var(v, one), Catch::Contains("sum of the mask is one"));
}

TEST_CASE("masked_whiten: masked elements get zero mean and unit variance") {
  torch::manual_seed(1);
  torch::Tensor v = torch::randn({3, 9}, f64()) * 5 + 2;
  torch::Tensor m = (torch::rand({3, 9}, f64()) > 0.2).to(torch::kDouble);
  torch::Tensor w = masked_whiten(v, m);
  // verl's 1e-8 in the mean's denominator shifts the mean by ~1e-8/count relative: ~1e-9 here.
  CHECK(std::abs(item(masked_mean(w, m))) < 1e-8);
  CHECK(item(masked_var(w, m)) == Approx(1.0).epsilon(1e-6));
  torch::Tensor kept = masked_whiten(v, m, false);
  CHECK(item(masked_mean(kept, m)) == Approx(item(masked_mean(v, m))).epsilon(1e-8));
}

TEST_CASE("get_response_mask: up to and including the first EOS (verl's docstring example)") {
  torch::Tensor ids = torch::tensor({{20, 10, 34, 1, 0, 0, 0},
                                     {78, 0, 76, 2, 1, 0, 0},
                                     {23, 98, 1, 0, 0, 0, 0},
                                     {33, 3, 98, 45, 1, 0, 0}});
  torch::Tensor one = torch::tensor({{1, 1, 1, 1, 0, 0, 0},
                                     {1, 1, 1, 1, 1, 0, 0},
                                     {1, 1, 1, 0, 0, 0, 0},
                                     {1, 1, 1, 1, 1, 0, 0}});
  torch::Tensor two = torch::tensor({{1, 1, 1, 1, 0, 0, 0},
                                     {1, 1, 1, 1, 0, 0, 0},
                                     {1, 1, 1, 0, 0, 0, 0},
                                     {1, 1, 1, 1, 1, 0, 0}});
  CHECK(torch::equal(get_response_mask(ids, {1}), one));
  CHECK(torch::equal(get_response_mask(ids, {1, 2}), two));
}

TEST_CASE("entropy_from_logits: equals -sum p log p, gradient equals autograd of the naive formula") {
  torch::manual_seed(2);
  torch::Tensor logits = torch::randn({3, 5, 11}, f64()).requires_grad_(true);
  torch::Tensor naive_in = logits.detach().clone().requires_grad_(true);
  torch::Tensor ours = entropy_from_logits(logits, /*chunk_size=*/4);
  torch::Tensor p = torch::softmax(naive_in, -1);
  torch::Tensor naive = -(p * torch::log_softmax(naive_in, -1)).sum(-1);
  CHECK(ours.sizes() == naive.sizes());
  CHECK((ours - naive).abs().max().item<double>() < 1e-12);
  torch::Tensor w = torch::randn({3, 5}, f64());
  (ours * w).sum().backward();
  (naive * w).sum().backward();
  CHECK((logits.grad() - naive_in.grad()).abs().max().item<double>() < 1e-12);
}

TEST_CASE("logprobs_from_logits: equals log_softmax gather, gradient equals autograd's") {
  torch::manual_seed(3);
  torch::Tensor logits = torch::randn({2, 7, 13}, f64()).requires_grad_(true);
  torch::Tensor naive_in = logits.detach().clone().requires_grad_(true);
  torch::Tensor labels = torch::randint(0, 13, {2, 7});
  torch::Tensor ours = logprobs_from_logits(logits, labels, /*chunk_size=*/3);
  torch::Tensor naive = torch::log_softmax(naive_in, -1).gather(-1, labels.unsqueeze(-1)).squeeze(-1);
  CHECK((ours - naive).abs().max().item<double>() < 1e-12);
  torch::Tensor w = torch::randn({2, 7}, f64());
  (ours * w).sum().backward();
  (naive * w).sum().backward();
  CHECK((logits.grad() - naive_in.grad()).abs().max().item<double>() < 1e-12);
  CHECK_THROWS_AS(logprobs_from_logits(logits, torch::full({2, 7}, 13, torch::kLong)), verl::InvalidArgument);
  CHECK_THROWS_AS(logprobs_from_logits(logits, labels.slice(1, 0, 6)), verl::InvalidArgument);
}

TEST_CASE("logprobs/entropy: bf16 logits are computed in float32") {
  torch::manual_seed(4);
  torch::Tensor logits = torch::randn({4, 9}).to(torch::kBFloat16);
  torch::Tensor labels = torch::randint(0, 9, {4});
  torch::Tensor lp = logprobs_from_logits(logits, labels);
  CHECK(lp.scalar_type() == torch::kFloat);
  torch::Tensor ref = torch::log_softmax(logits.to(torch::kFloat), -1).gather(-1, labels.unsqueeze(-1)).squeeze(-1);
  CHECK((lp - ref).abs().max().item<float>() < 1e-6);
  CHECK(entropy_from_logits(logits).scalar_type() == torch::kFloat);
}

namespace {

// Autograd of the plain formulas: log_softmax + gather, -sum p log p.
std::pair<torch::Tensor, torch::Tensor> plain_logprobs(const torch::Tensor& logits, const torch::Tensor& labels,
                                                       const torch::Tensor& w) {
  torch::Tensor x = logits.detach().clone().requires_grad_(true);
  torch::Tensor out = torch::log_softmax(x.to(torch::kFloat64), -1).gather(-1, labels.to(torch::kLong).unsqueeze(-1));
  (out.squeeze(-1) * w).sum().backward();
  return {out.squeeze(-1).detach(), x.grad()};
}

std::pair<torch::Tensor, torch::Tensor> plain_entropy(const torch::Tensor& logits, const torch::Tensor& w) {
  torch::Tensor x = logits.detach().clone().requires_grad_(true);
  const torch::Tensor xd = x.to(torch::kFloat64);
  torch::Tensor out = -(torch::softmax(xd, -1) * torch::log_softmax(xd, -1)).sum(-1);
  (out * w).sum().backward();
  return {out.detach(), x.grad()};
}

}  // namespace

TEST_CASE("logprobs/entropy: custom backward equals autograd for non-contiguous logits, int32 labels, bf16") {
  torch::manual_seed(5);
  // Non-contiguous logits (a transposed view) and int32 labels, float64, several row chunks.
  const torch::Tensor base = torch::randn({17, 3, 5}, f64());
  const torch::Tensor logits = base.permute({1, 0, 2}).requires_grad_(true);  // (3, 17, 5), not contiguous
  REQUIRE_FALSE(logits.is_contiguous());
  const torch::Tensor labels = torch::randint(0, 5, {3, 17}, torch::kInt);
  const torch::Tensor w = torch::randn({3, 17}, f64());
  const torch::Tensor lp = logprobs_from_logits(logits, labels, /*chunk_size=*/4);
  (lp * w).sum().backward();
  const auto [ref_lp, ref_grad] = plain_logprobs(logits, labels, w);
  CHECK((lp - ref_lp).abs().max().item<double>() < 1e-12);
  CHECK((logits.grad() - ref_grad).abs().max().item<double>() < 1e-12);

  const torch::Tensor logits2 = base.permute({1, 0, 2}).detach().requires_grad_(true);
  const torch::Tensor h = entropy_from_logits(logits2, /*chunk_size=*/4);
  (h * w).sum().backward();
  const auto [ref_h, ref_h_grad] = plain_entropy(logits2, w);
  CHECK((h - ref_h).abs().max().item<double>() < 1e-12);
  CHECK((logits2.grad() - ref_h_grad).abs().max().item<double>() < 1e-12);

  // bf16 logits: computed in float32, gradient in bf16 (rounded once, at the end).
  const torch::Tensor bf = torch::randn({6, 33}).to(torch::kBFloat16).requires_grad_(true);
  const torch::Tensor bf_labels = torch::randint(0, 33, {6});
  const torch::Tensor bf_w = torch::randn({6}, f64());
  const torch::Tensor bf_lp = logprobs_from_logits(bf, bf_labels, /*chunk_size=*/4);
  CHECK(bf_lp.scalar_type() == torch::kFloat);
  (bf_lp * bf_w.to(torch::kFloat)).sum().backward();
  CHECK(bf.grad().scalar_type() == torch::kBFloat16);
  const auto [bf_ref_lp, bf_ref_grad] = plain_logprobs(bf.to(torch::kDouble), bf_labels, bf_w);
  CHECK((bf_lp.to(torch::kDouble) - bf_ref_lp).abs().max().item<double>() < 1e-5);
  // One rounding to bf16 (8 significant bits) at the end: relative error <= 2^-8.
  CHECK(torch::allclose(bf.grad().to(torch::kDouble), bf_ref_grad, /*rtol=*/1e-2, /*atol=*/1e-4));
  const torch::Tensor bf2 = bf.detach().clone().requires_grad_(true);
  (entropy_from_logits(bf2, 4) * bf_w.to(torch::kFloat)).sum().backward();
  CHECK(bf2.grad().scalar_type() == torch::kBFloat16);
  CHECK(torch::allclose(bf2.grad().to(torch::kDouble), plain_entropy(bf.to(torch::kDouble), bf_w).second,
                        /*rtol=*/1e-2, /*atol=*/1e-4));
}

TEST_CASE("logprobs/entropy: rows wider than the chunk byte budget are processed one row at a time") {
  torch::manual_seed(6);
  // 2 rows of 4.2M float64 logits = 33.6 MB each: larger than the 32 MiB per-chunk budget.
  const torch::Tensor logits = (3 * torch::randn({2, 4200000}, f64())).requires_grad_(true);
  const torch::Tensor labels = torch::tensor({0, 4199999});
  const torch::Tensor w = torch::tensor({1.0, -2.0}, f64());
  const torch::Tensor lp = logprobs_from_logits(logits, labels);
  (lp * w).sum().backward();
  const auto [ref_lp, ref_grad] = plain_logprobs(logits, labels, w);
  CHECK((lp - ref_lp).abs().max().item<double>() < 1e-10);
  CHECK((logits.grad() - ref_grad).abs().max().item<double>() < 1e-12);
}

TEST_CASE("check_finite: NaN inside the mask is an error, outside it is not") {
  torch::Tensor v = torch::tensor({1.0, std::nan(""), 3.0});
  CHECK_THROWS_WITH(check_finite(v, "rewards"), Catch::Contains("rewards"));
  CHECK_NOTHROW(check_finite(v, "rewards", torch::tensor({1, 0, 1})));
}
