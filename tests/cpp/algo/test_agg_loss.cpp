// verl::algo::agg_loss against hand-computed values and a loop-by-loop reference of verl's formulas.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <torch/torch.h>

#include "verl/algo/agg_loss.h"
#include "verl/core/error.h"
#include "loss_reference.h"

using namespace verl::algo;
using verl::test::reference_agg;

namespace {
torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }
double item(const torch::Tensor& t) { return t.item<double>(); }

const std::vector<std::string> kModes = {"token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
                                         "seq-mean-token-sum-norm"};
}  // namespace

TEST_CASE("agg_loss: hand-computed values for every mode; fully masked rows are ignored") {
  // Row 2 is fully masked: it counts neither as tokens nor as a sequence.
  torch::Tensor loss = torch::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}, {7.0, 8.0, 9.0}}, f64());
  torch::Tensor mask = torch::tensor({{1.0, 1.0, 0.0}, {1.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, f64());
  CHECK(item(agg_loss(loss, mask, "token-mean")) == Approx(7.0 / 3.0).epsilon(1e-15));
  CHECK(item(agg_loss(loss, mask, "token-sum")) == 7.0);
  CHECK(item(agg_loss(loss, mask, "seq-mean-token-sum")) == Approx(3.5).epsilon(1e-15));  // (3 + 4) / 2
  CHECK(item(agg_loss(loss, mask, "seq-mean-token-mean")) ==
        Approx((3.0 / (2.0 + 1e-8) + 4.0 / (1.0 + 1e-8)) / 2.0).epsilon(1e-15));  // verl's +1e-8 per row
  CHECK(item(agg_loss(loss, mask, "seq-mean-token-sum-norm")) == Approx(3.5 / 3.0).epsilon(1e-15));  // / horizon
  CHECK(item(agg_loss(loss, mask, "seq-mean-token-sum-norm", 1, {}, {}, 7.0)) == Approx(0.5).epsilon(1e-15));
}

TEST_CASE("agg_loss: global normalisers and dp_size scale the micro-batch loss as verl") {
  torch::Tensor loss = torch::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, f64());
  torch::Tensor mask = torch::tensor({{1.0, 1.0, 0.0}, {1.0, 0.0, 0.0}}, f64());
  CHECK(item(agg_loss(loss, mask, "token-mean", 4, 10.0)) == Approx(7.0 / 10.0 * 4).epsilon(1e-15));
  CHECK(item(agg_loss(loss, mask, "token-sum", 3)) == 21.0);
  CHECK(item(agg_loss(loss, mask, "seq-mean-token-sum", 2, {}, 5.0)) == Approx(7.0 / 5.0 * 2).epsilon(1e-15));
  CHECK(item(agg_loss(loss, mask, "seq-mean-token-sum-norm", 2, {}, 5.0, 4.0)) ==
        Approx(7.0 / 5.0 * 2 / 4.0).epsilon(1e-15));
  CHECK(item(agg_loss(loss, mask, "seq-mean-token-mean", 2, {}, 5.0)) ==
        Approx((3.0 / (2.0 + 1e-8) + 4.0 / (1.0 + 1e-8)) / 5.0 * 2).epsilon(1e-15));
  // The struct overload is the same call.
  GlobalBatchInfo info;
  info.dp_size = 2;
  info.global_batch_size = 5.0;
  CHECK(item(agg_loss(loss, mask, "seq-mean-token-sum", info)) ==
        item(agg_loss(loss, mask, "seq-mean-token-sum", 2, {}, 5.0)));
}

