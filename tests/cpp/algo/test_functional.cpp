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

TEST_CASE("check_finite: NaN inside the mask is an error, outside it is not") {
  torch::Tensor v = torch::tensor({1.0, std::nan(""), 3.0});
  CHECK_THROWS_WITH(check_finite(v, "rewards"), Catch::Contains("rewards"));
  CHECK_NOTHROW(check_finite(v, "rewards", torch::tensor({1, 0, 1})));
}
