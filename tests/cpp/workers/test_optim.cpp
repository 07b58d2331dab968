// verl::workers optimizer: verl's LR schedules at hand-computed steps, LambdaLR stepping, global-norm
// clipping, AdamW's first step by hand, skipping a non-finite step, config errors naming the key.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>
#include <limits>
#include <torch/torch.h>

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/workers/optim.h"

using namespace verl::workers;

TEST_CASE("constant schedule with warmup", "[workers][optim]") {
  CHECK(constant_schedule_with_warmup(0, 4) == 0.0);
  CHECK(constant_schedule_with_warmup(1, 4) == 0.25);
  CHECK(constant_schedule_with_warmup(3, 4) == 0.75);
  CHECK(constant_schedule_with_warmup(4, 4) == 1.0);
  CHECK(constant_schedule_with_warmup(100, 4) == 1.0);
  CHECK(constant_schedule_with_warmup(0, 0) == 1.0);
}

TEST_CASE("cosine schedule with warmup", "[workers][optim]") {
  // warmup 2, total 10, min_lr_ratio 0.1, half a cycle: coef 0.45, intercept 0.55.
  CHECK(cosine_schedule_with_warmup(0, 2, 10, 0.1, 0.5) == 0.0);
  CHECK(cosine_schedule_with_warmup(1, 2, 10, 0.1, 0.5) == 0.5);
  CHECK(cosine_schedule_with_warmup(2, 2, 10, 0.1, 0.5) == Approx(1.0).epsilon(1e-15));
  CHECK(cosine_schedule_with_warmup(6, 2, 10, 0.1, 0.5) == Approx(0.55).epsilon(1e-15));
  CHECK(cosine_schedule_with_warmup(10, 2, 10, 0.1, 0.5) == Approx(0.1).epsilon(1e-15));
  // progress 0.25: cos(pi/4) * 0.45 + 0.55
  CHECK(cosine_schedule_with_warmup(4, 2, 10, 0.1, 0.5) == Approx(std::cos(M_PI / 4) * 0.45 + 0.55).epsilon(1e-15));
  // Past the end the floor min_lr_ratio holds (a full cycle would come back up otherwise).
  CHECK(cosine_schedule_with_warmup(12, 2, 10, 0.1, 0.5) >= 0.1);
  // One-indexed steps shift by one.
  CHECK(cosine_schedule_with_warmup(1, 2, 10, 0.1, 0.5, false) == Approx(1.0).epsilon(1e-15));
}

TEST_CASE("Optimizer follows LambdaLR and the warmup ratio", "[workers][optim]") {
  torch::Tensor p = torch::ones({2}, torch::kDouble).requires_grad_();
  OptimConfig c;
  c.lr = 0.1;
  c.lr_warmup_steps_ratio = 0.25;
  c.total_training_steps = 8;  // int(0.25 * 8) = 2 warmup steps
  c.lr_scheduler_type = "cosine";
  Optimizer opt({p}, c);
  CHECK(c.num_warmup_steps() == 2);
  CHECK(opt.lr() == 0.0);  // the first update runs at lr * factor(0)
  CHECK(opt.scheduler_step() == Approx(0.05));
  CHECK(opt.scheduler_step() == Approx(0.1));
  CHECK(opt.scheduler_step() == Approx(0.1 * (std::cos(M_PI / 6) * 0.5 + 0.5)));
  opt.set_scheduler_step_count(8);
  CHECK(opt.lr() == Approx(0.0).margin(1e-18));
}

