// KL estimators between the policy and the reference policy, the in-reward KL penalty and the KL
// coefficient controllers, with verl's names and semantics (core_algos.py). Used by the trainer
// (algorithm.use_kl_in_reward, algorithm.kl_ctrl), the actor's KL loss and the bindings.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::algo {

// Per-token KL estimate (http://joschu.net/blog/kl-approx.html); logprob and ref_logprob have
// the same shape (typically (bs, response_length)) and the result has it too.
//   "kl" / "k1"          logprob - ref_logprob
//   "abs"                |logprob - ref_logprob|
//   "mse" / "k2"         0.5 * (logprob - ref_logprob)^2
//   "low_var_kl" / "k3"  exp(d) - d - 1 with d = clamp(ref_logprob - logprob, -20, 20), clamped to [-10, 10]
// Differentiable. Unknown modes ("full" included, which verl leaves unimplemented) throw
// InvalidArgument listing the supported ones.
VERL_API torch::Tensor kl_penalty_forward(const torch::Tensor& logprob, const torch::Tensor& ref_logprob,
                                          const std::string& mode);

// kl_penalty_forward, plus the straight-through modes: a trailing '+' ("k1+", "k3+", "abs+", ...)
// keeps the forward value of the base mode but takes the gradient of k2, 0.5 * (logprob -
// ref_logprob)^2, whose expected gradient is the true KL gradient.
VERL_API torch::Tensor kl_penalty(const torch::Tensor& logprob, const torch::Tensor& ref_logprob,
                                  const std::string& mode);

// token_level_scores - (old_log_prob - ref_log_prob) * kl_ratio; all (bs, response_length).
VERL_API torch::Tensor compute_rewards(const torch::Tensor& token_level_scores, const torch::Tensor& old_log_prob,
                                       const torch::Tensor& ref_log_prob, double kl_ratio);

// The KL coefficient: `value` is read each step, update() moves it after each step.
class VERL_API KLController {
 public:
  explicit KLController(double kl_coef) : value(kl_coef) {}
  virtual ~KLController() = default;
  virtual void update(double current_kl, int64_t n_steps) = 0;

  double value;
};

// A constant coefficient; update() does nothing.
class VERL_API FixedKLController : public KLController {
 public:
  explicit FixedKLController(double kl_coef) : KLController(kl_coef) {}
  void update(double current_kl, int64_t n_steps) override;
};

// Ziegler et al. 2019 (arXiv 1909.08593): value *= 1 + clip(current_kl / target - 1, -0.2, 0.2)
// * n_steps / horizon. horizon must be > 0 (InvalidArgument).
class VERL_API AdaptiveKLController : public KLController {
 public:
  AdaptiveKLController(double init_kl_coef, double target_kl, int64_t horizon);
  void update(double current_kl, int64_t n_steps) override;

  double target;
  int64_t horizon;
};

// algorithm.kl_ctrl: type "fixed" or "adaptive" (InvalidArgument otherwise), with kl_coef,
// target_kl and horizon as in verl's KLControlConfig (defaults 0.001, 0.1, 10000).
VERL_API std::unique_ptr<KLController> get_kl_controller(const std::string& type, double kl_coef = 0.001,
                                                         double target_kl = 0.1, int64_t horizon = 10000);

}  // namespace verl::algo
