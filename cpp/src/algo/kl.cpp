// KL estimators, compute_rewards and the KL controllers (see kl.h).
#include "verl/algo/kl.h"

#include <algorithm>

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace {

constexpr const char* kModes =
    "kl, k1, abs, mse, k2, low_var_kl, k3, each optionally followed by '+' (straight-through k2 gradient)";

bool ends_with_plus(const std::string& mode) { return !mode.empty() && mode.back() == '+'; }

// `requested` is the mode as the caller wrote it (with its '+'), for the error message.
torch::Tensor forward_estimate(const torch::Tensor& logprob, const torch::Tensor& ref_logprob,
                               const std::string& mode, const std::string& requested) {
  check_same_shape(logprob, "logprob", ref_logprob, "ref_logprob");
  if (mode == "kl" || mode == "k1") return logprob - ref_logprob;
  if (mode == "abs") return (logprob - ref_logprob).abs();
  if (mode == "mse" || mode == "k2") return 0.5 * (logprob - ref_logprob).square();
  if (mode == "low_var_kl" || mode == "k3") {
    // Clamps as verl: the log-ratio for exp's stability, the estimate against outliers.
    const torch::Tensor kl = (ref_logprob - logprob).clamp(-20, 20);
    return (kl.exp() - kl - 1).clamp(-10, 10);
  }
  VERL_FAIL(InvalidArgument, "Unsupported kl_penalty '", requested, "'",
            mode == "full" ? " (verl does not implement 'full' either)" : "", "; supported: ", kModes);
}

}  // namespace

torch::Tensor kl_penalty_forward(const torch::Tensor& logprob, const torch::Tensor& ref_logprob,
                                 const std::string& mode) {
  return forward_estimate(logprob, ref_logprob, mode, mode);
}

torch::Tensor kl_penalty(const torch::Tensor& logprob, const torch::Tensor& ref_logprob, const std::string& mode) {
  const bool straight_through = ends_with_plus(mode);
  const std::string base = straight_through ? mode.substr(0, mode.size() - 1) : mode;
  const torch::Tensor forward = forward_estimate(logprob, ref_logprob, base, mode);
  // verl returns the plain value for "mse"/"k2" (no '+') only; "k2+" goes through the trick too,
  // which changes neither value nor gradient.
  if (!straight_through) return forward;
  const torch::Tensor backward = 0.5 * (logprob - ref_logprob).square();
  return backward - backward.detach() + forward.detach();
}

torch::Tensor compute_rewards(const torch::Tensor& token_level_scores, const torch::Tensor& old_log_prob,
                              const torch::Tensor& ref_log_prob, double kl_ratio) {
  check_same_shape(old_log_prob, "old_log_prob", ref_log_prob, "ref_log_prob");
  check_same_shape(token_level_scores, "token_level_scores", old_log_prob, "old_log_prob");
  return token_level_scores - (old_log_prob - ref_log_prob) * kl_ratio;
}

void FixedKLController::update(double /*current_kl*/, int64_t /*n_steps*/) {}

AdaptiveKLController::AdaptiveKLController(double init_kl_coef, double target_kl, int64_t horizon)
    : KLController(init_kl_coef), target(target_kl), horizon(horizon) {
  VERL_CHECK(horizon > 0, "horizon must be larger than 0. Got ", horizon);
}

void AdaptiveKLController::update(double current_kl, int64_t n_steps) {
  const double proportional_error = std::clamp(current_kl / target - 1, -0.2, 0.2);
  value *= 1 + proportional_error * static_cast<double>(n_steps) / static_cast<double>(horizon);
}

std::unique_ptr<KLController> get_kl_controller(const std::string& type, double kl_coef, double target_kl,
                                                int64_t horizon) {
  if (type == "fixed") return std::make_unique<FixedKLController>(kl_coef);
  if (type == "adaptive") return std::make_unique<AdaptiveKLController>(kl_coef, target_kl, horizon);
  VERL_FAIL(InvalidArgument, "Unknown kl_ctrl.type '", type, "'; supported: fixed, adaptive");
}

}  // namespace verl::algo
