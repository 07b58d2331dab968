// verl::algo::dpo_loss on fixed log-probs: every loss type's per-pair loss, its gradient with respect to the
// policy log-probs and the rewards equal a hand-written float64 reference (scalar formulas and their derivatives
// written out by hand) and TRL's expressions (trl 1.16 DPOTrainer.compute_loss; sigmoid's label smoothing as
// conservative DPO, the form TRL used for loss_type=sigmoid before 1.0); parameter errors are ConfigErrors.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "verl/algo/dpo_loss.h"
#include "verl/core/error.h"

using namespace verl;

namespace {

// Fixed summed log-probs of 5 pairs (policy chosen / rejected, reference chosen / rejected) and completion lengths;
// the deltas cover both signs, zero, and hinge's kink on either side.
const std::vector<double> kPc = {-12.5, -3.25, -20.0, -7.0, -1.5};
const std::vector<double> kPr = {-14.0, -2.0, -18.5, -7.0, -9.0};
const std::vector<double> kRc = {-13.0, -3.0, -19.0, -6.5, -2.0};
const std::vector<double> kRr = {-13.25, -2.5, -19.25, -6.5, -8.0};
const std::vector<double> kLc = {5, 2, 9, 3, 1};
const std::vector<double> kLr = {6, 1, 7, 4, 0};  // a zero length counts as 1 (TRL's clamp)

double log_sigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The scalar reference: the loss of one pair and d loss / d policy_chosen, d loss / d policy_rejected.
struct Scalar {
  double loss, d_chosen, d_rejected;
};

Scalar reference_pair(size_t i, double beta, double ls, const std::string& type) {
  const double cr = kPc[i] - kRc[i], rr = kPr[i] - kRr[i];
  if (type == "ipo") {
    const double lc = std::max(kLc[i], 1.0), lr = std::max(kLr[i], 1.0);
    const double e = cr / lc - rr / lr - 1.0 / (2.0 * beta);
    return {e * e, 2.0 * e / lc, -2.0 * e / lr};
  }
  const double z = beta * (cr - rr);
  if (type == "sigmoid") {
    // d/dz [-(1-ls) log s(z) - ls log s(-z)] = -(1-ls) s(-z) + ls s(z)
    const double dz = -(1.0 - ls) * sigmoid(-z) + ls * sigmoid(z);
    return {-(1.0 - ls) * log_sigmoid(z) - ls * log_sigmoid(-z), dz * beta, -dz * beta};
  }
  const double active = 1.0 - z > 0 ? 1.0 : 0.0;  // hinge
  return {std::max(0.0, 1.0 - z), -beta * active, beta * active};
}

torch::Tensor t64(const std::vector<double>& v) { return torch::tensor(v, torch::kDouble); }

// TRL's expressions on the same inputs (torch ops, as trl writes them).
torch::Tensor trl_losses(double beta, double ls, const std::string& type) {
  const torch::Tensor chosen_logratios = t64(kPc) - t64(kRc), rejected_logratios = t64(kPr) - t64(kRr);
  const torch::Tensor delta = chosen_logratios - rejected_logratios;
  if (type == "sigmoid") {
    return -torch::log_sigmoid(beta * delta) * (1 - ls) - torch::log_sigmoid(-beta * delta) * ls;
  }
  if (type == "hinge") return torch::relu(1 - beta * delta);
  const torch::Tensor ipo_delta =
      chosen_logratios / t64(kLc).clamp_min(1.0) - rejected_logratios / t64(kLr).clamp_min(1.0);
  return (ipo_delta - 1 / (2 * beta)).pow(2);
}

}  // namespace