TEST_CASE("clip_grad_norm scales by the global norm", "[workers][optim]") {
  torch::Tensor a = torch::zeros({2}, torch::kDouble).requires_grad_();
  torch::Tensor b = torch::zeros({1}, torch::kDouble).requires_grad_();
  a.mutable_grad() = torch::tensor({3.0, 0.0}, torch::kDouble);
  b.mutable_grad() = torch::tensor({4.0}, torch::kDouble);
  torch::Tensor norm = clip_grad_norm({a, b}, 1.0);
  CHECK(norm.item<double>() == Approx(5.0).epsilon(1e-15));
  const double coef = 1.0 / (5.0 + 1e-6);
  CHECK(a.grad()[0].item<double>() == Approx(3.0 * coef).epsilon(1e-15));
  CHECK(b.grad()[0].item<double>() == Approx(4.0 * coef).epsilon(1e-15));
  // Under the threshold nothing changes.
  b.mutable_grad() = torch::tensor({0.5}, torch::kDouble);
  a.mutable_grad() = torch::zeros({2}, torch::kDouble);
  clip_grad_norm({a, b}, 1.0);
  CHECK(b.grad()[0].item<double>() == 0.5);
}

TEST_CASE("AdamW first step by hand; non-finite gradients skip the step", "[workers][optim]") {
  torch::Tensor p = torch::ones({1}, torch::kDouble).requires_grad_();
  OptimConfig c;
  c.lr = 0.1;
  c.weight_decay = 0.01;
  Optimizer opt({p}, c);
  p.mutable_grad() = torch::tensor({0.5}, torch::kDouble);
  CHECK(opt.step() == Approx(0.5));
  // m_hat = g, v_hat = g^2: p <- p (1 - lr wd) - lr g / (|g| + eps)
  const double expected = 1.0 * (1 - 0.1 * 0.01) - 0.1 * 0.5 / (0.5 + 1e-8);
  CHECK(p.item<double>() == Approx(expected).epsilon(1e-14));

  opt.zero_grad();
  p.mutable_grad() = torch::tensor({std::numeric_limits<double>::quiet_NaN()}, torch::kDouble);
  const double before = p.item<double>();
  CHECK(std::isnan(opt.step()));
  CHECK(p.item<double>() == before);
  CHECK(opt.skipped_steps() == 1);
  CHECK_FALSE(p.grad().defined());
}

TEST_CASE("OptimConfig reads verl keys and names bad ones", "[workers][optim]") {
  verl::Config cfg;
  cfg.set("actor_rollout_ref.actor.optim.lr", 3e-4);
  cfg.set("actor_rollout_ref.actor.optim.lr_scheduler_type", "cosine");
  cfg.set("actor_rollout_ref.actor.optim.total_training_steps", 10);
  cfg.set("actor_rollout_ref.actor.optim.override_optimizer_config", verl::Json{{"eps", 1e-6}});
  OptimConfig c = OptimConfig::from_config(cfg, "actor_rollout_ref.actor.optim");
  CHECK(c.lr == 3e-4);
  CHECK(c.eps == 1e-6);
  CHECK(c.lr_scheduler_type == "cosine");
  CHECK(c.betas.second == 0.999);

  verl::Config bad;
  bad.set("critic.optim.lr_scheduler_type", "cosine");  // total_training_steps stays -1
  CHECK_THROWS_WITH(OptimConfig::from_config(bad, "critic.optim"), Catch::Contains("critic.optim.total_training_steps"));
  verl::Config bad2;
  bad2.set("critic.optim.override_optimizer_config", verl::Json{{"foo", 1}});
  CHECK_THROWS_AS(OptimConfig::from_config(bad2, "critic.optim"), verl::ConfigError);
}