TEST_CASE("agg_loss: dp_size > 1 without the global normaliser is an error, with verl's messages") {
  torch::Tensor loss = torch::ones({2, 3}, f64());
  torch::Tensor mask = torch::ones({2, 3}, f64());
  CHECK_THROWS_MATCHES(agg_loss(loss, mask, "token-mean", 2), verl::InvalidArgument,
                       Catch::Message("(global) batch_num_tokens is required when dp_size > 1"));
  for (const char* mode : {"seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}) {
    CHECK_THROWS_MATCHES(agg_loss(loss, mask, mode, 2), verl::InvalidArgument,
                         Catch::Message("global_batch_size is required when dp_size > 1"));
  }
  CHECK_NOTHROW(agg_loss(loss, mask, "token-sum", 2));  // token-sum needs no normaliser
  CHECK_THROWS_AS(agg_loss(loss, mask, "token-mean", 0), verl::InvalidArgument);
  CHECK_THROWS_WITH(agg_loss(loss, mask, "token-mean", 1, 0.0), Catch::Contains("batch_num_tokens must be > 0"));
}

TEST_CASE("agg_loss: random float64 inputs match the loop reference in every mode") {
  torch::manual_seed(10);
  torch::Tensor loss = torch::randn({6, 9}, f64());
  torch::Tensor mask = (torch::rand({6, 9}, f64()) > 0.4).to(torch::kDouble);
  mask[2].zero_();  // one fully masked row
  for (const std::string& mode : kModes) {
    INFO(mode);
    CHECK(std::abs(item(agg_loss(loss, mask, mode)) - reference_agg(loss, mask, mode)) <= 1e-10);
    CHECK(std::abs(item(agg_loss(loss, mask, mode, 4, 123.0, 17.0, 11.0)) -
                   reference_agg(loss, mask, mode, 4, 123.0, 17.0, 11.0)) <= 1e-10);
  }
  // A bool mask gives the same values as its 0/1 float copy, except that seq-mean-token-mean's
  // per-row count is then an integer, and verl's `count + 1e-8` is float32, where the 1e-8 vanishes.
  torch::Tensor bool_mask = mask.to(torch::kBool);
  for (const std::string& mode : kModes) {
    if (mode == "seq-mean-token-mean") continue;
    INFO(mode);
    CHECK(std::abs(item(agg_loss(loss, bool_mask, mode)) - reference_agg(loss, mask, mode)) <= 1e-10);
  }
  torch::Tensor counts = mask.sum(-1);
  torch::Tensor rows = counts > 0;
  const double exact_seq_mean =
      item(((loss * mask).sum(-1).masked_select(rows) / counts.masked_select(rows)).sum()) / item(rows.sum());
  CHECK(std::abs(item(agg_loss(loss, bool_mask, "seq-mean-token-mean")) - exact_seq_mean) <= 1e-12);
}

TEST_CASE("agg_loss: the gradient is the mask over the normaliser") {
  torch::manual_seed(11);
  torch::Tensor loss = torch::randn({3, 5}, f64()).requires_grad_(true);
  torch::Tensor mask = (torch::rand({3, 5}, f64()) > 0.3).to(torch::kDouble);
  agg_loss(loss, mask, "token-mean").backward();
  CHECK((loss.grad() - mask / mask.sum()).abs().max().item<double>() < 1e-15);
  loss.mutable_grad().zero_();
  agg_loss(loss, mask, "seq-mean-token-mean").backward();
  torch::Tensor row_tokens = mask.sum(-1, true);
  torch::Tensor seqs = (row_tokens > 0).sum().to(torch::kDouble);
  CHECK((loss.grad() - mask / (row_tokens + 1e-8) / seqs).abs().max().item<double>() < 1e-15);
}

TEST_CASE("agg_loss: float32 and bfloat16 losses aggregate in their own dtype") {
  torch::manual_seed(12);
  torch::Tensor loss = torch::randn({4, 8}, f64());
  torch::Tensor mask = (torch::rand({4, 8}, f64()) > 0.3).to(torch::kFloat);
  const double ref = reference_agg(loss, mask.to(torch::kDouble), "token-mean");
  torch::Tensor f32 = agg_loss(loss.to(torch::kFloat), mask, "token-mean");
  CHECK(f32.scalar_type() == torch::kFloat);
  CHECK(item(f32) == Approx(ref).epsilon(1e-5));
  torch::Tensor bf16 = agg_loss(loss.to(torch::kBFloat16), mask.to(torch::kBFloat16), "token-sum");
  CHECK(bf16.scalar_type() == torch::kBFloat16);
  CHECK(item(bf16) == Approx(reference_agg(loss, mask.to(torch::kDouble), "token-sum")).epsilon(2e-2).margin(5e-2));
}

TEST_CASE("agg_loss: unknown mode is an error listing the valid modes") {
  torch::Tensor x = torch::ones({2, 2}, f64());
  CHECK_THROWS_AS(agg_loss(x, x, "token-max"), verl::InvalidArgument);
  CHECK_THROWS_WITH(agg_loss(x, x, "token-max"),
                    Catch::Contains("token-max") && Catch::Contains("token-mean, token-sum, seq-mean-token-sum, "
                                                                    "seq-mean-token-mean, seq-mean-token-sum-norm"));
  CHECK(loss_agg_modes() == kModes);
}

TEST_CASE("agg_loss: empty batch, shape mismatch and NaN inside the mask are errors") {
  CHECK_THROWS_WITH(agg_loss(torch::ones({0, 4}, f64()), torch::ones({0, 4}, f64()), "token-mean"),
                    Catch::Contains("empty batch"));
  CHECK_THROWS_WITH(agg_loss(torch::ones({2, 3}, f64()), torch::ones({2, 4}, f64()), "token-mean"),
                    Catch::Contains("[2, 3]") && Catch::Contains("[2, 4]"));
  CHECK_THROWS_AS(agg_loss(torch::ones({6}, f64()), torch::ones({6}, f64()), "token-mean"), verl::InvalidArgument);
  torch::Tensor loss = torch::tensor({{1.0, std::nan("")}, {3.0, std::numeric_limits<double>::infinity()}}, f64());
  CHECK_THROWS_WITH(agg_loss(loss, torch::ones({2, 2}, f64()), "token-mean"), Catch::Contains("NaN or Inf"));
  // Outside the mask NaN/Inf are ignored in every mode (verl lets them through in the seq-mean modes).
  torch::Tensor mask = torch::tensor({{1.0, 0.0}, {1.0, 0.0}}, f64());
  torch::Tensor clean = torch::tensor({{1.0, 0.0}, {3.0, 0.0}}, f64());
  for (const std::string& mode : kModes) {
    INFO(mode);
    CHECK(item(agg_loss(loss, mask, mode)) == item(agg_loss(clean, mask, mode)));
  }
}

TEST_CASE("agg_loss: an all-masked batch is an error when the normaliser comes from the mask") {
  torch::Tensor loss = torch::ones({2, 3}, f64());
  torch::Tensor none = torch::zeros({2, 3}, f64());
  // verl would return 0/0 = NaN here.
  CHECK_THROWS_WITH(agg_loss(loss, none, "token-mean"), Catch::Contains("no valid token"));
  CHECK_THROWS_WITH(agg_loss(loss, none, "seq-mean-token-mean"), Catch::Contains("no valid sequence"));
  // With a global normaliser this micro-batch simply contributes 0.
  CHECK(item(agg_loss(loss, none, "token-mean", 1, 8.0)) == 0.0);
  CHECK(item(agg_loss(loss, none, "seq-mean-token-sum", 1, {}, 4.0)) == 0.0);
  CHECK(item(agg_loss(loss, none, "token-sum")) == 0.0);
}