TEST_CASE("dpo_loss: every loss type's loss, gradient and rewards equal the float64 references", "[algo][dpo]") {
  struct Case {
    std::string type;
    double beta, ls;
  };
  for (const Case& c : {Case{"sigmoid", 0.1, 0.0}, Case{"sigmoid", 0.5, 0.2}, Case{"sigmoid", 2.0, 0.5},
                        Case{"hinge", 0.1, 0.0}, Case{"hinge", 1.0, 0.0}, Case{"ipo", 0.1, 0.0},
                        Case{"ipo", 0.5, 0.0}}) {
    DYNAMIC_SECTION(c.type << " beta=" << c.beta << " label_smoothing=" << c.ls) {
      torch::Tensor pc = t64(kPc).requires_grad_(), pr = t64(kPr).requires_grad_();
      torch::Tensor rc = t64(kRc).requires_grad_(), rr = t64(kRr).requires_grad_();
      algo::DPOLossOutput out = algo::dpo_loss(pc, pr, rc, rr, t64(kLc), t64(kLr), c.beta, c.ls, c.type);
      REQUIRE(out.losses.scalar_type() == torch::kDouble);
      out.losses.mean().backward();
      const double n = static_cast<double>(kPc.size());
      CHECK((out.losses.detach() - trl_losses(c.beta, c.ls, c.type)).abs().max().item<double>() < 1e-14);
      for (size_t i = 0; i < kPc.size(); ++i) {
        const Scalar ref = reference_pair(i, c.beta, c.ls, c.type);
        CHECK(out.losses[i].item<double>() == Approx(ref.loss).epsilon(1e-13).margin(1e-15));
        CHECK(pc.grad()[i].item<double>() == Approx(ref.d_chosen / n).epsilon(1e-12).margin(1e-15));
        CHECK(pr.grad()[i].item<double>() == Approx(ref.d_rejected / n).epsilon(1e-12).margin(1e-15));
        CHECK(out.chosen_rewards[i].item<double>() == Approx(c.beta * (kPc[i] - kRc[i])).epsilon(1e-14));
        CHECK(out.rejected_rewards[i].item<double>() == Approx(c.beta * (kPr[i] - kRr[i])).epsilon(1e-14));
      }
      // the reference is frozen: no gradient reaches it, and the rewards carry none
      CHECK(!rc.grad().defined());
      CHECK(!rr.grad().defined());
      CHECK(!out.chosen_rewards.requires_grad());
    }
  }
}

TEST_CASE("dpo_loss: sigmoid at beta * delta = 0 is log 2 and label smoothing 0.5 makes it flat", "[algo][dpo]") {
  torch::Tensor x = torch::full({3}, -4.0, torch::kDouble).requires_grad_();
  torch::Tensor lens = torch::ones({3}, torch::kDouble);
  algo::DPOLossOutput out = algo::dpo_loss(x, x.detach(), x.detach(), x.detach(), lens, lens, 0.3, 0.0, "sigmoid");
  CHECK((out.losses - std::log(2.0)).abs().max().item<double>() < 1e-15);
  torch::Tensor y = torch::tensor({-1.0, -3.0, -9.0}, torch::kDouble).requires_grad_();  // delta 2, 0, -6
  torch::Tensor z = torch::full({3}, -3.0, torch::kDouble);
  algo::dpo_loss(y, z, z, z, lens, lens, 0.7, 0.5, "sigmoid").losses.sum().backward();
  // ls = 0.5: the loss is symmetric in delta and its slope at delta = 0 is 0; away from 0 it pulls toward 0
  CHECK(y.grad()[1].item<double>() == Approx(0.0).margin(1e-15));
  CHECK(y.grad()[0].item<double>() > 0);
  CHECK(y.grad()[2].item<double>() < 0);
}

TEST_CASE("dpo_loss: bad parameters and shapes are errors naming the key", "[algo][dpo]") {
  torch::Tensor a = torch::zeros({2}, torch::kDouble);
  auto call = [&](double beta, double ls, const std::string& type) {
    return algo::dpo_loss(a, a, a, a, a, a, beta, ls, type);
  };
  CHECK_THROWS_WITH(call(0.1, 0.0, "robust"),
                    Catch::Contains("dpo.loss_type") && Catch::Contains("sigmoid, ipo, hinge"));
  CHECK_THROWS_AS(call(0.0, 0.0, "sigmoid"), ConfigError);
  CHECK_THROWS_WITH(call(-1.0, 0.0, "ipo"), Catch::Contains("dpo.beta"));
  CHECK_THROWS_WITH(call(0.1, 0.6, "sigmoid"), Catch::Contains("dpo.label_smoothing") && Catch::Contains("[0, 0.5]"));
  CHECK_THROWS_WITH(call(0.1, 0.1, "ipo"), Catch::Contains("dpo.label_smoothing") && Catch::Contains("sigmoid only"));
  CHECK_THROWS_AS(call(0.1, 0.1, "hinge"), ConfigError);
  CHECK_THROWS_AS(algo::dpo_loss(a, torch::zeros({3}, torch::kDouble), a, a, a, a, 0.1, 0.0, "sigmoid"),
                  InvalidArgument);
  CHECK_NOTHROW(call(0.1, 0.5, "sigmoid"));
}