TEST_CASE("Optimizer save/load resumes exactly", "[workers][optim]") {
  auto make = [] { return torch::linspace(-1, 1, 6, torch::kDouble).reshape({2, 3}).requires_grad_(); };
  OptimConfig c;
  c.lr = 0.05;
  c.lr_warmup_steps = 3;
  torch::Tensor a = make(), b = make();
  Optimizer oa({a}, c), ob({b}, c);
  auto step = [](Optimizer& o, torch::Tensor& p, double scale) {
    o.zero_grad();
    p.mutable_grad() = torch::full_like(p, scale) + p.detach();
    o.step();
    o.scheduler_step();
  };
  step(oa, a, 0.3);
  step(oa, a, -0.2);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("verl_optim_" + std::to_string(::getpid()) + ".pt")).string();
  oa.save(path);
  {
    torch::NoGradGuard g;
    b.copy_(a);
  }
  ob.load(path);
  CHECK(ob.scheduler_step_count() == 2);
  CHECK(ob.lr() == Approx(oa.lr()));
  step(oa, a, 0.7);
  step(ob, b, 0.7);
  CHECK((a - b).abs().max().item<double>() == 0.0);
  torch::Tensor wrong = torch::zeros({4}, torch::kDouble).requires_grad_();
  Optimizer ow({wrong}, c);
  CHECK_THROWS_AS(ow.load(path), verl::CheckpointError);
  CHECK_THROWS_AS(ow.load(path + ".missing"), verl::CheckpointError);
  std::remove(path.c_str());
}

TEST_CASE("the fused AdamW step equals LibTorch's single-tensor AdamW", "[workers][optim]") {
  // Independent reference: torch::optim::AdamW's own step (a per-parameter loop of separate ops) on copies of the
  // same parameters and gradients, clipping off. float64: the two orders of operations agree to rounding.
  for (bool amsgrad : {false, true}) {
    INFO("amsgrad " << amsgrad);
    torch::manual_seed(3);
    std::vector<torch::Tensor> ours = {torch::randn({5, 7}, torch::kDouble).requires_grad_(),
                                       torch::randn({11}, torch::kDouble).requires_grad_()};
    std::vector<torch::Tensor> ref;
    for (const auto& p : ours) ref.push_back(p.detach().clone().requires_grad_());
    OptimConfig c;
    c.lr = 0.03;
    c.weight_decay = 0.1;
    c.amsgrad = amsgrad;
    c.clip_grad = 1e9;
    Optimizer opt(ours, c);
    torch::optim::AdamW reference(ref, torch::optim::AdamWOptions(0.03).weight_decay(0.1).amsgrad(amsgrad));
    for (int step = 0; step < 4; ++step) {
      opt.zero_grad();
      reference.zero_grad();
      for (size_t i = 0; i < ours.size(); ++i) {
        torch::Tensor g = torch::randn(ours[i].sizes(), torch::kDouble) * (step % 2 ? 0.1 : 2.0);
        ours[i].mutable_grad() = g.clone();
        ref[i].mutable_grad() = g.clone();
      }
      opt.step();
      reference.step();
      for (size_t i = 0; i < ours.size(); ++i) CHECK((ours[i] - ref[i]).abs().max().item<double>() < 1e-14);
    }
    // The state the fused step keeps is the one save()/load() write: AdamW's step count and moments.
    const auto& st = static_cast<const torch::optim::AdamWParamState&>(
        *opt.adamw().state().at(ours[0].unsafeGetTensorImpl()));
    CHECK(st.step() == 4);
  }
  // fp32 and bf16 parameters (a pure-bf16 model's) go through the same kernel.
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    torch::Tensor p = torch::ones({3}, dtype).requires_grad_();
    OptimConfig c;
    c.lr = 0.1;
    c.weight_decay = 0.0;
    Optimizer opt({p}, c);
    p.mutable_grad() = torch::full({3}, 0.5, dtype);
    opt.step();
    CHECK(p.to(torch::kDouble).sub(0.9).abs().max().item<double>() < 1e-2);  // 1 - lr * g / |g|
  }
}

TEST_CASE("an optimizer step bumps the parameters' version counters", "[workers][optim]") {
  // The mixed-precision compute copy refreshes when the master weights' versions change (torch's fused kernel
  // does not bump them by itself).
  torch::Tensor p = torch::ones({3}).requires_grad_();
  Optimizer opt({p}, OptimConfig{});
  const auto before = p._version();
  p.mutable_grad() = torch::ones({3});
  opt.step();
  CHECK(p._version() > before);
}
